package postgres

import (
	"context"
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// errNothingAppended: an append's guard found fewer partitions at the
// generation planned than it writes to; staleOrMissing says why.
var errNothingAppended = errors.New("postgres: append guard wrote nothing")

// staleOrMissing explains an append its guard refused (driver.StaleOrGone).
func staleOrMissing(ctx context.Context, q querier, used driver.StreamConfig) error {
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

// storeAltered writes next over stored, under AlterStream's locks: the
// configuration, the generation of every partition row, the rows of new
// partitions with a cursor of every group at their start (nothing written
// there is passed over), and the compaction heads when compaction is
// switched.
func storeAltered(ctx context.Context, tx pgx.Tx, stored, next driver.StreamConfig) error {
	b := &pgx.Batch{}
	b.Queue(`UPDATE stream_config SET partitions = $1::integer, compacted = $2::boolean, retention_max_age_us = $3::bigint,
		retention_max_rows = $4::bigint, retention_hard = $5::boolean, generation = $6::bigint WHERE id = $7::bigint`,
		int32(next.Partitions), next.Compacted, next.Retention.MaxAge.Microseconds(), next.Retention.MaxRows, next.Retention.Hard,
		next.Generation, next.ID)
	b.Queue(`UPDATE stream_partition SET generation = $1::bigint WHERE stream_id = $2::bigint`, next.Generation, next.ID)
	if next.Partitions > stored.Partitions {
		b.Queue(`INSERT INTO stream_partition (stream_id, partition, generation)
			SELECT $1::bigint, p, $2::bigint FROM generate_series($3::integer, $4::integer - 1) p`,
			next.ID, next.Generation, int32(stored.Partitions), int32(next.Partitions))
		b.Queue(`INSERT INTO group_cursor (stream_id, group_name, partition, position)
			SELECT g.stream_id, g.name, p, 0 FROM consumer_group g, generate_series($2::integer, $3::integer - 1) p
			WHERE g.stream_id = $1::bigint`, next.ID, int32(stored.Partitions), int32(next.Partitions))
	}
	if next.Compacted != stored.Compacted {
		b.Queue(`DELETE FROM compaction_head WHERE stream_id = $1::bigint`, next.ID)
	}
	if next.Compacted && !stored.Compacted {
		// Each key's head is its row with the greatest (schema_version,
		// compaction_rank, id) (C11).
		b.Queue(`INSERT INTO compaction_head (stream_id, msg_key, head_id, schema_version, compaction_rank)
			SELECT DISTINCT ON (msg_key) ` + strconv.FormatInt(next.ID, 10) + `, msg_key, id, schema_version, compaction_rank
			FROM ` + logTable(next.ID) + ` WHERE msg_key IS NOT NULL
			ORDER BY msg_key, schema_version DESC, compaction_rank DESC, id DESC`)
	}
	return tx.SendBatch(ctx, b).Close()
}
