package mysql

import (
	"errors"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// ErrUnsupportedServer is in the error of Migrate (and so of sqlstreams.Open)
// when the server speaks the MySQL protocol but lacks a capability the
// driver needs; the error names the capability. errors.Is finds it, and the
// error is also an ErrDatabase.
var ErrUnsupportedServer = errors.New("the server lacks a capability sqlstreams needs")

// What the driver needs of a MySQL-wire engine:
//
//   - row locks held to commit (SELECT ... FOR UPDATE) on the partition's
//     lock row, with AUTO_INCREMENT values that increase in the order the
//     lock grants them: ids in commit order per partition (C5). On Galera
//     the lock is node-local and the driver also writes the row, so that
//     certification orders appends across nodes (galera.go).
//   - SKIP LOCKED that skips rows another transaction locked: consumers of
//     a group spread over partitions.
//   - GET_LOCK: Migrate's lock (node-local on Galera; see galera.go).
//   - no LISTEN/NOTIFY: the driver watches a subscribed stream's newest id
//     instead (notify.go), and consumers poll as well.
//
// DDL is never transactional on these engines; the driver does not need it
// (see the package documentation).
//
// refusedEngines are the engines known to lack some of it, each told by its
// version text.
var refusedEngines = []driver.Engine{
	{Name: "TiDB", Marker: "-tidb-",
		Missing: []string{"SKIP LOCKED (TiDB parses it but does not skip locked rows)",
			"AUTO_INCREMENT in commit order across TiDB servers (each server allocates from a cached range unless AUTO_ID_CACHE=1)"},
		Advice: "sqlstreams cannot claim without waiting nor keep commit order (C5) on TiDB; use MySQL or MariaDB (Galera Cluster for writes through several nodes)"},
	{Name: "Vitess (vtgate)", Marker: "vitess",
		Missing: []string{"AUTO_INCREMENT in commit order across shards (a sharded keyspace takes ids from a Vitess sequence, not in commit order)",
			"GET_LOCK and SKIP LOCKED with the driver's semantics through vtgate (not verified)"},
		Advice: "connect sqlstreams to the MySQL server of an unsharded keyspace directly, not through vtgate"},
}

// classifyServer tells from VERSION() which engine answers.
func classifyServer(version string) driver.Engine {
	return driver.EngineOf(version, "MySQL or MariaDB", refusedEngines...)
}

// refuseEngine is Migrate's error for an engine it refuses: an ErrDatabase
// with the engine's advice.
func refuseEngine(version string) error {
	return classifyServer(version).Refused("", ErrUnsupportedServer)
}

// serverError is Migrate's error for a server it refuses: an engine's
// refusal as it is, an old server's with the advice to upgrade.
func serverError(err error) error {
	var de *driver.Error
	if errors.As(err, &de) {
		return err
	}
	return &driver.Error{Kind: driver.ErrDatabase, Advice: "upgrade the server", Err: err}
}
