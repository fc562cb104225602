package sqlite

import "context"

// Health's rows per version come from row_count and the rows past the
// marks in row_count_mark (sqldb.Store.Health); compaction and retention
// subtract the rows they remove at or below the marks (subtractRowCounts),
// in the transaction that removes them. The single writer orders the two.

// partitionsCTE numbers a stream's partitions (its only parameter is the
// partition count), so that a statement can visit each partition's index.
const partitionsCTE = `WITH RECURSIVE p(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM p WHERE n + 1 < ?) `

// subtractRowCounts takes the log rows named by ids (placeholders in, the
// ids' arguments in ids) that lie at or below their partition's mark out of
// row_count; the caller removes the rows in the same transaction. One
// UPDATE ... FROM, which SQLite has and MariaDB lacks.
func subtractRowCounts(ctx context.Context, tx querier, streamID int64, in string, ids []any) error {
	_, err := tx.ExecContext(ctx, `UPDATE row_count SET row_count = row_count - x.n
		FROM (SELECT m.partition AS part, m.schema_version AS version, COUNT(*) AS n FROM `+logTable(streamID)+` m
			WHERE m.id`+in+` AND m.id <= COALESCE((SELECT k.counted_to FROM row_count_mark k WHERE k.stream_id = ? AND k.partition = m.partition), 0)
			GROUP BY m.partition, m.schema_version) x
		WHERE row_count.stream_id = ? AND row_count.partition = x.part AND row_count.schema_version = x.version`,
		append(append(append([]any{}, ids...), streamID), streamID)...)
	return err
}
