package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() { register("C8_Outcomes", testOutcomes) }

// C8: resolved deliveries are never redelivered; errors retry with backoff
// until MaxAttempts, then go dead; dead deliveries keep error text, attempts
// and times and are never claimed again unless replayed (due now, attempts
// reset) or discarded (resolved).
func testOutcomes(t *testing.T, h *harness) {
	c := h.client(t)
	t.Run("AckedNeverRedelivered", func(t *testing.T) { testOutcomeAcked(t, c) })
	t.Run("RetryUntilDead", func(t *testing.T) { testOutcomeRetryUntilDead(t, c) })
	t.Run("DeadAtOnce", func(t *testing.T) { testOutcomeDeadAtOnce(t, c) })
	t.Run("RetryAfter", func(t *testing.T) { testOutcomeRetryAfter(t, c) })
	t.Run("Panic", func(t *testing.T) { testOutcomePanic(t, c) })
	t.Run("ExpiredLastAttempt", func(t *testing.T) { testOutcomeExpiredLastAttempt(t, c) })
	t.Run("ReplayDiscard", func(t *testing.T) { testOutcomeReplayDiscard(t, c) })
}

// call is one handler invocation.
type call struct {
	id      int64
	attempt int
	at      time.Time
}

// recorder collects handler calls.
type recorder struct {
	mu    sync.Mutex
	calls []call
}

func (r *recorder) add(d sqlstreams.Delivery[EventV1]) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call{id: d.ID, attempt: d.Attempt, at: time.Now()})
}

func (r *recorder) of(id int64) []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []call
	for _, c := range r.calls {
		if c.id == id {
			out = append(out, c)
		}
	}
	return out
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

// deadLetter waits for id to be dead in the group and returns it.
func deadLetter(t *testing.T, g *sqlstreams.Consumer[EventV1], id int64) sqlstreams.DeadLetter {
	t.Helper()
	var found sqlstreams.DeadLetter
	eventually(t, 30*time.Second, fmt.Sprintf("row %d to be dead", id), func() bool {
		dls, err := g.DeadLetters(ctx(t), 0, 100)
		if err != nil {
			t.Fatalf("dead letters: %v", err)
		}
		for _, dl := range dls {
			if dl.ID == id {
				found = dl
				return true
			}
		}
		return false
	})
	return found
}

