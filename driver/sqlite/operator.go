package sqlite

import (
	"context"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// SetCursors implements driver.Driver. SQLite's single writer orders it
// against claims: the read of the cursors takes no lock.
func (d *Driver) SetCursors(ctx context.Context, p driver.SetCursorsParams) error {
	return d.writing(ctx, func(tx querier) error {
		return sqldb.SetCursors(ctx, sqldb.On(tx), p, sqldb.CursorSteps{Release: func(parts []int) error {
			return materializeAll(ctx, tx, p.StreamID, `SELECT `+batchColumns+` FROM delivery_batch WHERE stream_id = ? AND group_name = ? AND partition IN (`+sqldb.Placeholders(len(parts))+`)`,
				append([]any{p.StreamID, p.Group}, sqldb.Args(parts)...)...)
		}})
	})
}

// ReadRows implements driver.Driver (store.ReadRows), in one snapshot.
func (d *Driver) ReadRows(ctx context.Context, p driver.ReadRowsParams) (driver.ReadRowsResult, error) {
	return sqldb.In(ctx, sqldb.Over(d.reading), store.ReadRows, p)
}
