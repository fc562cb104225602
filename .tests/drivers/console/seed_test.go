// Package console_test checks contrib/console on the SQL drivers: its pages,
// actions and browser behaviour on SQLite, PostgreSQL and MySQL. The tests
// live here, in a test-only module, so that contrib/console requires core
// alone; its examples run in the module on core/memdriver.
package console_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/contrib/console"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/schema"
	"github.com/sqlstreams/sqlstreams/tests/drivers/targets"
)

// The seeded database: stream orders.placed with two versions, three
// groups and one dead letter; stream payments, fully read.

type OrderV1 struct {
	OrderID string `json:"order_id"`
}

func (OrderV1) SchemaVersion() int { return 1 }

type OrderV2 struct {
	OrderID string `json:"order_id"`
	Cents   int64  `json:"cents"`
}

func (OrderV2) SchemaVersion() int { return 2 }

// OrderV2Text is revision 2 of v2: cents became a string, an incompatible
// change recorded while the stream's level was NONE.
type OrderV2Text struct {
	OrderID string `json:"order_id"`
	Cents   string `json:"cents"`
}

func (OrderV2Text) SchemaVersion() int { return 2 }

type Payment struct {
	ID string `json:"id"`
}

func (Payment) SchemaVersion() int { return 1 }

const (
	orders       = "orders.placed"
	ordersV1Text = "group audit has 4 unread; group billing has 1 dead (replay or discard them)"
)

// engines are the drivers the console is checked on; the first, SQLite,
// serves the tests that need one engine only.
func engines() []conformance.Target {
	return []conformance.Target{targets.SQLite(), targets.Postgres(), targets.MySQL()}
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func openClient(t testing.TB, tg conformance.Target, opts ...sqlstreams.ClientOption) *sqlstreams.Client {
	t.Helper()
	return openOn(t, tg, tg.NewNamespace(t), opts...)
}

// openOn opens a client on a namespace another client may share.
func openOn(t testing.TB, tg conformance.Target, ns string, opts ...sqlstreams.ClientOption) *sqlstreams.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	drv, err := tg.Open(ns)
	if err != nil {
		t.Fatalf("open %s: %v", tg.Name, err)
	}
	c, err := sqlstreams.Open(ctx, drv, append([]sqlstreams.ClientOption{sqlstreams.WithMaintenanceInterval(0), sqlstreams.WithLogger(quiet()),
		sqlstreams.WithIdentity("console-test")}, opts...)...)
	if err != nil {
		t.Fatalf("open %s: %v", tg.Name, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// fatal lets a call's two results go straight into a check:
// fatal{t}.on(p.Produce(ctx, m)).
type fatal struct{ t testing.TB }

func (f fatal) on[V any](v V, err error) V {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
	return v
}

// claimAll claims until n deliveries are in hand, with a bounded number of
// tries (a claim may take one partition at a time).
func claimAll[T sqlstreams.Versioned](t testing.TB, ctx context.Context, c *sqlstreams.Consumer[T], n int) []sqlstreams.Delivery[T] {
	t.Helper()
	var out []sqlstreams.Delivery[T]
	for try := 0; len(out) < n && try < 50; try++ {
		out = append(out, fatal{t}.on(c.Claim(ctx, n-len(out)))...)
	}
	if len(out) != n {
		t.Fatalf("claimed %d deliveries, want %d", len(out), n)
	}
	return out
}

// seed fills the client's database; the dead letter's id is returned.
func seed(t testing.TB, c *sqlstreams.Client) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fatal{t}.on(c.Stream[OrderV1](orders).Create(ctx, &sqlstreams.StreamOptions{Partitions: 2}))
	p1 := fatal{t}.on(c.Stream[OrderV1](orders).Producer().Register(ctx, nil))
	for i := range 4 {
		fatal{t}.on(p1.Produce(ctx, OrderV1{OrderID: fmt.Sprint("o-", i)}, sqlstreams.Key(fmt.Sprint("acct-", i)),
			sqlstreams.Header("trace", fmt.Sprint("t-", i))))
	}
	billing := fatal{t}.on(c.Stream[OrderV1](orders).Consumer("billing").Register(ctx, nil))
	var dead int64
	for _, d := range claimAll(t, ctx, billing, 4) {
		if d.Key == "acct-1" {
			dead = d.ID
			if err := d.Dead(ctx, errors.New("card declined")); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	fatal{t}.on(c.Stream[OrderV1](orders).Consumer("audit").Register(ctx, nil))

	p2 := fatal{t}.on(c.Stream[OrderV2](orders).Producer().Register(ctx, nil))
	for i := range 2 {
		fatal{t}.on(p2.Produce(ctx, OrderV2{OrderID: fmt.Sprint("o2-", i), Cents: 100}, sqlstreams.Key(fmt.Sprint("acct-", i))))
	}
	shipping := fatal{t}.on(c.Stream[OrderV2](orders).Consumer("shipping").Register(ctx, nil))
	if err := shipping.Ack(ctx, claimAll(t, ctx, shipping, 2)...); err != nil {
		t.Fatal(err)
	}
	reg := c.Registry()
	if err := reg.SetLevel(ctx, orders, schema.None); err != nil {
		t.Fatal(err)
	}
	fatal{t}.on(c.Stream[OrderV2Text](orders).Producer().Register(ctx, nil))
	if err := reg.SetLevel(ctx, orders, schema.Backward); err != nil {
		t.Fatal(err)
	}

	pp := fatal{t}.on(c.Stream[Payment]("payments").Producer().Register(ctx, nil))
	fatal{t}.on(pp.Produce(ctx, Payment{ID: "p-1"}))
	ledger := fatal{t}.on(c.Stream[Payment]("payments").Consumer("ledger").Register(ctx, nil))
	if err := ledger.Ack(ctx, claimAll(t, ctx, ledger, 1)...); err != nil {
		t.Fatal(err)
	}
	return dead
}

const prefix = "/ops/sqlstreams"

// serve mounts the console under prefix on a mux, as a host would.
func serve(t testing.TB, c *sqlstreams.Client, allow bool) *httptest.Server {
	t.Helper()
	return serveWith(t, c, console.Options{AllowActions: allow})
}

// serveWith serves the console of c under prefix with opts, quiet.
func serveWith(t testing.TB, c *sqlstreams.Client, opts console.Options) *httptest.Server {
	t.Helper()
	opts.Prefix, opts.Logger = prefix, quiet()
	h, err := console.New(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(prefix+"/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func health(t testing.TB, c *sqlstreams.Client, stream string) sqlstreams.Health {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return fatal{t}.on(c.Stream[sqlstreams.RawPayload](stream).Health(ctx))
}
