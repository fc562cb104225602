package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Raw is a driver's bare baseline: the strongest way its database does the
// same work without sqlstreams, so that every figure is a ratio to what the
// database can do, measured in the same run on the same database.
type Raw interface {
	// Insert writes rows in one transaction, the fastest way the database
	// offers for a batch (PostgreSQL: one unnest INSERT; MariaDB: one
	// multi-row INSERT; SQLite: a prepared multi-row INSERT in one
	// transaction), into a table with the columns and indexes of a stream
	// log (created on first use). Without rows it only creates the table,
	// so that the benchmarks can do that before their timers start.
	Insert(ctx context.Context, rows []driver.AppendRow) error
	// Consume is a bare consumer of the log of stream streamID (one
	// partition): in one transaction it reads the next up to limit rows after
	// its cursor (kept in a table of its own, created on first use), decoding
	// every column and passing each payload to decode, and moves the cursor
	// past them. It returns how many rows it read. With a limit of 0 it only
	// creates its table and reads nothing, so that the benchmarks can do that
	// before their timers start.
	Consume(ctx context.Context, streamID int64, limit int, decode func(payload []byte) error) (int, error)
	// ConsumeLimit is the strictest raw consumer (issue #28): as few
	// statements and round trips as the database allows for one batch (one
	// statement on PostgreSQL), reading the next up to limit rows after a
	// cursor of its own (not Consume's) and moving it, decoding nothing. It
	// is the database's limit for a consumer's batch, the figure x-limit
	// divides by. With a limit of 0 it only creates its cursor.
	ConsumeLimit(ctx context.Context, streamID int64, limit int) (int, error)
	Close() error
}

// RawCopier is a Raw that can also bulk-load rows (PostgreSQL COPY), an
// even stronger insert baseline than Insert.
type RawCopier interface {
	Copy(ctx context.Context, rows []driver.AppendRow) error
}

