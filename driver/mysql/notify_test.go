package mysql_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/mysql"
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

// A consumer on one client hears what another client on the database
// (another process, as far as the server knows) produced without waiting
// for its poll: Run polls here once an hour, so only the driver's watch of
// the stream's marks can bring the message in within the test's bound.
func TestWakeAcrossClients(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := newDatabase(t)
	hook := idleClaims{idle: make(chan struct{}, 1)}
	open := func(opts ...sqlstreams.ClientOption) *sqlstreams.Client {
		c, err := sqlstreams.Open(ctx, mysql.Open(ns), append(opts, sqlstreams.WithMaintenanceInterval(0))...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	consumerSide, producerSide := open(sqlstreams.WithMiddleware(hook)), open()
	if _, err := consumerSide.Stream[wakeEvent]("wake").Create(ctx, &sqlstreams.StreamOptions{Partitions: 3}); err != nil {
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
			select {
			case got <- d.Value.N:
			default: // a later message of the loop below
			}
			return nil
		})
	}()
	p, err := producerSide.Stream[wakeEvent]("wake").Producer().Register(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Produce once Run has claimed and found nothing: from then on only a
	// wake-up brings the message in before the hour is up. The watch's first
	// read may come after the first message (and take it as where the marks
	// stand), so messages go until one is handled.
	select {
	case <-hook.idle:
	case <-time.After(time.Minute):
		t.Fatal("Run made no claim within a minute")
	}
	deadline := time.After(time.Minute)
	for n := 1; ; n++ {
		if _, err := p.Produce(ctx, wakeEvent{N: n}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-got:
		case <-time.After(5 * time.Second):
			continue
		case <-deadline:
			t.Fatal("no message produced by the other client was handled within a minute; Run polls once an hour, so no wake-up came")
		}
		break
	}
	stop()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v", err)
	}
}

// BenchmarkMarks is the cost of one read of a stream's marks, which a
// stream's watch makes four times per PollInterval of its consumers
// (docs/benchmarks.md, "MariaDB wake-ups"), on a log of 10,000 rows over
// 1 and 16 partitions:
//
//	GOTOOLCHAIN=go1.27.3 go test -run '^$' -bench 'BenchmarkMarks' ./driver/mysql
func BenchmarkMarks(b *testing.B) {
	for _, parts := range []int{1, 16} {
		b.Run(fmt.Sprintf("partitions-%d", parts), func(b *testing.B) {
			ctx := context.Background()
			d := mysql.Open(newDatabase(b))
			b.Cleanup(func() { _ = d.Close() })
			if err := d.Migrate(ctx); err != nil {
				b.Fatal(err)
			}
			st, err := d.CreateStream(ctx, driver.CreateStreamParams{Config: driver.StreamConfig{Name: "marks", Partitions: parts, CreatedAt: time.Now()}})
			if err != nil {
				b.Fatal(err)
			}
			for i := range 100 {
				rows := make([]driver.AppendRow, 100)
				for j := range rows {
					rows[j] = driver.AppendRow{Partition: (i*100 + j) % parts, SchemaVersion: 1, RoutingKey: "r", Payload: []byte(`{}`), ProducedAt: time.Now()}
				}
				if _, err := d.Append(ctx, driver.AppendParams{Stream: st, Rows: rows}); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				if _, err := mysql.Marks(ctx, d, st.ID); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
