package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Health's rows per version come from row_count, which holds each
// partition's rows per version up to the partition's mark in row_count_mark,
// plus a count of the rows past the marks: the cost of a health read is the
// rows appended since the previous one, not the size of the log. A
// partition's ids commit in increasing order (C5), so once a mark has passed
// an id no row at or below it can still appear. Compaction and retention
// subtract the rows they remove at or below the marks (deleteRows). Counting
// and removing serialize on the stream's stream_config row (lockCounts),
// so that no row is counted by one and missed by the other.

// pastMarks is a query of the rows past the marks per partition and version,
// with the greatest id counted (one range of the (partition, id) index per
// partition); $1 is the stream id.
func pastMarks(streamID int64) string {
	// The aggregate inside LATERAL keeps the planner from pulling the
	// subquery up into a join of the whole log.
	return `SELECT sp.partition, m.schema_version, m.n, m.newest
		FROM stream_partition sp LEFT JOIN row_count_mark k ON k.stream_id = sp.stream_id AND k.partition = sp.partition
		CROSS JOIN LATERAL (SELECT m.schema_version, count(*) AS n, max(m.id) AS newest FROM ` + logTable(streamID) + ` m
			WHERE m.partition = sp.partition AND m.id > COALESCE(k.counted_to, 0) GROUP BY m.schema_version) m
		WHERE sp.stream_id = $1::bigint`
}

// lockCounts is the statement that serializes counting with removing ($1:
// the stream id). Appends do not take it.
const lockCounts = `SELECT 1 FROM stream_config WHERE id = $1::bigint FOR NO KEY UPDATE`

// rowCounts returns the rows per version of a stream in tx's snapshot, and
// how many of them lay past the marks (counted from the log).
func rowCounts(ctx context.Context, tx pgx.Tx, streamID int64) (map[int]int64, int64, error) {
	rows := map[int]int64{}
	var past int64
	err := eachRow(ctx, tx, `SELECT schema_version, sum(row_count)::bigint, 0::bigint FROM row_count WHERE stream_id = $1::bigint GROUP BY schema_version
		UNION ALL SELECT schema_version, sum(n)::bigint, sum(n)::bigint FROM (`+pastMarks(streamID)+`) x GROUP BY schema_version`,
		[]any{streamID}, func(r pgx.Rows) error {
			var v int32
			var n, p int64
			err := r.Scan(&v, &n, &p)
			rows[int(v)] += n
			past += p
			return err
		})
	return rows, past, err
}

// catchUpRowCounts adds the rows past the marks to row_count and moves the
// marks past them, in one statement of a transaction of its own.
func (d *Driver) catchUpRowCounts(ctx context.Context, streamID int64) error {
	return d.inTx(ctx, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		d.queueBounded(b, lockCounts, streamID)
		b.Queue(`WITH past AS (`+pastMarks(streamID)+`),
			counted AS (INSERT INTO row_count (stream_id, partition, schema_version, row_count) SELECT $1::bigint, partition, schema_version, n FROM past
				ON CONFLICT (stream_id, partition, schema_version) DO UPDATE SET row_count = row_count.row_count + excluded.row_count)
			INSERT INTO row_count_mark (stream_id, partition, counted_to) SELECT $1::bigint, partition, max(newest) FROM past GROUP BY partition
			ON CONFLICT (stream_id, partition) DO UPDATE SET counted_to = GREATEST(row_count_mark.counted_to, excluded.counted_to)`, streamID)
		return tx.SendBatch(ctx, b).Close()
	})
}

// queueDeleteCounted queues the removal of the log rows ids ($1 of the
// statement) that subtracts those at or below their partition's mark from
// row_count; the caller has queued lockCounts before.
func queueDeleteCounted(b *pgx.Batch, streamID int64, ids []int64) {
	b.Queue(`WITH gone AS (DELETE FROM `+logTable(streamID)+` WHERE id = ANY($1::bigint[]) RETURNING id, partition, schema_version)
		UPDATE row_count r SET row_count = r.row_count - x.n
		FROM (SELECT g.partition, g.schema_version, count(*) AS n FROM gone g
			JOIN row_count_mark k ON k.stream_id = $2::bigint AND k.partition = g.partition AND g.id <= k.counted_to
			GROUP BY g.partition, g.schema_version) x
		WHERE r.stream_id = $2::bigint AND r.partition = x.partition AND r.schema_version = x.schema_version`, ids, streamID)
}
