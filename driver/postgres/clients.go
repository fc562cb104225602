package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// RecordClient implements driver.ClientDirectory. One upsert of a row only
// this client writes: nothing else locks it.
func (d *Driver) RecordClient(ctx context.Context, p driver.RecordClientParams) error {
	c := p.Client
	return d.write(ctx, func(conn *pgxpool.Conn) error {
		_, err := conn.Exec(ctx, `INSERT INTO client_heartbeat (instance, identity, host, pid, library_version, group_list, started_at, last_seen, heartbeat_every_us, closed_at)
			VALUES ($1::text, $2::text, $3::text, $4::integer, $5::text, $6::jsonb, $7::timestamptz, $8::timestamptz, $9::bigint, $10::timestamptz)
			ON CONFLICT (instance) DO UPDATE SET identity = excluded.identity, host = excluded.host, pid = excluded.pid,
				library_version = excluded.library_version, group_list = excluded.group_list, started_at = excluded.started_at,
				last_seen = excluded.last_seen, heartbeat_every_us = excluded.heartbeat_every_us, closed_at = excluded.closed_at`,
			c.Instance, c.Identity, c.Host, c.PID, c.LibraryVersion, driver.EncodeClientGroups(c.Groups), c.StartedAt.UTC(),
			c.LastSeen.UTC(), c.HeartbeatEvery.Microseconds(), driver.TimeOrNull(c.ClosedAt, time.Time.UTC))
		return err
	})
}

// ListClients implements driver.ClientDirectory.
func (d *Driver) ListClients(ctx context.Context, _ driver.ListClientsParams) ([]driver.ClientRecord, error) {
	var out []driver.ClientRecord
	err := d.read(ctx, func() error {
		out = nil
		return eachRow(ctx, d.pool, `SELECT instance, identity, host, pid, library_version, group_list::text, started_at, last_seen, heartbeat_every_us, closed_at
			FROM client_heartbeat ORDER BY instance`, nil, func(r pgx.Rows) error {
			c, err := driver.ScanClient(r, time.Time.UTC)
			out = append(out, c)
			return err
		})
	})
	return out, err
}

// PruneClients implements driver.ClientDirectory.
func (d *Driver) PruneClients(ctx context.Context, p driver.PruneClientsParams) (int64, error) {
	var n int64
	err := d.write(ctx, func(conn *pgxpool.Conn) error {
		tag, err := conn.Exec(ctx, `DELETE FROM client_heartbeat WHERE last_seen < $1::timestamptz`, p.Before.UTC())
		n = tag.RowsAffected()
		return err
	})
	return n, err
}
