package mysql

import (
	"context"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Health implements driver.Driver. It reads one snapshot (store.Health),
// in a transaction that heals a missing log table (withLog).
func (d *Driver) Health(ctx context.Context, p driver.HealthParams) (driver.HealthStats, error) {
	var st driver.HealthStats
	var uncounted int64
	err := d.withLog(ctx, p.StreamID, func() error {
		return d.ownTx(ctx, true, func(tx querier) error {
			var err error
			st, uncounted, err = store.Health(ctx, tx, p.StreamID)
			return err
		})
	})
	if err == nil && uncounted > 0 {
		// Count the new rows once, so that the next read need not. The
		// counts are a cache: a failure (a read-only user, a lock wait)
		// costs the next read a longer count, never a wrong one.
		_ = d.catchUpRowCounts(ctx, p.StreamID)
	}
	return st, err
}
