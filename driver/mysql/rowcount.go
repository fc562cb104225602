package mysql

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
// an id no row at or below it can still appear. Compaction and retention
// subtract the rows they remove at or below the marks (deleteRows). Counting
// and removing both lock the stream's stream_config row first (lockStream),
// so that no row is counted by one and missed by the other.

type partCount struct {
	part, version int
	n, newest     int64
}

// pastMarks counts the rows past the marks per partition and version, with
// the greatest id counted: one range of the (partition, id) index per
// partition, in statements of up to 64 partitions.
func pastMarks(ctx context.Context, q querier, stream driver.StreamConfig) ([]partCount, error) {
	marks := make([]int64, stream.Partitions)
	if err := sqldb.EachRow(ctx, q, "SELECT `partition`, counted_to FROM row_count_mark WHERE stream_id = ?", []any{stream.ID}, func(r *sql.Rows) error {
		var p int
		var to int64
		err := r.Scan(&p, &to)
		if p >= 0 && p < len(marks) {
			marks[p] = to
		}
		return err
	}); err != nil {
		return nil, err
	}
	var out []partCount
	const chunk = 64
	for start := 0; start < len(marks); start += chunk {
		end := min(start+chunk, len(marks))
		var args []any
		for p := start; p < end; p++ {
			args = append(args, p, p, marks[p])
		}
		query := sqldb.Repeated(end-start, "SELECT ?, schema_version, COUNT(*), MAX(id) FROM "+logTable(stream.ID)+" WHERE `partition` = ? AND id > ? GROUP BY schema_version", " UNION ALL ")
		if err := sqldb.EachRow(ctx, q, query, args, func(r *sql.Rows) error {
			var c partCount
			err := r.Scan(&c.part, &c.version, &c.n, &c.newest)
			out = append(out, c)
			return err
		}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// rowCounts returns the rows per version of a stream in q's snapshot, and
// how many of them lay past the marks (counted from the log).
func rowCounts(ctx context.Context, q querier, stream driver.StreamConfig) (map[int]int64, int64, error) {
	rows, err := sqldb.Map[int, int64](ctx, q, `SELECT schema_version, SUM(row_count) FROM row_count WHERE stream_id = ? GROUP BY schema_version`, stream.ID)
	if err != nil {
		return nil, 0, err
	}
	past, err := pastMarks(ctx, q, stream)
	var n int64
	for _, c := range past {
		rows[c.version] += c.n
		n += c.n
	}
	return rows, n, err
}

// catchUpRowCounts adds the rows past the marks to row_count and moves the
// marks past them, in a transaction of its own that first locks the stream
// (its consistent reads then see every removal that committed before).
func (d *Driver) catchUpRowCounts(ctx context.Context, streamID int64) error {
	return d.withLog(ctx, streamID, func() error {
		return d.inTx(ctx, nil, func(tx querier) error {
			stream, err := lockStream(ctx, tx, streamID)
			if err != nil {
				return err
			}
			past, err := pastMarks(ctx, tx, stream)
			if err != nil || len(past) == 0 {
				return err
			}
			newest := map[int]int64{}
			args := make([]any, 0, 4*len(past))
			for _, c := range past {
				args = append(args, streamID, c.part, c.version, c.n)
				newest[c.part] = max(newest[c.part], c.newest)
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO row_count (stream_id, `partition`, schema_version, row_count) VALUES "+sqldb.Repeated(len(past), "(?, ?, ?, ?)", ", ")+
				" ON DUPLICATE KEY UPDATE row_count = row_count + VALUES(row_count)", args...); err != nil {
				return err
			}
			args = args[:0]
			for p, id := range newest {
				args = append(args, streamID, p, id)
			}
			_, err = tx.ExecContext(ctx, "INSERT INTO row_count_mark (stream_id, `partition`, counted_to) VALUES "+sqldb.Repeated(len(newest), "(?, ?, ?)", ", ")+
				" ON DUPLICATE KEY UPDATE counted_to = GREATEST(counted_to, VALUES(counted_to))", args...)
			return err
		})
	})
}

// subtractRowCounts takes the victims at or below their partition's mark out
// of row_count. The caller holds the stream lock (lockStream) and removes
// the victims in the same transaction.
func subtractRowCounts(ctx context.Context, tx querier, streamID int64, victims []driver.RetainCandidate) error {
	marks := map[int]int64{}
	if err := sqldb.EachRow(ctx, tx, "SELECT `partition`, counted_to FROM row_count_mark WHERE stream_id = ?", []any{streamID}, func(r *sql.Rows) error {
		var p int
		var to int64
		err := r.Scan(&p, &to)
		marks[p] = to
		return err
	}); err != nil || len(marks) == 0 {
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
