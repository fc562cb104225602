package postgres

import (
	"github.com/jackc/pgx/v5"
)

// lockCounts serializes Health's counting with compaction's and
// retention's removing ($1: the stream id), so that no row is counted by
// one and missed by the other. Appends do not take it.
const lockCounts = `SELECT 1 FROM stream_config WHERE id = $1::bigint FOR NO KEY UPDATE`

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
