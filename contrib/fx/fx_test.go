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
	"go.uber.org/goleak"

	"github.com/sqlstreams/sqlstreams/conformance"
	sqlstreamsfx "github.com/sqlstreams/sqlstreams/contrib/fx"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/postgres"
	"github.com/sqlstreams/sqlstreams/driver/postgres/postgrestest"
	"github.com/sqlstreams/sqlstreams/driver/sqlite"
	"github.com/sqlstreams/sqlstreams/driver/sqlite/sqlitetest"
)

type EvV1 struct {
	ID string `json:"id"`
}

func (EvV1) SchemaVersion() int { return 1 }

type EvV2 struct {
	ID   string `json:"id"`
	Note string `json:"note"`
}

func (EvV2) SchemaVersion() int { return 2 }

// targets are the drivers the module is wired with: the embedded one and a
// server.
func targets() []conformance.Target {
	return []conformance.Target{
		{Name: "sqlite", NewNamespace: sqlitetest.NewFile, Open: func(ns string) (driver.Driver, error) { return sqlite.Open(ns), nil }},
		{Name: "postgres", NewNamespace: func(t testing.TB) string { return postgrestest.NewSchema(t, nil) },
			Open: func(ns string) (driver.Driver, error) { return postgres.Open(ns), nil }},
	}
}

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

func driverOf(t testing.TB, target conformance.Target, ns string) func() (driver.Driver, error) {
	return func() (driver.Driver, error) { return target.Open(ns) }
}

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