func testOutcomeAcked(t *testing.T, c *sqlstreams.Client) {
	const stream = "c8-acked"
	p := producer[EventV1](t, c, stream)
	ids := produceV1(t, p, 4)
	// Pull: acked deliveries do not come back, also after their lease would
	// have expired. The lease is long enough for the acks to land on a
	// loaded machine; the claim after it has lapsed for certain.
	const lease = time.Second
	pull := consumer[EventV1](t, c, stream, "pull", fastRetry(sqlstreams.ConsumerOptions{LeaseDuration: lease}))
	ds, err := pull.Claim(ctx(t), 10)
	if err != nil || !equalIDs(idsOf(ds), ids) {
		t.Fatalf("claimed %v (err %v), want %v", idsOf(ds), err, ids)
	}
	if err := ds[0].Ack(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := pull.Ack(ctx(t), ds[1:]...); err != nil {
		t.Fatal(err)
	}
	if err := ds[0].Ack(ctx(t)); !errors.Is(err, sqlstreams.ErrAlreadySettled) {
		t.Errorf("second Ack of one delivery: err %v, want ErrAlreadySettled", err)
	}
	if g := groupAt(t, health(t, c, stream), 1, "pull"); g.Unresolved != 0 || g.Unread != 0 {
		t.Errorf("health after the pull's acks: %+v; want every row resolved", g)
	}
	time.Sleep(lease + 100*time.Millisecond)
	if again, err := pull.Claim(ctx(t), 10); err != nil || len(again) != 0 {
		t.Errorf("acked deliveries came back: %v (err %v)", idsOf(again), err)
	}

	// Run: a nil return resolves; each row is handled exactly once. The
	// lease outlasts any stall of a loaded machine (a lapsed lease hands a
	// row out again, as it should); Health after Run shows every row
	// resolved, not held, so none can come back.
	var rec recorder
	run := consumer[EventV1](t, c, stream, "run", fastRetry(sqlstreams.ConsumerOptions{Concurrency: 2}))
	stop := runFor(t, run, func(_ context.Context, d sqlstreams.Delivery[EventV1]) error {
		rec.add(d)
		return nil
	})
	eventually(t, 30*time.Second, "Run to handle every row", func() bool { return rec.count() >= len(ids) })
	time.Sleep(100 * time.Millisecond) // polls that would find a row not resolved
	stop()
	for _, id := range ids {
		if calls := rec.of(id); len(calls) != 1 || calls[0].attempt != 1 {
			t.Errorf("row %d handled %d times (%+v), want once at attempt 1", id, len(calls), calls)
		}
	}
	if g := groupAt(t, health(t, c, stream), 1, "run"); g.Unresolved != 0 || g.Unread != 0 {
		t.Errorf("health after Run resolved everything: %+v", g)
	}
}

func testOutcomeRetryUntilDead(t *testing.T, c *sqlstreams.Client) {
	const stream = "c8-retry"
	const maxAttempts = 3
	backoff := func(attempt int) time.Duration { return time.Duration(attempt) * 150 * time.Millisecond }
	var bmu sync.Mutex
	var backoffCalls []int
	g := consumer[EventV1](t, c, stream, "g", fastRetry(sqlstreams.ConsumerOptions{MaxAttempts: maxAttempts, Backoff: func(attempt int) time.Duration {
		bmu.Lock()
		defer bmu.Unlock()
		backoffCalls = append(backoffCalls, attempt)
		return backoff(attempt)
	}}))
	produced := time.Now()
	ids := produceV1(t, producer[EventV1](t, c, stream), 2)
	bad, good := ids[0], ids[1]
	var rec recorder
	stop := runFor(t, g, func(_ context.Context, d sqlstreams.Delivery[EventV1]) error {
		rec.add(d)
		if d.ID == bad {
			return fmt.Errorf("attempt %d: %w", d.Attempt, errTest)
		}
		return nil
	})
	dl := deadLetter(t, g, bad)
	time.Sleep(300 * time.Millisecond) // would be the next retry, were it not dead
	stop()

	calls := rec.of(bad)
	if len(calls) != maxAttempts {
		t.Fatalf("failing row handled %d times (%+v), want MaxAttempts = %d", len(calls), calls, maxAttempts)
	}
	for i, cl := range calls {
		if cl.attempt != i+1 {
			t.Errorf("call %d of the failing row had attempt %d, want %d", i+1, cl.attempt, i+1)
		}
		if i > 0 {
			if gap, want := cl.at.Sub(calls[i-1].at), backoff(i); gap < want-10*time.Millisecond {
				t.Errorf("attempt %d came %v after attempt %d; the backoff was %v", i+1, gap, i, want)
			}
		}
	}
	bmu.Lock()
	if !slices.Contains(backoffCalls, 1) || !slices.Contains(backoffCalls, 2) {
		t.Errorf("backoff consulted for attempts %v, want it asked for the delays after attempts 1 and 2", backoffCalls)
	}
	bmu.Unlock()
	if n := len(rec.of(good)); n != 1 {
		t.Errorf("the good row behind the failing one was handled %d times, want 1", n)
	}

	if dl.Attempt != maxAttempts {
		t.Errorf("dead letter records %d attempts, want %d", dl.Attempt, maxAttempts)
	}
	if !strings.Contains(dl.Error, "attempt 3: "+errTest.Error()) {
		t.Errorf("dead letter error %q does not carry the last handler error %q", dl.Error, "attempt 3: "+errTest.Error())
	}
	if dl.FirstFailed.IsZero() || dl.DiedAt.IsZero() || dl.FirstFailed.Before(produced.Add(-time.Second)) ||
		!dl.DiedAt.After(dl.FirstFailed) || dl.DiedAt.After(time.Now()) {
		t.Errorf("dead letter times: first failed %v, died %v (produced %v)", dl.FirstFailed, dl.DiedAt, produced)
	}
	if gap := dl.DiedAt.Sub(dl.FirstFailed); gap < backoff(1)+backoff(2)-20*time.Millisecond {
		t.Errorf("first failure to death took %v, less than the backoffs %v", gap, backoff(1)+backoff(2))
	}
	if dl.SchemaVersion != 1 || string(dl.Payload) == "" || dl.ProducedAt.IsZero() {
		t.Errorf("dead letter lost its row: %+v", dl)
	}
	hg := groupAt(t, health(t, c, stream), 1, "g")
	if hg.Dead != 1 || hg.Unresolved != 1 || hg.Leased+hg.Delayed != 0 {
		t.Errorf("health after one death: %+v", hg)
	}
	// Dead is never claimed again, however long one waits.
	if ds, err := g.Claim(ctx(t), 10); err != nil || len(ds) != 0 {
		t.Errorf("claim after death returned %v (err %v)", idsOf(ds), err)
	}

	// The pull API follows the same rule: Retry past MaxAttempts buries.
	more := produceV1(t, producer[EventV1](t, c, stream), 1)
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		var d sqlstreams.Delivery[EventV1]
		eventually(t, 30*time.Second, fmt.Sprintf("attempt %d of row %d", attempt, more[0]), func() bool {
			ds, err := g.Claim(ctx(t), 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) == 1 {
				d = ds[0]
				return true
			}
			return false
		})
		if d.ID != more[0] || d.Attempt != attempt {
			t.Fatalf("claimed row %d at attempt %d, want row %d at attempt %d", d.ID, d.Attempt, more[0], attempt)
		}
		if err := d.Retry(ctx(t), 0, errTest); err != nil {
			t.Fatalf("retry: %v", err)
		}
	}
	if dl := deadLetter(t, g, more[0]); dl.Attempt != maxAttempts {
		t.Errorf("row retried %d times by hand is dead at attempt %d", maxAttempts, dl.Attempt)
	}
}

