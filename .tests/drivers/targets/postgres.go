package targets

import (
	"net/url"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/postgres"
	"github.com/sqlstreams/sqlstreams/driver/postgres/postgrestest"
)

// Postgres is the conformance target for PostgreSQL with pgx's default exec
// mode.
func Postgres() conformance.Target {
	return conformance.Target{
		Name:         "postgres",
		NewNamespace: func(t testing.TB) string { return postgrestest.NewSchema(t, nil) },
		Open:         func(ns string) (driver.Driver, error) { return postgres.Open(ns), nil },
		BeginTx:      postgrestest.BeginTx,
		OpenWithLockTimeout: func(ns string, d time.Duration) (driver.Driver, error) {
			return postgres.Open(ns, postgres.WithLockTimeout(d)), nil
		},
		Unreachable:    func() driver.Driver { return postgres.Open(postgrestest.UnreachableURL) },
		ExecTx:         postgrestest.ExecTx,
		QueryInt:       postgrestest.QueryInt,
		ResetNamespace: postgrestest.ResetNamespace,
	}
}

// PostgresSimpleProtocol runs every statement over the simple query protocol,
// as behind PgBouncer in transaction mode. The mode travels in the namespace
// URL (default_query_exec_mode), so child processes open it alike.
func PostgresSimpleProtocol() conformance.Target {
	return conformance.Target{
		Name: "postgres-simple-protocol",
		NewNamespace: func(t testing.TB) string {
			return postgrestest.NewSchema(t, url.Values{"default_query_exec_mode": {"simple_protocol"}})
		},
		Open:    func(ns string) (driver.Driver, error) { return postgres.Open(ns, postgres.WithSimpleProtocol()), nil },
		BeginTx: postgrestest.BeginTx,
		OpenWithLockTimeout: func(ns string, d time.Duration) (driver.Driver, error) {
			return postgres.Open(ns, postgres.WithSimpleProtocol(), postgres.WithLockTimeout(d)), nil
		},
		Unreachable:    func() driver.Driver { return postgres.Open(postgrestest.UnreachableURL, postgres.WithSimpleProtocol()) },
		ExecTx:         postgrestest.ExecTx,
		QueryInt:       postgrestest.QueryInt,
		ResetNamespace: postgrestest.ResetNamespace,
	}
}
