// Package sqlitetest describes the SQLite driver to the conformance suite
// and to end-to-end tests: a fresh database file per test.
package sqlitetest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/sqlite"
)

// Target returns the conformance target for SQLite.
func Target() conformance.Target {
	return conformance.Target{
		Name: "sqlite",
		NewNamespace: func(t testing.TB) string {
			return filepath.Join(t.TempDir(), "sqlstreams.db")
		},
		Open: func(ns string) (driver.Driver, error) { return sqlite.Open(ns), nil },
		OpenWithLockTimeout: func(ns string, d time.Duration) (driver.Driver, error) {
			return sqlite.Open(ns, sqlite.WithBusyTimeout(d)), nil
		},
		Unreachable: func() driver.Driver {
			return sqlite.Open(filepath.Join(os.TempDir(), "sqlstreams-missing-dir-0f3c", "nested", "app.db"))
		},
		BeginTx: func(ctx context.Context, d driver.Driver) (driver.Tx, func() error, func() error, error) {
			tx, err := d.(*sqlite.Driver).DB().BeginTx(ctx, nil)
			if err != nil {
				return nil, nil, nil, err
			}
			return sqlite.Tx(tx), tx.Commit, tx.Rollback, nil
		},
	}
}
