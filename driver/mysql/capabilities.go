package mysql

import (
	"errors"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// ErrUnsupportedServer is in Migrate's error (an ErrDatabase, so also
// sqlstreams.Open's) for a MySQL-wire server that lacks what the driver
// needs, which the error names.
var ErrUnsupportedServer = errors.New("the server lacks a capability sqlstreams needs")

// engines are the MySQL-wire engines Migrate refuses, told by their
// version text. The driver needs row locks held to commit with
// AUTO_INCREMENT values that increase in the order the lock grants them
// (C5), SKIP LOCKED that skips, and GET_LOCK (Migrate's lock; a lock row on
// Galera); neither transactional DDL nor LISTEN/NOTIFY.
var engines = driver.Engines{Served: "MySQL or MariaDB", Unsupported: ErrUnsupportedServer, Refused: []driver.Engine{
	{Name: "TiDB", Marker: "-tidb-",
		Missing: []string{"SKIP LOCKED (TiDB parses it but does not skip locked rows)",
			"AUTO_INCREMENT in commit order across TiDB servers (each server allocates from a cached range unless AUTO_ID_CACHE=1)"},
		Advice: "sqlstreams cannot claim without waiting nor keep commit order (C5) on TiDB; use MySQL or MariaDB (Galera Cluster for writes through several nodes)"},
	{Name: "Vitess (vtgate)", Marker: "vitess",
		Missing: []string{"AUTO_INCREMENT in commit order across shards (a sharded keyspace takes ids from a Vitess sequence, not in commit order)",
			"GET_LOCK and SKIP LOCKED with the driver's semantics through vtgate (not verified)"},
		Advice: "connect sqlstreams to the MySQL server of an unsharded keyspace directly, not through vtgate"},
}}

// serverError is Migrate's error for a server it refuses: an engine's
// refusal as it is, an old server's with the advice to upgrade.
func serverError(err error) error {
	var de *driver.Error
	if errors.As(err, &de) {
		return err
	}
	return &driver.Error{Kind: driver.ErrDatabase, Advice: "upgrade the server", Err: err}
}
