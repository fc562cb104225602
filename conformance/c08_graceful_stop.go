package conformance

import (
	"context"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() { register("C8_GracefulStop", testGracefulStop) }

// C8 (outcomes across a stop): when Run's context ends, the running handler
// finishes and its outcome is recorded, while deliveries Run had claimed but
// not started are given back at once, without costing an attempt: the next
// consumer gets them at attempt 1, without waiting for a lease to expire.
func testGracefulStop(t *testing.T, h *harness) {
	c := h.client(t)
	p := producer[EventV1](t, c, "c8-stop")
	ids := produceV1(t, p, 5)
	cons := consumer[EventV1](t, c, "c8-stop", "g", fastRetry(sqlstreams.ConsumerOptions{
		Concurrency: 1, BatchSize: 5, LeaseDuration: time.Hour, ShutdownTimeout: 30 * time.Second}))

	started, release := make(chan int64, 5), make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() {
		runErr <- cons.Run(ctx, func(ctx context.Context, d sqlstreams.Delivery[EventV1]) error {
			started <- d.ID
			<-release
			return nil
		})
	}()
	first := <-started
	if first != ids[0] {
		t.Errorf("with Concurrency 1 the first handled row is %d, want the first claimed, %d", first, ids[0])
	}
	eventually(t, 30*time.Second, "Run to hold the whole batch", func() bool {
		g := groupAt(t, health(t, c, "c8-stop"), 1, "g")
		return g.Leased == 5
	})
	cancel()
	time.Sleep(100 * time.Millisecond) // the stop is under way; the handler still runs
	close(release)
	select {
	case err := <-runErr:
		if err != nil {
			t.Fatalf("Run returned %v after a stop through its context, want nil", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return after its context ended")
	}
	if n := len(started); n != 0 {
		t.Errorf("%d more handlers started after the stop", n)
	}
	g := groupAt(t, health(t, c, "c8-stop"), 1, "g")
	if g.Leased != 0 || g.Delayed != 4 {
		t.Errorf("after the stop: %d leased, %d delayed; want the 4 unstarted deliveries given back (0 leased, 4 delayed)", g.Leased, g.Delayed)
	}
	next := consumer[EventV1](t, h.client(t), "c8-stop", "g", fastRetry(sqlstreams.ConsumerOptions{}))
	got := drain(t, next)
	if !equalIDs(idsOf(got), ids[1:]) {
		t.Fatalf("the next consumer got %v, want the 4 given-back rows %v", idsOf(got), ids[1:])
	}
	for _, d := range got {
		if d.Attempt != 1 {
			t.Errorf("given-back row %d came at attempt %d, want 1: it was never started", d.ID, d.Attempt)
		}
	}
}
