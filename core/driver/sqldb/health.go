package sqldb

import (
	"context"
	"database/sql"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Health implements driver.Driver.Health: the figures read in snapshot
// (one snapshot of the engine's), then, when rows lay past the row count
// marks, those rows counted once in write, which reads the stream with
// lock (the engine's order against removals), so that the next read need
// not count them. The counts are a cache: a failure to count (a read-only
// user or file, a lock wait) costs the next read a longer count, never a
// wrong one.
func (s Store[T]) Health(ctx context.Context, p driver.HealthParams, snapshot, write Scope, lock string) (driver.HealthStats, error) {
	var uncounted int64
	st, err := In(ctx, snapshot, func(ctx context.Context, q Runner, streamID int64) (st driver.HealthStats, err error) {
		st, uncounted, err = s.health(ctx, q, streamID)
		return st, err
	}, p.StreamID)
	if err == nil && uncounted > 0 {
		_ = write(ctx, func(tx Runner) error {
			stream, err := s.Stream(ctx, tx, "id = ?"+lock, p.StreamID)
			if err != nil {
				return err
			}
			return s.catchUpRowCounts(ctx, tx, stream)
		})
	}
	return st, err
}

// health reads a stream's figures in q, and how many rows lay past the row
// count marks.
func (s Store[T]) health(ctx context.Context, q Runner, streamID int64) (driver.HealthStats, int64, error) {
	var st driver.HealthStats
	var uncounted int64
	stream, err := s.Stream(ctx, q, "id = ?", streamID)
	if err != nil {
		return st, 0, err
	}
	if st.HighWater, err = s.highWaters(ctx, q, stream); err != nil {
		return st, 0, err
	}
	if st.Versions, uncounted, err = versionStats(ctx, q, stream); err != nil {
		return st, 0, err
	}
	if st.Groups, err = s.LoadGroups(ctx, q, stream, ""); err != nil {
		return st, 0, err
	}
	if st.Unread, err = s.unreadCounts(ctx, q, stream, st.Groups); err != nil {
		return st, 0, err
	}
	if st.Exceptions, err = collectOn(ctx, q, s.ExceptionCounts(stream.ID), []any{stream.ID, stream.ID}, driver.ScanExceptionCount); err != nil {
		return st, 0, err
	}
	st.Holders, err = collectOn(ctx, q, s.HolderCounts(stream.ID), []any{stream.ID, stream.ID}, s.scanHolder)
	return st, uncounted, err
}

// highWaters is the greatest id of each partition.
func (s Store[T]) highWaters(ctx context.Context, q Runner, stream driver.StreamConfig) ([]int64, error) {
	out := make([]int64, stream.Partitions)
	query, args := s.HighWaters(stream)
	err := eachRowOn(ctx, q, query, args, never, func(r Rows) error {
		var p int
		var id sql.NullInt64 // NULL: a partition without rows
		if err := r.Scan(&p, &id); err != nil {
			return err
		}
		if p >= 0 && p < len(out) {
			out[p] = max(out[p], id.Int64)
		}
		return nil
	})
	return out, err
}

// versionStats counts rows and compaction heads per version, the rows from
// the counts kept up to the marks and the rows past them (rowCounts), not
// a scan of the log; uncounted is how many lay past the marks.
func versionStats(ctx context.Context, q Runner, stream driver.StreamConfig) ([]driver.VersionStats, int64, error) {
	return driver.ReadVersionStats(func() (map[int]int64, int64, error) { return rowCounts(ctx, q, stream) },
		func() (map[int]int64, error) {
			return mapOn[int, int64](ctx, q, `SELECT schema_version, COUNT(*) FROM compaction_head WHERE stream_id = ? GROUP BY schema_version`, stream.ID)
		})
}

// unreadCounts counts the groups' rows past their cursors, in one
// statement where the engine has it (Store.Unread).
func (s Store[T]) unreadCounts(ctx context.Context, q Runner, stream driver.StreamConfig, groups []driver.GroupStats) ([]driver.UnreadCount, error) {
	if s.Unread != nil {
		query, args := s.Unread(stream)
		return collectOn(ctx, q, query, args, func(r driver.RowScanner) (driver.UnreadCount, error) {
			var u driver.UnreadCount
			err := r.Scan(&u.Group, &u.Partition, &u.Version, &u.RoutingKey, &u.Rows)
			return u, err
		})
	}
	var out []driver.UnreadCount
	for _, g := range groups {
		unread, err := s.unread(ctx, q, stream, g)
		if err != nil {
			return nil, err
		}
		out = append(out, unread...)
	}
	return out, nil
}

// unread counts a group's rows past its cursors by partition, version and
// routing key. Rows past the cursor that the group has an exception for (a
// cursor moved back over them) count as exceptions, not as unread. Only
// where the group's newest exception of a partition lies past its cursor
// can there be such rows, so only there is each row looked up; the normal
// case counts the range alone.
func (s Store[T]) unread(ctx context.Context, q Runner, stream driver.StreamConfig, g driver.GroupStats) ([]driver.UnreadCount, error) {
	newestException, err := mapOn[int, int64](ctx, q, "SELECT `partition`, MAX(msg_id) FROM delivery_exception WHERE stream_id = ? AND group_name = ? GROUP BY `partition`",
		stream.ID, g.Name)
	if err != nil {
		return nil, err
	}
	var out []driver.UnreadCount
	past := "SELECT m.schema_version, m.routing_key, COUNT(*) FROM " + LogTable(stream.ID) + " m WHERE m.`partition` = ? AND m.id > ? AND " + s.Head(stream)
	for p, cursor := range g.Cursors {
		query := past
		args := []any{p, cursor}
		if newest := newestException[p]; newest > cursor {
			query += " AND (m.id > ? OR NOT EXISTS (SELECT 1 FROM delivery_exception e WHERE e.stream_id = ? AND e.group_name = ? AND e.msg_id = m.id))"
			args = append(args, newest, stream.ID, g.Name)
		}
		unread, err := collectOn(ctx, q, query+" GROUP BY m.schema_version, m.routing_key", args, driver.ScanUnreadCount(g.Name, p))
		if err != nil {
			return nil, err
		}
		out = append(out, unread...)
	}
	return out, nil
}

// scanHolder reads a row of HolderCounts.
func (s Store[T]) scanHolder(r driver.RowScanner) (driver.HolderCount, error) {
	var h driver.HolderCount
	var until T
	err := r.Scan(&h.Group, &h.Holder, &h.Leases, &until)
	h.Until = s.At(until)
	return h, err
}

// Health's rows per version come from row_count, which holds each
// partition's rows per version up to the partition's mark in
// row_count_mark, plus a count of the rows past the marks: the cost of a
// health read is the rows appended since the previous one, not the size of
// the log. A partition's ids commit in increasing order (C5), so once a
// mark has passed an id no row at or below it can still appear. Compaction
// and retention subtract the rows they remove at or below the marks, in
// the transaction that removes them.

// partCount is how many rows of a version a partition holds past its
// mark, and the newest of them.
type partCount struct {
	Partition, Version int
	Rows, Newest       int64
}

// Marks reads a stream's row count marks by partition.
func Marks(ctx context.Context, q Querier, streamID int64) (map[int]int64, error) {
	return marks(ctx, On(q), streamID)
}

func marks(ctx context.Context, q Runner, streamID int64) (map[int]int64, error) {
	return mapOn[int, int64](ctx, q, "SELECT `partition`, counted_to FROM row_count_mark WHERE stream_id = ?", streamID)
}

// pastMarkChunk is how many partitions one statement of pastMarks reads.
const pastMarkChunk = 64

// pastMarks counts the rows past the marks per partition and version, with
// the greatest id counted: one range of the (partition, id) index per
// partition, in statements of up to pastMarkChunk partitions.
func pastMarks(ctx context.Context, q Runner, stream driver.StreamConfig) ([]partCount, error) {
	marks, err := marks(ctx, q, stream.ID)
	if err != nil {
		return nil, err
	}
	var out []partCount
	for start := 0; start < stream.Partitions; start += pastMarkChunk {
		end := min(start+pastMarkChunk, stream.Partitions)
		var args []any
		for p := start; p < end; p++ {
			args = append(args, p, marks[p])
		}
		query := Repeated(end-start, "SELECT `partition`, schema_version, COUNT(*), MAX(id) FROM "+LogTable(stream.ID)+
			" WHERE `partition` = ? AND id > ? GROUP BY `partition`, schema_version", " UNION ALL ")
		if err := eachRowOn(ctx, q, query, args, never, func(r Rows) error {
			var c partCount
			err := r.Scan(&c.Partition, &c.Version, &c.Rows, &c.Newest)
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
func rowCounts(ctx context.Context, q Runner, stream driver.StreamConfig) (map[int]int64, int64, error) {
	rows, err := mapOn[int, int64](ctx, q, `SELECT schema_version, SUM(row_count) FROM row_count WHERE stream_id = ? GROUP BY schema_version`, stream.ID)
	if err != nil {
		return nil, 0, err
	}
	past, err := pastMarks(ctx, q, stream)
	var n int64
	for _, c := range past {
		rows[c.Version] += c.Rows
		n += c.Rows
	}
	return rows, n, err
}

// rowCountChunk is how many rows one statement of catchUpRowCounts writes.
const rowCountChunk = 256

// catchUpRowCounts adds the rows past the marks to row_count and moves the
// marks past them, in tx, in which the engine has ordered it against
// removals (MySQL: the stream's row locked).
func (s Store[T]) catchUpRowCounts(ctx context.Context, tx Runner, stream driver.StreamConfig) error {
	past, err := pastMarks(ctx, tx, stream)
	if err != nil || len(past) == 0 {
		return err
	}
	newest := map[int]int64{}
	counts := make([]any, 0, 4*len(past))
	for _, c := range past {
		counts = append(counts, stream.ID, c.Partition, c.Version, c.Rows)
		newest[c.Partition] = max(newest[c.Partition], c.Newest)
	}
	marks := make([]any, 0, 3*len(newest))
	for p, id := range newest {
		marks = append(marks, stream.ID, p, id)
	}
	if err := insertRows(ctx, tx, "INSERT INTO row_count (stream_id, `partition`, schema_version, row_count) VALUES ", 4, counts, s.AddRowCounts); err != nil {
		return err
	}
	return insertRows(ctx, tx, "INSERT INTO row_count_mark (stream_id, `partition`, counted_to) VALUES ", 3, marks, s.MoveMarks)
}

// insertRows runs insert for the rows of width values each in args, up to
// rowCountChunk rows a statement, then the clause after.
func insertRows(ctx context.Context, tx Runner, insert string, width int, args []any, after string) error {
	row := "(" + Placeholders(width) + ")"
	for start := 0; start < len(args); start += width * rowCountChunk {
		part := args[start:min(start+width*rowCountChunk, len(args))]
		if _, err := tx.Exec(ctx, insert+Repeated(len(part)/width, row, ", ")+" "+after, part...); err != nil {
			return err
		}
	}
	return nil
}
