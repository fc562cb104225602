package otelsqlstreams_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	otelsqlstreams "github.com/sqlstreams/sqlstreams/contrib/otel"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/driver/sqlite"
)

// noopConfig is the middleware on no-op providers: what an application
// that installs it but exports nothing pays.
func noopConfig() *otelsqlstreams.Config {
	return &otelsqlstreams.Config{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: noop.NewMeterProvider(), Propagator: testProp}
}

func benchProducer(b *testing.B, opts ...sqlstreams.ClientOption) *sqlstreams.Producer[OrderV1] {
	ctx := context.Background()
	c, err := sqlstreams.Open(ctx, sqlite.Open(filepath.Join(b.TempDir(), "bench.db")), opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	p, err := c.Stream[OrderV1]("bench").Producer().Register(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// passThrough is a produce middleware that does nothing: it measures what
// core's seam costs on its own.
type passThrough struct{ sqlstreams.MiddlewareDefaults }

func (passThrough) Produce(ctx context.Context, _ *sqlstreams.ProduceCall, next func(context.Context) ([]int64, error)) ([]int64, error) {
	return next(ctx)
}

// BenchmarkProduce compares single Produce on SQLite without middleware,
// with a middleware that does nothing (core's seam alone), and with this
// one on no-op providers (what an application that installs it but exports
// nothing pays). The producers take turns within each iteration, in a
// rotating order, so that load on the machine hits them alike; it reports
// each one's time per produce and the ratios to the bare one.
func BenchmarkProduce(b *testing.B) {
	ctx := context.Background()
	ps := []*sqlstreams.Producer[OrderV1]{
		benchProducer(b),
		benchProducer(b, sqlstreams.WithMiddleware(passThrough{})),
		benchProducer(b, otelsqlstreams.Option(noopConfig())),
	}
	var total [3]time.Duration
	i := 0
	for b.Loop() {
		for k := range ps {
			j := (i + k) % len(ps)
			start := time.Now()
			if _, err := ps[j].Produce(ctx, OrderV1{ID: "o"}); err != nil {
				b.Fatal(err)
			}
			total[j] += time.Since(start)
		}
		i++
	}
	n := float64(b.N)
	b.ReportMetric(float64(total[0].Nanoseconds())/n, "bare-ns/produce")
	b.ReportMetric(float64(total[1].Nanoseconds())/n, "seam-ns/produce")
	b.ReportMetric(float64(total[2].Nanoseconds())/n, "otel-ns/produce")
	b.ReportMetric(float64(total[1])/float64(total[0]), "seam/bare")
	b.ReportMetric(float64(total[2])/float64(total[0]), "otel/bare")
}
