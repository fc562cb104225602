// Package postgrestest describes the PostgreSQL driver to the conformance
// suite and to end-to-end tests: a fresh schema per test on the server at
// SQLSTREAMS_POSTGRES_URL.
package postgrestest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/postgres"
)

// BaseURL is the server the tests use; each test gets a schema of its own.
func BaseURL() string {
	if u := os.Getenv("SQLSTREAMS_POSTGRES_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// NewSchema creates a fresh schema, drops it at cleanup, and returns a URL
// whose search_path names it. extra query parameters are added to the URL.
func NewSchema(t testing.TB, extra url.Values) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, BaseURL())
	if err != nil {
		// Never skip: a missing server is a failure, under CI=true and locally.
		t.Fatalf("postgres: cannot reach the test server at SQLSTREAMS_POSTGRES_URL (default %s): %v", BaseURL(), err)
	}
	defer conn.Close(ctx)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		t.Fatalf("create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, BaseURL())
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(BaseURL())
	if err != nil || !strings.HasPrefix(u.Scheme, "postgres") {
		t.Fatalf("SQLSTREAMS_POSTGRES_URL must be a postgres:// URL to add search_path: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	for k, vs := range extra {
		for _, v := range vs {
			q.Set(k, v)
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

func beginTx(ctx context.Context, d driver.Driver) (driver.Tx, func() error, func() error, error) {
	tx, err := d.(*postgres.Driver).Pool().Begin(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	return postgres.Tx(tx), func() error { return tx.Commit(context.Background()) },
		func() error { return tx.Rollback(context.Background()) }, nil
}

// UnreachableURL names a server that is not there: a closed port.
const UnreachableURL = "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=5"

// Target is the conformance target for PostgreSQL with pgx's default exec
// mode.
func Target() conformance.Target {
	return conformance.Target{
		Name:         "postgres",
		NewNamespace: func(t testing.TB) string { return NewSchema(t, nil) },
		Open:         func(ns string) (driver.Driver, error) { return postgres.Open(ns), nil },
		BeginTx:      beginTx,
		OpenWithLockTimeout: func(ns string, d time.Duration) (driver.Driver, error) {
			return postgres.Open(ns, postgres.WithLockTimeout(d)), nil
		},
		Unreachable: func() driver.Driver { return postgres.Open(UnreachableURL) },
	}
}

// SimpleProtocolTarget runs every statement over the simple query protocol,
// as behind PgBouncer in transaction mode. The mode travels in the namespace
// URL (default_query_exec_mode), so child processes open it alike.
func SimpleProtocolTarget() conformance.Target {
	return conformance.Target{
		Name: "postgres-simple-protocol",
		NewNamespace: func(t testing.TB) string {
			return NewSchema(t, url.Values{"default_query_exec_mode": {"simple_protocol"}})
		},
		Open:    func(ns string) (driver.Driver, error) { return postgres.Open(ns, postgres.WithSimpleProtocol()), nil },
		BeginTx: beginTx,
		OpenWithLockTimeout: func(ns string, d time.Duration) (driver.Driver, error) {
			return postgres.Open(ns, postgres.WithSimpleProtocol(), postgres.WithLockTimeout(d)), nil
		},
		Unreachable: func() driver.Driver { return postgres.Open(UnreachableURL, postgres.WithSimpleProtocol()) },
	}
}
