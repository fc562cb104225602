package mysql

import (
	"context"
	"database/sql"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// PauseGroup implements driver.GroupPauser: the group row is locked, then
// every cursor of the group (waiting for claims in flight, which hold
// one), in RegisterGroup's order (C19).
func (d *Driver) PauseGroup(ctx context.Context, p driver.PauseGroupParams) error {
	paused := driver.TimeOrNull(p.PausedAt, ts)
	return d.inTx(ctx, nil, func(tx querier) error {
		if _, err := loadGroup(ctx, tx, p.StreamID, p.Group, " FOR UPDATE"+d.waitClause()); err != nil {
			return err
		}
		if err := sqldb.EachRow(ctx, tx, "SELECT `partition` FROM group_cursor WHERE stream_id = ? AND group_name = ? ORDER BY `partition` FOR UPDATE"+d.waitClause(),
			[]any{p.StreamID, p.Group}, func(*sql.Rows) error { return nil }); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE consumer_group SET paused_at = ? WHERE stream_id = ? AND name = ?`, paused, p.StreamID, p.Group)
		return err
	})
}
