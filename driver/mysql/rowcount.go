package mysql

import (
	"context"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// Health's rows per version come from row_count and the rows past the
// marks in row_count_mark (sqldb.Store.Health). Counting and removing both
// lock the stream's stream_config row first (lockStream), so that no row
// is counted by one and missed by the other.

// subtractRowCounts takes the victims at or below their partition's mark out
// of row_count. The caller holds the stream lock (lockStream) and removes
// the victims in the same transaction. The victims are in hand, so the
// counts are made here rather than by SQLite's UPDATE ... FROM over the log.
func subtractRowCounts(ctx context.Context, tx querier, streamID int64, victims []driver.RetainCandidate) error {
	marks, err := sqldb.Marks(ctx, tx, streamID)
	if err != nil || len(marks) == 0 {
		return err
	}
	type key struct{ part, version int }
	gone := map[key]int64{}
	for _, v := range victims {
		if v.ID <= marks[v.Partition] {
			gone[key{v.Partition, v.Version}]++
		}
	}
	for k, n := range gone {
		if _, err := tx.ExecContext(ctx, "UPDATE row_count SET row_count = row_count - ? WHERE stream_id = ? AND `partition` = ? AND schema_version = ?",
			n, streamID, k.part, k.version); err != nil {
			return err
		}
	}
	return nil
}
