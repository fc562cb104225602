package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// RowColumns are the columns of a log row (m) ScanRow reads, in its
// order.
const RowColumns = "m.id, m.`partition`, m.schema_version, m.msg_key, m.routing_key, m.compaction_rank, m.payload, m.headers, m.produced_at"

// ScanRow reads RowColumns, plus extra destinations after them; the
// production time is stored as a T, which at turns into UTC.
func ScanRow[T any](r driver.RowScanner, at func(T) time.Time, extra ...any) (driver.Row, error) {
	return NewRowReader(at, extra...).Read(r)
}

// RowReading reads log rows one after another (a RowReader).
type RowReading interface {
	Read(r driver.RowScanner) (driver.Row, error)
}

// RowReaders make an engine's RowReaders (ReadersOf).
type RowReaders struct {
	// Rows reads RowColumns, plus extra destinations after them.
	Rows func(extra ...any) RowReading
	// Window reads the rows of partition part as a claim's window read
	// selects them: RowColumns but the partition, which its WHERE clause
	// names (one column fewer for every row a claim reads), plus extra
	// destinations.
	Window func(part int, extra ...any) RowReading
}

// ReadersOf returns the RowReaders of an engine that stores the production
// time as a T, which at turns into UTC.
func ReadersOf[T any](at func(T) time.Time) RowReaders {
	return RowReaders{
		Rows:   func(extra ...any) RowReading { return NewRowReader(at, extra...) },
		Window: func(part int, extra ...any) RowReading { return newRowReader(at, part, false, extra) },
	}
}

// RowReader is ScanRow for the rows of a result one after another: it
// reads each through one set of destinations, so that a row costs only what
// it keeps (its payload, key, routing key and headers). A claim's window is
// read this way; fresh destinations for each row were the claim's largest
// allocation per row.
type RowReader[T any] struct {
	row          driver.Row
	part         int // the rows' partition, when it is not read
	key, headers sql.NullString
	produced     T
	at           func(T) time.Time
	dest         []any
}

// NewRowReader returns a RowReader of RowColumns and extra, with the
// production time stored as a T that at turns into UTC.
func NewRowReader[T any](at func(T) time.Time, extra ...any) *RowReader[T] {
	return newRowReader(at, 0, true, extra)
}

// newRowReader returns a RowReader of RowColumns, without the partition
// unless withPartition (the rows are then of partition part), and extra.
func newRowReader[T any](at func(T) time.Time, part int, withPartition bool, extra []any) *RowReader[T] {
	r := &RowReader[T]{at: at, part: part}
	r.dest = []any{&r.row.ID}
	if withPartition {
		r.dest = append(r.dest, &r.row.Partition)
	}
	r.dest = append(append(r.dest, &r.row.SchemaVersion, &r.key, &r.row.RoutingKey, &r.row.CompactionRank,
		&r.row.Payload, &r.headers, &r.produced), extra...)
	return r
}

// Read reads the current row of rows.
func (r *RowReader[T]) Read(rows driver.RowScanner) (driver.Row, error) {
	r.row = driver.Row{Partition: r.part}
	if err := rows.Scan(r.dest...); err != nil {
		return driver.Row{}, err
	}
	row := r.row
	row.Key, row.HasKey = r.key.String, r.key.Valid
	row.ProducedAt = r.at(r.produced)
	if r.headers.Valid && r.headers.String != "" {
		var headers map[string]string
		if err := json.Unmarshal([]byte(r.headers.String), &headers); err != nil {
			return row, fmt.Errorf("row %d: stored headers: %w", row.ID, err)
		}
		row.Headers = headers
	}
	return row, nil
}

// CursorSteps are an engine's parts of SetCursors.
type CursorSteps struct {
	// Lock follows the read of the group's cursors, which waits for claims
	// in flight ("" on SQLite, whose single writer orders them); Locked,
	// when set, says what a failure of that read becomes.
	Lock   string
	Locked func(error) error
	// Release turns the group's batches on partitions parts into exception
	// rows, so that every batch member stays at or below its cursor and a
	// claim past a cursor moved back passes over them as it passes over
	// any row with an exception.
	Release func(parts []int) error
}

