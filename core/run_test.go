package sqlstreams

import (
	"errors"
	"testing"
	"time"
)

type sizingEvent struct{}

func (sizingEvent) SchemaVersion() int { return 1 }

func sizingRunner(batchDefault bool, base int, lease time.Duration) *runner[sizingEvent] {
	c := &Consumer[sizingEvent]{group: group{opts: ConsumerOptions{LeaseDuration: lease}, autoBatch: batchDefault}}
	r := &runner[sizingEvent]{c: c, base: base, limit: base, maxLimit: base}
	if batchDefault {
		r.maxLimit = max(base, maxAutoBatch)
	}
	return r
}

// TestRunResize: with BatchSize left to its default, what Run holds follows
// the handlers' rate (a quarter of the lease's worth, at most 250ms), stays
// between 2×Concurrency and maxAutoBatch, and comes back down when handlers
// slow; a BatchSize the caller set is never changed.
func TestRunResize(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	type step struct {
		after    time.Duration // since t0
		resolved int64         // deliveries done by then
		want     int           // limit after resize
	}
	for _, tc := range []struct {
		name  string
		auto  bool
		base  int
		lease time.Duration
		steps []step
	}{
		{name: "fast handlers grow to the cap", auto: true, base: 200, lease: 30 * time.Second,
			// 10,000/s, smoothed from 0: 5,000/s × 250ms = 1,250, capped at 1,000.
			steps: []step{{0, 0, 200}, {100 * time.Millisecond, 1000, 1000}}},
		{name: "moderate rate sizes to 250ms of work", auto: true, base: 4, lease: 30 * time.Second,
			// 2,400/s smoothed from 0 is 1,200/s: 300 rows; then 2,400/s held: (1200+2400)/2 = 1,800/s: 450.
			steps: []step{{0, 0, 4}, {100 * time.Millisecond, 240, 300}, {200 * time.Millisecond, 480, 450}}},
		{name: "a short lease shortens the horizon", auto: true, base: 4, lease: 200 * time.Millisecond,
			// 1,200/s × 50ms (a quarter of the lease) = 60.
			steps: []step{{0, 0, 4}, {100 * time.Millisecond, 240, 60}}},
		{name: "slow handlers keep the base", auto: true, base: 200, lease: 30 * time.Second,
			steps: []step{{0, 0, 200}, {time.Second, 10, 200}}},
		{name: "shrinks again when handlers slow", auto: true, base: 10, lease: 30 * time.Second,
			// 5,000/s -> 1,000; then nothing done for 1s: 2,500/s -> 625; then 1,250/s -> 312.
			steps: []step{{0, 0, 10}, {100 * time.Millisecond, 1000, 1000}, {1100 * time.Millisecond, 1000, 625}, {2100 * time.Millisecond, 1000, 312}}},
		{name: "windows under 100ms are not measured", auto: true, base: 200, lease: 30 * time.Second,
			// 199 in 100ms: 1,990/s smoothed from 0 is 995/s: 248.
			steps: []step{{0, 0, 200}, {50 * time.Millisecond, 100, 200}, {99 * time.Millisecond, 199, 200}, {100 * time.Millisecond, 199, 248}}},
		{name: "unless they hold the budget's worth", auto: true, base: 200, lease: 30 * time.Second,
			// 200 in 20ms: 10,000/s smoothed from 0 is 5,000/s: 1,250, capped at 1,000.
			steps: []step{{0, 0, 200}, {10 * time.Millisecond, 199, 200}, {20 * time.Millisecond, 200, 1000}}},
		{name: "the budget's worth as it grew", auto: true, base: 200, lease: 30 * time.Second,
			// 1,000 then; 999 more in 10ms are not measured, 1,000 in 11ms are:
			// (5,000 + 90,909)/2 per second, capped at 1,000 again.
			steps: []step{{0, 0, 200}, {20 * time.Millisecond, 200, 1000}, {30 * time.Millisecond, 1199, 1000}, {31 * time.Millisecond, 1200, 1000}}},
		{name: "a BatchSize set by the caller is kept", auto: false, base: 50, lease: 30 * time.Second,
			steps: []step{{0, 0, 50}, {100 * time.Millisecond, 100000, 50}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := sizingRunner(tc.auto, tc.base, tc.lease)
			for i, s := range tc.steps {
				r.resolved.Store(s.resolved)
				r.resize(t0.Add(s.after))
				if r.limit != s.want {
					t.Fatalf("step %d (%v, %d done): limit %d, want %d", i, s.after, s.resolved, r.limit, s.want)
				}
			}
		})
	}
}

