package conformance

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

func init() { register("C18_Outages", testOutages) }

// C18 when things go wrong: every error a caller gets says what happened
// with a sentinel it can match (ErrUnavailable, ErrConflict,
// ErrOutcomeUnknown, ...); a produce reported as failed was not written;
// every call Run makes is bounded and its failures are logged with backoff;
// a handler that ignores cancellation cannot make Close wait forever.
func testOutages(t *testing.T, h *harness) {
	t.Run("Unreachable", func(t *testing.T) {
		t.Parallel()
		if h.target.Unreachable == nil {
			t.Fatalf("target %s has no Unreachable", h.target.Name)
		}
		octx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := sqlstreams.Open(octx, h.target.Unreachable(), sqlstreams.WithMaintenanceInterval(0))
		if err == nil {
			c.Close()
			t.Fatal("Open on an unreachable database succeeded")
		}
		if !errors.Is(err, sqlstreams.ErrUnavailable) {
			t.Errorf("Open on an unreachable database: %v; want ErrUnavailable", err)
		}
	})

	t.Run("FailedMeansNotWritten", func(t *testing.T) {
		// Produces whose context ends at random moments: a success is in the
		// log once, a failure that does not say ErrOutcomeUnknown is not in
		// it, and no error is anything but those.
		t.Parallel()
		h := h.fresh()
		c := h.client(t)
		const stream, n = "c18-outcome", 300
		p := producer[EventV1](t, c, stream)
		const (
			written = iota
			failed
			unknown
		)
		outcome := map[int]int{}
		counts := [3]int{}
		for seq := 1; seq <= n; seq++ {
			pctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(2500))*time.Microsecond)
			_, err := p.Produce(pctx, EventV1{Seq: seq})
			cancel()
			switch {
			case err == nil:
				outcome[seq] = written
			case errors.Is(err, sqlstreams.ErrOutcomeUnknown):
				outcome[seq] = unknown
			case errors.Is(err, context.DeadlineExceeded), errors.Is(err, sqlstreams.ErrUnavailable):
				outcome[seq] = failed
			default:
				t.Fatalf("produce %d: %v; want success, ErrOutcomeUnknown, or a failure that wrote nothing", seq, err)
			}
			counts[outcome[seq]]++
		}
		seen := map[int]int{}
		for _, d := range drain(t, consumer[EventV1](t, c, stream, "audit", nil)) {
			seen[d.Value.Seq]++
		}
		for seq := 1; seq <= n; seq++ {
			switch o := outcome[seq]; {
			case o == written && seen[seq] != 1:
				t.Errorf("produce %d succeeded but the log holds it %d times", seq, seen[seq])
			case o == failed && seen[seq] != 0:
				t.Errorf("produce %d was reported as failed but is in the log: a caller retrying it would duplicate it", seq)
			case o == unknown && seen[seq] > 1:
				t.Errorf("produce %d is in the log %d times", seq, seen[seq])
			}
		}
		t.Logf("%d written, %d failed, %d unknown", counts[written], counts[failed], counts[unknown])
	})

	t.Run("ClaimTimeoutLogged", func(t *testing.T) {
		// A claim that hangs (a frozen server) ends after the operation
		// timeout and is logged with what a user needs; while it keeps
		// failing, the waits between claims grow; when the database answers
		// again, Run goes on by itself. The short operation timeout ends only
		// the hung claims: the real calls run without it (hangsOnlyTimeOut),
		// so that a loaded machine cannot make them time out too. The checks
		// are on lower bounds of time, which load only makes hold more.
		t.Parallel()
		h := h.fresh()
		logs := &logCount{}
		const timeout, poll = 150 * time.Millisecond, 10 * time.Millisecond
		c, f := h.faultyClient(t, sqlstreams.WithOperationTimeout(timeout), sqlstreams.WithLogger(slog.New(logs)))
		f.set(func(f *faultDriver) { f.hangsOnlyTimeOut = true })
		const stream = "c18-timeout"
		p := producer[EventV1](t, c, stream)
		cons := consumer[EventV1](t, c, stream, "g", &sqlstreams.ConsumerOptions{PollInterval: poll})
		f.set(func(f *faultDriver) { f.hangClaims = true })
		handled := make(chan int64, 1)
		stop := runFor(t, cons, func(_ context.Context, d sqlstreams.Delivery[EventV1]) error {
			handled <- d.ID
			return nil
		})
		const failures = 5
		var hung []span
		eventually(t, time.Minute, "five hung claims", func() bool {
			f.mu.Lock()
			defer f.mu.Unlock()
			hung = slices.Clone(f.hung)
			return len(hung) >= failures
		})
		for i, s := range hung {
			if d := s.ended.Sub(s.began); d > 30*time.Second {
				t.Errorf("hung claim %d ended after %v; want the operation timeout (%v) to end it", i+1, d, timeout)
			}
		}
		// The fifth claim came at least 8 poll intervals after the fourth
		// failed (a wait that did not grow would be one).
		if gap := hung[failures-1].began.Sub(hung[failures-2].ended); gap < 8*poll {
			t.Errorf("Run claimed %v after its %dth failure in a row, with a %v poll interval; want the waits to grow", gap, failures-1, poll)
		}
		checkClaimFailureLogged(t, logs, stream, "g")
		f.set(func(f *faultDriver) { f.hangClaims = false })
		ids := produceV1(t, p, 1)
		select {
		case id := <-handled:
			if id != ids[0] {
				t.Errorf("handled row %d, want %d", id, ids[0])
			}
		case <-time.After(time.Minute):
			t.Fatal("Run did not handle a row after the outage ended")
		}
		stop()
	})

	t.Run("StuckHandlerBoundsClose", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		drv, err := h.target.Open(h.ns(t))
		if err != nil {
			t.Fatal(err)
		}
		c, err := sqlstreams.Open(ctx(t), drv, sqlstreams.WithMaintenanceInterval(0), sqlstreams.WithLogger(testLogger(t)))
		if err != nil {
			t.Fatal(err)
		}
		const stream = "c18-stuck"
		p := producer[EventV1](t, c, stream)
		ids := produceV1(t, p, 1)
		cons := consumer[EventV1](t, c, stream, "g", &sqlstreams.ConsumerOptions{ShutdownTimeout: 100 * time.Millisecond, PollInterval: 10 * time.Millisecond})
		started, unblock := make(chan struct{}), make(chan struct{})
		runErr := make(chan error, 1)
		go func() {
			runErr <- cons.Run(context.Background(), func(context.Context, sqlstreams.Delivery[EventV1]) error {
				close(started)
				<-unblock // ignores its context
				return nil
			})
		}()
		<-started
		closed := make(chan error, 1)
		go func() { closed <- c.Close() }()
		select {
		case err := <-closed:
			if !errors.Is(err, sqlstreams.ErrShutdownTimeout) || !strings.Contains(err.Error(), strconv.FormatInt(ids[0], 10)) {
				t.Errorf("Close with a stuck handler: %v; want ErrShutdownTimeout naming delivery %d", err, ids[0])
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Close waited 30s for a handler that ignores cancellation")
		}
		if err := <-runErr; !errors.Is(err, sqlstreams.ErrShutdownTimeout) {
			t.Errorf("Run returned %v; want ErrShutdownTimeout", err)
		}
		close(unblock) // the handler returns after Close: nothing may panic
		time.Sleep(50 * time.Millisecond)
	})
}