func testOutcomeDeadAtOnce(t *testing.T, c *sqlstreams.Client) {
	const stream = "c8-dead"
	g := consumer[EventV1](t, c, stream, "g", fastRetry(sqlstreams.ConsumerOptions{MaxAttempts: 5}))
	ids := produceV1(t, producer[EventV1](t, c, stream), 2)
	var rec recorder
	stop := runFor(t, g, func(_ context.Context, d sqlstreams.Delivery[EventV1]) error {
		rec.add(d)
		if d.ID == ids[0] {
			return sqlstreams.Dead(errors.New("poison message"))
		}
		return nil
	})
	dl := deadLetter(t, g, ids[0])
	eventually(t, 30*time.Second, "the row behind to be handled", func() bool { return len(rec.of(ids[1])) == 1 })
	time.Sleep(100 * time.Millisecond)
	stop()
	if n := len(rec.of(ids[0])); n != 1 {
		t.Errorf("Dead(err) row handled %d times, want 1", n)
	}
	if dl.Attempt != 1 || !strings.Contains(dl.Error, "poison message") {
		t.Errorf("dead letter: attempt %d, error %q; want 1 and the handler's error", dl.Attempt, dl.Error)
	}

	// Pull style: Delivery.Dead does the same.
	more := produceV1(t, producer[EventV1](t, c, stream), 1)
	ds, err := g.Claim(ctx(t), 10)
	if err != nil || len(ds) != 1 {
		t.Fatalf("claim: %v (err %v)", idsOf(ds), err)
	}
	if err := ds[0].Dead(ctx(t), errors.New("by hand")); err != nil {
		t.Fatal(err)
	}
	if dl := deadLetter(t, g, more[0]); dl.Attempt != 1 || !strings.Contains(dl.Error, "by hand") {
		t.Errorf("dead letter: attempt %d, error %q", dl.Attempt, dl.Error)
	}
	if ds, err := g.Claim(ctx(t), 10); err != nil || len(ds) != 0 {
		t.Errorf("claim after Dead returned %v (err %v)", idsOf(ds), err)
	}
}

