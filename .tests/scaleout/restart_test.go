package scaleout_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/mysql"
	"github.com/sqlstreams/sqlstreams/driver/postgres"
	"github.com/sqlstreams/sqlstreams/scaleout/servers"
)

// outageWait bounds how long a scenario waits for the loops to notice an
// outage, and then for them to recover.
const outageWait = 90 * time.Second

// restartScenario drives one load through two outages of one server:
// first a plain restart (pg_ctl restart, a MariaDB stop and start) while
// the loops run, then a stop that lasts until both producers and consumers
// have seen it fail (so that the client's error paths and Run's backoff
// are exercised whatever the timing), then a start. Afterwards the loads
// must go on without being restarted.
type restartScenario struct {
	restart func() error // a restart as an operator does it
	stop    func() error
	start   func() error
}

func runRestart(t *testing.T, l *load, sc restartScenario) loadFigures {
	t.Helper()
	l.waitProgress(50, outageWait, "before the restart")
	if err := sc.restart(); err != nil {
		t.Fatal(err)
	}
	l.waitProgress(50, outageWait, "after the restart")

	if err := sc.stop(); err != nil {
		t.Fatal(err)
	}
	downAt := time.Now()
	errsBefore, failsBefore := l.producerErrors(), len(l.logs.find("consumer", "claim failed"))
	waitUntil(t, outageWait, "producers and consumers to see the outage", func() bool {
		return l.producerErrors() > errsBefore && len(l.logs.find("consumer", "claim failed")) >= failsBefore+3
	})
	if err := sc.start(); err != nil {
		t.Fatal(err)
	}
	upAt := time.Now()
	l.waitProgress(50, outageWait, "after the outage")
	// A consumer whose claims failed logs that it claims again; one that was
	// waiting for its acknowledgements to be written meanwhile never failed
	// a claim.
	waitUntil(t, outageWait, "every consumer whose claims failed to claim again", func() bool {
		return l.claimingAgainSince(downAt)
	})
	recovered := time.Now()
	f := l.stop()
	l.checkBackoff(3, recovered)
	t.Logf("down %s; producers failing for %s; %s", upAt.Sub(downAt).Round(time.Millisecond),
		time.Duration(l.lastErr.Load()-l.firstErr.Load()).Round(time.Millisecond), f)
	return f
}

// TestPostgresRestart: produce and claim loops on a PostgreSQL cluster of
// the test's own, through pg_ctl restart and pg_ctl stop/start in fast and
// immediate mode. No call hangs past its bound, the client reconnects by
// itself, Run keeps going (logging claim failures with growing waits), the
// LISTEN connection comes back (no "polling only" warning), every produce
// that returned success is delivered, none twice while leased, and no row
// appears whose Produce failed with a definite error.
func TestPostgresRestart(t *testing.T) {
	t.Parallel()
	pg := servers.NewPostgres(t, servers.PostgresOptions{})
	for _, mode := range []string{"fast", "immediate"} {
		t.Run(mode, func(t *testing.T) {
			schema := fmt.Sprintf("restart_%s", mode)
			if _, err := pg.Psql("test", "CREATE SCHEMA "+schema); err != nil {
				t.Fatal(err)
			}
			url := pg.URL("test") + "&search_path=" + schema + "&connect_timeout=3"
			l := startLoad(t, loadSpec{Producers: 2, Consumers: 2, Open: func(int) driver.Driver { return postgres.Open(url) }})
			f := runRestart(t, l, restartScenario{
				restart: func() error { return pg.Restart(mode) },
				stop:    func() error { return pg.Stop(mode) },
				start:   pg.Start,
			})
			if ws := l.logs.find("consumer", "polling only"); len(ws) > 0 {
				t.Errorf("the wake-up subscription gave up: %v", ws[0].attrs)
			}
			record(t, "postgres restart -m "+mode, f)
		})
	}
}

// TestMariaDBRestart: the same on a MariaDB server of the test's own,
// stopped cleanly (SIGTERM) and crashed (SIGKILL).
func TestMariaDBRestart(t *testing.T) {
	t.Parallel()
	m := servers.NewMariaDB(t, servers.MariaDBOptions{})
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			db := fmt.Sprintf("restart_%d", sig)
			if err := m.Exec("CREATE DATABASE " + db + " CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
				t.Fatal(err)
			}
			dsn := m.DSN(db)
			l := startLoad(t, loadSpec{Producers: 2, Consumers: 2, Open: func(int) driver.Driver { return mysql.Open(dsn) }})
			f := runRestart(t, l, restartScenario{
				restart: func() error { m.Kill(sig); return m.Start() },
				stop:    func() error { m.Kill(sig); return nil },
				start:   func() error { return m.Start() },
			})
			record(t, "mariadb restart "+sig.String(), f)
		})
	}
}
