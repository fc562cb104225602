// Package sqlstreamsfx_test checks contrib/fx on the SQL drivers: the
// whole app on the embedded one and on a server, with their acks written
// before the client closes. The module contrib/fx requires no driver; its
// own tests and examples run on core/memdriver.
package sqlstreamsfx_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/goleak"

	"github.com/sqlstreams/sqlstreams/conformance"
	sqlstreamsfx "github.com/sqlstreams/sqlstreams/contrib/fx"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/tests/drivers/targets"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type EvV1 struct {
	ID string `json:"id"`
}

func (EvV1) SchemaVersion() int { return 1 }

type EvV2 struct {
	ID   string `json:"id"`
	Note string `json:"note"`
}

func (EvV2) SchemaVersion() int { return 2 }

// drivers are the drivers the module is wired with: the embedded one and a
// server.
func drivers() []conformance.Target {
	return []conformance.Target{targets.SQLite(), targets.Postgres()}
}

// received carries what the handlers got, as "group:id".
type received chan string

// recordTo is a handler constructor that takes its dependency from the
// graph, as an application's do.
func recordTo(group string) func(received) sqlstreams.Handler[EvV1] {
	return func(r received) sqlstreams.Handler[EvV1] {
		return func(_ context.Context, d sqlstreams.Delivery[EvV1]) error { r <- group + ":" + d.Value.ID; return nil }
	}
}

func driverOf(target conformance.Target, ns string) func() (driver.Driver, error) {
	return func() (driver.Driver, error) { return target.Open(ns) }
}

var fast = &sqlstreams.ConsumerOptions{PollInterval: 20 * time.Millisecond, ShutdownTimeout: 5 * time.Second}

// The whole app: a client from the application's driver, a producer, two
// consumers of one type on two groups; stop closes everything, with acks
// written and no goroutine left.
func TestApp(t *testing.T) {
	for _, target := range drivers() {
		t.Run(target.Name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			ns := target.NewNamespace(t)
			seen := make(received, 16)
			var client *sqlstreamsfx.Client
			var producer *sqlstreamsfx.ProducerOf[EvV1]
			opts := []fx.Option{
				sqlstreamsfx.Module,
				fx.Provide(driverOf(target, ns)),
				fx.Supply(seen),
				sqlstreamsfx.Producer[EvV1]("events", nil),
				sqlstreamsfx.Consumer[EvV1]("events", "g1", fast, recordTo("g1")),
				sqlstreamsfx.Consumer[EvV1]("events", "g2", fast, recordTo("g2")),
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
			if _, err := producer.Get().Produce(ctx, EvV1{ID: "a"}); err != nil {
				t.Fatal(err)
			}
			want := map[string]bool{"g1:a": true, "g2:a": true}
			deadline := time.After(60 * time.Second)
			for len(want) > 0 {
				select {
				case v := <-seen:
					if !want[v] {
						t.Errorf("received %s, want one of %v", v, want)
					}
					delete(want, v)
				case <-deadline:
					t.Fatalf("still waiting for %v", want)
				}
			}
			app.RequireStop()
			if _, err := client.Get().Streams(ctx); !errors.Is(err, sqlstreams.ErrClosed) {
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

// A v2 consumer on a group bound to v1 fails app.Start with ErrGroupVersion.
func TestGroupVersionFailsStart(t *testing.T) {
	for _, target := range drivers() {
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
			app := fx.New(sqlstreamsfx.Module, fx.Provide(driverOf(target, ns)), fx.NopLogger,
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

// A server that cannot be reached: fx.New succeeds (no constructor touches
// the database), app.Start fails with ErrUnavailable, and stopping the app
// that failed to start leaves no goroutine.
func TestUnreachableFailsStart(t *testing.T) {
	for _, target := range []conformance.Target{targets.Postgres(), targets.MySQL()} {
		t.Run(target.Name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			app := fx.New(sqlstreamsfx.Module, fx.NopLogger,
				fx.Provide(func() driver.Driver { return target.Unreachable() }),
				sqlstreamsfx.Producer[EvV1]("events", nil),
				sqlstreamsfx.Consumer[EvV1]("events", "g", fast, recordTo("g")),
				fx.Supply(make(received, 1)))
			if err := app.Err(); err != nil {
				t.Fatalf("fx.New: %v; the database is only reached on start", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if err := app.Start(ctx); !errors.Is(err, sqlstreams.ErrUnavailable) {
				t.Fatalf("Start: %v; want ErrUnavailable", err)
			}
			if err := app.Stop(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
