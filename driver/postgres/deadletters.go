package postgres

import (
	"context"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// ListDead implements driver.Driver (store.ListDead).
func (d *Driver) ListDead(ctx context.Context, p driver.ListDeadParams) ([]driver.DeadLetter, error) {
	return sqldb.In(ctx, d.pooled, store.ListDead, p)
}

// Replay implements driver.Driver: one statement.
func (d *Driver) Replay(ctx context.Context, p driver.ReplayParams) (int64, error) {
	return sqldb.In(ctx, d.autocommit, store.Replay, p)
}

// Discard implements driver.Driver: one statement.
func (d *Driver) Discard(ctx context.Context, p driver.DiscardParams) (int64, error) {
	return sqldb.In(ctx, d.autocommit, store.Discard, p)
}
