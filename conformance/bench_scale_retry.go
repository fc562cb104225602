package conformance

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// benchRetryBacklogClaim measures a Claim(100) that finds one due retry
// behind a backlog of 1k and 100k retries due in an hour (and no new rows).
// Finding what is due must read the due deliveries, not the whole backlog
// of the group. One op is the claim; the due retry is then retried at once
// (delay 0), so that it is due again for the next op, and that Retry is
// not in ms/op. The timed ops follow scaleWarmup untimed ones.
func benchRetryBacklogClaim(b *testing.B, target BenchTarget) {
	for _, size := range []struct {
		name    string
		backlog int
	}{{"retries=1k", 1_000}, {"retries=100k", 100_000}} {
		b.Run(size.name, func(b *testing.B) {
			c := benchClient(b, target.Target, target.NewNamespace(b))
			info, err := c.Stream[benchEvent]("retry").Create(context.Background(), &sqlstreams.StreamOptions{Partitions: 1})
			if err != nil {
				b.Fatal(err)
			}
			cons := consumer[benchEvent](b, c, "retry", "scale", &sqlstreams.ConsumerOptions{LeaseDuration: time.Minute, MaxAttempts: 1 << 20})
			loadRetryBacklog(b, c.Driver(), info, "scale", size.backlog)
			hot, err := producer[benchEvent](b, c, "retry").Produce(context.Background(), newBenchEvent(size.backlog))
			if err != nil {
				b.Fatal(err)
			}
			errAgain := errors.New("scale benchmark: again")
			ds, err := cons.Claim(context.Background(), benchBatch)
			if err == nil && (len(ds) != 1 || ds[0].ID != hot) {
				err = fmt.Errorf("first claim returned %d deliveries, want the new row %d alone", len(ds), hot)
			}
			if err == nil {
				err = ds[0].Retry(context.Background(), 0, errAgain)
			}
			if err != nil {
				b.Fatal(err)
			}
			var spent time.Duration
			op := func() {
				start := time.Now()
				ds, err := cons.Claim(context.Background(), benchBatch)
				spent += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				if len(ds) != 1 || ds[0].ID != hot {
					b.Fatalf("claim returned %d deliveries, want the due retry %d alone", len(ds), hot)
				}
				if err := ds[0].Retry(context.Background(), 0, errAgain); err != nil {
					b.Fatal(err)
				}
			}
			for range scaleWarmup {
				op()
			}
			spent = 0
			for b.Loop() {
				op()
			}
			if b.N > 0 {
				b.ReportMetric(float64(spent.Microseconds())/1000/float64(b.N), "ms/op")
			}
		})
	}
}

// loadRetryBacklog appends n rows to the stream and, through the driver,
// claims them all for group and fails each with a retry due in an hour,
// in batches.
func loadRetryBacklog(b *testing.B, drv driver.Driver, info sqlstreams.StreamInfo, group string, n int) {
	b.Helper()
	loadKeyed(b, drv, info, n)
	stream, err := drv.LookupStream(context.Background(), driver.LookupStreamParams{Name: info.Name})
	if err != nil {
		b.Fatal(err)
	}
	const batch = 1000
	for done := 0; done < n; {
		now := time.Now().UTC()
		token := fmt.Sprintf("scale-backlog-%d", done)
		res, err := drv.Claim(context.Background(), driver.ClaimParams{Stream: stream, Group: group, Member: driver.Member{SchemaVersion: 1},
			Decodes: []int{1}, Limit: min(batch, n-done), Token: token, Holder: "scale-benchmark", Now: now, LeaseUntil: now.Add(time.Minute)})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Deliveries) == 0 {
			b.Fatalf("backlog: claimed %d of %d rows, then nothing", done, n)
		}
		fs := make([]driver.Failure, len(res.Deliveries))
		for i, d := range res.Deliveries {
			fs[i] = driver.Failure{Lease: driver.Lease{ID: d.ID, Token: token}, Error: "scale benchmark: later", Due: now.Add(time.Hour)}
		}
		if _, err := drv.Fail(context.Background(), driver.FailParams{StreamID: stream.ID, Group: group, Failures: fs, Now: now}); err != nil {
			b.Fatal(err)
		}
		done += len(res.Deliveries)
	}
}
