package mysql

import (
	"context"
	"database/sql"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

var _ driver.ClientDirectory = (*Driver)(nil)

// RecordClient implements driver.ClientDirectory. One upsert of a row only
// this client writes: nothing else locks it.
func (d *Driver) RecordClient(ctx context.Context, p driver.RecordClientParams) error {
	c := p.Client
	var closed any
	if !c.ClosedAt.IsZero() {
		closed = ts(c.ClosedAt)
	}
	_, err := d.exec(ctx, `INSERT INTO client_heartbeat (instance, identity, host, pid, library_version, group_list, started_at, last_seen, heartbeat_every_us, closed_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON DUPLICATE KEY UPDATE identity = VALUES(identity), host = VALUES(host), pid = VALUES(pid), library_version = VALUES(library_version),
			group_list = VALUES(group_list), started_at = VALUES(started_at), last_seen = VALUES(last_seen),
			heartbeat_every_us = VALUES(heartbeat_every_us), closed_at = VALUES(closed_at)`,
		c.Instance, c.Identity, c.Host, c.PID, c.LibraryVersion, driver.EncodeClientGroups(c.Groups), ts(c.StartedAt),
		ts(c.LastSeen), c.HeartbeatEvery.Microseconds(), closed)
	return err
}

// ListClients implements driver.ClientDirectory.
func (d *Driver) ListClients(ctx context.Context, _ driver.ListClientsParams) ([]driver.ClientRecord, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	var out []driver.ClientRecord
	err := eachRow(ctx, d.db, `SELECT instance, identity, host, pid, library_version, group_list, started_at, last_seen, heartbeat_every_us, closed_at
		FROM client_heartbeat ORDER BY instance`, nil, func(r *sql.Rows) error {
		var c driver.ClientRecord
		var groups string
		var every int64
		var closed sql.NullTime
		if err := r.Scan(&c.Instance, &c.Identity, &c.Host, &c.PID, &c.LibraryVersion, &groups, &c.StartedAt, &c.LastSeen, &every, &closed); err != nil {
			return err
		}
		var err error
		if c.Groups, err = driver.DecodeClientGroups(groups); err != nil {
			return err
		}
		c.StartedAt, c.LastSeen, c.HeartbeatEvery = utc(c.StartedAt), utc(c.LastSeen), time.Duration(every)*time.Microsecond
		if closed.Valid {
			c.ClosedAt = utc(closed.Time)
		}
		out = append(out, c)
		return nil
	})
	return out, d.wrap(ctx, err, opRead)
}

// PruneClients implements driver.ClientDirectory.
func (d *Driver) PruneClients(ctx context.Context, p driver.PruneClientsParams) (int64, error) {
	res, err := d.exec(ctx, `DELETE FROM client_heartbeat WHERE last_seen < ?`, ts(p.Before))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
