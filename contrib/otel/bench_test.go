package otelsqlstreams_test

import (
	"context"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	otelsqlstreams "github.com/sqlstreams/sqlstreams/contrib/otel"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/driver/sqlite"
)

// BenchmarkProduce compares single Produce on SQLite without the middleware
// and with it on no-op providers (what an application that installs it but
// exports nothing pays).
func BenchmarkProduce(b *testing.B) {
	for _, with := range []bool{false, true} {
		name := "bare"
		if with {
			name = "otel-noop"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			var opts []sqlstreams.ClientOption
			if with {
				opts = append(opts, otelsqlstreams.Option(&otelsqlstreams.Config{TracerProvider: tracenoop.NewTracerProvider(),
					MeterProvider: noop.NewMeterProvider(), Propagator: propagation.TraceContext{}}))
			}
			c, err := sqlstreams.Open(ctx, sqlite.Open(filepath.Join(b.TempDir(), "bench.db")), opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			p, err := c.Stream[OrderV1]("bench").Producer().Register(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := p.Produce(ctx, OrderV1{ID: "o"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
