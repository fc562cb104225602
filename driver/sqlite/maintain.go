package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// eachRow is registry.go's name for sqldb.EachRow (the registry's own
// change renames it).
func eachRow(ctx context.Context, q querier, query string, args []any, fn func(*sql.Rows) error) error {
	return sqldb.EachRow(ctx, q, query, args, fn)
}

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
	res := driver.RetainResult{RemovedUnread: map[string]int64{}}
	err := d.inTx(ctx, nil, func(tx *sql.Tx) error {
		stream, err := lookupStreamByID(ctx, tx, req.StreamID)
		if err != nil {
			return err
		}
		bound, err := retainBound(ctx, tx, stream, req.Now)
		if err != nil || bound == 0 {
			return err
		}
		r := stream.Retention
		table := logTable(stream.ID)
		where := `m.id < ?`
		args := []any{bound}
		if !r.Hard {
			where += ` AND NOT EXISTS (SELECT 1 FROM group_cursor c WHERE c.stream_id = ` + strconv.FormatInt(stream.ID, 10) + ` AND c.partition = m.partition AND c.position < m.id)
				AND NOT EXISTS (SELECT 1 FROM delivery_exception e WHERE e.stream_id = ` + strconv.FormatInt(stream.ID, 10) + ` AND e.msg_id = m.id)
				AND m.id < COALESCE((SELECT MIN(b.first_id) FROM delivery_batch b WHERE b.stream_id = ` + strconv.FormatInt(stream.ID, 10) + `), 9223372036854775807)`
		}
		victims, err := sqldb.Collect(ctx, tx, `SELECT m.id, m.partition, m.schema_version, m.routing_key FROM `+table+` m WHERE `+where+` ORDER BY m.id LIMIT ?`,
			append(args, req.Limit), driver.ScanRetainCandidate)
		if err != nil || len(victims) == 0 {
			return err
		}
		ids := driver.RetainIDs(victims)
		if r.Hard {
			groups, err := loadGroups(ctx, tx, stream)
			if err != nil {
				return err
			}
			// Leases in batches count as held, as their exception rows would.
			if err := materializeRange(ctx, tx, stream.ID, ids[0], ids[len(ids)-1]); err != nil {
				return err
			}
			held := driver.Held{}
			if err := sqldb.EachRow(ctx, tx, `SELECT group_name, msg_id FROM delivery_exception WHERE stream_id = ? AND msg_id BETWEEN ? AND ?`,
				[]any{stream.ID, ids[0], ids[len(ids)-1]}, func(rs *sql.Rows) error { return held.Scan(rs) }); err != nil {
				return err
			}
			res.RemovedUnread = driver.CountRemovedUnread(groups, victims, held, req.Match)
			for _, name := range slices.Sorted(maps.Keys(res.RemovedUnread)) {
				if _, err := tx.ExecContext(ctx, `UPDATE consumer_group SET removed_unread = removed_unread + ? WHERE stream_id = ? AND name = ?`,
					res.RemovedUnread[name], stream.ID, name); err != nil {
					return err
				}
			}
		}
		res.Removed = int64(len(ids))
		return deleteRows(ctx, tx, stream.ID, ids)
	})
	return res, err
}

// retainBound returns the id below which the stream's retention limits put
// rows (0: none); driver.RetainBound decides, from these index dives.
func retainBound(ctx context.Context, tx querier, stream driver.StreamConfig, now time.Time) (int64, error) {
	table := logTable(stream.ID)
	one := func(query string, args ...any) (int64, bool, error) {
		var id int64
		err := tx.QueryRowContext(ctx, query, args...).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, false, nil
		}
		return id, err == nil, err
	}
	return driver.RetainBound(stream.Retention, now, driver.RetentionProbe{
		Span: func() (int64, int64, bool, error) {
			var oldest, newest sql.NullInt64 // apart: SQLite reads MIN and MAX of one SELECT by a scan
			err := tx.QueryRowContext(ctx, `SELECT (SELECT MIN(id) FROM `+table+`), (SELECT MAX(id) FROM `+table+`)`).Scan(&oldest, &newest)
			return oldest.Int64, newest.Int64, err == nil && newest.Valid, err
		},
		FirstYoung: func(t time.Time) (int64, bool, error) {
			return one(`SELECT id FROM `+table+` WHERE produced_at >= ? ORDER BY id LIMIT 1`, micros(t))
		},
		NthNewest: func(n int64) (int64, bool, error) {
			return one(`SELECT id FROM `+table+` ORDER BY id DESC LIMIT 1 OFFSET ?`, n)
		},
	})
}
