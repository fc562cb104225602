package conformance

import (
	"context"
	"sync"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() { register("API_WakeDuringClaim", testWakeDuringClaim) }

// produceOnEmptyClaim produces one message from inside Run's claim each
// time a claim of Run comes back empty, until it has produced n: the
// producer's wake-up lands while the claim is still running, after the
// claim read the database.
type produceOnEmptyClaim struct {
	sqlstreams.MiddlewareDefaults
	t        testing.TB
	p        *sqlstreams.Producer[EventV1]
	mu       sync.Mutex
	n, total int
}

func (h *produceOnEmptyClaim) Claimed(ctx context.Context, e sqlstreams.ClaimEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e.Source != sqlstreams.ClaimSourceRun || len(e.Deliveries) > 0 || e.Err != nil || h.n == h.total {
		return
	}
	h.n++
	if _, err := h.p.Produce(context.WithoutCancel(ctx), EventV1{Seq: h.n}); err != nil {
		h.t.Errorf("produce from the claim hook: %v", err)
	}
}

// A wake-up that lands while Run's claim is running is not lost: the claim
// did not see the new message, and Run claims again at once instead of
// waiting for its poll. The poll interval is an hour, so only the wake-up
// can bring each message in; a minute is the failure detector.
func testWakeDuringClaim(t *testing.T, h *harness) {
	const stream, total = "wake-during-claim", 3
	c := h.client(t)
	hook := &produceOnEmptyClaim{t: t, p: producer[EventV1](t, c, stream), total: total}
	cons := consumer[EventV1](t, c, stream, "g", &sqlstreams.ConsumerOptions{PollInterval: time.Hour,
		Middleware: []sqlstreams.Middleware{hook}})
	got := make(chan int, total)
	rctx, cancel := context.WithCancel(ctx(t))
	done := make(chan error, 1)
	go func() {
		done <- cons.Run(rctx, func(_ context.Context, d sqlstreams.Delivery[EventV1]) error {
			got <- d.Value.Seq
			return nil
		})
	}()
	giveUp := time.After(time.Minute)
	for i := 1; i <= total; i++ {
		select {
		case seq := <-got:
			if seq != i {
				t.Fatalf("handled message %d; want %d", seq, i)
			}
		case <-giveUp:
			t.Fatalf("handled %d of %d messages within a minute: a wake-up during a claim was lost (the poll interval is an hour)", i-1, total)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run returned %v", err)
	}
}
