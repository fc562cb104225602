package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// PauseGroup implements driver.GroupPauser: the group row is locked, then
// every cursor of the group (waiting for claims in flight, which hold
// one), as RegisterGroup does for a configuration change (C19).
func (d *Driver) PauseGroup(ctx context.Context, p driver.PauseGroupParams) error {
	paused := driver.TimeOrNull(p.PausedAt, time.Time.UTC)
	return d.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := store.LoadGroup(ctx, runner{tx}, p.StreamID, p.Group, ` FOR UPDATE`); err != nil {
			return err
		}
		b := &pgx.Batch{}
		b.Queue(`UPDATE consumer_group SET paused_at = $1::timestamptz WHERE stream_id = $2::bigint AND name = $3::text`, paused, p.StreamID, p.Group)
		d.queueBounded(b, `SELECT partition FROM group_cursor WHERE stream_id = $1::bigint AND group_name = $2::text ORDER BY partition FOR UPDATE`,
			p.StreamID, p.Group)
		return tx.SendBatch(ctx, b).Close()
	})
}
