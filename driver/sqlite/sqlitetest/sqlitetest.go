// Package sqlitetest gives tests a SQLite namespace of their own: a fresh
// database file per test, removed with the test's temporary directory, and
// the statements tests run beside the driver's.
package sqlitetest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/drivertest"
	"github.com/sqlstreams/sqlstreams/driver/sqlite"
)

// NewFile returns the path of a database file that does not exist yet, in
// a directory tb removes when it ends.
func NewFile(tb testing.TB) string { return filepath.Join(tb.TempDir(), "sqlstreams.db") }

// UnreachablePath is a database file in a directory that does not exist:
// the driver cannot open it.
var UnreachablePath = filepath.Join(os.TempDir(), "sqlstreams-missing-dir-0f3c", "nested", "app.db")

// kit is the conformance hooks of a database/sql driver, over sqlite's.
var kit = drivertest.SQLKit[*sqlite.Driver]{Name: "sqlitetest", DB: (*sqlite.Driver).DB, Adapt: sqlite.Tx, Unwrap: sqlite.UnwrapTx}

// BeginTx begins a transaction on the driver's database, adapted with
// sqlite.Tx, and returns its commit and rollback.
func BeginTx(ctx context.Context, d driver.Driver) (driver.Tx, func() error, func() error, error) {
	return kit.BeginTx(ctx, d)
}

// ExecTx runs one statement in the adapted transaction tx or, with tx nil,
// on the driver's database.
func ExecTx(ctx context.Context, d driver.Driver, tx driver.Tx, query string) error {
	return kit.ExecTx(ctx, d, tx, query)
}

// QueryInt runs a query returning one integer (NULL is 0) on the driver's
// database.
func QueryInt(ctx context.Context, d driver.Driver, query string) (int64, error) {
	return kit.QueryInt(ctx, d, query)
}
