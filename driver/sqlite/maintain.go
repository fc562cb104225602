package sqlite

import (
	"context"
	"database/sql"
	"slices"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// Compact implements driver.Driver.
func (d *Driver) Compact(ctx context.Context, p driver.CompactParams) (int64, error) {
	streamID, limit := p.StreamID, p.Limit
	var removed int64
	err := d.inTx(ctx, nil, func(tx *sql.Tx) error {
		stream, err := lookupStreamByID(ctx, tx, streamID)
		if err != nil || !stream.Compacted {
			return err
		}
		victims, err := sqldb.CompactVictims(ctx, sqldb.On(tx), logTable(streamID), headExpr(stream), limit)
		if err != nil {
			return err
		}
		removed = int64(len(victims))
		return deleteRows(ctx, tx, streamID, driver.RetainIDs(victims))
	})
	return removed, err
}

// deleteRows removes log rows with their exceptions and any head pointing at
// them, first raising each partition's mark to the greatest id it removes,
// so that the high-water mark never goes down.
func deleteRows(ctx context.Context, tx querier, streamID int64, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	if err := materializeRemoved(ctx, tx, streamID, ids); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO partition_mark (stream_id, partition, high_water)
		SELECT ?, partition, MAX(id) FROM `+logTable(streamID)+` WHERE id BETWEEN ? AND ? GROUP BY partition
		ON CONFLICT (stream_id, partition) DO UPDATE SET high_water = MAX(high_water, excluded.high_water)`,
		streamID, slices.Min(ids), slices.Max(ids)); err != nil {
		return err
	}
	const chunk = 500
	for start := 0; start < len(ids); start += chunk {
		part := sqldb.Args(ids[start:min(start+chunk, len(ids))])
		in := ` IN (` + sqldb.Placeholders(len(part)) + `)`
		if err := subtractRowCounts(ctx, tx, streamID, in, part); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+logTable(streamID)+` WHERE id`+in, part...); err != nil {
			return err
		}
		args := append([]any{streamID}, part...)
		if _, err := tx.ExecContext(ctx, `DELETE FROM delivery_exception WHERE stream_id = ? AND msg_id`+in, args...); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM compaction_head WHERE stream_id = ? AND head_id`+in, args...); err != nil {
			return err
		}
	}
	return nil
}

// Retain implements driver.Driver. Soft limits remove a row only when every
// group's cursor in its partition has passed it and no group holds an
// exception for it; hard limits remove it regardless and count, per group,
// the rows removed before the group resolved them. The steps
// (sqldb.Retention) run in the one writer's transaction.
func (d *Driver) Retain(ctx context.Context, req driver.RetainParams) (driver.RetainResult, error) {
	var res driver.RetainResult
	err := d.inTx(ctx, nil, func(tx *sql.Tx) error {
		var err error
		res, err = driver.RetainPass(ctx, req, sqldb.Retention{
			R: sqldb.On(tx), Table: logTable, Time: leaseWrites.Time,
			// Apart: SQLite reads MIN and MAX of one SELECT by a scan.
			Span: func(table string) string {
				return `SELECT (SELECT MIN(id) FROM ` + table + `), (SELECT MAX(id) FROM ` + table + `)`
			},
			ReadStream: func(ctx context.Context, streamID int64) (driver.StreamConfig, error) {
				return lookupStreamByID(ctx, tx, streamID)
			},
			Groups: func(ctx context.Context, stream driver.StreamConfig) ([]driver.GroupStats, error) {
				return loadGroups(ctx, tx, stream)
			},
			Materialize: func(ctx context.Context, streamID int64, victims []driver.RetainCandidate) error {
				return materializeRemoved(ctx, tx, streamID, driver.RetainIDs(victims))
			},
			Delete: func(ctx context.Context, stream driver.StreamConfig, victims []driver.RetainCandidate, _ []string) error {
				return deleteRows(ctx, tx, stream.ID, driver.RetainIDs(victims))
			},
		})
		return err
	})
	return res, err
}
