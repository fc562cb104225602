package conformance

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// WakeLatency measures produce-to-handler latency between two clients on
// one database (as two processes), so that only the driver's wake-ups
// across processes, or else Run's poll every 50 ms, bring each message in.
// open returns a new client on that database, each call its own. Messages
// go one at a time while the consumer waits idle; it reports p50-µs and
// p99-µs. A driver runs it with and without its wake-ups.
func WakeLatency(b *testing.B, open func(testing.TB) *sqlstreams.Client) {
	pc, cc := open(b), open(b)
	p := producer[benchEvent](b, pc, "latency")
	cons := consumer[benchEvent](b, cc, "latency", "g", &sqlstreams.ConsumerOptions{PollInterval: 50 * time.Millisecond})
	got := make(chan time.Time, 1)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = cons.Run(ctx, func(context.Context, sqlstreams.Delivery[benchEvent]) error {
			got <- time.Now()
			return nil
		})
	})
	time.Sleep(200 * time.Millisecond)
	lat := make([]time.Duration, 0, b.N)
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		if _, err := p.Produce(context.Background(), newBenchEvent(i)); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, (<-got).Sub(start))
		// Produce the next message while the consumer waits idle, not while
		// it is still acking the last one.
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
