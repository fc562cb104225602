package scaleout_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/postgres"
	"github.com/sqlstreams/sqlstreams/tests/drivers/targets"
)

// TestMain hands the conformance suite's child processes to their roles;
// the parent runs the tests, which start their own servers.
func TestMain(m *testing.M) {
	if os.Getenv("SQLSTREAMS_PROCTEST_ROLE") != "" {
		conformance.Main(m, childTarget())
	}
	os.Exit(m.Run())
}

// childTarget serves the child processes of both suites this package runs
// (Galera and PgBouncer): each call goes to the target of its namespace
// (a postgres:// URL or a MySQL DSN) or of its driver.
func childTarget() conformance.Target {
	my, pg := targets.MySQL(), pgBouncerTarget()
	isPG := func(ns string) bool { return strings.HasPrefix(ns, "postgres://") }
	isPGDriver := func(d driver.Driver) bool { _, ok := d.(*postgres.Driver); return ok }
	t := my
	t.Name = "scaleout"
	t.Open = func(ns string) (driver.Driver, error) {
		if isPG(ns) {
			return pg.Open(ns)
		}
		return my.Open(ns)
	}
	t.OpenWithLockTimeout = func(ns string, d time.Duration) (driver.Driver, error) {
		if isPG(ns) {
			return pg.OpenWithLockTimeout(ns, d)
		}
		return my.OpenWithLockTimeout(ns, d)
	}
	t.ResetNamespace = func(ns string) error {
		if isPG(ns) {
			return pg.ResetNamespace(ns)
		}
		return my.ResetNamespace(ns)
	}
	t.BeginTx = func(ctx context.Context, d driver.Driver) (driver.Tx, func() error, func() error, error) {
		if isPGDriver(d) {
			return pg.BeginTx(ctx, d)
		}
		return my.BeginTx(ctx, d)
	}
	t.ExecTx = func(ctx context.Context, d driver.Driver, tx driver.Tx, q string) error {
		if isPGDriver(d) {
			return pg.ExecTx(ctx, d, tx, q)
		}
		return my.ExecTx(ctx, d, tx, q)
	}
	t.QueryInt = func(ctx context.Context, d driver.Driver, q string) (int64, error) {
		if isPGDriver(d) {
			return pg.QueryInt(ctx, d, q)
		}
		return my.QueryInt(ctx, d, q)
	}
	return t
}
