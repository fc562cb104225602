package scaleout_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/postgres"
	"github.com/sqlstreams/sqlstreams/scaleout/servers"
)

// TestPatroniFailover: a primary with a synchronous streaming replica,
// managed by Patroni with etcd (synchronous_mode: a commit the client saw
// is on the replica, and only that replica may be promoted). Producers and
// consumers connect with a multi-host URL naming both nodes and
// target_session_attrs=read-write. The primary's machine is lost mid-produce
// and mid-claim: SIGKILL to its Patroni and to its PostgreSQL, nothing shut
// down. Patroni promotes the replica once the leader key's TTL has run out.
// Producers get errors during the switch and recover by themselves,
// consumers resume without a restart, every produce that returned success is
// delivered, none twice while leased, and the LISTEN connection
// re-subscribes on the new primary: a wake-up after the failover arrives by
// NOTIFY there (see wakeProbe).
func TestPatroniFailover(t *testing.T) {
	t.Parallel()
	c := servers.NewPatroni(t, 2)
	primary, replica := c.Nodes[0], c.Nodes[1]
	if _, err := primary.Psql("test", "CREATE SCHEMA failover"); err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/test?sslmode=disable&search_path=failover&connect_timeout=3&target_session_attrs=read-write",
		primary.Port, replica.Port)
	l := startLoad(t, loadSpec{Producers: 2, Consumers: 2, Open: func(int) driver.Driver { return postgres.Open(url) }})
	probe := startWakeProbe(t, url)
	l.waitProgress(200, outageWait, "before the failover")
	waitUntil(t, outageWait, "the consumers' LISTEN sessions on the primary", func() bool { return listeners(primary.Postgres) > 0 })
	probe.check(t, primary, "before the failover")

	errsBefore, failsBefore := l.producerErrors(), len(l.logs.find("consumer", "claim failed"))
	killedAt := time.Now()
	if err := primary.Kill(); err != nil {
		t.Fatal(err)
	}
	// Polled every 50ms: the figure is the promotion to within a poll.
	waitUntil(t, outageWait, "Patroni to promote the replica", replica.Writable)
	promotedAt := time.Now()
	if role, err := replica.Role(); err != nil || (role != "master" && role != "primary") {
		t.Errorf("the new primary's Patroni reports role %q (%v); want the leader's", role, err)
	}
	l.waitProgress(200, outageWait, "on the new primary")
	if n := l.producerErrors(); n <= errsBefore {
		t.Errorf("producers saw no error while the primary was gone (%d before the kill, %d after)", errsBefore, n)
	}
	if n := len(l.logs.find("consumer", "claim failed")); n <= failsBefore {
		t.Errorf("consumers logged no claim failure while the primary was gone (%d before the kill, %d after)", failsBefore, n)
	}
	waitUntil(t, outageWait, "every consumer whose claims failed to claim again", func() bool { return l.claimingAgainSince(killedAt) })
	recovered := time.Now()
	waitUntil(t, outageWait, "the LISTEN sessions on the new primary", func() bool { return listeners(replica.Postgres) > 0 })
	wake := probe.check(t, replica, "after the failover")
	resubscribed := probe.listenSince(killedAt)

	firstErr, lastErr := time.Unix(0, l.firstErr.Load()), time.Unix(0, l.lastErr.Load())
	claimGap := l.consumerGap(killedAt)
	f := l.stop()
	l.checkBackoff(1, recovered)
	if ws := l.logs.find("consumer", "polling only"); len(ws) > 0 {
		t.Errorf("the wake-up subscription gave up: %v", ws[0].attrs)
	}
	unavailable := time.Duration(0)
	if !lastErr.Before(killedAt) {
		unavailable = lastErr.Sub(firstErr)
	}
	t.Logf("primary's machine lost; Patroni promoted the replica after %s; producers failing for %s; consumers delivered nothing for %s; "+
		"LISTEN re-subscribed %s after the kill; a wake-up on the new primary arrived %s after its produce; %s",
		promotedAt.Sub(killedAt).Round(time.Millisecond), unavailable.Round(time.Millisecond), claimGap.Round(time.Millisecond),
		resubscribed.Round(time.Millisecond), wake.Round(time.Millisecond), f)
	record(t, "postgres failover (Patroni, machine loss)", f)
}

// wakeProbe proves that a consumer is woken by NOTIFY, not by a poll: its
// consumer polls once an hour, so a delivery within wakeBound of a produce
// made by another client (in-process wake-ups stay within a client) after
// its claim loop went idle came from its LISTEN connection.
type wakeProbe struct {
	drv       *claimWatch
	producer  *sqlstreams.Producer[Msg]
	delivered chan int64
	seq       int64
	listenAt  sync.Map // node name -> time its LISTEN session was first seen
}

const (
	wakeStream = "scaleout.wakeup"
	wakeApp    = "scaleout-wakeup-consumer"
	// wakeBound is how long a woken claim may take on this loaded machine;
	// it is below the poll interval and the claim loop's longest backoff
	// (30 s), so nothing but a wake-up can deliver in time.
	wakeBound = 20 * time.Second
)

