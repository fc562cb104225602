package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

var _ driver.GroupPauser = (*Driver)(nil)

// PauseGroup implements driver.GroupPauser. The single writer orders it
// against claims: none is in flight while it writes.
func (d *Driver) PauseGroup(ctx context.Context, p driver.PauseGroupParams) error {
	var paused any
	if !p.PausedAt.IsZero() {
		paused = micros(p.PausedAt)
	}
	return d.inTx(ctx, nil, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE consumer_group SET paused_at = ? WHERE stream_id = ? AND name = ?`, paused, p.StreamID, p.Group)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return cmp.Or(err, fmt.Errorf("group %q: %w", p.Group, driver.ErrGroupNotFound))
		}
		return nil
	})
}
