package sqlstreams

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/memdriver"
)

// BenchmarkRunPipeline is what Run itself costs per delivery, on the
// in-memory driver: claims, decoding, dispatch to 100 handlers that return
// at once, acks. One op is 20,000 messages; msgs/s is the rate from Run's
// start to its last handler. No database takes part, so this is the ceiling
// core puts on every driver's Run (docs/benchmarks.md):
//
//	GOTOOLCHAIN=go1.27.3 go test -run '^$' -bench RunPipeline -benchtime 3x -count 5 ./core
func BenchmarkRunPipeline(b *testing.B) {
	const perOp = 20000
	client := runClient(b, memdriver.Open())
	produceOrders(b, client, perOp*b.N)
	cons, err := client.Stream[benchOrder]("bench").Consumer("run").Register(context.Background(), &ConsumerOptions{Concurrency: 100})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	took := runUntil(b, cons, perOp*b.N)
	b.StopTimer()
	b.ReportMetric(float64(perOp*b.N)/took.Seconds(), "msgs/s")
}

// runClient opens a client on drv without background maintenance, closed
// when the test ends.
func runClient(tb testing.TB, drv driver.Driver, opts ...ClientOption) *Client {
	tb.Helper()
	client, err := Open(context.Background(), drv, append(opts, WithMaintenanceInterval(0))...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { client.Close() })
	return client
}

// produceOrders produces n benchOrders on the stream "bench", 100 a batch.
func produceOrders(tb testing.TB, client *Client, n int) {
	tb.Helper()
	ctx := context.Background()
	p, err := client.Stream[benchOrder]("bench").Producer().Register(ctx, nil)
	if err != nil {
		tb.Fatal(err)
	}
	for done := 0; done < n; done += 100 {
		batch := make([]Message[benchOrder], min(100, n-done))
		for i := range batch {
			id := done + i
			batch[i] = NewMessage(benchOrder{OrderID: fmt.Sprintf("order-%08d", id), Customer: fmt.Sprintf("cust-%05d", id%9973),
				Cents: int64(7 * id), Currency: "EUR", Items: []int64{1, 2, 3}}, RoutingKey("eu.web"))
		}
		if _, err := p.ProduceBatch(ctx, batch...); err != nil {
			tb.Fatal(err)
		}
	}
}

// runUntil runs cons with handlers that return at once until total
// deliveries were handled, stops it, and returns how long that took from
// Run's start.
func runUntil(tb testing.TB, cons *Consumer[benchOrder], total int) time.Duration {
	tb.Helper()
	var handled atomic.Int64
	all := make(chan struct{})
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		done <- cons.Run(ctx, func(context.Context, Delivery[benchOrder]) error {
			if handled.Add(1) == int64(total) {
				close(all)
			}
			return nil
		})
	}()
	select {
	case <-all:
	case err := <-done:
		tb.Fatalf("Run returned %v after %d of %d deliveries", err, handled.Load(), total)
	}
	took := time.Since(start)
	stop()
	if err := <-done; err != nil {
		tb.Fatal(err)
	}
	return took
}