// TestRunLinger: the completer waits for the acks of held deliveries still
// running, returns as soon as every held delivery's ack is pending, and
// reports a stop.
func TestRunLinger(t *testing.T) {
	t.Parallel()
	newRunner := func() *runner[sizingEvent] {
		r := sizingRunner(true, 4, time.Minute)
		r.held = map[*lease]struct{}{}
		r.ackWake, r.ackStop = make(chan struct{}, 1), make(chan struct{})
		r.lastWrite = time.Hour // the timer cannot end the wait in this test
		return r
	}
	t.Run("returns once all held acks are pending", func(t *testing.T) {
		t.Parallel()
		r := newRunner()
		ls := []*lease{{}, {}, {}}
		for _, l := range ls {
			r.held[l] = struct{}{}
		}
		r.acks = ls[:1]
		done := make(chan bool, 1)
		go func() { done <- r.linger() }()
		for _, l := range ls[1:] {
			if !r.enqueueAck(l) {
				t.Fatal("completer shut")
			}
		}
		select {
		case stop := <-done:
			if stop {
				t.Fatal("linger reported a stop")
			}
		case <-time.After(30 * time.Second):
			t.Fatal("linger still waiting with every held ack pending")
		}
		if got := len(r.acks); got != 3 {
			t.Fatalf("%d acks pending, want 3", got)
		}
	})
	t.Run("does not wait with nothing else held", func(t *testing.T) {
		t.Parallel()
		r := newRunner()
		l := &lease{}
		r.held[l] = struct{}{}
		r.acks = []*lease{l}
		if r.linger() {
			t.Fatal("linger reported a stop")
		}
	})
	t.Run("reports a stop", func(t *testing.T) {
		t.Parallel()
		r := newRunner()
		r.held[&lease{}], r.held[&lease{}] = struct{}{}, struct{}{}
		r.acks = []*lease{{}}
		close(r.ackStop)
		if !r.linger() {
			t.Fatal("linger did not report the stop")
		}
	})
}

// TestRunHandoff: while the claim loop waits for budget, the completer hands
// it a batch of acks that frees enough of it (for the claim to record in its
// own transaction) instead of writing them; smaller batches, batches met
// while the loop is not waiting, at a stop, or after a claim whose outcome
// was unknown are written by the completer; a failed claim gives its acks
// back; and what the loop took but never claimed with goes back when it
// ends.
func TestRunHandoff(t *testing.T) {
	t.Parallel()
	newRunner := func(held int) (*runner[sizingEvent], []*lease) {
		r := sizingRunner(true, 10, time.Minute)
		r.limit = 10
		r.held = map[*lease]struct{}{}
		r.freed = make(chan struct{}, 1)
		r.ackWake, r.ackStop, r.acksDone = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
		ls := make([]*lease, held)
		for i := range ls {
			ls[i] = &lease{id: int64(i + 1)}
			r.held[ls[i]] = struct{}{}
		}
		return r, ls
	}
	t.Run("need", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct{ held, want int }{{10, 5}, {8, 3}, {6, 1}, {5, 1}, {1, 1}} {
			r, _ := newRunner(0)
			r.waitForBudget(tc.held)
			if r.claimNeed != tc.want {
				t.Errorf("limit 10, %d held: the claim loop needs %d done, want %d", tc.held, r.claimNeed, tc.want)
			}
		}
	})
	t.Run("decisions", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name                 string
			waiting, stop, unkwn bool
			batch                int
			want                 bool
		}{
			{name: "enough for the waiting claim", waiting: true, batch: 5, want: true},
			{name: "more than enough", waiting: true, batch: 10, want: true},
			{name: "too few", waiting: true, batch: 4},
			{name: "the loop is not waiting", batch: 10},
			{name: "stopping", waiting: true, stop: true, batch: 10},
			{name: "after an unknown outcome", waiting: true, unkwn: true, batch: 10},
		} {
			r, ls := newRunner(10)
			if tc.waiting {
				r.waitForBudget(10) // needs 5
			}
			if got := r.handOff(ls[:tc.batch], tc.stop, tc.unkwn); got != tc.want {
				t.Errorf("%s: handed %v, want %v", tc.name, got, tc.want)
			}
			if got := len(r.takeHandoff()); (got > 0) != tc.want || (tc.want && got != tc.batch) {
				t.Errorf("%s: the claim loop took %d acks", tc.name, got)
			}
			if r.claimNeed != 0 {
				t.Errorf("%s: still waiting after takeHandoff", tc.name)
			}
		}
	})
	t.Run("the completer hands instead of writing", func(t *testing.T) {
		t.Parallel()
		// The completer lingers until every held delivery's ack is queued
		// (lastWrite is too long for its timer to end the wait), then, with
		// the claim loop waiting, hands the batch over and wakes the loop.
		// (Writing it would need a database this runner lacks.)
		r, ls := newRunner(10)
		r.lastWrite = time.Hour
		r.waitForBudget(10)
		go r.complete()
		for _, l := range ls {
			if !r.enqueueAck(l) {
				t.Fatal("completer shut")
			}
		}
		select {
		case <-r.freed:
		case <-time.After(30 * time.Second):
			t.Fatal("the claim loop was not woken")
		}
		got := r.takeHandoff()
		close(r.ackStop)
		<-r.acksDone
		if len(got) != len(ls) || len(r.acks) != 0 {
			t.Fatalf("handed %d acks, %d left queued; want all %d handed", len(got), len(r.acks), len(ls))
		}
	})
	t.Run("a failed claim gives its acks back", func(t *testing.T) {
		t.Parallel()
		r, ls := newRunner(10)
		r.recordedWithClaim(ls[:3], nil, errors.New("claim failed"))
		if len(r.acks) != 3 || r.ackUnknown {
			t.Fatalf("%d acks queued (unknown %v), want 3, not unknown", len(r.acks), r.ackUnknown)
		}
		if len(r.held) != 10 {
			t.Fatalf("%d held, want 10: acks given back are still held", len(r.held))
		}
		r.recordedWithClaim(ls[3:5], nil, ErrOutcomeUnknown)
		if len(r.acks) != 5 || !r.ackUnknown {
			t.Fatalf("%d acks queued (unknown %v), want 5 and unknown", len(r.acks), r.ackUnknown)
		}
	})
	t.Run("a claim that recorded its acks is done with them", func(t *testing.T) {
		t.Parallel()
		r, ls := newRunner(10)
		r.recordedWithClaim(ls[:4], nil, nil)
		if len(r.held) != 6 || len(r.acks) != 0 || r.resolved.Load() != 4 {
			t.Fatalf("%d held, %d queued, %d resolved; want 6, 0, 4", len(r.held), len(r.acks), r.resolved.Load())
		}
	})
	t.Run("acks the loop did not claim with go back when it ends", func(t *testing.T) {
		t.Parallel()
		r, ls := newRunner(10)
		r.waitForBudget(10)
		if !r.handOff(ls, false, false) {
			t.Fatal("not handed")
		}
		r.claimLoopDone()
		if len(r.acks) != 10 || len(r.handoff) != 0 {
			t.Fatalf("%d queued, %d handed; want 10 queued", len(r.acks), len(r.handoff))
		}
		if r.handOff(ls, false, false) {
			t.Fatal("handed to a claim loop that ended")
		}
	})
}

