package sqlite

import (
	"context"
	"database/sql"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// Health's rows per version come from row_count, which holds each
// partition's rows per version up to the partition's mark in row_count_mark,
// plus a count of the rows past the marks: the cost of a health read is the
// rows appended since the previous one, not the size of the log. A
// partition's ids commit in increasing order (C5), so once a mark has passed
// an id no row at or below it can still appear; compaction and retention
// subtract the rows they remove at or below the marks (subtractRowCounts),
// in the transaction that removes them.

// partitionsCTE numbers a stream's partitions (its only parameter is the
// partition count), so that a statement can visit each partition's index.
const partitionsCTE = `WITH RECURSIVE p(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM p WHERE n + 1 < ?) `

// pastMarks counts the rows past the marks per partition and version (one
// range of the (partition, id) index per partition), with the greatest id
// counted; its parameters are the partition count and the stream id.
func pastMarks(streamID int64) string {
	return partitionsCTE + `SELECT p.n, m.schema_version, COUNT(*), MAX(m.id) FROM p JOIN ` + logTable(streamID) + ` m ON m.partition = p.n
		AND m.id > COALESCE((SELECT k.counted_to FROM row_count_mark k WHERE k.stream_id = ? AND k.partition = p.n), 0)
		GROUP BY p.n, m.schema_version`
}

// rowCounts returns the rows per version of a stream in tx's snapshot, and
// how many of them lay past the marks (counted from the log).
func rowCounts(ctx context.Context, tx querier, stream driver.StreamConfig) (map[int]int64, int64, error) {
	rows, err := sqldb.Map[int, int64](ctx, tx, `SELECT schema_version, SUM(row_count) FROM row_count WHERE stream_id = ? GROUP BY schema_version`, stream.ID)
	if err != nil {
		return nil, 0, err
	}
	var past int64
	err = sqldb.EachRow(ctx, tx, pastMarks(stream.ID), []any{stream.Partitions, stream.ID}, func(r *sql.Rows) error {
		var part, v int
		var n, newest int64
		err := r.Scan(&part, &v, &n, &newest)
		rows[v] += n
		past += n
		return err
	})
	return rows, past, err
}

// catchUpRowCounts adds the rows past the marks to row_count and moves the
// marks past them, in a write transaction of its own.
func (d *Driver) catchUpRowCounts(ctx context.Context, stream driver.StreamConfig) error {
	return d.inTx(ctx, nil, func(tx *sql.Tx) error {
		type count struct {
			part, version int
			n             int64
		}
		var counts []count
		newest := map[int]int64{}
		if err := sqldb.EachRow(ctx, tx, pastMarks(stream.ID), []any{stream.Partitions, stream.ID}, func(r *sql.Rows) error {
			var c count
			var id int64
			err := r.Scan(&c.part, &c.version, &c.n, &id)
			counts = append(counts, c)
			newest[c.part] = max(newest[c.part], id)
			return err
		}); err != nil {
			return err
		}
		for _, c := range counts {
			if _, err := tx.ExecContext(ctx, `INSERT INTO row_count (stream_id, partition, schema_version, row_count) VALUES (?, ?, ?, ?)
				ON CONFLICT (stream_id, partition, schema_version) DO UPDATE SET row_count = row_count + excluded.row_count`,
				stream.ID, c.part, c.version, c.n); err != nil {
				return err
			}
		}
		for part, id := range newest {
			if _, err := tx.ExecContext(ctx, `INSERT INTO row_count_mark (stream_id, partition, counted_to) VALUES (?, ?, ?)
				ON CONFLICT (stream_id, partition) DO UPDATE SET counted_to = MAX(counted_to, excluded.counted_to)`,
				stream.ID, part, id); err != nil {
				return err
			}
		}
		return nil
	})
}

// subtractRowCounts takes the log rows named by ids (placeholders in, the
// ids' arguments in ids) that lie at or below their partition's mark out of
// row_count; the caller removes the rows in the same transaction.
func subtractRowCounts(ctx context.Context, tx querier, streamID int64, in string, ids []any) error {
	_, err := tx.ExecContext(ctx, `UPDATE row_count SET row_count = row_count - x.n
		FROM (SELECT m.partition AS part, m.schema_version AS version, COUNT(*) AS n FROM `+logTable(streamID)+` m
			WHERE m.id`+in+` AND m.id <= COALESCE((SELECT k.counted_to FROM row_count_mark k WHERE k.stream_id = ? AND k.partition = m.partition), 0)
			GROUP BY m.partition, m.schema_version) x
		WHERE row_count.stream_id = ? AND row_count.partition = x.part AND row_count.schema_version = x.version`,
		append(append(append([]any{}, ids...), streamID), streamID)...)
	return err
}
