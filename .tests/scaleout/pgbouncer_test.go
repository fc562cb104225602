package scaleout_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/postgres"
	"github.com/sqlstreams/sqlstreams/scaleout/servers"
	"github.com/sqlstreams/sqlstreams/tests/drivers/targets"
)

// envListenPorts maps the PgBouncer port to the server's ("6432:5432"), so
// that the suite's child processes connect their LISTEN session directly
// to the server: LISTEN needs a session of its own, which a transaction-mode
// pooler does not keep.
const envListenPorts = "SQLSTREAMS_SCALEOUT_LISTEN_PORTS"

// TestPgBouncerConformance runs the whole conformance suite through
// PgBouncer in transaction mode, with WithSimpleProtocol and the listener
// on the server (WithListenURL). Each namespace is a database of its own
// whose default search_path is a schema of its own: PgBouncer 1.18 does not
// carry a search_path startup parameter to the server connections it
// shares.
func TestPgBouncerConformance(t *testing.T) {
	t.Parallel()
	pg := servers.NewPostgres(t, servers.PostgresOptions{Conf: []string{"max_connections = 300"}})
	bouncer := servers.NewPgBouncer(t, pg)
	os.Setenv(envListenPorts, fmt.Sprintf("%d:%d", bouncer.Port, pg.Port))
	target := pgBouncerTarget()
	target.NewNamespace = func(tb testing.TB) string {
		var b [6]byte
		_, _ = rand.Read(b[:])
		name := "t_" + hex.EncodeToString(b[:])
		for _, q := range []struct{ db, sql string }{
			{"postgres", "CREATE DATABASE " + name},
			{name, "CREATE SCHEMA " + name},
			{name, "ALTER DATABASE " + name + " SET search_path = " + name},
		} {
			if _, err := pg.Psql(q.db, q.sql); err != nil {
				tb.Fatal(err)
			}
		}
		tb.Cleanup(func() {
			if _, err := pg.Psql("postgres", "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
				tb.Errorf("drop database %s: %v", name, err)
			}
		})
		return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable&default_query_exec_mode=simple_protocol", bouncer.Port, name)
	}
	// The driver's own checks of the namespace pass through PgBouncer too.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := target.NewNamespace(t)
	conn, err := pgx.Connect(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	var mode string
	if err := conn.QueryRow(ctx, "SELECT current_schema()").Scan(&mode); err != nil || !strings.HasPrefix(mode, "t_") {
		t.Fatalf("through PgBouncer the namespace's schema is %q (%v)", mode, err)
	}
	conn.Close(ctx)
	conformance.Run(t, target)
}

// pgBouncerTarget is postgrestest's simple-protocol target with the
// listener pointed at the server.
func pgBouncerTarget() conformance.Target {
	target := targets.PostgresSimpleProtocol()
	target.Name = "postgres-pgbouncer-transaction"
	open := func(ns string, opts ...postgres.Option) (driver.Driver, error) {
		opts = append(opts, postgres.WithSimpleProtocol())
		if l := listenURL(ns); l != "" {
			opts = append(opts, postgres.WithListenURL(l))
		}
		return postgres.Open(ns, opts...), nil
	}
	target.Open = func(ns string) (driver.Driver, error) { return open(ns) }
	target.OpenWithLockTimeout = func(ns string, d time.Duration) (driver.Driver, error) {
		return open(ns, postgres.WithLockTimeout(d))
	}
	return target
}

// listenURL is ns with PgBouncer's port replaced by the server's, as
// envListenPorts says; "" when ns is not behind the test's PgBouncer.
func listenURL(ns string) string {
	from, to, ok := strings.Cut(os.Getenv(envListenPorts), ":")
	if !ok {
		return ""
	}
	u, err := url.Parse(ns)
	if err != nil || u.Port() != from {
		return ""
	}
	u.Host = "127.0.0.1:" + to
	return u.String()
}
