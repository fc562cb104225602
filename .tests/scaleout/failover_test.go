package scaleout_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/postgres"
	"github.com/sqlstreams/sqlstreams/scaleout/servers"
)

// TestPostgresFailover: a primary with a synchronous streaming replica;
// producers and consumers connect with a multi-host URL naming both and
// target_session_attrs=read-write. The primary is killed (pg_ctl stop -m
// immediate, no shutdown checkpoint, as a crash) mid-produce and mid-claim
// and the script promotes the replica with pg_ctl promote at once: the
// quarter-second switch of a planned switchover, shorter than a call's
// bound, which TestPatroniFailover (a machine loss, waiting out Patroni's
// TTL) never exercises. Producers get
// errors during the switch and recover by themselves, consumers resume
// without a restart, every produce that returned success is delivered
// (synchronous replication: a reported commit is on the replica), none
// twice while leased, and the LISTEN connection re-subscribes on the new
// primary.
func TestPostgresFailover(t *testing.T) {
	t.Parallel()
	primary := servers.NewPostgres(t, servers.PostgresOptions{
		Conf: []string{"wal_level = replica", "max_wal_senders = 5", "hot_standby = on", "synchronous_commit = on", "wal_keep_size = 256MB"},
		HBA:  []string{"host replication all 127.0.0.1/32 trust"},
	})
	// Once promoted, the replica is alone: it must not wait for a
	// synchronous standby of its own.
	replica := servers.NewStandby(t, primary, "replica1", "synchronous_standby_names = ''")
	// Commits on the primary now wait until the replica has flushed them.
	if _, err := primary.Psql("postgres", "ALTER SYSTEM SET synchronous_standby_names = 'replica1'"); err != nil {
		t.Fatal(err)
	}
	if _, err := primary.Psql("postgres", "SELECT pg_reload_conf()"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, outageWait, "the replica to be synchronous", func() bool {
		out, err := primary.Psql("postgres", "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'replica1'")
		return err == nil && out == "sync"
	})
	if _, err := primary.Psql("test", "CREATE SCHEMA failover"); err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/test?sslmode=disable&search_path=failover&connect_timeout=3&target_session_attrs=read-write",
		primary.Port, replica.Port)
	l := startLoad(t, loadSpec{Producers: 2, Consumers: 2, Open: func(int) driver.Driver { return postgres.Open(url) }})
	l.waitProgress(200, outageWait, "before the failover")
	waitUntil(t, outageWait, "the consumers' LISTEN sessions on the primary", func() bool { return listeners(primary) > 0 })

	killedAt := time.Now()
	if err := primary.Stop("immediate"); err != nil {
		t.Fatal(err)
	}
	if err := replica.Promote(); err != nil {
		t.Fatal(err)
	}
	promotedAt := time.Now()
	l.waitProgress(200, outageWait, "on the new primary")
	waitUntil(t, outageWait, "the LISTEN sessions on the new primary", func() bool { return listeners(replica) > 0 })
	firstErr, lastErr := time.Unix(0, l.firstErr.Load()), time.Unix(0, l.lastErr.Load())
	claimGap := l.consumerGap(killedAt)
	f := l.stop()
	if ws := l.logs.find("consumer", "polling only"); len(ws) > 0 {
		t.Errorf("the wake-up subscription gave up: %v", ws[0].attrs)
	}
	unavailable := time.Duration(0)
	if !lastErr.Before(killedAt) {
		unavailable = lastErr.Sub(firstErr)
	}
	t.Logf("primary killed; replica promoted after %s; producers failing for %s; consumers delivered nothing for %s; %s",
		promotedAt.Sub(killedAt).Round(time.Millisecond), unavailable.Round(time.Millisecond), claimGap.Round(time.Millisecond), f)
	record(t, "postgres failover (pg_ctl promote)", f)
}

// listeners counts sessions whose last statement was a LISTEN.
func listeners(p *servers.Postgres) int {
	out, err := p.Psql("test", "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN %'")
	if err != nil {
		return 0
	}
	var n int
	fmt.Sscan(strings.TrimSpace(out), &n)
	return n
}
