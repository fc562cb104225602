package mysql

import (
	"context"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// RecordClient implements driver.ClientDirectory. One upsert of a row only
// this client writes: nothing else locks it.
func (d *Driver) RecordClient(ctx context.Context, p driver.RecordClientParams) error {
	c := p.Client
	_, err := d.exec(ctx, `INSERT INTO client_heartbeat (`+sqldb.ClientColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON DUPLICATE KEY UPDATE identity = VALUES(identity), host = VALUES(host), pid = VALUES(pid), library_version = VALUES(library_version),
			group_list = VALUES(group_list), started_at = VALUES(started_at), last_seen = VALUES(last_seen),
			heartbeat_every_us = VALUES(heartbeat_every_us), closed_at = VALUES(closed_at)`,
		c.Instance, c.Identity, c.Host, c.PID, c.LibraryVersion, driver.EncodeClientGroups(c.Groups), ts(c.StartedAt),
		ts(c.LastSeen), c.HeartbeatEvery.Microseconds(), driver.TimeOrNull(c.ClosedAt, ts))
	return err
}

// ListClients implements driver.ClientDirectory.
func (d *Driver) ListClients(ctx context.Context, _ driver.ListClientsParams) ([]driver.ClientRecord, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	out, err := sqldb.Collect(ctx, d.db, `SELECT `+sqldb.ClientColumns+` FROM client_heartbeat ORDER BY instance`, nil,
		func(r driver.RowScanner) (driver.ClientRecord, error) { return driver.ScanClient(r, utc) })
	return out, d.wrap(ctx, err, opRead)
}

// PruneClients implements driver.ClientDirectory.
func (d *Driver) PruneClients(ctx context.Context, p driver.PruneClientsParams) (int64, error) {
	return sqldb.Affected(d.exec(ctx, `DELETE FROM client_heartbeat WHERE last_seen < ?`, ts(p.Before)))
}
