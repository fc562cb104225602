package otelsqlstreams_test

import (
	"context"
	"fmt"
	"log"

	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	otelsqlstreams "github.com/sqlstreams/sqlstreams/contrib/otel"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/memdriver"
)

// OrderPlacedV1 is the message of the examples.
type OrderPlacedV1 struct {
	OrderID string `json:"order_id"`
	Total   int64  `json:"total"`
}

func (OrderPlacedV1) SchemaVersion() int { return 1 }

// Install tracing with one client option; one produced and handled message
// makes a send span and a process span linked to it. (The README's
// snippet, with an in-memory exporter instead of stdout.)
func ExampleOption() {
	ctx := context.Background()

	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(ctx)
	client, err := sqlstreams.Open(ctx, memdriver.Open(),
		otelsqlstreams.Option(&otelsqlstreams.Config{
			TracerProvider: tp, // nil: otel.GetTracerProvider()
			Propagator:     propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
		}))
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
		stop() // one message is enough for the example
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}

	ended := spans.GetSpans()
	for _, s := range ended {
		fmt.Println(s.Name, s.SpanKind)
	}
	send, process := ended[0], ended[1]
	fmt.Println("process links to send:", process.Links[0].SpanContext.SpanID() == send.SpanContext.SpanID())
	// Output:
	// send orders.placed producer
	// process orders.placed consumer
	// process links to send: true
}

// NewMiddleware keeps a handle on the middleware: install it with its
// ClientOption (which hands it the client) and Close it after the client to
// stop its backlog reader at once.
func ExampleNewMiddleware() {
	ctx := context.Background()

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(ctx)
	mw := otelsqlstreams.NewMiddleware(&otelsqlstreams.Config{MeterProvider: mp})
	defer mw.Close()
	client, err := sqlstreams.Open(ctx, memdriver.Open(), mw.ClientOption())
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	producer, err := client.Stream[OrderPlacedV1]("orders.placed").Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := producer.ProduceBatch(ctx, sqlstreams.NewMessage(OrderPlacedV1{OrderID: "o-1"}), sqlstreams.NewMessage(OrderPlacedV1{OrderID: "o-2"})); err != nil {
		log.Fatal(err)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		log.Fatal(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name == "messaging.client.sent.messages" {
			fmt.Println(m.Name, m.Data.(metricdata.Sum[int64]).DataPoints[0].Value, m.Unit)
		}
	}
	// Output:
	// messaging.client.sent.messages 2 {message}
}

// Close stops the middleware's backlog reader and ends the spans still
// waiting for an outcome; it leaves the client and the providers alone.
func ExampleMiddleware_Close() {
	mw := otelsqlstreams.NewMiddleware(nil)
	fmt.Println(mw.Close(), mw.Close())
	// Output:
	// <nil> <nil>
}
