package sqlite

import (
	"context"
	"database/sql"

	"github.com/sqlstreams/sqlstreams/core/driver"
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
			func(stored, next driver.StreamConfig) error { return storeAltered(ctx, tx, stored, next) })
		return err
	})
	// The writer's busy timeout has advice of its own: AlterConflict only
	// names the stream.
	return out, driver.AlterConflict(p.StreamID, d.wrap(err))
}

// storeAltered writes next over stored: the configuration, a cursor of
// every group at the start of each new partition (nothing written there is
// passed over), and the compaction heads when compaction is switched.
func storeAltered(ctx context.Context, tx *sql.Tx, stored, next driver.StreamConfig) error {
	if _, err := tx.ExecContext(ctx, `UPDATE stream_config SET partitions = ?, compacted = ?, retention_max_age_us = ?,
		retention_max_rows = ?, retention_hard = ?, generation = ? WHERE id = ?`, next.Partitions, next.Compacted,
		next.Retention.MaxAge.Microseconds(), next.Retention.MaxRows, next.Retention.Hard, next.Generation, next.ID); err != nil {
		return err
	}
	for part := stored.Partitions; part < next.Partitions; part++ {
		if _, err := tx.ExecContext(ctx, `INSERT INTO group_cursor (stream_id, group_name, partition, position)
			SELECT stream_id, name, ?, 0 FROM consumer_group WHERE stream_id = ?`, part, next.ID); err != nil {
			return err
		}
	}
	if next.Compacted == stored.Compacted {
		return nil
	}
	return rebuildHeads(ctx, tx, next)
}

// rebuildHeads drops the stream's compaction heads and, on a stream made
// compacted, computes each key's head from the log: its row with the
// greatest (schema_version, compaction_rank, id) (C11).
func rebuildHeads(ctx context.Context, tx *sql.Tx, stream driver.StreamConfig) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM compaction_head WHERE stream_id = ?`, stream.ID); err != nil {
		return err
	}
	if !stream.Compacted {
		return nil
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO compaction_head (stream_id, msg_key, head_id, schema_version, compaction_rank)
		SELECT ?, msg_key, id, schema_version, compaction_rank FROM (
			SELECT msg_key, id, schema_version, compaction_rank, ROW_NUMBER() OVER (PARTITION BY msg_key
				ORDER BY schema_version DESC, compaction_rank DESC, id DESC) AS n
			FROM `+logTable(stream.ID)+` WHERE msg_key IS NOT NULL) WHERE n = 1`, stream.ID)
	return err
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
