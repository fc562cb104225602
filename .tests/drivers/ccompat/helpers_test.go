// Package ccompat_test checks contrib/ccompat on the SQL drivers: the
// Confluent wire (franz-go's client, the Java client's requests, the README's
// curl sequence) over SQLite and PostgreSQL, across client restarts. The
// tests live here, in a test-only module, so that contrib/ccompat requires
// core and nothing else of this repository; its examples run in the module
// on core/memdriver.
package ccompat_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/contrib/ccompat"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/tests/drivers/targets"
)

// Money is nested in OrderPlaced the default way (a $defs entry).
type Money struct {
	Cents    int64  `json:"cents"`
	Currency string `json:"currency"`
}

// OrderPlaced is what a Go producer registers at version 2.
type OrderPlaced struct {
	OrderID string `json:"order_id"`
	Total   Money  `json:"total"`
}

func (OrderPlaced) SchemaVersion() int { return 2 }

// OrderPlacedEdited is OrderPlaced edited in place: total became a number.
type OrderPlacedEdited struct {
	OrderID string `json:"order_id"`
	Total   int64  `json:"total"`
}

func (OrderPlacedEdited) SchemaVersion() int { return 2 }

// OrderPlacedNote adds an optional member: compatible.
type OrderPlacedNote struct {
	OrderID string `json:"order_id"`
	Total   Money  `json:"total"`
	Note    string `json:"note,omitempty"`
}

func (OrderPlacedNote) SchemaVersion() int { return 2 }

// backend opens clients on one database, again and again (a restart).
type backend struct {
	name string
	open func(t testing.TB) *sqlstreams.Client
}

// backends are SQLite and PostgreSQL, each on a namespace of its own made
// once, so that every open is a restart on the same data.
func backends(t *testing.T) []backend {
	var out []backend
	for _, tg := range []conformance.Target{targets.SQLite(), targets.Postgres()} {
		ns := tg.NewNamespace(t)
		out = append(out, backend{tg.Name, func(t testing.TB) *sqlstreams.Client {
			drv, err := tg.Open(ns)
			if err != nil {
				t.Fatalf("open %s: %v", tg.Name, err)
			}
			return openClient(t, drv)
		}})
	}
	return out
}

func openClient(t testing.TB, drv driver.Driver) *sqlstreams.Client {
	t.Helper()
	c, err := sqlstreams.Open(ctx(t), drv, sqlstreams.WithMaintenanceInterval(0))
	if err != nil {
		t.Fatalf("open %s: %v", drv.Name(), err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// serve runs the handler over a client on a test server.
func serve(t testing.TB, c *sqlstreams.Client, opts *ccompat.Options) *httptest.Server {
	srv := httptest.NewServer(ccompat.NewHandler(c, opts))
	t.Cleanup(srv.Close)
	return srv
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// verbose is the wire form of the library's problems, one per problem.
func verbose(err error) []string {
	var ie *sqlstreams.IncompatibleSchemaError
	if !errors.As(err, &ie) {
		return nil
	}
	out := make([]string, len(ie.Problems))
	for i, p := range ie.Problems {
		out[i] = fmt.Sprintf("%s at %s: %s (against %s, %s)", p.Kind, p.Path, p.Message, p.Against, p.Direction)
	}
	return out
}

// getJSON reads path through the client into v: a request franz-go has no
// method for.
func getJSON(t testing.TB, cl *sr.Client, path string, v any) error {
	return cl.Do(ctx(t), "GET", path, nil, v)
}
