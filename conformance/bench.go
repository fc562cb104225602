package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Raw is a driver's bare baseline: what the database itself does for the
// same rows without sqlstreams, so that every figure is a ratio measured in
// the same run on the same database.
type Raw interface {
	// InsertRows writes rows with one bare multi-row INSERT into a table
	// shaped like a stream log (created on first use).
	InsertRows(ctx context.Context, rows []driver.AppendRow) error
	// ReadRows reads up to limit rows of a stream's log with ids above
	// afterID in id order, decoding every column, and returns how many rows
	// it read and the last id.
	ReadRows(ctx context.Context, streamID int64, afterID int64, limit int) (n int, lastID int64, err error)
	Close() error
}

// BenchTarget is a Target with its raw baseline.
type BenchTarget struct {
	Target
	// NewRaw opens the baseline on a namespace.
	NewRaw func(tb testing.TB, namespace string) Raw
}

// benchEvent is the benchmarks' message: a few fields of typical size.
type benchEvent struct {
	OrderID  string  `json:"order_id"`
	Customer string  `json:"customer"`
	Cents    int64   `json:"cents"`
	Currency string  `json:"currency"`
	Items    []int64 `json:"items"`
}

func (benchEvent) SchemaVersion() int { return 1 }

func newBenchEvent(i int) benchEvent {
	return benchEvent{OrderID: fmt.Sprintf("order-%08d", i), Customer: fmt.Sprintf("cust-%05d", i%9973), Cents: int64(i * 7),
		Currency: "EUR", Items: []int64{int64(i), int64(i + 1), int64(i + 2)}}
}

// rawRows builds the rows sqlstreams would append for n benchEvents.
func rawRows(start, n int) []driver.AppendRow {
	rows := make([]driver.AppendRow, n)
	now := time.Now().UTC()
	for i := range rows {
		payload, _ := json.Marshal(newBenchEvent(start + i))
		rows[i] = driver.AppendRow{SchemaVersion: 1, Key: fmt.Sprintf("k%d", start+i), HasKey: true, RoutingKey: "eu.web", Payload: payload, ProducedAt: now}
	}
	return rows
}

const benchBatch = 100

