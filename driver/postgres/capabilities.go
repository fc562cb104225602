package postgres

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// ErrUnsupportedServer is in Migrate's error (an ErrDatabase, so also
// sqlstreams.Open's) for a PostgreSQL-wire server that lacks what the
// driver needs, which the error names.
var ErrUnsupportedServer = errors.New("the server lacks a capability sqlstreams needs")

// engines are the PostgreSQL-wire engines Migrate refuses, told by
// their version text. The driver needs one global order of transactions
// (C5), SKIP LOCKED that skips, transaction-level advisory locks (Migrate's)
// and transactional DDL; LISTEN/NOTIFY only for wake-ups (without it,
// consumers poll).
var engines = driver.Engines{Served: "PostgreSQL", Prefix: "postgres: ", Unsupported: ErrUnsupportedServer, Refused: []driver.Engine{
	{Name: "CockroachDB", Marker: "cockroachdb",
		Missing: []string{"commit-ordered visibility (pg_current_snapshot and xid8: CockroachDB has no global transaction ids)",
			"transaction-level advisory locks (pg_advisory_xact_lock)", "LISTEN/NOTIFY"},
		Advice: "sqlstreams cannot keep commit order (C5) on CockroachDB; use PostgreSQL (with a streaming replica and failover for availability)"},
	{Name: "YugabyteDB", Marker: "-yb-",
		Missing: []string{"commit-ordered visibility (pg_current_snapshot xmin is per tablet server, not one order across the cluster)",
			"transaction-level advisory locks (before YugabyteDB 2.25)", "LISTEN/NOTIFY (before 2025.2.3, and then only with yb_enable_listen_notify)"},
		Advice: "sqlstreams cannot keep commit order (C5) on YugabyteDB; use PostgreSQL (with a streaming replica and failover for availability)"},
}}

type serverCheck struct{ ok atomic.Bool }

// checkServer refuses the engines of engines, once per driver.
func (d *Driver) checkServer(ctx context.Context) error {
	if d.server.ok.Load() {
		return nil
	}
	var version string
	if err := d.pool.QueryRow(ctx, `SELECT version()`).Scan(&version); err != nil {
		return d.wrap(ctx, err, stageRead)
	}
	if err := engines.Refuse(version); err != nil {
		return err
	}
	d.server.ok.Store(true)
	return nil
}
