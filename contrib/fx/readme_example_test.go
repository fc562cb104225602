package sqlstreamsfx_test

import (
	"time"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"

	sqlstreamsfx "github.com/sqlstreams/sqlstreams/contrib/fx"
	otelsqlstreams "github.com/sqlstreams/sqlstreams/contrib/otel"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/memdriver"
)

// Example_readme is the README's "Wiring with fx" snippet, kept compiling
// here on the in-memory driver where the README opens SQLite (app.Run waits
// for a signal, so it is not run).
func Example_readme() {
	tp := sdktrace.NewTracerProvider() // add your exporter: sdktrace.WithBatcher(exp)
	app := fx.New(
		// Stopping waits for running handlers (ShutdownTimeout, 10 s by
		// default) and their acks: more than fx's default 15 s.
		fx.StopTimeout(10*time.Second+15*time.Second),
		sqlstreamsfx.Module,
		fx.Provide(func() driver.Driver { return memdriver.Open() }),
		fx.Supply(fx.Annotate(tp, fx.As(new(trace.TracerProvider)))),
		fx.Supply(fx.Annotate(propagation.TraceContext{}, fx.As(new(propagation.TextMapPropagator)))),
		sqlstreamsfx.OTel(&otelsqlstreams.Config{}), // tracing and metrics: one option
		sqlstreamsfx.ClientOption(sqlstreams.WithIdentity("billing-1")),
		sqlstreamsfx.Producer[OrderPlacedV1]("orders.placed", nil),
		sqlstreamsfx.Consumer[OrderPlacedV1]("orders.placed", "billing", &sqlstreams.ConsumerOptions{Concurrency: 4}, newBilling),
		fx.Supply(make(billed)),
	)
	app.Run() // a failed Run exits with code 1
}