func testOutcomeRetryAfter(t *testing.T, c *sqlstreams.Client) {
	const stream = "c8-retryafter"
	const delay = 400 * time.Millisecond
	// Pull style: Delivery.Retry(delay) is not claimable before delay.
	g := consumer[EventV1](t, c, stream, "pull", fastRetry(sqlstreams.ConsumerOptions{}))
	ids := produceV1(t, producer[EventV1](t, c, stream), 1)
	ds, err := g.Claim(ctx(t), 1)
	if err != nil || len(ds) != 1 {
		t.Fatalf("claim: %v (err %v)", idsOf(ds), err)
	}
	retried := time.Now()
	if err := ds[0].Retry(ctx(t), delay, errTest); err != nil {
		t.Fatal(err)
	}
	if hg := groupAt(t, health(t, c, stream), 1, "pull"); hg.Delayed != 1 || hg.Unresolved != 1 {
		t.Errorf("health of a delayed retry: %+v", hg)
	}
	var again sqlstreams.Delivery[EventV1]
	eventually(t, 30*time.Second, "the delayed retry", func() bool {
		ds, err := g.Claim(ctx(t), 1)
		// The claim decided at some instant before it returned, and the due
		// time was set after retried: returning before retried+delay proves
		// an early claim (times are stored at microsecond precision).
		returned := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 0 {
			return false
		}
		if returned.Before(retried.Add(delay - time.Millisecond)) {
			t.Fatalf("row retried with a %v delay was claimed again %v after the retry", delay, returned.Sub(retried))
		}
		again = ds[0]
		return true
	})
	if again.ID != ids[0] || again.Attempt != 2 {
		t.Errorf("delayed retry came back as row %d at attempt %d, want row %d at attempt 2", again.ID, again.Attempt, ids[0])
	}
	// No upper bound on wall-clock time here: a loaded machine may take
	// seconds per claim. A delay stored far longer than asked for fails the
	// wait above; one ignored fails the early-claim check inside it.
	if err := again.Ack(ctx(t)); err != nil {
		t.Fatal(err)
	}

	// Run: RetryAfter(d, err) overrides the (much shorter) backoff.
	run := consumer[EventV1](t, c, stream, "run", fastRetry(sqlstreams.ConsumerOptions{}))
	var rec recorder
	stop := runFor(t, run, func(_ context.Context, d sqlstreams.Delivery[EventV1]) error {
		rec.add(d)
		if d.Attempt == 1 {
			return sqlstreams.RetryAfter(delay, errTest)
		}
		return nil
	})
	eventually(t, 30*time.Second, "the second attempt", func() bool { return len(rec.of(ids[0])) >= 2 })
	time.Sleep(100 * time.Millisecond)
	stop()
	calls := rec.of(ids[0])
	if len(calls) != 2 || calls[1].attempt != 2 {
		t.Fatalf("calls %+v, want attempts 1 and 2", calls)
	}
	if gap := calls[1].at.Sub(calls[0].at); gap < delay-time.Millisecond {
		t.Errorf("RetryAfter(%v) came back after %v", delay, gap)
	}
}

