package mysql

import (
	"context"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// Health implements driver.Driver (store.Health): the figures in a
// read-only snapshot, the new rows counted in a transaction that first
// locks the stream (its consistent reads then see every removal that
// committed before, lockStream); both heal a missing log table (withLog).
func (d *Driver) Health(ctx context.Context, p driver.HealthParams) (driver.HealthStats, error) {
	healing := func(snapshot bool) func(context.Context, func(querier) error) error {
		return func(ctx context.Context, fn func(querier) error) error {
			return d.withLog(ctx, p.StreamID, func() error { return d.ownTx(ctx, snapshot, fn) })
		}
	}
	return store.Health(ctx, p, sqldb.Over(healing(true)), sqldb.Over(healing(false)), " FOR UPDATE")
}
