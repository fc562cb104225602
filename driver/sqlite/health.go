package sqlite

import (
	"context"
	"database/sql"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Health implements driver.Driver. It reads one snapshot (store.Health).
func (d *Driver) Health(ctx context.Context, p driver.HealthParams) (driver.HealthStats, error) {
	var st driver.HealthStats
	var uncounted int64
	err := d.readTx(ctx, func(tx *sql.Tx) error {
		var err error
		st, uncounted, err = store.Health(ctx, tx, p.StreamID)
		return err
	})
	if err == nil && uncounted > 0 {
		// Count the new rows once, so that the next read need not. The
		// counts are a cache: a failure (a read-only file, a busy writer)
		// costs the next read a longer count, never a wrong one.
		_ = d.catchUpRowCounts(ctx, p.StreamID)
	}
	return st, err
}
