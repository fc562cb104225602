package postgres

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// ErrUnsupportedServer is in the error of Migrate (and so of sqlstreams.Open)
// when the server speaks the PostgreSQL protocol but lacks a capability the
// driver needs; the error names the capability. errors.Is finds it, and the
// error is also an ErrDatabase.
var ErrUnsupportedServer = errors.New("the server lacks a capability sqlstreams needs")

// What the driver needs of a PostgreSQL-wire engine, and what it does
// without each:
//
//   - commit-ordered visibility: claims read only rows of transactions older
//     than pg_snapshot_xmin(pg_current_snapshot()), which makes ids in commit
//     order per partition (C5). Engines whose transaction ids are not one
//     global order (CockroachDB, YugabyteDB) are refused at Open.
//   - SKIP LOCKED that locks: consumers of a group spread over partitions
//     without waiting. Required.
//   - transaction-level advisory locks (pg_advisory_xact_lock): Migrate's
//     lock. Required.
//   - LISTEN/NOTIFY: wake-ups only. Without it (WithoutNotify, a pooler in
//     transaction mode) consumers poll; a listener that cannot LISTEN makes
//     Run log "polling only" and go on polling.
//   - transactional DDL: CreateStream is atomic. Required.
//
// refusedEngines are the engines known to lack some of it, each told by its
// version text.
var refusedEngines = []driver.Engine{
	{Name: "CockroachDB", Marker: "cockroachdb",
		Missing: []string{"commit-ordered visibility (pg_current_snapshot and xid8: CockroachDB has no global transaction ids)",
			"transaction-level advisory locks (pg_advisory_xact_lock)", "LISTEN/NOTIFY"},
		Advice: "sqlstreams cannot keep commit order (C5) on CockroachDB; use PostgreSQL (with a streaming replica and failover for availability)"},
	{Name: "YugabyteDB", Marker: "-yb-",
		Missing: []string{"commit-ordered visibility (pg_current_snapshot xmin is per tablet server, not one order across the cluster)",
			"transaction-level advisory locks (before YugabyteDB 2.25)", "LISTEN/NOTIFY (before 2025.2.3, and then only with yb_enable_listen_notify)"},
		Advice: "sqlstreams cannot keep commit order (C5) on YugabyteDB; use PostgreSQL (with a streaming replica and failover for availability)"},
}

// classifyServer reads version() and tells which engine answers.
func classifyServer(version string) driver.Engine {
	return driver.EngineOf(version, "PostgreSQL", refusedEngines...)
}

// refuseEngine is Migrate's error for an engine it refuses: an ErrDatabase
// with the engine's advice.
func refuseEngine(version string) error {
	return classifyServer(version).Refused("postgres: ", ErrUnsupportedServer)
}

// serverCheck remembers that the server passed checkServer.
type serverCheck struct{ ok atomic.Bool }

// checkServer refuses engines that lack what the driver needs, once per
// driver.
func (d *Driver) checkServer(ctx context.Context) error {
	if d.server.ok.Load() {
		return nil
	}
	var version string
	if err := d.pool.QueryRow(ctx, `SELECT version()`).Scan(&version); err != nil {
		return d.wrap(ctx, err, stageRead)
	}
	if err := refuseEngine(version); err != nil {
		return err
	}
	d.server.ok.Store(true)
	return nil
}
