package otelsqlstreams_test

import (
	"context"
	"log"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	otelsqlstreams "github.com/sqlstreams/sqlstreams/contrib/otel"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/memdriver"
)

// Example_readme is the README's "Tracing with OpenTelemetry" snippet, kept
// compiling here on the in-memory driver where the README opens SQLite (it
// prints spans with random ids, so it has no Output).
func Example_readme() {
	ctx := context.Background()
	exp, err := stdouttrace.New(stdouttrace.WithPrettyPrint())
	if err != nil {
		log.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(ctx)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))

	client, err := sqlstreams.Open(ctx, memdriver.Open(), otelsqlstreams.Option(nil))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	orders := client.Stream[OrderPlacedV1]("orders.placed")
	producer, err := orders.Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	consumer, err := orders.Consumer("billing").Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := producer.Produce(ctx, OrderPlacedV1{OrderID: "o-1", Total: 1250}); err != nil {
		log.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	err = consumer.Run(runCtx, func(ctx context.Context, d sqlstreams.Delivery[OrderPlacedV1]) error {
		log.Printf("billing %s", d.Value.OrderID) // ctx carries the process span
		stop()
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// stdout now holds "send orders.placed" (PRODUCER) and
	// "process orders.placed" (CONSUMER), linked to it.
}
