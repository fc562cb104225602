// Package postgrestest gives tests a PostgreSQL namespace of their own: a
// fresh schema per test on the server at SQLSTREAMS_POSTGRES_URL, emptied or
// dropped afterwards, and the statements tests run beside the driver's.
package postgrestest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/drivertest"
	"github.com/sqlstreams/sqlstreams/driver/postgres"
)

// BaseURL is the server the tests use; each test gets a schema of its own.
func BaseURL() string {
	return cmp.Or(os.Getenv("SQLSTREAMS_POSTGRES_URL"), "postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
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
	schema := drivertest.RandomName("t_", 6)
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

// BeginTx begins a transaction on the driver's pool, adapted with
// postgres.Tx, and returns its commit and rollback.
func BeginTx(ctx context.Context, d driver.Driver) (driver.Tx, func() error, func() error, error) {
	pd, err := drivertest.As[*postgres.Driver]("postgrestest", d)
	if err != nil {
		return nil, nil, nil, err
	}
	tx, err := pd.Pool().Begin(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	return postgres.Tx(tx), func() error { return tx.Commit(context.Background()) },
		func() error { return tx.Rollback(context.Background()) }, nil
}

// ExecTx runs one statement in the adapted transaction tx or, with tx nil,
// on the driver's pool.
func ExecTx(ctx context.Context, d driver.Driver, tx driver.Tx, query string) error {
	if tx != nil {
		native, ok := postgres.UnwrapTx(tx)
		if !ok {
			return fmt.Errorf("postgrestest: a %s transaction, not one postgres.Tx adapted", tx.DriverName())
		}
		_, err := native.Exec(ctx, query)
		return err
	}
	pd, err := drivertest.As[*postgres.Driver]("postgrestest", d)
	if err != nil {
		return err
	}
	_, err = pd.Pool().Exec(ctx, query)
	return err
}

// QueryInt runs a query returning one integer on the driver's pool.
func QueryInt(ctx context.Context, d driver.Driver, query string) (int64, error) {
	pd, err := drivertest.As[*postgres.Driver]("postgrestest", d)
	if err != nil {
		return 0, err
	}
	var n int64
	err = pd.Pool().QueryRow(ctx, query).Scan(&n)
	return n, err
}

// driverTables are the tables the driver's migrations create.
var driverTables = migrationTables()

// migrationTables lists the tables the driver's migrations create, so that
// a table a new migration adds is kept (and emptied) by ResetNamespace
// without anyone remembering to name it here.
func migrationTables() []string {
	d := postgres.Open("postgres://127.0.0.1:1/unused")
	defer d.Close()
	ms, err := d.Migrations()
	if err != nil {
		panic(err) // the migrations are embedded: a broken one fails every test
	}
	tables := map[string]bool{"sqlstreams_migration": true}
	for _, m := range ms {
		for _, match := range tableDDL.FindAllStringSubmatch(m.Up, -1) {
			tables[match[2]] = strings.EqualFold(match[1], "CREATE")
		}
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(tables)) {
		if tables[name] {
			out = append(out, name)
		}
	}
	return out
}

// tableDDL finds the tables a migration creates or drops, in order.
var tableDDL = regexp.MustCompile(`(?i)(CREATE|DROP) TABLE (?:IF (?:NOT )?EXISTS )?([a-z_]+)\b`)

// ResetNamespace makes a used namespace (a schema NewSchema created) what a
// freshly migrated one is: in one transaction it drops every other table,
// view and sequence of the schema (every stream's log, conformance_marker,
// anything a test created) and empties the driver's tables but the
// migration records; then it applies any migration a test took back, and
// checks that every table of the driver is there. Sequences of the driver's
// tables keep counting (stream ids keep growing). It fails when a lock
// stays held for 10s, for example by a transaction a test left open.
func ResetNamespace(ns string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, ns)
	if err != nil {
		return fmt.Errorf("reset namespace: %w", err)
	}
	defer conn.Close(context.Background())
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '10s'`); err != nil {
			return err
		}
		var schema *string
		if err := tx.QueryRow(ctx, `SELECT current_schema()::text`).Scan(&schema); err != nil {
			return err
		}
		if schema == nil || !strings.HasPrefix(*schema, "t_") {
			return errors.New("the namespace's search_path names no schema NewSchema created")
		}
		rows, err := tx.Query(ctx, `SELECT c.relname::text, c.relkind::text FROM pg_class c
			WHERE c.relnamespace = to_regnamespace(current_schema()) AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
				AND NOT (c.relkind = 'S' AND EXISTS (SELECT 1 FROM pg_depend dp WHERE dp.classid = 'pg_class'::regclass
					AND dp.objid = c.oid AND dp.deptype IN ('a', 'i')))
			ORDER BY 1`)
		if err != nil {
			return err
		}
		type rel struct{ name, kind string }
		rels, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (rel, error) {
			var x rel
			err := r.Scan(&x.name, &x.kind)
			return x, err
		})
		if err != nil {
			return err
		}
		var empty []string
		for _, r := range rels {
			id := pgx.Identifier{*schema, r.name}.Sanitize()
			if slices.Contains(driverTables, r.name) && r.kind == "r" {
				if r.name != "sqlstreams_migration" {
					empty = append(empty, id)
				}
				continue
			}
			if r.kind == "S" && r.name == "stream_config_id_seq" {
				continue
			}
			drop := map[string]string{"r": "TABLE", "p": "TABLE", "v": "VIEW", "m": "MATERIALIZED VIEW", "S": "SEQUENCE", "f": "FOREIGN TABLE"}[r.kind]
			if _, err := tx.Exec(ctx, `DROP `+drop+` IF EXISTS `+id+` CASCADE`); err != nil {
				return fmt.Errorf("drop %s: %w", id, err)
			}
		}
		if len(empty) > 0 {
			if _, err := tx.Exec(ctx, `TRUNCATE `+strings.Join(empty, ", ")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reset namespace: %w", err)
	}
	// A test may have taken a migration back: apply what is pending.
	d := postgres.Open(ns, postgres.WithoutNotify())
	defer d.Close()
	if err := d.Migrate(ctx); err != nil {
		return fmt.Errorf("reset namespace: %w", err)
	}
	var missing []string
	if err := conn.QueryRow(ctx, `SELECT COALESCE(array_agg(t ORDER BY t), '{}') FROM unnest($1::text[]) t
		WHERE to_regclass(format('%I.%I', current_schema(), t)) IS NULL`, driverTables).Scan(&missing); err != nil {
		return fmt.Errorf("reset namespace: %w", err)
	}
	if len(missing) > 0 {
		return fmt.Errorf("reset namespace: the driver's tables %s are gone", strings.Join(missing, ", "))
	}
	return nil
}

// UnreachableURL names a server that is not there: a closed port.
const UnreachableURL = "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=5"