func testOutcomePanic(t *testing.T, c *sqlstreams.Client) {
	const stream = "c8-panic"
	g := consumer[EventV1](t, c, stream, "g", fastRetry(sqlstreams.ConsumerOptions{MaxAttempts: 2}))
	ids := produceV1(t, producer[EventV1](t, c, stream), 2)
	var rec recorder
	stop := runFor(t, g, func(_ context.Context, d sqlstreams.Delivery[EventV1]) error {
		rec.add(d)
		if d.ID == ids[0] {
			panic("handler exploded")
		}
		if d.Attempt == 1 {
			panic("first try exploded")
		}
		return nil
	})
	dl := deadLetter(t, g, ids[0])
	eventually(t, 30*time.Second, "the second row's retry", func() bool { return len(rec.of(ids[1])) == 2 })
	time.Sleep(100 * time.Millisecond)
	stop()
	if n := len(rec.of(ids[0])); n != 2 {
		t.Errorf("always-panicking row handled %d times, want MaxAttempts = 2", n)
	}
	if dl.Attempt != 2 || !strings.Contains(dl.Error, "handler exploded") {
		t.Errorf("dead letter of a panicking handler: attempt %d, error %q", dl.Attempt, dl.Error)
	}
	if calls := rec.of(ids[1]); len(calls) != 2 || calls[1].attempt != 2 {
		t.Errorf("row that panicked once: calls %+v, want a retry at attempt 2", calls)
	}
	if hg := groupAt(t, health(t, c, stream), 1, "g"); hg.Dead != 1 || hg.Unresolved != 1 {
		t.Errorf("health: %+v, want one dead", hg)
	}
}

func testOutcomeExpiredLastAttempt(t *testing.T, c *sqlstreams.Client) {
	// A lease that expires on the last attempt counts as a failed attempt:
	// the delivery goes dead instead of being handed out again.
	const stream = "c8-expired"
	g := consumer[EventV1](t, c, stream, "g", fastRetry(sqlstreams.ConsumerOptions{MaxAttempts: 1, LeaseDuration: 200 * time.Millisecond}))
	ids := produceV1(t, producer[EventV1](t, c, stream), 1)
	ds, err := g.Claim(ctx(t), 1)
	if err != nil || len(ds) != 1 {
		t.Fatalf("claim: %v (err %v)", idsOf(ds), err)
	}
	time.Sleep(300 * time.Millisecond)
	if again, err := g.Claim(ctx(t), 1); err != nil || len(again) != 0 {
		t.Errorf("a delivery whose last attempt's lease expired was claimed again: %v (err %v)", idsOf(again), err)
	}
	dl := deadLetter(t, g, ids[0])
	if dl.Attempt != 1 || dl.Error == "" {
		t.Errorf("dead letter after an expired last lease: attempt %d, error %q", dl.Attempt, dl.Error)
	}
	if err := ds[0].Ack(ctx(t)); !errors.Is(err, sqlstreams.ErrLeaseLost) {
		t.Errorf("ack of a buried delivery: err %v, want ErrLeaseLost", err)
	}
}