// SetCursors implements driver.Driver.SetCursors in tx: it reads (locks)
// every cursor of the group in partition order, as a registration does,
// releases the group's batches on the partitions it moves, then sets the
// positions. Exceptions are not touched.
func SetCursors(ctx context.Context, tx Runner, p driver.SetCursorsParams, steps CursorSteps) error {
	parts := make([]int, 0, len(p.Positions))
	for part := range p.Positions {
		parts = append(parts, part)
	}
	slices.Sort(parts)
	have, err := cursorsOf(ctx, tx, p.StreamID, p.Group, steps.Lock)
	if err != nil && steps.Locked != nil {
		err = steps.Locked(err)
	}
	if err != nil {
		return err
	}
	if len(have) == 0 {
		return driver.GroupNotFound(p.Group)
	}
	for _, part := range parts {
		if !have[part] {
			return fmt.Errorf("group %q has no cursor in partition %d: %w", p.Group, part, driver.ErrGroupNotFound)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	if err := steps.Release(parts); err != nil {
		return err
	}
	args := make([]any, 0, 3*len(parts)+2)
	for _, part := range parts {
		args = append(args, part, p.Positions[part])
	}
	args = append(append(args, p.StreamID, p.Group), Args(parts)...)
	_, err = tx.Exec(ctx, "UPDATE group_cursor SET position = CASE `partition`"+strings.Repeat(" WHEN ? THEN ?", len(parts))+
		" ELSE position END WHERE stream_id = ? AND group_name = ? AND `partition` IN ("+Placeholders(len(parts))+")", args...)
	return err
}

// ReadRows implements driver.Driver.ReadRows on q. It reads the log in
// windows along the (partition, id) index for one partition or the primary
// key for all, from the bound in the reading direction; each window is one
// query that returns the payload and headers of the rows the filter keeps
// only (the others come back as ids), so a filter that keeps little costs
// little but the rows it examines, at most p.MaxScan of them. A window
// starts at the size asked for and doubles, up to driver.MaxClaimWindow
// rows. Rows are read as committed when each window runs, unless q is a
// transaction's snapshot.
func (s Store[T]) ReadRows(ctx context.Context, q Runner, p driver.ReadRowsParams) (driver.ReadRowsResult, error) {
	var res driver.ReadRowsResult
	if p.Limit <= 0 {
		return res, nil
	}
	budget := p.MaxScan
	if budget <= 0 {
		budget = p.Limit
	}
	filter, fargs := VersionFilter("m.schema_version", p.Versions)
	if p.HasKey {
		is, key := s.KeyIs(p.Key)
		filter += " AND m.msg_key " + is
		fargs = append(fargs, key)
	}
	filtered := p.Versions != nil || p.HasKey
	from := " FROM " + LogTable(p.StreamID) + " m" + s.Index(false) + " WHERE "
	var partArgs []any
	if p.Partition >= 0 {
		from = " FROM " + LogTable(p.StreamID) + " m" + s.Index(true) + " WHERE m.`partition` = ? AND "
		partArgs = []any{p.Partition}
	}
	from += "m.id > ? AND m.id < ?"
	order := " ORDER BY m.id"
	if p.Descending {
		order += " DESC"
	}
	query := "SELECT m.id, m.`partition`, m.schema_version, m.msg_key, m.routing_key, m.compaction_rank, CASE WHEN " + filter +
		" THEN m.payload ELSE '' END, CASE WHEN " + filter + " THEN m.headers END, m.produced_at, " + filter + from + order + " LIMIT ?"
	lo, hi := p.AfterID, int64(math.MaxInt64)
	if p.BeforeID > 0 {
		hi = p.BeforeID
	}
	window := p.Limit
	if filtered {
		window = max(window, driver.MinClaimWindow)
	}
	window = min(window, driver.MaxClaimWindow)
	type read struct {
		row   driver.Row
		match bool
	}
	for remaining := budget; ; {
		w := min(window, remaining)
		args := append(append(append(append(append(make([]any, 0, 3*len(fargs)+4), fargs...), fargs...), fargs...), partArgs...), lo, hi, w)
		got, err := collectOn(ctx, q, query, args, func(r driver.RowScanner) (read, error) {
			var rd read
			var err error
			rd.row, err = ScanRow(r, s.At, &rd.match)
			return rd, err
		})
		if err != nil {
			return driver.ReadRowsResult{}, err
		}
		examined := 0
		for _, rd := range got {
			examined++
			res.Last = rd.row.ID
			if rd.match {
				res.Rows = append(res.Rows, rd.row)
				if len(res.Rows) == p.Limit {
					break
				}
			}
		}
		remaining -= examined
		if p.Descending {
			hi = res.Last
		} else {
			lo = res.Last
		}
		switch {
		case examined < len(got):
			// Rows past Last came back unexamined.
			return res, nil
		case len(got) < w:
			res.Done = true
			return res, nil
		case len(res.Rows) == p.Limit || remaining <= 0:
			var one int
			found, err := scanRow(ctx, q, "SELECT 1"+from+" LIMIT 1", append(slices.Clone(partArgs), lo, hi), &one)
			res.Done = err == nil && !found
			return res, err
		}
		window = min(2*window, driver.MaxClaimWindow)
	}
}