func startWakeProbe(t *testing.T, url string) *wakeProbe {
	t.Helper()
	ctx := context.Background()
	p := &wakeProbe{drv: &claimWatch{Driver: postgres.Open(url + "&application_name=" + wakeApp)}, delivered: make(chan int64, 16)}
	logs := &logCapture{}
	cc, err := sqlstreams.Open(ctx, p.drv, sqlstreams.WithLogger(slog.New(logs.handler("probe", 0))), sqlstreams.WithOperationTimeout(callBound))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	pc, err := sqlstreams.Open(ctx, postgres.Open(url+"&application_name=scaleout-wakeup-producer"), sqlstreams.WithOperationTimeout(callBound))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	if _, err := pc.Stream[Msg](wakeStream).Create(ctx, &sqlstreams.StreamOptions{Partitions: 1}); err != nil && !errors.Is(err, sqlstreams.ErrStreamExists) {
		t.Fatal(err)
	}
	if p.producer, err = pc.Stream[Msg](wakeStream).Producer().Register(ctx, nil); err != nil {
		t.Fatal(err)
	}
	cons, err := cc.Stream[Msg](wakeStream).Consumer("wakeup").Register(ctx, &sqlstreams.ConsumerOptions{
		Concurrency: 1, LeaseDuration: leaseDuration, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- cons.Run(rctx, func(_ context.Context, d sqlstreams.Delivery[Msg]) error {
			p.delivered <- d.Value.Seq
			return nil
		})
	}()
	t.Cleanup(func() {
		stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("the wake-up probe's Run: %v", err)
			}
		case <-time.After(time.Minute):
			t.Error("the wake-up probe's Run did not return within a minute of its context ending")
		}
	})
	return p
}

// listenSession is the probe consumer's LISTEN session on node ("pid|backend_start"), or "".
func (p *wakeProbe) listenSession(node *servers.PatroniNode) string {
	out, err := node.Psql("test", fmt.Sprintf("SELECT pid || '|' || backend_start FROM pg_stat_activity WHERE application_name = '%s' AND query LIKE 'LISTEN %%'", wakeApp))
	if err != nil || strings.Contains(out, "\n") {
		return ""
	}
	return out
}

// listenSince is how long after since the probe's LISTEN session was first
// seen on the node checked last.
func (p *wakeProbe) listenSince(since time.Time) time.Duration {
	var last time.Time
	p.listenAt.Range(func(_, v any) bool {
		if at := v.(time.Time); at.After(last) {
			last = at
		}
		return true
	})
	return last.Sub(since)
}

// check waits for the probe's LISTEN session on node, makes one delivery
// (by whatever path: the catch-up claim after LISTEN may take it), waits
// until the claim loop is idle, and then proves that a second produce is
// delivered by a wake-up from that same LISTEN session: it returns how long
// that took.
func (p *wakeProbe) check(t *testing.T, node *servers.PatroniNode, when string) time.Duration {
	t.Helper()
	var session string
	waitUntil(t, outageWait, fmt.Sprintf("%s: the wake-up probe's LISTEN session on %s", when, node.Name), func() bool {
		session = p.listenSession(node)
		return session != ""
	})
	p.listenAt.LoadOrStore(node.Name, time.Now())
	produce := func() (int64, time.Time) {
		p.seq++
		ctx, cancel := context.WithTimeout(context.Background(), callBound)
		defer cancel()
		if _, err := p.producer.Produce(ctx, Msg{Seq: p.seq}); err != nil {
			t.Fatalf("%s: wake-up probe produce: %v", when, err)
		}
		return p.seq, time.Now()
	}
	await := func(seq int64, d time.Duration) {
		t.Helper()
		timeout := time.After(d)
		for {
			select {
			case got := <-p.delivered:
				if got == seq {
					return
				}
			case <-timeout:
				t.Fatalf("%s: the wake-up probe's message %d was not delivered within %s (the consumer polls once an hour): no wake-up reached it", when, seq, d)
			}
		}
	}
	warm, _ := produce()
	await(warm, outageWait)
	waitUntil(t, outageWait, when+": the wake-up probe's claim loop to be idle", p.drv.idle)
	seq, producedAt := produce()
	await(seq, wakeBound)
	took := time.Since(producedAt)
	if failed := p.drv.failedSince(producedAt); failed {
		t.Errorf("%s: a claim of the wake-up probe failed between its produce and its delivery: the delivery may have come from a retry", when)
	}
	// The same session: the listener did not reconnect (which wakes every
	// subscriber without a NOTIFY) in between.
	if now := p.listenSession(node); now != session {
		t.Errorf("%s: the wake-up probe's LISTEN session changed from %q to %q while it waited for a NOTIFY", when, session, now)
	}
	return took
}

// claimWatch is the PostgreSQL driver with its claims watched, so that the
// wake-up probe knows when its consumer's claim loop has gone idle: no
// claim running and the last one found nothing.
type claimWatch struct {
	*postgres.Driver
	mu       sync.Mutex
	running  int
	lastEnd  time.Time
	lastOK   bool      // the last claim succeeded and found nothing
	foundAt  time.Time // when the last claim that found rows ended
	failedAt time.Time
}

func (w *claimWatch) Claim(ctx context.Context, p driver.ClaimParams) (driver.ClaimResult, error) {
	w.mu.Lock()
	w.running++
	w.mu.Unlock()
	r, err := w.Driver.Claim(ctx, p)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.running--
	w.lastEnd, w.lastOK = time.Now(), err == nil && len(r.Deliveries) == 0
	switch {
	case err != nil:
		w.failedAt = w.lastEnd
	case len(r.Deliveries) > 0:
		w.foundAt = w.lastEnd
	}
	return r, err
}

// idle reports whether the claim loop waits for a wake-up or its poll: no
// claim runs, and a claim that found nothing has ended after the last one
// that found rows (Run claims again after each claim that found rows,
// whether or not their handlers have finished).
func (w *claimWatch) idle() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.running == 0 && w.lastOK && !w.foundAt.IsZero() && w.lastEnd.After(w.foundAt)
}

func (w *claimWatch) failedSince(since time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failedAt.After(since)
}
