package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/sqlite"
)

var target = conformance.Target{
	Name: "sqlite",
	NewNamespace: func(t testing.TB) string {
		return filepath.Join(t.TempDir(), "conformance.db")
	},
	Open: func(ns string) (driver.Driver, error) { return sqlite.Open(ns), nil },
	BeginTx: func(ctx context.Context, d driver.Driver) (driver.Tx, func() error, func() error, error) {
		tx, err := d.(*sqlite.Driver).DB().BeginTx(ctx, nil)
		if err != nil {
			return nil, nil, nil, err
		}
		return sqlite.Tx(tx), tx.Commit, tx.Rollback, nil
	},
}

func TestMain(m *testing.M) { conformance.Main(m, target) }

func TestConformance(t *testing.T) { conformance.Run(t, target) }
