// Package sqlitetest gives tests a SQLite namespace of their own: a fresh
// database file per test, removed with the test's temporary directory, and
// the statements tests run beside the driver's.
package sqlitetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/sqlite"
)

// NewFile returns the path of a database file that does not exist yet, in
// a directory tb removes when it ends.
func NewFile(tb testing.TB) string { return filepath.Join(tb.TempDir(), "sqlstreams.db") }

// UnreachablePath is a database file in a directory that does not exist:
// the driver cannot open it.
var UnreachablePath = filepath.Join(os.TempDir(), "sqlstreams-missing-dir-0f3c", "nested", "app.db")

// BeginTx begins a transaction on the driver's database, adapted with
// sqlite.Tx, and returns its commit and rollback.
func BeginTx(ctx context.Context, d driver.Driver) (driver.Tx, func() error, func() error, error) {
	sd, ok := d.(*sqlite.Driver)
	if !ok {
		return nil, nil, nil, fmt.Errorf("sqlitetest: a %T, not a *sqlite.Driver", d)
	}
	tx, err := sd.DB().BeginTx(ctx, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	return sqlite.Tx(tx), tx.Commit, tx.Rollback, nil
}

// ExecTx runs one statement in the adapted transaction tx or, with tx nil,
// on the driver's database.
func ExecTx(ctx context.Context, d driver.Driver, tx driver.Tx, query string) error {
	if tx == nil {
		sd, ok := d.(*sqlite.Driver)
		if !ok {
			return fmt.Errorf("sqlitetest: a %T, not a *sqlite.Driver", d)
		}
		_, err := sd.DB().ExecContext(ctx, query)
		return err
	}
	stx, ok := sqlite.UnwrapTx(tx)
	if !ok {
		return fmt.Errorf("sqlitetest: a %s transaction, not one sqlite.Tx adapted", tx.DriverName())
	}
	_, err := stx.ExecContext(ctx, query)
	return err
}

// QueryInt runs a query returning one integer on the driver's database.
func QueryInt(ctx context.Context, d driver.Driver, query string) (int64, error) {
	sd, ok := d.(*sqlite.Driver)
	if !ok {
		return 0, fmt.Errorf("sqlitetest: a %T, not a *sqlite.Driver", d)
	}
	var n int64
	err := sd.DB().QueryRowContext(ctx, query).Scan(&n)
	return n, err
}
