package ccompat_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/contrib/ccompat"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/postgres"
	"github.com/sqlstreams/sqlstreams/driver/postgres/postgrestest"
	"github.com/sqlstreams/sqlstreams/driver/sqlite"
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

func backends(t *testing.T) []backend {
	return []backend{
		{"sqlite", func() func(testing.TB) *sqlstreams.Client {
			path := filepath.Join(t.TempDir(), "registry.db")
			return func(t testing.TB) *sqlstreams.Client { return openClient(t, sqlite.Open(path)) }
		}()},
		{"postgres", func() func(testing.TB) *sqlstreams.Client {
			url := postgrestest.NewSchema(t, nil)
			return func(t testing.TB) *sqlstreams.Client { return openClient(t, postgres.Open(url)) }
		}()},
	}
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
