package sqlstreams_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/memdriver"
)

// runEvent is the drivers' benchmark message (conformance's benchEvent).
type runEvent struct {
	OrderID  string  `json:"order_id"`
	Customer string  `json:"customer"`
	Cents    int64   `json:"cents"`
	Currency string  `json:"currency"`
	Items    []int64 `json:"items"`
}

func (runEvent) SchemaVersion() int { return 1 }

// BenchmarkRunPipeline is what Run itself costs per delivery, on the
// in-memory driver: claims, decoding, dispatch to 100 handlers that return
// at once, acks. One op is 20,000 messages; msgs/s is the rate from Run's
// start to its last handler. No database takes part, so this is the ceiling
// core puts on every driver's Run (docs/benchmarks.md):
//
//	GOTOOLCHAIN=go1.27.3 go test -run '^$' -bench RunPipeline -benchtime 3x -count 5 ./core
func BenchmarkRunPipeline(b *testing.B) {
	const perOp = 20000
	ctx := context.Background()
	client, err := sqlstreams.Open(ctx, memdriver.Open(), sqlstreams.WithMaintenanceInterval(0))
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	p, err := client.Stream[runEvent]("bench").Producer().Register(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	batch := make([]sqlstreams.Message[runEvent], 100)
	for n := 0; n < perOp*b.N; n += len(batch) {
		for i := range batch {
			batch[i] = sqlstreams.NewMessage(runEvent{OrderID: fmt.Sprintf("order-%08d", n+i), Customer: fmt.Sprintf("cust-%05d", (n+i)%9973),
				Cents: int64(7 * (n + i)), Currency: "EUR", Items: []int64{1, 2, 3}}, sqlstreams.RoutingKey("eu.web"))
		}
		if _, err := p.ProduceBatch(ctx, batch...); err != nil {
			b.Fatal(err)
		}
	}
	cons, err := client.Stream[runEvent]("bench").Consumer("run").Register(ctx, &sqlstreams.ConsumerOptions{Concurrency: 100})
	if err != nil {
		b.Fatal(err)
	}
	total := int64(perOp * b.N)
	var handled atomic.Int64
	all := make(chan struct{})
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	b.ResetTimer()
	start := time.Now()
	go func() {
		done <- cons.Run(runCtx, func(context.Context, sqlstreams.Delivery[runEvent]) error {
			if handled.Add(1) == total {
				close(all)
			}
			return nil
		})
	}()
	select {
	case <-all:
	case err := <-done:
		b.Fatalf("Run returned %v after %d of %d deliveries", err, handled.Load(), total)
	}
	took := time.Since(start)
	b.StopTimer()
	stop()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(total)/took.Seconds(), "msgs/s")
}
