package mysql

import (
	"context"
	"database/sql"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// AlterStream implements driver.Alterer. One transaction locks, each wait
// bounded by the lock timeout and in the order maintenance and
// registrations take them: the stream's configuration row (maintenance's
// lock; RegisterGroup shares it, so a group registered meanwhile is either
// extended here or reads the new partition count), the rows of its groups
// (claims that find every cursor taken share them), every cursor of those
// groups (claims hold one while they run), and last every partition's
// append lock row (appends hold theirs). So no append or claim planned with
// the old configuration is in flight when it commits, and each later one
// finds the new generation under its own locks (the append in the partition
// rows it locks, the claim in the read of the group after its cursor lock)
// and is refused as stale.
func (d *Driver) AlterStream(ctx context.Context, p driver.AlterStreamParams) (driver.StreamConfig, error) {
	var out driver.StreamConfig
	err := d.withLog(ctx, p.StreamID, func() error {
		return d.inTx(ctx, nil, func(tx querier) error {
			var err error
			out, err = driver.Alter(p, func() (driver.StreamConfig, error) { return d.lockAltered(ctx, tx, p.StreamID) },
				func(stored, next driver.StreamConfig) error { return storeAltered(ctx, tx, stored, next) })
			return err
		})
	})
	return out, driver.AlterConflict(p.StreamID, err)
}

// lockAltered takes AlterStream's locks, in its order, and returns the
// stream's configuration read with the first.
func (d *Driver) lockAltered(ctx context.Context, tx querier, streamID int64) (driver.StreamConfig, error) {
	stored, err := queryStream(ctx, tx, "id = ? FOR UPDATE"+d.waitClause(), streamID)
	if err != nil {
		return stored, err
	}
	for _, lock := range []string{
		"SELECT 1 FROM consumer_group WHERE stream_id = ? ORDER BY name FOR UPDATE",
		"SELECT 1 FROM group_cursor WHERE stream_id = ? ORDER BY group_name, `partition` FOR UPDATE",
	} {
		if err := sqldb.EachRow(ctx, tx, lock+d.waitClause(), []any{streamID}, func(*sql.Rows) error { return nil }); err != nil {
			return stored, err
		}
	}
	_, err = d.lockPartitions(ctx, tx, streamID, nil, false, false)
	return stored, err
}

// storeAltered writes next over stored, under AlterStream's locks
// (sqldb.StoreAltered), with the generation of every partition row and the
// rows of new partitions.
func storeAltered(ctx context.Context, tx querier, stored, next driver.StreamConfig) error {
	return sqldb.StoreAltered(ctx, sqldb.On(tx), stored, next, func() error {
		if _, err := tx.ExecContext(ctx, `UPDATE stream_partition SET generation = ? WHERE stream_id = ?`, next.Generation, next.ID); err != nil {
			return err
		}
		return insertPartitions(ctx, tx, next, stored.Partitions)
	})
}

// staleOrGone explains an append whose partition locks found fewer rows at
// the planned generation than it writes to (driver.StaleOrGone).
func staleOrGone(ctx context.Context, q querier, used driver.StreamConfig) error {
	return driver.StaleOrGone(used, func() (driver.StreamConfig, error) { return lookupStreamByID(ctx, q, used.ID) })
}
