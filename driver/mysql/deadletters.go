package mysql

import (
	"context"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// ListDead implements driver.Driver, healing a missing log table
// (withLog); Replay and Discard are the directory's.
func (d *Driver) ListDead(ctx context.Context, p driver.ListDeadParams) ([]driver.DeadLetter, error) {
	return sqldb.In(ctx, sqldb.Over(func(ctx context.Context, fn func(querier) error) error {
		return d.read(ctx, func(q querier) error { return d.withLog(ctx, p.StreamID, func() error { return fn(q) }) })
	}), store.ListDead, p)
}