// BenchTarget is a Target with its raw baseline.
type BenchTarget struct {
	Target
	// NewRaw opens the baseline on a namespace.
	NewRaw func(tb testing.TB, namespace string) Raw
	// Copy says the baselines are RawCopiers: Produce100 then also measures
	// raw-copy.
	Copy bool
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

// decodeBench is what a consumer does with a payload: decode it into the
// message type.
func decodeBench(payload []byte) error {
	var e benchEvent
	return json.Unmarshal(payload, &e)
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

// benchBatch is the batch size of every batched benchmark: one op of
// Produce100 and Consume100 is 100 messages, so -benchtime 200x moves 20,000
// messages through each.
const benchBatch = 100

// Benchmark runs the standard benchmarks (docs/benchmarks.md). Each sqlstreams
// figure runs interleaved with its raw baselines, op for op (Run: between
// two halves of its baseline), so that both see the same load on a shared
// machine;
// each reports msgs/s, the baselines' raw-msgs/s (copy-msgs/s) and x-raw
// (x-copy), the sqlstreams rate over the baseline's:
//
//   - Produce100: ProduceBatch of 100 against Raw.Insert of the same rows
//     (and, where the baseline has it, RawCopier.Copy); raw-encode is the
//     insert with each value encoded to JSON first, as sqlstreams does (a
//     figure to read the gap by, not a target).
//   - Consume100/claim-ack: Claim(100) and Ack of the batch, against
//     Raw.Consume (read the next 100 after a cursor, decode, move the cursor,
//     in one transaction) and Raw.ConsumeLimit (the same in as few
//     statements as the database allows, decoding nothing): x-raw and
//     x-limit. Every Consume100 row has both.
//   - Consume100/ack-and-claim: AckAndClaim(100) of the batch the op before
//     claimed, against Raw.Consume: one commit per batch on both sides.
//   - Consume100/run-100handlers: Run with 100 handlers, against both raw
//     consumes and a hand-written Claim(100)+Ack loop of another group on the
//     same stream (x-claim-ack, which issue #28 wants never below 1).
//   - Consume100/run-100handlers-4partitions: Run with 100 handlers over 4
//     partitions against Run over 1 (x-1partition; runPartitions).
//   - ProduceSingle: one message per call, against a one-row Raw.Insert.
//   - EndToEndLatency: produce one message, wait for a Run handler to see it.
//
// One op of the batched benchmarks is 100 messages: -benchtime 200x moves
// 20,000 messages through each side.
func Benchmark(b *testing.B, target BenchTarget) {
	b.Run("Produce100", func(b *testing.B) {
		raw := openRaw(b, target, target.NewNamespace(b))
		defer raw.Close()
		c := benchClient(b, target.Target, target.NewNamespace(b))
		p := producer[benchEvent](b, c, "bench")
		rows := precompute(b.N, func(i int) []driver.AppendRow { return rawRows(i*benchBatch, benchBatch) })
		msgs := precompute(b.N, func(i int) []sqlstreams.Message[benchEvent] {
			msgs := make([]sqlstreams.Message[benchEvent], benchBatch)
			for j := range msgs {
				msgs[j] = sqlstreams.NewMessage(newBenchEvent(i*benchBatch+j), sqlstreams.Key(fmt.Sprintf("k%d", i*benchBatch+j)), sqlstreams.RoutingKey("eu.web"))
			}
			return msgs
		})
		// raw-encode is what a raw producer of typed values does: encode each
		// to JSON, then the same insert. It is not a target; it shows how much
		// of the gap to raw is the encoding that raw is spared.
		encoded := precompute(b.N, func(i int) []driver.AppendRow { return rawRows(i*benchBatch, benchBatch) })
		values := precompute(b.N, func(i int) []benchEvent {
			vs := make([]benchEvent, benchBatch)
			for j := range vs {
				vs[j] = newBenchEvent(i*benchBatch + j)
			}
			return vs
		})
		baselines := []baseline{
			{"raw", func(i int) error { return raw.Insert(context.Background(), rows[i%len(rows)]) }},
			{"raw-encode", func(i int) error {
				rs, vs := encoded[i%len(encoded)], values[i%len(values)]
				for j := range rs {
					payload, err := json.Marshal(vs[j])
					if err != nil {
						return err
					}
					rs[j].Payload = payload
				}
				return raw.Insert(context.Background(), rs)
			}},
		}
		if target.Copy {
			copier, ok := raw.(RawCopier)
			if !ok {
				b.Fatalf("BenchTarget.Copy is set but %T has no Copy method", raw)
			}
			baselines = append(baselines, baseline{"copy", func(i int) error { return copier.Copy(context.Background(), rows[i%len(rows)]) }})
		}
		interleave(b, benchBatch, func(i int) error {
			_, err := p.ProduceBatch(context.Background(), msgs[i%len(msgs)]...)
			return err
		}, baselines...)
	})
	b.Run("Consume100", func(b *testing.B) { benchConsume(b, target) })
	b.Run("ProduceSingle", func(b *testing.B) {
		raw := openRaw(b, target, target.NewNamespace(b))
		defer raw.Close()
		c := benchClient(b, target.Target, target.NewNamespace(b))
		p := producer[benchEvent](b, c, "bench")
		interleave(b, 1, func(i int) error {
			_, err := p.Produce(context.Background(), newBenchEvent(i), sqlstreams.Key(fmt.Sprintf("k%d", i)), sqlstreams.RoutingKey("eu.web"))
			return err
		}, baseline{"raw", func(i int) error { return raw.Insert(context.Background(), rawRows(i, 1)) }})
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

// benchConsume runs Benchmark's Consume100 rows.
func benchConsume(b *testing.B, target BenchTarget) {
	b.Run("claim-ack", func(b *testing.B) {
		_, cons, raws := consumeSetup(b, target, "bench-group", &sqlstreams.ConsumerOptions{LeaseDuration: time.Minute})
		interleave(b, benchBatch, func(int) error { return claimAck(cons) }, raws...)
	})
	b.Run("ack-and-claim", func(b *testing.B) {
		// Claim(100) and Ack as one call: each op acks the batch the
		// one before it claimed, in the transaction that claims the
		// next, one commit per batch as the raw loop has.
		_, cons, raws := consumeSetup(b, target, "bench-group", &sqlstreams.ConsumerOptions{LeaseDuration: time.Minute})
		var ds []sqlstreams.Delivery[benchEvent]
		interleave(b, benchBatch, func(int) error {
			next, err := cons.AckAndClaim(context.Background(), benchBatch, ds...)
			if err != nil {
				return err
			}
			if len(next) != benchBatch {
				return fmt.Errorf("claim returned %d deliveries, want %d", len(next), benchBatch)
			}
			ds = next
			return nil
		}, raws...)
		if err := cons.Ack(context.Background(), ds...); err != nil {
			b.Fatal(err)
		}
	})
	b.Run("run-100handlers", func(b *testing.B) {
		// The handler model with its defaults, but for 100 concurrent
		// handlers: each delivery acked as its handler returns.
		c, cons, raws := consumeSetup(b, target, "bench-run", &sqlstreams.ConsumerOptions{Concurrency: 100})
		// The hand-written loop Run must never fall below (issue #28):
		// Claim(100) and Ack, one batch at a time, by a group of its
		// own on the same stream.
		loop := consumer[benchEvent](b, c, "bench", "bench-loop", &sqlstreams.ConsumerOptions{LeaseDuration: time.Minute})
		runBracketed(b, cons, append(raws, baseline{"claim-ack", func(int) error { return claimAck(loop) }})...)
	})
	b.Run("run-100handlers-4partitions", func(b *testing.B) { runPartitions(b, target.Target, 4) })
	if os.Getenv(benchCostEnv) != "" {
		b.Run("run-cost", func(b *testing.B) { runCost(b, target) })
	}
}

// consumeSetup is a Consume100 row's set-up: a client with a one-partition
// stream "bench" of b.N batches, a consumer of it as group, and the raw
// consume baselines on rows of their own, checked (rawDrained) and closed
// when the row ends.
func consumeSetup(b *testing.B, target BenchTarget, group string, opts *sqlstreams.ConsumerOptions) (*sqlstreams.Client, *sqlstreams.Consumer[benchEvent], []baseline) {
	c, _, _ := setupConsume(b, target.Target, b.N*benchBatch)
	raw, rawStream := rawConsumer(b, target)
	b.Cleanup(func() { _ = raw.Close() })
	b.Cleanup(func() { rawDrained(b, raw, rawStream) })
	return c, consumer[benchEvent](b, c, "bench", group, opts), rawConsumes(raw, rawStream)
}

// claimAck is one op of a hand-written consumer: Claim(100), then Ack of
// the batch.
func claimAck(cons *sqlstreams.Consumer[benchEvent]) error {
	ds, err := cons.Claim(context.Background(), benchBatch)
	if err != nil {
		return err
	}
	if len(ds) != benchBatch {
		return fmt.Errorf("claim returned %d deliveries, want %d", len(ds), benchBatch)
	}
	return cons.Ack(context.Background(), ds...)
}

// baseline is one raw op, labelled for its metrics.
type baseline struct {
	label string
	op    func(i int) error
}

// interleave runs b.N ops of op and of each baseline, alternating op by op,
// timing each side on its own, and reports the rates and ratios.
func interleave(b *testing.B, perOp int, op func(i int) error, baselines ...baseline) {
	b.Helper()
	spent := make([]time.Duration, len(baselines)+1)
	b.ResetTimer()
	for i := range b.N {
		for j, bl := range baselines {
			start := time.Now()
			if err := bl.op(i); err != nil {
				b.Fatalf("%s: %v", bl.label, err)
			}
			spent[j+1] += time.Since(start)
		}
		start := time.Now()
		if err := op(i); err != nil {
			b.Fatal(err)
		}
		spent[0] += time.Since(start)
	}
	b.StopTimer()
	report(b, perOp, spent, baselines)
}

func report(b *testing.B, perOp int, spent []time.Duration, baselines []baseline) {
	r := float64(b.N*perOp) / spent[0].Seconds()
	b.ReportMetric(r, "msgs/s")
	for j, bl := range baselines {
		rr := float64(b.N*perOp) / spent[j+1].Seconds()
		b.ReportMetric(rr, bl.label+"-msgs/s")
		b.ReportMetric(r/rr, "x-"+bl.label)
	}
}

// runBracketed measures Run over b.N*benchBatch deliveries, and each
// baseline over as many rows, half just before Run and half just after, so
// that a change of load during the round weighs on both sides alike. (Run
// cannot be interleaved op for op, and pausing it at a gate lets it claim
// and ack off the clock.)
func runBracketed(b *testing.B, cons *sqlstreams.Consumer[benchEvent], bls ...baseline) {
	spent := make([]time.Duration, len(bls)+1)
	rawOps := func(from, to int) {
		for j, bl := range bls {
			start := time.Now()
			for op := from; op < to; op++ {
				if err := bl.op(op); err != nil {
					b.Fatalf("%s: %v", bl.label, err)
				}
			}
			spent[j+1] += time.Since(start)
		}
	}
	b.ResetTimer()
	rawOps(0, b.N/2)
	spent[0] = runUntil(b, cons, b.N*benchBatch)
	rawOps(b.N/2, b.N)
	b.StopTimer()
	report(b, benchBatch, spent, bls)
}

// runPartitions measures Run with 100 handlers over a stream of partitions
// partitions against Run over a stream of one, each side over b.N*benchBatch
// deliveries in two Runs of half as many, in the order one, many, many, one,
// so that a change of load and what a Run costs to start weigh on both alike.
// Each stream holds half the deliveries, and each half is a consumer group
// of its own. It reports msgs/s, 1partition-msgs/s and x-1partition, which
// issue #28 wants at 1 or more: partitions are the unit that should scale.
func runPartitions(b *testing.B, target Target, partitions int) {
	c := benchClient(b, target, target.NewNamespace(b))
	half := b.N * benchBatch / 2
	one, many := setupStream(b, c, "bench-1", 1, half), setupStream(b, c, "bench-n", partitions, half)
	run := func(info sqlstreams.StreamInfo, group string) *sqlstreams.Consumer[benchEvent] {
		return consumer[benchEvent](b, c, info.Name, group, &sqlstreams.ConsumerOptions{Concurrency: 100})
	}
	order := []struct {
		side int
		cons *sqlstreams.Consumer[benchEvent]
	}{{1, run(one, "first")}, {0, run(many, "first")}, {0, run(many, "second")}, {1, run(one, "second")}}
	spent := make([]time.Duration, 2)
	b.ResetTimer()
	for _, r := range order {
		spent[r.side] += runUntil(b, r.cons, half)
	}
	b.StopTimer()
	report(b, benchBatch, spent, []baseline{{label: "1partition"}})
}

// runUntil runs cons until its handlers have returned n deliveries, and
// returns how long that took from Run's start.
func runUntil(b *testing.B, cons *sqlstreams.Consumer[benchEvent], n int) time.Duration {
	total := int64(n)
	var handled atomic.Int64
	all := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		done <- cons.Run(ctx, func(ctx context.Context, d sqlstreams.Delivery[benchEvent]) error {
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
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	return took
}

// rawConsumer opens a baseline on a stream of its own holding b.N batches,
// for Raw.Consume.
func rawConsumer(b *testing.B, target BenchTarget) (Raw, int64) {
	_, info, ns := setupConsume(b, target.Target, b.N*benchBatch)
	raw := target.NewRaw(b, ns)
	if _, err := raw.Consume(context.Background(), info.ID, 0, decodeBench); err != nil {
		b.Fatal(err)
	}
	if _, err := raw.ConsumeLimit(context.Background(), info.ID, 0); err != nil {
		b.Fatal(err)
	}
	return raw, info.ID
}

// openRaw opens a baseline for inserts, its table created.
func openRaw(b *testing.B, target BenchTarget, ns string) Raw {
	raw := target.NewRaw(b, ns)
	if err := raw.Insert(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	return raw
}

// rawDrained fails b unless both baselines' cursors are past every row of
// streamID: each read its rows once, none twice.
func rawDrained(b *testing.B, raw Raw, streamID int64) {
	n, err := raw.Consume(context.Background(), streamID, benchBatch, decodeBench)
	m, errLimit := raw.ConsumeLimit(context.Background(), streamID, benchBatch)
	if err := errors.Join(err, errLimit); err != nil || n != 0 || m != 0 {
		b.Fatalf("after the run the raw consumers read %d and %d more rows (%v), want none: a cursor did not move", n, m, err)
	}
}

// rawConsumes are a consume's two baselines on the rows of streamID, each
// with a cursor of its own: raw (Raw.Consume, which decodes as a consumer
// does) and limit (Raw.ConsumeLimit, the database's limit).
func rawConsumes(raw Raw, streamID int64) []baseline {
	batch := func(label string, consume func() (int, error)) baseline {
		return baseline{label, func(int) error {
			n, err := consume()
			if err == nil && n != benchBatch {
				err = fmt.Errorf("%s consume read %d rows, want %d", label, n, benchBatch)
			}
			return err
		}}
	}
	return []baseline{
		batch("raw", func() (int, error) { return raw.Consume(context.Background(), streamID, benchBatch, decodeBench) }),
		batch("limit", func() (int, error) { return raw.ConsumeLimit(context.Background(), streamID, benchBatch) }),
	}
}

func benchClient(b *testing.B, target Target, ns string) *sqlstreams.Client {
	drv, err := target.Open(ns)
	if err != nil {
		b.Fatal(err)
	}
	opts := append([]sqlstreams.ClientOption{sqlstreams.WithMaintenanceInterval(0), sqlstreams.WithLogger(testLogger(b))}, traceOption(b)...)
	c, err := sqlstreams.Open(context.Background(), drv, opts...)
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

// setupConsume creates a one-partition stream of n rows on a new namespace.
func setupConsume(b *testing.B, target Target, n int) (*sqlstreams.Client, sqlstreams.StreamInfo, string) {
	ns := target.NewNamespace(b)
	c := benchClient(b, target, ns)
	return c, setupStream(b, c, "bench", 1, n), ns
}

// setupStream creates stream name with partitions partitions and n rows,
// each keyed, so that they spread across the partitions.
func setupStream(b *testing.B, c *sqlstreams.Client, name string, partitions, n int) sqlstreams.StreamInfo {
	info, err := c.Stream[benchEvent](name).Create(context.Background(), &sqlstreams.StreamOptions{Partitions: partitions})
	if err != nil {
		b.Fatal(err)
	}
	p := producer[benchEvent](b, c, name)
	for start := 0; start < n; start += 1000 {
		msgs := make([]sqlstreams.Message[benchEvent], min(1000, n-start))
		for j := range msgs {
			msgs[j] = sqlstreams.NewMessage(newBenchEvent(start+j), sqlstreams.Key(fmt.Sprintf("k%d", start+j)), sqlstreams.RoutingKey("eu.web"))
		}
		if _, err := p.ProduceBatch(context.Background(), msgs...); err != nil {
			b.Fatal(err)
		}
	}
	return info
}
