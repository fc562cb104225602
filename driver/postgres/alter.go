package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// errNothingAppended: an append's guard found fewer partitions at the
// generation planned than it writes to; staleOrGone says why.
var errNothingAppended = errors.New("postgres: append guard wrote nothing")

// staleOrGone explains an append its guard refused (driver.StaleOrGone).
func staleOrGone(ctx context.Context, q querier, used driver.StreamConfig) error {
	return driver.StaleOrGone(used, func() (driver.StreamConfig, error) { return lookupStreamByID(ctx, q, used.ID) })
}

// AlterStream implements driver.Alterer. One transaction locks, in the
// order maintenance takes its locks (append locks last), the stream's
// configuration row (the counting lock), every cursor of its groups (which
// claims hold while they run; group and partition order, as a registration
// takes a group's) and every partition row (the append locks, in partition
// order), each wait bounded by the lock timeout: no append or claim planned with
// the old configuration is in flight when it commits, and each later one
// finds the new generation under its own locks (the append in the
// partition rows it locks, the claim in the read of the group after its
// cursor lock) and is refused as stale.
func (d *Driver) AlterStream(ctx context.Context, p driver.AlterStreamParams) (driver.StreamConfig, error) {
	var out driver.StreamConfig
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = driver.Alter(p, func() (driver.StreamConfig, error) { return d.lockAltered(ctx, tx, p.StreamID) },
			func(stored, next driver.StreamConfig) error { return storeAltered(ctx, tx, stored, next) })
		return err
	})
	return out, driver.AlterConflict(p.StreamID, err)
}

// lockAltered takes AlterStream's locks, in one round trip, and reads the
// stream's configuration under them.
func (d *Driver) lockAltered(ctx context.Context, tx pgx.Tx, streamID int64) (driver.StreamConfig, error) {
	b := &pgx.Batch{}
	if lt := d.lockTimeoutValue(); lt != "" {
		b.Queue(setLockTimeout, lt)
	}
	// FOR UPDATE, not NO KEY UPDATE: it also waits for a group being
	// registered (RegisterGroup holds KEY SHARE on the row), so that
	// group's cursors are locked and extended below, and makes a group
	// registered after it read the new partition count.
	b.Queue(`SELECT 1 FROM stream_config WHERE id = $1::bigint FOR UPDATE`, streamID)
	b.Queue(`SELECT 1 FROM group_cursor WHERE stream_id = $1::bigint ORDER BY group_name, partition FOR UPDATE`, streamID)
	b.Queue(`SELECT 1 FROM stream_partition WHERE stream_id = $1::bigint ORDER BY partition FOR NO KEY UPDATE`, streamID)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return driver.StreamConfig{}, err
	}
	return lookupStreamByID(ctx, tx, streamID)
}

// storeAltered writes next over stored, under AlterStream's locks
// (sqldb.StoreAltered), with the generation of every partition row and the
// rows of new partitions.
func storeAltered(ctx context.Context, tx pgx.Tx, stored, next driver.StreamConfig) error {
	r := runner{tx}
	return sqldb.StoreAltered(ctx, r, stored, next, func() error {
		if _, err := r.Exec(ctx, `UPDATE stream_partition SET generation = ? WHERE stream_id = ?`, next.Generation, next.ID); err != nil {
			return err
		}
		_, err := r.Exec(ctx, `INSERT INTO stream_partition (stream_id, partition, generation) SELECT ?, p, ? FROM generate_series(?, ? - 1) p`,
			next.ID, next.Generation, stored.Partitions, next.Partitions)
		return err
	})
}
