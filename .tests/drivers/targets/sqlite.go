// Package targets describes each driver of this repository to the
// conformance suite (conformance.Target): how to make a namespace of its
// own for a test and open the driver on it, in each mode the driver has.
// It lives in a test-only module because it requires every driver and the
// suite, which no published module should.
package targets

import (
	"time"

	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/sqlite"
	"github.com/sqlstreams/sqlstreams/driver/sqlite/sqlitetest"
)

// SQLite is the conformance target for SQLite: a fresh file per test.
func SQLite() conformance.Target {
	return conformance.Target{
		Name:         "sqlite",
		NewNamespace: sqlitetest.NewFile,
		Open:         func(ns string) (driver.Driver, error) { return sqlite.Open(ns), nil },
		OpenWithLockTimeout: func(ns string, d time.Duration) (driver.Driver, error) {
			return sqlite.Open(ns, sqlite.WithBusyTimeout(d)), nil
		},
		ExecTx:      sqlitetest.ExecTx,
		QueryInt:    sqlitetest.QueryInt,
		Unreachable: func() driver.Driver { return sqlite.Open(sqlitetest.UnreachablePath) },
		BeginTx:     sqlitetest.BeginTx,
	}
}
