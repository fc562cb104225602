package sqlite

import (
	"context"
	"database/sql"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// RecordClient implements driver.ClientDirectory.
func (d *Driver) RecordClient(ctx context.Context, p driver.RecordClientParams) error {
	c := p.Client
	return d.inTx(ctx, nil, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO client_heartbeat (`+sqldb.ClientColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (instance) DO UPDATE SET identity = excluded.identity, host = excluded.host, pid = excluded.pid,
				library_version = excluded.library_version, group_list = excluded.group_list, started_at = excluded.started_at,
				last_seen = excluded.last_seen, heartbeat_every_us = excluded.heartbeat_every_us, closed_at = excluded.closed_at`,
			c.Instance, c.Identity, c.Host, c.PID, c.LibraryVersion, driver.EncodeClientGroups(c.Groups), micros(c.StartedAt),
			micros(c.LastSeen), c.HeartbeatEvery.Microseconds(), driver.TimeOrNull(c.ClosedAt, micros))
		return err
	})
}

// ListClients implements driver.ClientDirectory.
func (d *Driver) ListClients(ctx context.Context, _ driver.ListClientsParams) ([]driver.ClientRecord, error) {
	var out []driver.ClientRecord
	err := d.readTx(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = sqldb.Collect(ctx, tx, `SELECT `+sqldb.ClientColumns+` FROM client_heartbeat ORDER BY instance`, nil,
			func(r driver.RowScanner) (driver.ClientRecord, error) { return driver.ScanClient(r, fromMicros) })
		return err
	})
	return out, err
}

// PruneClients implements driver.ClientDirectory.
func (d *Driver) PruneClients(ctx context.Context, p driver.PruneClientsParams) (int64, error) {
	var n int64
	err := d.inTx(ctx, nil, func(tx *sql.Tx) error {
		var err error
		n, err = sqldb.Affected(tx.ExecContext(ctx, `DELETE FROM client_heartbeat WHERE last_seen < ?`, micros(p.Before)))
		return err
	})
	return n, err
}