func testOutcomeReplayDiscard(t *testing.T, c *sqlstreams.Client) {
	const stream = "c8-replay"
	g := consumer[EventV1](t, c, stream, "g", fastRetry(sqlstreams.ConsumerOptions{MaxAttempts: 2, LeaseDuration: settleLease}))
	ids := produceV1(t, producer[EventV1](t, c, stream), 3)
	// Bury all three: the first by exhausting its attempts.
	ds, err := g.Claim(ctx(t), 3)
	if err != nil || len(ds) != 3 {
		t.Fatalf("claim: %v (err %v)", idsOf(ds), err)
	}
	if err := ds[0].Retry(ctx(t), 0, errTest); err != nil {
		t.Fatal(err)
	}
	for _, d := range ds[1:] {
		if err := d.Dead(ctx(t), errTest); err != nil {
			t.Fatal(err)
		}
	}
	again, err := g.Claim(ctx(t), 3)
	if err != nil || len(again) != 1 || again[0].ID != ids[0] || again[0].Attempt != 2 {
		t.Fatalf("retry claim: %v (err %v)", idsOf(again), err)
	}
	if err := again[0].Retry(ctx(t), 0, errTest); err != nil {
		t.Fatal(err)
	}
	if dl := deadLetter(t, g, ids[0]); dl.Attempt != 2 {
		t.Fatalf("row %d dead at attempt %d, want 2", ids[0], dl.Attempt)
	}
	// Dead stays dead: past lease and due times, nothing is claimable.
	pastLeases(append(ds, again...)...)
	if ds, err := g.Claim(ctx(t), 10); err != nil || len(ds) != 0 {
		t.Fatalf("dead deliveries were claimed: %v (err %v)", idsOf(ds), err)
	}
	if hg := groupAt(t, health(t, c, stream), 1, "g"); hg.Dead != 3 {
		t.Errorf("health counts %d dead, want 3", hg.Dead)
	}

	// Replay: due now, attempts reset, so the row has MaxAttempts again.
	if n, err := g.Replay(ctx(t), ids[0], ids[0]+1000); err != nil || n != 1 {
		t.Fatalf("Replay(%d and an unknown id) = %d, %v; want 1", ids[0], n, err)
	}
	if n, err := g.Replay(ctx(t), ids[0]); err != nil || n != 0 {
		t.Errorf("replaying a row that is no longer dead = %d, %v; want 0", n, err)
	}
	dls, err := g.DeadLetters(ctx(t), 0, 10)
	if err != nil || !equalIDs(deadIDs(dls), ids[1:]) {
		t.Errorf("dead letters after replay: %v (err %v), want %v", deadIDs(dls), err, ids[1:])
	}
	for attempt := 1; attempt <= 2; attempt++ {
		ds, err := g.Claim(ctx(t), 10)
		if err != nil || len(ds) != 1 || ds[0].ID != ids[0] || ds[0].Attempt != attempt {
			t.Fatalf("claim %d after replay: %v (err %v), want row %d at attempt %d", attempt, idsOf(ds), err, ids[0], attempt)
		}
		if attempt == 1 {
			if err := ds[0].Retry(ctx(t), 0, errTest); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := ds[0].Ack(ctx(t)); err != nil {
			t.Fatal(err)
		}
	}
	if ds, err := g.Claim(ctx(t), 10); err != nil || len(ds) != 0 {
		t.Errorf("claim after the replayed row was acked: %v (err %v)", idsOf(ds), err)
	}

	// Discard resolves without processing.
	if n, err := g.Discard(ctx(t), ids[1]); err != nil || n != 1 {
		t.Fatalf("Discard(%d) = %d, %v; want 1", ids[1], n, err)
	}
	dls, err = g.DeadLetters(ctx(t), 0, 10)
	if err != nil || !equalIDs(deadIDs(dls), ids[2:]) {
		t.Errorf("dead letters after discard: %v (err %v), want %v", deadIDs(dls), err, ids[2:])
	}
	// ReplayAll and DiscardAll act on every dead delivery of the group.
	if n, err := g.ReplayAll(ctx(t)); err != nil || n != 1 {
		t.Fatalf("ReplayAll = %d, %v; want 1", n, err)
	}
	ds, err = g.Claim(ctx(t), 10)
	if err != nil || len(ds) != 1 || ds[0].ID != ids[2] || ds[0].Attempt != 1 {
		t.Fatalf("claim after ReplayAll: %v (err %v)", idsOf(ds), err)
	}
	if err := ds[0].Dead(ctx(t), errTest); err != nil {
		t.Fatal(err)
	}
	if n, err := g.DiscardAll(ctx(t)); err != nil || n != 1 {
		t.Fatalf("DiscardAll = %d, %v; want 1", n, err)
	}
	time.Sleep(300 * time.Millisecond)
	if ds, err := g.Claim(ctx(t), 10); err != nil || len(ds) != 0 {
		t.Errorf("discarded deliveries were claimed: %v (err %v)", idsOf(ds), err)
	}
	hg := groupAt(t, health(t, c, stream), 1, "g")
	if hg.Unresolved != 0 || hg.Dead != 0 || hg.Unread != 0 {
		t.Errorf("health after every row was acked or discarded: %+v", hg)
	}
}

func deadIDs(dls []sqlstreams.DeadLetter) []int64 {
	out := make([]int64, len(dls))
	for i, dl := range dls {
		out[i] = dl.ID
	}
	return out
}