// checkClaimFailureLogged checks the first warning of a failed claim: it
// names the stream and the group, and its error matches ErrUnavailable and
// says which option bounds the wait.
func checkClaimFailureLogged(t *testing.T, logs *logCount, stream, group string) {
	t.Helper()
	r, ok := logs.first("claim failed")
	if !ok {
		t.Fatal("no claim failure was logged")
	}
	attrs := map[string]slog.Value{}
	r.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value.Resolve()
		return true
	})
	if attrs["stream"].String() != stream || attrs["group"].String() != group {
		t.Errorf("claim failure logged with stream %q and group %q; want %q and %q", attrs["stream"], attrs["group"], stream, group)
	}
	err, _ := attrs["error"].Any().(error)
	if !errors.Is(err, sqlstreams.ErrUnavailable) || !strings.Contains(err.Error(), "WithOperationTimeout") {
		t.Errorf("claim failure logged with error %v; want ErrUnavailable naming WithOperationTimeout", err)
	}
}

// logCount is a slog handler that keeps the records it is given.
type logCount struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logCount) Enabled(context.Context, slog.Level) bool { return true }
func (l *logCount) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.recs = append(l.recs, r.Clone())
	l.mu.Unlock()
	return nil
}
func (l *logCount) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logCount) WithGroup(string) slog.Handler      { return l }

func (l *logCount) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.recs {
		if strings.Contains(r.Message, substr) {
			n++
		}
	}
	return n
}

// first is the first record whose message contains substr.
func (l *logCount) first(substr string) (slog.Record, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.recs {
		if strings.Contains(r.Message, substr) {
			return r, true
		}
	}
	return slog.Record{}, false
}

var _ driver.Driver = (*faultDriver)(nil)
