package conformance

import (
	"context"
	"errors"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() { register("API_WakeAcrossClients", testWakeAcrossClients) }

// idleClaims signals each claim of Run's that found nothing: Run then
// waits for its poll or a wake-up.
type idleClaims struct {
	sqlstreams.MiddlewareDefaults
	idle chan struct{}
}

func (h idleClaims) Claimed(_ context.Context, e sqlstreams.ClaimEvent) {
	if e.Source == sqlstreams.ClaimSourceRun && e.Err == nil && len(e.Deliveries) == 0 {
		select {
		case h.idle <- struct{}{}:
		default:
		}
	}
}

// On a driver that declares Notify, a Run on one client hears what another
// client (another process, as far as the database knows) produced without
// waiting for its poll: Run polls once an hour here, so only the driver's
// wake-up (NOTIFY, SQLite's watch of its write-ahead log, MySQL's watch of
// the stream's newest id) can bring the message in; a minute is the failure
// detector.
func testWakeAcrossClients(t *testing.T, h *harness) {
	drv, err := h.target.Open(h.ns(t))
	if err != nil {
		t.Fatal(err)
	}
	notifies := drv.Capabilities().Notify
	_ = drv.Close()
	if !notifies {
		return
	}
	const stream = "wake-across-clients"
	hook := idleClaims{idle: make(chan struct{}, 1)}
	consumerSide, producerSide := h.client(t, sqlstreams.WithMiddleware(hook)), h.client(t)
	if _, err := consumerSide.Stream[EventV1](stream).Create(ctx(t), &sqlstreams.StreamOptions{Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	cons := consumer[EventV1](t, consumerSide, stream, "g", &sqlstreams.ConsumerOptions{PollInterval: time.Hour})
	got := make(chan int, 1)
	runCtx, stop := context.WithCancel(ctx(t))
	done := make(chan error, 1)
	go func() {
		done <- cons.Run(runCtx, func(_ context.Context, d sqlstreams.Delivery[EventV1]) error {
			select {
			case got <- d.Value.Seq:
			default: // a later message of the loop below
			}
			return nil
		})
	}()
	p := producer[EventV1](t, producerSide, stream)
	// Produce once Run has claimed and found nothing: from then on only a
	// wake-up brings a message in before the hour is up. A driver's watch
	// may start after the first message (and take it as where the stream
	// stands), so messages go until one is handled.
	select {
	case <-hook.idle:
	case <-time.After(time.Minute):
		t.Fatal("Run made no claim within a minute")
	}
	giveUp := time.After(time.Minute)
	for seq := 1; ; seq++ {
		if _, err := p.Produce(ctx(t), EventV1{Seq: seq}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-got:
		case <-time.After(5 * time.Second):
			continue
		case <-giveUp:
			t.Fatal("no message produced by the other client was handled within a minute; Run polls once an hour, so no wake-up came")
		}
		break
	}
	stop()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v", err)
	}
}
