package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/driver/sqlite"
)

type wakeEvent struct {
	N int `json:"n"`
}

func (wakeEvent) SchemaVersion() int { return 1 }

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

// A consumer on one client hears what another client on the file (another
// process, as far as SQLite knows) produced without waiting for its poll:
// Run polls here once an hour, so only the driver's wake-up, a watch on the
// write-ahead log, can bring the message in within the test's bound.
func TestWakeAcrossClients(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "wake.db")
	hook := idleClaims{idle: make(chan struct{}, 1)}
	open := func(opts ...sqlstreams.ClientOption) *sqlstreams.Client {
		c, err := sqlstreams.Open(ctx, sqlite.Open(path), append(opts, sqlstreams.WithMaintenanceInterval(0))...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	consumerSide, producerSide := open(sqlstreams.WithMiddleware(hook)), open()
	if !sqlite.Open(path).Capabilities().Notify {
		t.Error("a file database does not declare Notify")
	}
	if sqlite.Open(":memory:").Capabilities().Notify {
		t.Error("an in-memory database declares Notify")
	}
	if _, err := consumerSide.Stream[wakeEvent]("wake").Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	cons, err := consumerSide.Stream[wakeEvent]("wake").Consumer("g").Register(ctx, &sqlstreams.ConsumerOptions{PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan int, 1)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- cons.Run(runCtx, func(_ context.Context, d sqlstreams.Delivery[wakeEvent]) error {
			got <- d.Value.N
			return nil
		})
	}()
	p, err := producerSide.Stream[wakeEvent]("wake").Producer().Register(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Produce once Run has claimed and found nothing: from then on only a
	// wake-up brings the message in before the hour is up.
	select {
	case <-hook.idle:
	case <-time.After(time.Minute):
		t.Fatal("Run made no claim within a minute")
	}
	if _, err := p.Produce(ctx, wakeEvent{N: 7}); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-got:
		if n != 7 {
			t.Errorf("handled %d, want 7", n)
		}
	case <-time.After(time.Minute):
		t.Fatal("the message produced by the other client was not handled within a minute; Run polls once an hour, so no wake-up came")
	}
	stop()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v", err)
	}
}
