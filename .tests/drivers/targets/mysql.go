package targets

import (
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/mysql"
	"github.com/sqlstreams/sqlstreams/driver/mysql/mysqltest"
)

// MySQL is the conformance target for MySQL and MariaDB.
func MySQL() conformance.Target {
	return conformance.Target{
		Name:         "mysql",
		NewNamespace: mysqltest.NewDatabase,
		Open:         func(ns string) (driver.Driver, error) { return mysql.Open(ns), nil },
		OpenWithLockTimeout: func(ns string, d time.Duration) (driver.Driver, error) {
			return mysql.Open(ns, mysql.WithLockTimeout(d)), nil
		},
		Unreachable: func() driver.Driver {
			// Port 1 on the loopback refuses at once.
			return mysql.Open("root:secret@tcp(127.0.0.1:1)/sqlstreams?timeout=2s")
		},
		BeginTx:        mysqltest.BeginTx,
		ExecTx:         mysqltest.ExecTx,
		QueryInt:       mysqltest.QueryInt,
		ResetNamespace: mysqltest.ResetNamespace,
	}
}

// MySQLSteppedIDs is MySQL on sessions whose ids step as a 3-node Galera
// cluster's do: the contracts hold where ids are increasing but not dense.
func MySQLSteppedIDs() conformance.Target {
	t := MySQL()
	t.Name = "mysql-stepped-ids"
	t.NewNamespace = func(tb testing.TB) string {
		return mysqltest.WithParams(mysqltest.NewDatabase(tb), mysqltest.SteppedIDs)
	}
	return t
}
