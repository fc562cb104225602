package sqlstreamsfx_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"slices"
	"time"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"

	sqlstreamsfx "github.com/sqlstreams/sqlstreams/contrib/fx"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/memdriver"
)

// OrderPlacedV1 is the message of the examples.
type OrderPlacedV1 struct {
	OrderID string `json:"order_id"`
	Total   int64  `json:"total"`
}

func (OrderPlacedV1) SchemaVersion() int { return 1 }

// billed receives what the handler billed.
type billed chan string

// newBilling is a handler constructor: its parameters come from the graph.
func newBilling(out billed) sqlstreams.Handler[OrderPlacedV1] {
	return func(ctx context.Context, d sqlstreams.Delivery[OrderPlacedV1]) error {
		out <- d.Value.OrderID
		return nil
	}
}

// Module provides the client from the application's driver; Producer and
// Consumer add a producer and a consumer. All three reach the database
// when the app starts, not in fx.New.
func ExampleModule() {
	out := make(billed, 1)
	var producer *sqlstreamsfx.ProducerOf[OrderPlacedV1]
	app := fx.New(
		fx.NopLogger,
		fx.StopTimeout(10*time.Second+15*time.Second), // ShutdownTimeout + 15 s
		sqlstreamsfx.Module,
		fx.Provide(func() driver.Driver { return memdriver.Open() }),
		fx.Supply(out),
		sqlstreamsfx.Producer[OrderPlacedV1]("orders.placed", nil),
		sqlstreamsfx.Consumer[OrderPlacedV1]("orders.placed", "billing", nil, newBilling),
		fx.Populate(&producer),
	)
	ctx := context.Background()
	if err := app.Start(ctx); err != nil {
		log.Fatal(err)
	}
	if _, err := producer.Get().Produce(ctx, OrderPlacedV1{OrderID: "o-1", Total: 1250}); err != nil {
		log.Fatal(err)
	}
	fmt.Println("billed", <-out)
	if err := app.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// billed o-1
}

// checkout is an application service: its constructor keeps the handle,
// and its methods, which run once the app has started, call Get.
type checkout struct {
	orders *sqlstreamsfx.ProducerOf[OrderPlacedV1]
}

func (c *checkout) place(ctx context.Context, id string) error {
	_, err := c.orders.Get().Produce(ctx, OrderPlacedV1{OrderID: id})
	return err
}

// newCheckout places an order when the app starts: its hook runs after the
// producer's registration, since the constructor depends on the producer.
func newCheckout(lc fx.Lifecycle, orders *sqlstreamsfx.ProducerOf[OrderPlacedV1]) *checkout {
	c := &checkout{orders: orders}
	lc.Append(fx.StartHook(func(ctx context.Context) error { return c.place(ctx, "o-7") }))
	return c
}

