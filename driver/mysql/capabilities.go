package mysql

import (
	"errors"
	"fmt"
	"strings"

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
//   - no LISTEN/NOTIFY: consumers of this driver always poll.
//
// DDL is never transactional on these engines; the driver does not need it
// (see the package documentation).
type engineInfo struct {
	name    string
	missing []string
	advice  string
}

// classifyServer tells from VERSION() which engine answers. It is a pure
// function of the text, tested against captured version strings.
func classifyServer(version string) engineInfo {
	v := strings.ToLower(version)
	switch {
	case strings.Contains(v, "-tidb-"):
		return engineInfo{name: "TiDB",
			missing: []string{"SKIP LOCKED (TiDB parses it but does not skip locked rows)",
				"AUTO_INCREMENT in commit order across TiDB servers (each server allocates from a cached range unless AUTO_ID_CACHE=1)"},
			advice: "sqlstreams cannot claim without waiting nor keep commit order (C5) on TiDB; use MySQL or MariaDB (Galera Cluster for writes through several nodes)"}
	case strings.Contains(v, "vitess"):
		return engineInfo{name: "Vitess (vtgate)",
			missing: []string{"AUTO_INCREMENT in commit order across shards (a sharded keyspace takes ids from a Vitess sequence, not in commit order)",
				"GET_LOCK and SKIP LOCKED with the driver's semantics through vtgate (not verified)"},
			advice: "connect sqlstreams to the MySQL server of an unsharded keyspace directly, not through vtgate"}
	}
	return engineInfo{name: "MySQL or MariaDB"}
}

func refuseEngine(version string) error {
	e := classifyServer(version)
	if len(e.missing) == 0 {
		return nil
	}
	return &unsupportedError{engine: e}
}

// unsupportedError names the engine and what it lacks; Migrate gives it
// the engine's advice.
type unsupportedError struct{ engine engineInfo }

func (e *unsupportedError) Error() string {
	return fmt.Sprintf("%s: %s lacks %s", ErrUnsupportedServer, e.engine.name, strings.Join(e.engine.missing, "; "))
}

func (e *unsupportedError) Unwrap() error { return ErrUnsupportedServer }

// serverError is Migrate's error for a server it refuses.
func serverError(err error) error {
	var ue *unsupportedError
	if errors.As(err, &ue) {
		return &driver.Error{Kind: driver.ErrDatabase, Advice: ue.engine.advice, Err: err}
	}
	return &driver.Error{Kind: driver.ErrDatabase, Advice: "upgrade the server", Err: err}
}
