// Command observability traces one message end to end: a producer and a
// consumer on an embedded SQLite file, wired with fx, with the
// OpenTelemetry middleware installed by one fx option. The spans go to
// stdout, or to an OTLP/HTTP collector when OTEL_EXPORTER_OTLP_ENDPOINT is
// set (for example http://localhost:4318 for a local Jaeger). It produces
// one order inside a "checkout" span, handles it, prints the trace
// (checkout → send orders.placed → process orders.placed) and exits.
//
//	go run ./examples/observability   (from the repository root)
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"

	sqlstreamsfx "github.com/sqlstreams/sqlstreams/contrib/fx"
	otelsqlstreams "github.com/sqlstreams/sqlstreams/contrib/otel"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/sqlite"
)

// OrderPlacedV1 is the message.
type OrderPlacedV1 struct {
	OrderID string `json:"order_id"`
	Total   int64  `json:"total"`
}

func (OrderPlacedV1) SchemaVersion() int { return 1 }

// handled is closed by the handler once the order is processed.
type handled chan struct{}

// newBilling is the consumer's handler constructor; its dependencies come
// from the graph.
func newBilling(logger *slog.Logger, done handled) sqlstreams.Handler[OrderPlacedV1] {
	return func(ctx context.Context, d sqlstreams.Delivery[OrderPlacedV1]) error {
		logger.InfoContext(ctx, "billing the order", "order", d.Value.OrderID, "total", d.Value.Total,
			"trace_id", trace.SpanContextFromContext(ctx).TraceID().String())
		close(done)
		return nil
	}
}

// checkout produces one order when the app starts, inside a span of its own
// so that the send span has a parent. Its hook runs after the producer's
// registration (it depends on the producer), so Get has the producer.
func checkout(lc fx.Lifecycle, tp trace.TracerProvider, p *sqlstreamsfx.ProducerOf[OrderPlacedV1]) {
	lc.Append(fx.StartHook(func(ctx context.Context) error {
		ctx, span := tp.Tracer("examples/observability").Start(ctx, "checkout")
		defer span.End()
		_, err := p.Get().Produce(ctx, OrderPlacedV1{OrderID: "o-1", Total: 1250}, sqlstreams.Key("customer-7"))
		return err
	}))
}

func newExporter(ctx context.Context, out io.Writer) (sdktrace.SpanExporter, error) {
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" {
		return otlptracehttp.New(ctx) // reads the OTEL_EXPORTER_OTLP_* variables
	}
	return stdouttrace.New(stdouttrace.WithPrettyPrint(), stdouttrace.WithWriter(out))
}

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "observability:", err)
		os.Exit(1)
	}
}

// run writes the spans to out (unless they go to a collector).
func run(out io.Writer) error {
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil)) // stdout is for the spans
	dir, err := os.MkdirTemp("", "sqlstreams-observability-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	exp, err := newExporter(ctx, out)
	if err != nil {
		return err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName("sqlstreams-observability"))))
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := tp.Shutdown(sctx); err != nil { // flushes the spans
			logger.Error("flushing spans", "error", err)
		}
	}()

	done := make(handled)
	app := fx.New(
		fx.NopLogger,
		// Consumers wait up to ShutdownTimeout for running handlers, plus
		// their acks: give fx's stop more than its 15 s default.
		fx.StopTimeout(10*time.Second+15*time.Second),
		fx.Supply(logger, done),
		fx.Provide(func() driver.Driver { return sqlite.Open(filepath.Join(dir, "app.db")) }),
		fx.Supply(fx.Annotate(tp, fx.As(new(trace.TracerProvider)))),
		fx.Supply(fx.Annotate(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
			fx.As(new(propagation.TextMapPropagator)))),
		sqlstreamsfx.Module,
		// One option installs the tracing; the process span is parented on
		// the message, so the whole path is one trace.
		sqlstreamsfx.OTel(&otelsqlstreams.Config{ParentFromMessage: true}),
		sqlstreamsfx.Producer[OrderPlacedV1]("orders.placed", nil),
		sqlstreamsfx.Consumer[OrderPlacedV1]("orders.placed", "billing",
			&sqlstreams.ConsumerOptions{PollInterval: 50 * time.Millisecond}, newBilling),
		fx.Invoke(checkout),
	)
	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := app.Start(startCtx); err != nil {
		return err
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = app.Stop(context.Background())
		return fmt.Errorf("the order was not handled within 30s")
	}
	stopCtx, cancelStop := context.WithTimeout(ctx, 25*time.Second)
	defer cancelStop()
	// Stopping waits for the handler, so its process span has ended; the
	// deferred Shutdown then writes every span.
	if err := app.Stop(stopCtx); err != nil {
		return err
	}
	logger.Info("one message traced: checkout → send orders.placed → process orders.placed")
	return nil
}