// The whole app: a client from the application's driver, a producer, two
// consumers of one type on two groups; stop closes everything, with acks
// written and no goroutine left.
func TestApp(t *testing.T) {
	for _, target := range targets() {
		t.Run(target.Name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			ns := target.NewNamespace(t)
			seen := newSeen()
			var client *sqlstreams.Client
			var producer *sqlstreams.Producer[EvV1]
			opts := []fx.Option{
				sqlstreamsfx.Module,
				fx.Provide(driverOf(t, target, ns)),
				fx.Supply(seen),
				sqlstreamsfx.Producer[EvV1]("events", nil),
				sqlstreamsfx.Consumer[EvV1]("events", "g1", fast, handlerFor("g1")),
				sqlstreamsfx.Consumer[EvV1]("events", "g2", fast, handlerFor("g2")),
				fx.Populate(&client, &producer),
				fx.NopLogger,
			}
			if err := fx.ValidateApp(opts...); err != nil {
				t.Fatalf("ValidateApp: %v", err)
			}
			app := fxtest.New(t, opts...)
			app.RequireStart()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if _, err := producer.Produce(ctx, EvV1{ID: "a"}); err != nil {
				t.Fatal(err)
			}
			got := receive(t, seen, 2)
			if !got["g1:a"] || !got["g2:a"] {
				t.Errorf("received %v", got)
			}
			app.RequireStop()
			if _, err := client.Streams(ctx); !errors.Is(err, sqlstreams.ErrClosed) {
				t.Errorf("after stop, Streams: %v; want ErrClosed", err)
			}
			// A fresh client sees every delivery resolved: the acks were
			// written before the client closed.
			drv, err := target.Open(ns)
			if err != nil {
				t.Fatal(err)
			}
			check, err := sqlstreams.Open(ctx, drv)
			if err != nil {
				t.Fatal(err)
			}
			h, err := check.Stream[sqlstreams.RawPayload]("events").Health(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range h.Versions {
				for _, g := range v.Groups {
					if g.Unread != 0 || g.Unresolved != 0 {
						t.Errorf("group %s: unread %d unresolved %d after stop", g.Group, g.Unread, g.Unresolved)
					}
				}
			}
			if err := check.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// ValidateApp finds a graph without a driver.
func TestValidateAppMissingDriver(t *testing.T) {
	t.Parallel()
	err := fx.ValidateApp(fx.NopLogger, sqlstreamsfx.Module, sqlstreamsfx.Producer[EvV1]("events", nil), fx.Invoke(func(*sqlstreams.Producer[EvV1]) {}))
	if err == nil {
		t.Fatal("ValidateApp accepted a graph without a driver.Driver")
	}
}

// A v2 consumer on a group bound to v1 fails app.Start with ErrGroupVersion.
func TestGroupVersionFailsStart(t *testing.T) {
	for _, target := range targets() {
		t.Run(target.Name, func(t *testing.T) {
			ns := target.NewNamespace(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			drv, _ := target.Open(ns)
			c, err := sqlstreams.Open(ctx, drv)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Stream[EvV1]("events").Consumer("g").Register(ctx, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Stream[EvV2]("events").Producer().Register(ctx, nil); err != nil {
				t.Fatal(err)
			}
			c.Close()
			app := fx.New(sqlstreamsfx.Module, fx.Provide(driverOf(t, target, ns)), fx.NopLogger,
				sqlstreamsfx.Consumer[EvV2]("events", "g", fast, func() sqlstreams.Handler[EvV2] {
					return func(context.Context, sqlstreams.Delivery[EvV2]) error { return nil }
				}))
			err = app.Start(ctx)
			if !errors.Is(err, sqlstreams.ErrGroupVersion) {
				t.Fatalf("Start: %v; want ErrGroupVersion", err)
			}
			if err := app.Stop(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A Run that fails (the client closed underneath it) shuts the app down
// with exit code 1.
func TestRunFailureShutsDown(t *testing.T) {
	target := targets()[0]
	ns := target.NewNamespace(t)
	var client *sqlstreams.Client
	app := fxtest.New(t, sqlstreamsfx.Module, fx.Provide(driverOf(t, target, ns)), fx.Supply(newSeen()), fx.NopLogger,
		sqlstreamsfx.Consumer[EvV1]("events", "g", fast, handlerFor("g")), fx.Populate(&client))
	app.RequireStart()
	wait := app.Wait()
	if err := client.Close(); err != nil {
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

// Two producers of one type under names; a constructor error (handler)
// fails the app.
func TestNamedProducersAndHandlerError(t *testing.T) {
	target := targets()[0]
	ns := target.NewNamespace(t)
	type in struct {
		fx.In
		A *sqlstreams.Producer[EvV1] `name:"a"`
		B *sqlstreams.Producer[EvV1] `name:"b"`
	}
	var a, b string
	app := fxtest.New(t, sqlstreamsfx.Module, fx.Provide(driverOf(t, target, ns)), fx.NopLogger,
		sqlstreamsfx.NamedProducer[EvV1]("a", "stream-a", nil), sqlstreamsfx.NamedProducer[EvV1]("b", "stream-b", nil),
		fx.Invoke(func(p in) { a, b = p.A.Stream().Name, p.B.Stream().Name }))
	app.RequireStart().RequireStop()
	if a != "stream-a" || b != "stream-b" {
		t.Errorf("producers on %q and %q", a, b)
	}

	// An app that fails to build runs no stop hook (fx's rule), so the
	// client New opened is closed here; an application exits instead.
	boom := errors.New("no handler today")
	var opened *sqlstreams.Client
	err := fx.New(sqlstreamsfx.Module, fx.Provide(driverOf(t, target, target.NewNamespace(t))), fx.NopLogger,
		fx.Decorate(func(c *sqlstreams.Client) *sqlstreams.Client { opened = c; return c }),
		sqlstreamsfx.Consumer[EvV1]("events", "g", fast, func() (sqlstreams.Handler[EvV1], error) { return nil, boom })).Err()
	if !errors.Is(err, boom) {
		t.Errorf("app error %v; want the constructor's", err)
	}
	if opened == nil {
		t.Fatal("the client was not built")
	}
	opened.Close()
}

// OTel plugs in with one option and takes the tracer provider from the
// graph.
func TestOTelOption(t *testing.T) {
	target := targets()[0]
	ns := target.NewNamespace(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	seen := newSeen()
	var producer *sqlstreams.Producer[EvV1]
	app := fxtest.New(t, sqlstreamsfx.Module, fx.Provide(driverOf(t, target, ns)), fx.Supply(seen), fx.NopLogger,
		fx.Provide(func() trace.TracerProvider { return tp }),
		sqlstreamsfx.OTel(nil),
		sqlstreamsfx.Producer[EvV1]("events", nil),
		sqlstreamsfx.Consumer[EvV1]("events", "g", fast, handlerFor("g")),
		fx.Populate(&producer))
	app.RequireStart()
	if _, err := producer.Produce(context.Background(), EvV1{ID: "a"}); err != nil {
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
	target := targets()[0]
	ns := target.NewNamespace(t)
	drv, _ := target.Open(ns)
	c, err := sqlstreamsfx.Open(drv, nil, nil)
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
	target := targets()[0]
	drv, _ := target.Open(target.NewNamespace(t))
	c, err := sqlstreamsfx.Open(drv, nil, nil)
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
