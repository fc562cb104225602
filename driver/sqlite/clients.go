package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

var _ driver.ClientDirectory = (*Driver)(nil)

// RecordClient implements driver.ClientDirectory.
func (d *Driver) RecordClient(ctx context.Context, p driver.RecordClientParams) error {
	c := p.Client
	var closed any
	if !c.ClosedAt.IsZero() {
		closed = micros(c.ClosedAt)
	}
	return d.inTx(ctx, nil, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO client_heartbeat (instance, identity, host, pid, library_version, group_list, started_at, last_seen, heartbeat_every_us, closed_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (instance) DO UPDATE SET identity = excluded.identity, host = excluded.host, pid = excluded.pid,
				library_version = excluded.library_version, group_list = excluded.group_list, started_at = excluded.started_at,
				last_seen = excluded.last_seen, heartbeat_every_us = excluded.heartbeat_every_us, closed_at = excluded.closed_at`,
			c.Instance, c.Identity, c.Host, c.PID, c.LibraryVersion, driver.EncodeClientGroups(c.Groups), micros(c.StartedAt),
			micros(c.LastSeen), c.HeartbeatEvery.Microseconds(), closed)
		return err
	})
}

// ListClients implements driver.ClientDirectory.
func (d *Driver) ListClients(ctx context.Context, _ driver.ListClientsParams) ([]driver.ClientRecord, error) {
	var out []driver.ClientRecord
	err := d.readTx(ctx, func(tx *sql.Tx) error {
		return eachRow(ctx, tx, `SELECT instance, identity, host, pid, library_version, group_list, started_at, last_seen, heartbeat_every_us, closed_at
			FROM client_heartbeat ORDER BY instance`, nil, func(r *sql.Rows) error {
			var c driver.ClientRecord
			var groups string
			var started, seen, every int64
			var closed sql.NullInt64
			if err := r.Scan(&c.Instance, &c.Identity, &c.Host, &c.PID, &c.LibraryVersion, &groups, &started, &seen, &every, &closed); err != nil {
				return err
			}
			var err error
			if c.Groups, err = driver.DecodeClientGroups(groups); err != nil {
				return err
			}
			c.StartedAt, c.LastSeen, c.HeartbeatEvery = fromMicros(started), fromMicros(seen), time.Duration(every)*time.Microsecond
			if closed.Valid {
				c.ClosedAt = fromMicros(closed.Int64)
			}
			out = append(out, c)
			return nil
		})
	})
	return out, err
}

// PruneClients implements driver.ClientDirectory.
func (d *Driver) PruneClients(ctx context.Context, p driver.PruneClientsParams) (int64, error) {
	var n int64
	err := d.inTx(ctx, nil, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM client_heartbeat WHERE last_seen < ?`, micros(p.Before))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}
