package sqlstreamsfx_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	sqlstreamsfx "github.com/sqlstreams/sqlstreams/contrib/fx"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/memdriver"
)

type EvV1 struct {
	ID string `json:"id"`
}

func (EvV1) SchemaVersion() int { return 1 }

// Seen collects what handlers received, by group.
type Seen struct{ ch chan string }

func newSeen() *Seen { return &Seen{ch: make(chan string, 16)} }

// handlerFor is a handler constructor with a dependency from the graph.
func handlerFor(group string) func(*Seen) sqlstreams.Handler[EvV1] {
	return func(s *Seen) sqlstreams.Handler[EvV1] {
		return func(ctx context.Context, d sqlstreams.Delivery[EvV1]) error {
			s.ch <- group + ":" + d.Value.ID
			return nil
		}
	}
}

// memDriver provides a driver on a new in-memory store: these tests check
// the wiring, not an engine. The app on the SQL drivers is checked in the
// test-only module (.tests/drivers/fx).
func memDriver() driver.Driver { return memdriver.Open() }

var fast = &sqlstreams.ConsumerOptions{PollInterval: 20 * time.Millisecond, ShutdownTimeout: 5 * time.Second}

func receive(t testing.TB, s *Seen, n int) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	timeout := time.After(60 * time.Second)
	for len(got) < n {
		select {
		case v := <-s.ch:
			got[v] = true
		case <-timeout:
			t.Fatalf("received %v, want %d", got, n)
		}
	}
	return got
}

// ValidateApp finds a graph without a driver.
func TestValidateAppMissingDriver(t *testing.T) {
	t.Parallel()
	err := fx.ValidateApp(fx.NopLogger, sqlstreamsfx.Module, sqlstreamsfx.Producer[EvV1]("events", nil), fx.Invoke(func(*sqlstreamsfx.ProducerOf[EvV1]) {}))
	if err == nil {
		t.Fatal("ValidateApp accepted a graph without a driver.Driver")
	}
}

// A Run that fails (the client closed underneath it) shuts the app down
// with exit code 1.
func TestRunFailureShutsDown(t *testing.T) {
	var client *sqlstreamsfx.Client
	app := fxtest.New(t, sqlstreamsfx.Module, fx.Provide(memDriver), fx.Supply(newSeen()), fx.NopLogger,
		sqlstreamsfx.Consumer[EvV1]("events", "g", fast, handlerFor("g")), fx.Populate(&client))
	app.RequireStart()
	wait := app.Wait()
	if err := client.Get().Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case sig := <-wait:
		if sig.ExitCode != 1 {
			t.Errorf("shutdown signal %+v, want exit code 1", sig)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the app was not shut down")
	}
	app.RequireStop()
}

// Two producers of one type under names, registered on start (a hook of a
// constructor that takes them runs after); a constructor error (handler)
// fails the app before anything touched the database.
func TestNamedProducersAndHandlerError(t *testing.T) {
	type in struct {
		fx.In
		Lifecycle fx.Lifecycle
		A         *sqlstreamsfx.ProducerOf[EvV1] `name:"a"`
		B         *sqlstreamsfx.ProducerOf[EvV1] `name:"b"`
	}
	var a, b string
	app := fxtest.New(t, sqlstreamsfx.Module, fx.Provide(memDriver), fx.NopLogger,
		sqlstreamsfx.NamedProducer[EvV1]("a", "stream-a", nil), sqlstreamsfx.NamedProducer[EvV1]("b", "stream-b", nil),
		fx.Invoke(func(p in) {
			p.Lifecycle.Append(fx.StartHook(func() { a, b = p.A.Get().Stream().Name, p.B.Get().Stream().Name }))
		}))
	app.RequireStart().RequireStop()
	if a != "stream-a" || b != "stream-b" {
		t.Errorf("producers on %q and %q", a, b)
	}

	boom := errors.New("no handler today")
	drv := newWatched()
	err := fx.New(sqlstreamsfx.Module, supplyDriver(drv), fx.NopLogger,
		sqlstreamsfx.Consumer[EvV1]("events", "g", fast, func() (sqlstreams.Handler[EvV1], error) { return nil, boom })).Err()
	if !errors.Is(err, boom) {
		t.Errorf("app error %v; want the constructor's", err)
	}
	if n := drv.calls.Load(); n != 0 {
		t.Errorf("a failed build made %d driver calls; want none", n)
	}
	err = fx.New(sqlstreamsfx.Module, fx.Provide(memDriver), fx.NopLogger,
		sqlstreamsfx.Consumer[EvV1]("events", "g", fast, func() sqlstreams.Handler[EvV1] { return nil })).Err()
	if !errors.Is(err, sqlstreams.ErrInvalidOption) {
		t.Errorf("a nil handler: %v; want ErrInvalidOption", err)
	}
}

// OTel plugs in with one option and takes the tracer provider from the
// graph.
func TestOTelOption(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	seen := newSeen()
	var producer *sqlstreamsfx.ProducerOf[EvV1]
	app := fxtest.New(t, sqlstreamsfx.Module, fx.Provide(memDriver), fx.Supply(seen), fx.NopLogger,
		fx.Provide(func() trace.TracerProvider { return tp }),
		sqlstreamsfx.OTel(nil),
		sqlstreamsfx.Producer[EvV1]("events", nil),
		sqlstreamsfx.Consumer[EvV1]("events", "g", fast, handlerFor("g")),
		fx.Populate(&producer))
	app.RequireStart()
	if _, err := producer.Get().Produce(context.Background(), EvV1{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	receive(t, seen, 1)
	app.RequireStop()
	names := map[string]bool{}
	for _, s := range exp.GetSpans() {
		names[s.Name] = true
	}
	if !names["send events"] || !names["process events"] {
		t.Errorf("spans %v", names)
	}
}

// The runner works without fx.
func TestRunnerWithoutFx(t *testing.T) {
	c, err := sqlstreamsfx.Open(memdriver.Open(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := sqlstreamsfx.NewProducer[EvV1](c, nil, "events", nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := newSeen()
	r, err := sqlstreamsfx.NewRunner(sqlstreamsfx.RunnerParams[EvV1]{Client: c, Stream: "events", Group: "g", Options: fast, Handler: handlerFor("g")(seen)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Produce(ctx, EvV1{ID: "x"}); err != nil {
		t.Fatal(err)
	}
	receive(t, seen, 1)
	if err := r.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlstreamsfx.NewRunner(sqlstreamsfx.RunnerParams[EvV1]{Client: c}); !errors.Is(err, sqlstreams.ErrInvalidOption) {
		t.Errorf("NewRunner without a handler: %v", err)
	}
}

// A stop deadline shorter than the consumer's ShutdownTimeout is logged:
// fx's default StopTimeout would cut running handlers off.
func TestShortStopTimeoutWarns(t *testing.T) {
	c, err := sqlstreamsfx.Open(memdriver.Open(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var logs bytes.Buffer
	r, err := sqlstreamsfx.NewRunner(sqlstreamsfx.RunnerParams[EvV1]{Client: c, Stream: "events", Group: "g",
		Options: &sqlstreams.ConsumerOptions{ShutdownTimeout: time.Minute}, Handler: handlerFor("g")(newSeen()),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "shorter than the consumer's ShutdownTimeout") {
		t.Errorf("no warning logged; logs:\n%s", logs.String())
	}
	logs.Reset()
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	long, cancelLong := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancelLong()
	if err := r.Stop(long); err != nil {
		t.Fatal(err)
	}
	if logs.Len() != 0 {
		t.Errorf("warned with enough time left: %s", logs.String())
	}
}
