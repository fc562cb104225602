package sqlite

import (
	"context"
	"database/sql"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// AlterStream implements driver.Alterer. It runs as one write transaction:
// SQLite's single writer means no append or claim is in flight meanwhile,
// and each later one reads the new generation in its own write transaction
// (checkGeneration) before it writes or leases anything.
func (d *Driver) AlterStream(ctx context.Context, p driver.AlterStreamParams) (driver.StreamConfig, error) {
	if err := d.check(); err != nil {
		return driver.StreamConfig{}, err
	}
	var out driver.StreamConfig
	err := d.inTx(ctx, nil, func(tx *sql.Tx) error {
		var err error
		out, err = driver.Alter(p, func() (driver.StreamConfig, error) { return lookupStreamByID(ctx, tx, p.StreamID) },
			func(stored, next driver.StreamConfig) error {
				return sqldb.StoreAltered(ctx, sqldb.On(tx), stored, next, nil)
			})
		return err
	})
	// The writer's busy timeout has advice of its own: AlterConflict only
	// names the stream.
	return out, driver.AlterConflict(p.StreamID, d.wrap(err))
}

// checkGeneration refuses, with a *driver.StreamChangedError, an append or
// claim planned with another generation of the stream's configuration than
// the stored one. Callers run it in their write transaction, which the
// single writer keeps apart from AlterStream's.
func checkGeneration(ctx context.Context, tx querier, used driver.StreamConfig) error {
	var gen int64
	if err := tx.QueryRowContext(ctx, `SELECT generation FROM stream_config WHERE id = ?`, used.ID).Scan(&gen); err != nil {
		return err // a missing stream fails as it did before
	}
	return driver.CheckGeneration(used, gen, func() (driver.StreamConfig, error) { return lookupStreamByID(ctx, tx, used.ID) })
}
