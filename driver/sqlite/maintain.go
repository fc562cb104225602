package sqlite

import (
	"context"
	"database/sql"
	"slices"
	"strconv"
	"time"

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
		ids, err := sqldb.Collect(ctx, tx, `SELECT m.id FROM `+logTable(streamID)+` m WHERE NOT `+headExpr(stream)+` ORDER BY m.id LIMIT ?`,
			[]any{limit}, sqldb.Column[int64])
		if err != nil {
			return err
		}
		removed = int64(len(ids))
		return deleteRows(ctx, tx, streamID, ids)
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
	if err := materializeRange(ctx, tx, streamID, slices.Min(ids), slices.Max(ids)); err != nil {
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
// the rows removed before the group resolved them.
func (d *Driver) Retain(ctx context.Context, req driver.RetainParams) (driver.RetainResult, error) {
	var res driver.RetainResult
	err := d.inTx(ctx, nil, func(tx *sql.Tx) error {
		var err error
		res, err = driver.RetainPass(ctx, req, retention{tx})
		return err
	})
	return res, err
}

// retention is Retain's statements (driver.RetainSteps), in the one
// writer's transaction.
type retention struct{ tx querier }

func (r retention) Stream(ctx context.Context, streamID int64) (driver.StreamConfig, error) {
	return lookupStreamByID(ctx, r.tx, streamID)
}

func (r retention) Probe(ctx context.Context, stream driver.StreamConfig) driver.RetentionProbe {
	table := logTable(stream.ID)
	return sqldb.Probe(ctx, r.tx, driver.RetentionStatements{
		// Apart: SQLite reads MIN and MAX of one SELECT by a scan.
		Span:       `SELECT (SELECT MIN(id) FROM ` + table + `), (SELECT MAX(id) FROM ` + table + `)`,
		FirstYoung: `SELECT id FROM ` + table + ` WHERE produced_at >= ? ORDER BY id LIMIT 1`,
		NthNewest:  `SELECT id FROM ` + table + ` ORDER BY id DESC LIMIT 1 OFFSET ?`,
		At:         func(t time.Time) any { return micros(t) },
	})
}

func (r retention) Victims(ctx context.Context, stream driver.StreamConfig, bound int64, limit int) ([]driver.RetainCandidate, error) {
	where := `m.id < ?`
	if sid := strconv.FormatInt(stream.ID, 10); !stream.Retention.Hard {
		where += ` AND NOT EXISTS (SELECT 1 FROM group_cursor c WHERE c.stream_id = ` + sid + ` AND c.partition = m.partition AND c.position < m.id)
			AND NOT EXISTS (SELECT 1 FROM delivery_exception e WHERE e.stream_id = ` + sid + ` AND e.msg_id = m.id)
			AND m.id < COALESCE((SELECT MIN(b.first_id) FROM delivery_batch b WHERE b.stream_id = ` + sid + `), 9223372036854775807)`
	}
	return sqldb.Collect(ctx, r.tx, `SELECT m.id, m.partition, m.schema_version, m.routing_key FROM `+logTable(stream.ID)+` m WHERE `+where+` ORDER BY m.id LIMIT ?`,
		[]any{bound, limit}, driver.ScanRetainCandidate)
}

func (r retention) Unread(ctx context.Context, stream driver.StreamConfig, victims []driver.RetainCandidate) ([]driver.GroupStats, driver.Held, error) {
	groups, err := loadGroups(ctx, r.tx, stream)
	if err != nil {
		return nil, nil, err
	}
	// Leases in batches count as held, as their exception rows would.
	lo, hi := victims[0].ID, victims[len(victims)-1].ID
	if err := materializeRange(ctx, r.tx, stream.ID, lo, hi); err != nil {
		return nil, nil, err
	}
	held := driver.Held{}
	return groups, held, sqldb.EachRow(ctx, r.tx, `SELECT group_name, msg_id FROM delivery_exception WHERE stream_id = ? AND msg_id BETWEEN ? AND ?`,
		[]any{stream.ID, lo, hi}, func(rs *sql.Rows) error { return held.Scan(rs) })
}

func (r retention) Remove(ctx context.Context, stream driver.StreamConfig, victims []driver.RetainCandidate, removedUnread map[string]int64) error {
	if err := sqldb.AddRemovedUnread(ctx, r.tx, `UPDATE consumer_group SET removed_unread = removed_unread + ? WHERE stream_id = ? AND name = ?`,
		stream.ID, removedUnread); err != nil {
		return err
	}
	return deleteRows(ctx, r.tx, stream.ID, driver.RetainIDs(victims))
}
