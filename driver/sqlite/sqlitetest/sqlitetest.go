// Package sqlitetest describes the SQLite driver to the conformance suite
// and to end-to-end tests: a fresh database file per test.
package sqlitetest

import (
	"context"
	"fmt"
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
		Name:        "sqlite",
		BatchLeases: true,
		NewNamespace: func(t testing.TB) string {
			return filepath.Join(t.TempDir(), "sqlstreams.db")
		},
		Open: func(ns string) (driver.Driver, error) { return sqlite.Open(ns), nil },
		OpenWithLockTimeout: func(ns string, d time.Duration) (driver.Driver, error) {
			return sqlite.Open(ns, sqlite.WithBusyTimeout(d)), nil
		},
		ExecTx: func(ctx context.Context, d driver.Driver, tx driver.Tx, query string) error {
			if tx == nil {
				_, err := d.(*sqlite.Driver).DB().ExecContext(ctx, query)
				return err
			}
			stx, ok := sqlite.UnwrapTx(tx)
			if !ok {
				return fmt.Errorf("not a sqlite transaction: %T", tx)
			}
			_, err := stx.ExecContext(ctx, query)
			return err
		},
		QueryInt: func(ctx context.Context, d driver.Driver, query string) (int64, error) {
			var n int64
			err := d.(*sqlite.Driver).DB().QueryRowContext(ctx, query).Scan(&n)
			return n, err
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

// PerDeliveryTarget is Target with a leased exception row per claimed
// delivery (sqlite.WithPerDeliveryLeases) instead of batch records.
func PerDeliveryTarget() conformance.Target {
	t := Target()
	t.Name = "sqlite-per-delivery-leases"
	t.BatchLeases = false
	t.Open = func(ns string) (driver.Driver, error) { return sqlite.Open(ns, sqlite.WithPerDeliveryLeases()), nil }
	t.OpenWithLockTimeout = func(ns string, d time.Duration) (driver.Driver, error) {
		return sqlite.Open(ns, sqlite.WithPerDeliveryLeases(), sqlite.WithBusyTimeout(d)), nil
	}
	return t
}