// TestRunClaimBudget: the claim loop claims once half its budget is free and
// takes all that is free; on an engine in this process it takes the larger
// half at most and claims again once the smaller half is free, so that an
// odd budget fills in two claims.
func TestRunClaimBudget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		inProcess   bool
		limit, held int
		waits       bool
		size        int
	}{
		{false, 3, 0, false, 3},
		{false, 3, 1, false, 2},
		{false, 3, 2, true, 1},
		{false, 1000, 499, false, 501},
		{false, 1000, 501, true, 499},
		{true, 3, 0, false, 2},
		{true, 3, 2, false, 1},
		{true, 3, 3, true, 1},
		{true, 1000, 0, false, 500},
		{true, 1000, 500, false, 500},
		{true, 1000, 501, true, 499},
		{true, 1, 0, false, 1},
		{true, 1, 1, true, 1},
	} {
		r := sizingRunner(false, tc.limit, time.Minute)
		r.inProcess = tc.inProcess
		if waits, size := r.waits(tc.held), r.claimSize(tc.held); waits != tc.waits || size != tc.size {
			t.Errorf("in process %v, budget %d, %d held: waits %v, claims %d; want %v, %d", tc.inProcess, tc.limit, tc.held, waits, size, tc.waits, tc.size)
		}
	} // What the completer is told to free (waitForBudget) is exactly what
	// ends the wait, for every budget and both kinds of engine.
	for _, inProcess := range []bool{false, true} {
		for limit := 1; limit <= 12; limit++ {
			for held := 1; held <= limit; held++ {
				r := sizingRunner(false, limit, time.Minute)
				r.inProcess = inProcess
				if !r.waits(held) {
					continue
				}
				r.waitForBudget(held)
				need := r.claimNeed
				if r.waits(held-need) || (need > 1 && !r.waits(held-need+1)) {
					t.Errorf("in process %v, budget %d, %d held: told to free %d, which does not end the wait exactly", inProcess, limit, held, need)
				}
			}
		}
	}
}
