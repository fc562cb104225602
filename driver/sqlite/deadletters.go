package sqlite

import (
	"context"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// ListDead implements driver.Driver.
func (d *Driver) ListDead(ctx context.Context, p driver.ListDeadParams) ([]driver.DeadLetter, error) {
	return sqldb.In(ctx, sqldb.Over(d.reading), store.ListDead, p)
}

// Replay implements driver.Driver.
func (d *Driver) Replay(ctx context.Context, p driver.ReplayParams) (int64, error) {
	return sqldb.In(ctx, sqldb.Over(d.writing), store.Replay, p)
}

// Discard implements driver.Driver.
func (d *Driver) Discard(ctx context.Context, p driver.DiscardParams) (int64, error) {
	return sqldb.In(ctx, sqldb.Over(d.writing), store.Discard, p)
}