// A constructor takes *ProducerOf[T] and keeps it; Get returns the
// registered producer in an OnStart hook, a handler or a request.
func ExampleProducerOf() {
	out := make(billed, 1)
	app := fx.New(fx.NopLogger, sqlstreamsfx.Module,
		fx.Provide(func() driver.Driver { return memdriver.Open() }),
		fx.Supply(out),
		sqlstreamsfx.Producer[OrderPlacedV1]("orders.placed", nil),
		sqlstreamsfx.Consumer[OrderPlacedV1]("orders.placed", "billing", nil, newBilling),
		fx.Provide(newCheckout),
		fx.Invoke(func(*checkout) {}))
	ctx := context.Background()
	if err := app.Start(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("billed", <-out)
	if err := app.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// billed o-7
}

// NamedProducer provides two producers of one type, on two streams.
func ExampleNamedProducer() {
	type producers struct {
		fx.In
		Lifecycle fx.Lifecycle
		EU        *sqlstreamsfx.ProducerOf[OrderPlacedV1] `name:"eu"`
		US        *sqlstreamsfx.ProducerOf[OrderPlacedV1] `name:"us"`
	}
	app := fx.New(fx.NopLogger, sqlstreamsfx.Module,
		fx.Provide(func() driver.Driver { return memdriver.Open() }),
		sqlstreamsfx.NamedProducer[OrderPlacedV1]("eu", "orders.eu", nil),
		sqlstreamsfx.NamedProducer[OrderPlacedV1]("us", "orders.us", nil),
		fx.Invoke(func(p producers) {
			p.Lifecycle.Append(fx.StartHook(func() { fmt.Println(p.EU.Get().Stream().Name, p.US.Get().Stream().Name) }))
		}))
	if err := app.Start(context.Background()); err != nil {
		log.Fatal(err)
	}
	_ = app.Stop(context.Background())
	// Output:
	// orders.eu orders.us
}

// ClientOption contributes any client option; New applies them all when
// it opens the client, on start.
func ExampleClientOption() {
	var client *sqlstreamsfx.Client
	app := fx.New(fx.NopLogger, sqlstreamsfx.Module,
		fx.Provide(func() driver.Driver { return memdriver.Open() }),
		sqlstreamsfx.ClientOption(sqlstreams.WithIdentity("billing-1")),
		sqlstreamsfx.ClientOption(sqlstreams.WithMaintenanceInterval(0)),
		fx.Populate(&client))
	if err := app.Start(context.Background()); err != nil {
		log.Fatal(err)
	}
	fmt.Println(client.Get().Identity())
	_ = app.Stop(context.Background())
	// Output:
	// billing-1
}

// OTel installs the OpenTelemetry middleware with one option; it takes the
// tracer provider (and meter provider, propagator) from the graph.
func ExampleOTel() {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	out := make(billed, 1)
	var producer *sqlstreamsfx.ProducerOf[OrderPlacedV1]
	app := fx.New(fx.NopLogger, sqlstreamsfx.Module,
		fx.Provide(func() driver.Driver { return memdriver.Open() }),
		fx.Supply(out, fx.Annotate(tp, fx.As(new(trace.TracerProvider)))),
		fx.Supply(fx.Annotate(propagation.TraceContext{}, fx.As(new(propagation.TextMapPropagator)))),
		sqlstreamsfx.OTel(nil),
		sqlstreamsfx.Producer[OrderPlacedV1]("orders.placed", nil),
		sqlstreamsfx.Consumer[OrderPlacedV1]("orders.placed", "billing", nil, newBilling),
		fx.Populate(&producer))
	ctx := context.Background()
	if err := app.Start(ctx); err != nil {
		log.Fatal(err)
	}
	if _, err := producer.Get().Produce(ctx, OrderPlacedV1{OrderID: "o-1"}); err != nil {
		log.Fatal(err)
	}
	<-out
	if err := app.Stop(ctx); err != nil { // the process span ends before Run returns
		log.Fatal(err)
	}
	// In the order they began: the exporter has them in the order they
	// ended, and the handler may finish before Produce returns.
	got := spans.GetSpans()
	slices.SortFunc(got, func(a, b tracetest.SpanStub) int { return a.StartTime.Compare(b.StartTime) })
	for _, s := range got {
		fmt.Println(s.Name)
	}
	// Output:
	// send orders.placed
	// process orders.placed
}

// Without fx: Open, NewProducer and a Runner do what the module does.
func ExampleNewRunner() {
	ctx := context.Background()
	client, err := sqlstreamsfx.Open(memdriver.Open(), slog.Default(), &sqlstreamsfx.Config{OpenTimeout: 10 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	producer, err := sqlstreamsfx.NewProducer[OrderPlacedV1](client, nil, "orders.placed", nil)
	if err != nil {
		log.Fatal(err)
	}
	out := make(billed, 1)
	r, err := sqlstreamsfx.NewRunner(sqlstreamsfx.RunnerParams[OrderPlacedV1]{Client: client, Stream: "orders.placed", Group: "billing",
		Handler: newBilling(out), OnFail: func(err error) { log.Print("billing stopped: ", err) }})
	if err != nil {
		log.Fatal(err)
	}
	if err := r.Start(ctx); err != nil {
		log.Fatal(err)
	}
	if _, err := producer.Produce(ctx, OrderPlacedV1{OrderID: "o-2"}); err != nil {
		log.Fatal(err)
	}
	fmt.Println("billed", <-out)
	stopCtx, cancel := context.WithTimeout(ctx, 25*time.Second)
	defer cancel()
	if err := r.Stop(stopCtx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// billed o-2
}

// New is the module's constructor, for an fx.Provide of your own (for
// example inside another module).
func ExampleNew() {
	var client *sqlstreamsfx.Client
	app := fx.New(fx.NopLogger, fx.Provide(sqlstreamsfx.New),
		fx.Provide(func() driver.Driver { return memdriver.Open() }),
		fx.Supply(&sqlstreamsfx.Config{OpenTimeout: 5 * time.Second}),
		fx.Populate(&client))
	if err := app.Err(); err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	_ = app.Start(ctx)
	_ = app.Stop(ctx)
	_, err := client.Get().Streams(ctx)
	fmt.Println("closed on stop:", errors.Is(err, sqlstreams.ErrClosed))
	// Output:
	// closed on stop: true
}
