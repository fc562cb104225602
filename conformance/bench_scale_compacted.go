package conformance

import (
	"context"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// scaleLoadBatch is how many rows one Append of a scale benchmark's set-up
// writes: large, so that a million rows load in seconds.
const scaleLoadBatch = 5000

// scaleWarmup is how many untimed ops a scale benchmark runs after its
// set-up: the first ops after a bulk load pay for cold caches, and on
// MariaDB the first hundred or so claims after 100k deliveries were failed
// at once take two to five times as long as later ones, which at 20 timed
// ops (make bench-scale) would show as growth that is not there.
const scaleWarmup = 50

// benchCompactedClaim measures one Claim(100) and its Ack on a compacted
// stream whose keys each have one row (so every row is a head), at 100k and
// 1M keys. Whether a row is its key's head must be one index lookup per
// row: a check that reads the stream's heads grows with the key count.
// The timed ops follow scaleWarmup untimed ones.
func benchCompactedClaim(b *testing.B, target BenchTarget) {
	for _, size := range []struct {
		name string
		keys int
	}{{"keys=100k", 100_000}, {"keys=1M", 1_000_000}} {
		b.Run(size.name, func(b *testing.B) {
			c := benchClient(b, target.Target, target.NewNamespace(b))
			info, err := c.Stream[benchEvent]("compacted").Create(context.Background(), &sqlstreams.StreamOptions{Compacted: true, Partitions: 1})
			if err != nil {
				b.Fatal(err)
			}
			loadKeyed(b, c.Driver(), info, size.keys)
			cons := consumer[benchEvent](b, c, "compacted", "scale", &sqlstreams.ConsumerOptions{LeaseDuration: time.Minute})
			claimed := 0
			op := func() {
				ds, err := cons.Claim(context.Background(), benchBatch)
				if err != nil {
					b.Fatal(err)
				}
				if len(ds) != benchBatch {
					b.Fatalf("claim %d returned %d deliveries, want %d", claimed/benchBatch+1, len(ds), benchBatch)
				}
				if err := cons.Ack(context.Background(), ds...); err != nil {
					b.Fatal(err)
				}
				claimed += len(ds)
			}
			for range scaleWarmup {
				op()
			}
			for b.Loop() {
				op()
			}
			reportMsPerOp(b)
		})
	}
}

// loadKeyed appends n rows with distinct keys k0..k<n-1> to the stream's
// partition 0 through the driver, in batches of scaleLoadBatch.
func loadKeyed(b *testing.B, drv driver.Driver, info sqlstreams.StreamInfo, n int) {
	b.Helper()
	stream, err := drv.LookupStream(context.Background(), driver.LookupStreamParams{Name: info.Name})
	if err != nil {
		b.Fatal(err)
	}
	for start := 0; start < n; start += scaleLoadBatch {
		if _, err := drv.Append(context.Background(), driver.AppendParams{Stream: stream, Rows: rawRows(start, min(scaleLoadBatch, n-start))}); err != nil {
			b.Fatalf("load rows %d..: %v", start, err)
		}
	}
}

// reportMsPerOp reports the mean cost of one op in milliseconds, the unit
// of the scale table.
func reportMsPerOp(b *testing.B) {
	if b.N > 0 {
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
	}
}
