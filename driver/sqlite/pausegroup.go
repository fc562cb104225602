package sqlite

import (
	"cmp"
	"context"
	"database/sql"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// PauseGroup implements driver.GroupPauser. The single writer orders it
// against claims: none is in flight while it writes.
func (d *Driver) PauseGroup(ctx context.Context, p driver.PauseGroupParams) error {
	paused := driver.TimeOrNull(p.PausedAt, micros)
	return d.inTx(ctx, nil, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE consumer_group SET paused_at = ? WHERE stream_id = ? AND name = ?`, paused, p.StreamID, p.Group)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return cmp.Or(err, driver.GroupNotFound(p.Group))
		}
		return nil
	})
}