// Benchmark runs the standard benchmarks (DESIGN.md §8): each sqlstreams
// figure has its raw baseline as a sibling sub-benchmark, and reports
// msgs/s. Compare like with like: ProduceBatch/sqlstreams against
// ProduceBatch/raw-insert, ClaimAck/* against ClaimAck/raw-read.
func Benchmark(b *testing.B, target BenchTarget) {
	b.Run("ProduceBatch100", func(b *testing.B) {
		b.Run("raw-insert", func(b *testing.B) {
			raw := target.NewRaw(b, target.NewNamespace(b))
			defer raw.Close()
			batches := precompute(b.N, func(i int) []driver.AppendRow { return rawRows(i*benchBatch, benchBatch) })
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if err := raw.InsertRows(context.Background(), batches[i%len(batches)]); err != nil {
					b.Fatal(err)
				}
			}
			reportRate(b, benchBatch)
		})
		b.Run("sqlstreams", func(b *testing.B) {
			c := benchClient(b, target.Target, target.NewNamespace(b))
			p := producer[benchEvent](b, c, "bench")
			batches := precompute(b.N, func(i int) []sqlstreams.Message[benchEvent] {
				msgs := make([]sqlstreams.Message[benchEvent], benchBatch)
				for j := range msgs {
					msgs[j] = sqlstreams.NewMessage(newBenchEvent(i*benchBatch+j), sqlstreams.Key(fmt.Sprintf("k%d", i*benchBatch+j)), sqlstreams.RoutingKey("eu.web"))
				}
				return msgs
			})
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if _, err := p.ProduceBatch(context.Background(), batches[i%len(batches)]...); err != nil {
					b.Fatal(err)
				}
			}
			reportRate(b, benchBatch)
		})
	})
	b.Run("ProduceSingle", func(b *testing.B) {
		b.Run("raw-insert", func(b *testing.B) {
			raw := target.NewRaw(b, target.NewNamespace(b))
			defer raw.Close()
			for i := 0; b.Loop(); i++ {
				if err := raw.InsertRows(context.Background(), rawRows(i, 1)); err != nil {
					b.Fatal(err)
				}
			}
			reportRate(b, 1)
		})
		b.Run("sqlstreams", func(b *testing.B) {
			c := benchClient(b, target.Target, target.NewNamespace(b))
			p := producer[benchEvent](b, c, "bench")
			for i := 0; b.Loop(); i++ {
				if _, err := p.Produce(context.Background(), newBenchEvent(i), sqlstreams.Key(fmt.Sprintf("k%d", i)), sqlstreams.RoutingKey("eu.web")); err != nil {
					b.Fatal(err)
				}
			}
			reportRate(b, 1)
		})
	})
	b.Run("ClaimAck", func(b *testing.B) {
		// Each iteration handles one message; rows are produced before the timer.
		setup := func(b *testing.B, partitions int) (*sqlstreams.Client, sqlstreams.StreamInfo, string) {
			return setupClaimAck(b, target.Target, partitions)
		}
		b.Run("raw-read", func(b *testing.B) {
			_, info, ns := setup(b, 1)
			raw := target.NewRaw(b, ns)
			defer raw.Close()
			b.ResetTimer()
			var after int64
			for read := 0; read < b.N; {
				n, last, err := raw.ReadRows(context.Background(), info.ID, after, benchBatch)
				if err != nil {
					b.Fatal(err)
				}
				if n == 0 {
					b.Fatalf("raw read found %d of %d rows", read, b.N)
				}
				read, after = read+n, last
			}
			reportRate(b, 1)
		})
		for _, consumers := range []int{1, 4} {
			b.Run(fmt.Sprintf("sqlstreams-%dconsumer", consumers), func(b *testing.B) {
				c, _, _ := setup(b, consumers)
				var handled atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				for range consumers {
					cons := consumer[benchEvent](b, c, "bench", "bench-group", &sqlstreams.ConsumerOptions{LeaseDuration: time.Minute})
					wg.Go(func() {
						for handled.Load() < int64(b.N) {
							ds, err := cons.Claim(context.Background(), benchBatch)
							if err != nil {
								b.Error(err)
								return
							}
							if len(ds) == 0 {
								continue
							}
							if err := cons.Ack(context.Background(), ds...); err != nil {
								b.Error(err)
								return
							}
							handled.Add(int64(len(ds)))
						}
					})
				}
				wg.Wait()
				reportRate(b, 1)
			})
		}
	})
	b.Run("Run", func(b *testing.B) {
		// The handler model: Run with 8 concurrent handlers, each row acked as
		// its handler returns. Rows are produced before the timer.
		c, _, _ := setupClaimAck(b, target.Target, 1)
		cons := consumer[benchEvent](b, c, "bench", "bench-run", &sqlstreams.ConsumerOptions{Concurrency: 8, BatchSize: benchBatch, PollInterval: 5 * time.Millisecond})
		var handled atomic.Int64
		all := make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		b.ResetTimer()
		done := make(chan error, 1)
		go func() {
			done <- cons.Run(ctx, func(ctx context.Context, d sqlstreams.Delivery[benchEvent]) error {
				if handled.Add(1) == int64(b.N) {
					close(all)
				}
				return nil
			})
		}()
		<-all
		b.StopTimer()
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		reportRate(b, 1)
	})
	b.Run("EndToEndLatency", func(b *testing.B) {
		c := benchClient(b, target.Target, target.NewNamespace(b))
		p := producer[benchEvent](b, c, "bench")
		cons := consumer[benchEvent](b, c, "bench", "latency", &sqlstreams.ConsumerOptions{PollInterval: 50 * time.Millisecond})
		got := make(chan time.Time, 1)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = cons.Run(ctx, func(ctx context.Context, d sqlstreams.Delivery[benchEvent]) error {
				got <- time.Now()
				return nil
			})
		}()
		lat := make([]time.Duration, 0, b.N)
		for i := 0; b.Loop(); i++ {
			start := time.Now()
			if _, err := p.Produce(context.Background(), newBenchEvent(i)); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, (<-got).Sub(start))
		}
		cancel()
		<-done
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	})
}

func benchClient(b *testing.B, target Target, ns string) *sqlstreams.Client {
	drv, err := target.Open(ns)
	if err != nil {
		b.Fatal(err)
	}
	c, err := sqlstreams.Open(context.Background(), drv, sqlstreams.WithMaintenanceInterval(0), sqlstreams.WithLogger(testLogger(b)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	return c
}

// precompute builds up to 64 distinct inputs so that building them stays
// out of the timed loop.
func precompute[T any](n int, build func(i int) T) []T {
	out := make([]T, min(max(n, 1), 64))
	for i := range out {
		out[i] = build(i)
	}
	return out
}

func reportRate(b *testing.B, perOp int) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N*perOp)/s, "msgs/s")
	}
}

// setupClaimAck creates a stream of b.N rows over partitions on a new
// namespace.
func setupClaimAck(b *testing.B, target Target, partitions int) (*sqlstreams.Client, sqlstreams.StreamInfo, string) {
	ns := target.NewNamespace(b)
	c := benchClient(b, target, ns)
	info, err := c.Stream[benchEvent]("bench").Create(context.Background(), &sqlstreams.StreamOptions{Partitions: partitions})
	if err != nil {
		b.Fatal(err)
	}
	p := producer[benchEvent](b, c, "bench")
	for start := 0; start < b.N; start += 1000 {
		msgs := make([]sqlstreams.Message[benchEvent], min(1000, b.N-start))
		for j := range msgs {
			msgs[j] = sqlstreams.NewMessage(newBenchEvent(start+j), sqlstreams.Key(fmt.Sprintf("k%d", start+j)))
		}
		if _, err := p.ProduceBatch(context.Background(), msgs...); err != nil {
			b.Fatal(err)
		}
	}
	return c, info, ns
}
