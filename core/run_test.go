package sqlstreams

import (
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
		{name: "windows under 100ms are not measured", auto: true, base: 10, lease: 30 * time.Second,
			steps: []step{{0, 0, 10}, {50 * time.Millisecond, 1000, 10}, {99 * time.Millisecond, 2000, 10}, {100 * time.Millisecond, 2000, 1000}}},
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
