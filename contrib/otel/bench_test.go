package otelsqlstreams_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	otelsqlstreams "github.com/sqlstreams/sqlstreams/contrib/otel"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// noopConfig is the middleware on no-op providers: what an application
// that installs it but exports nothing pays. BenchmarkProduce, the cost
// beside a real produce on SQLite, is in .tests/drivers/otel.
func noopConfig() *otelsqlstreams.Config {
	return &otelsqlstreams.Config{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: noop.NewMeterProvider(),
		Propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})}
}

// BenchmarkMiddlewareProduce is the middleware's own cost per single
// produce on no-op providers, without the database.
func BenchmarkMiddlewareProduce(b *testing.B) {
	m := otelsqlstreams.NewMiddleware(noopConfig())
	ctx := context.Background()
	msg := &sqlstreams.OutgoingMessage{SchemaVersion: 1, PayloadSize: 40}
	call := &sqlstreams.ProduceCall{Stream: sqlstreams.StreamInfo{Name: "bench", Partitions: 1}, Messages: []*sqlstreams.OutgoingMessage{msg}}
	next := func(context.Context) ([]int64, error) { return []int64{1}, nil }
	b.ReportAllocs()
	for b.Loop() {
		msg.Headers = map[string]string{}
		if _, err := m.Produce(ctx, call, next); err != nil {
			b.Fatal(err)
		}
	}
}
