// Package sqldb is what the database/sql drivers (MySQL and SQLite) do
// alike, written once: running a query row by row, the pieces of statement
// text that name values by placeholder, and reading streams and groups from
// the columns both schemas give them. It imports the standard library and
// package driver only, so that each driver, a module of its own, can use it
// without compiling another driver's code. What stays in each driver is its
// SQL, its locks and transactions, and its error classification
// (docs/internals.md). The schema registry's storage (Registry, Subjects)
// runs on a Runner instead of a Querier, which PostgreSQL adapts to pgx:
// all three engines run it.
package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Querier is what a driver's statements run on: a *sql.DB, *sql.Conn or
// *sql.Tx, or a driver's own wrapper of one (SQLite's kept statements).
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// EachRow runs query and calls fn for each row, stopping at fn's first
// error; it also reports an error closing the rows, which a driver may
// otherwise not see (a lost connection after the last row).
func EachRow(ctx context.Context, q Querier, query string, args []any, fn func(*sql.Rows) error) error {
	return EachRowUntil(ctx, q, query, args, func() bool { return false }, fn)
}

// EachRowUntil is EachRow that reads no further row once done reports true:
// a claim's window read stops at its limit without fetching the rest of
// the window.
func EachRowUntil(ctx context.Context, q Querier, query string, args []any, done func() bool, fn func(*sql.Rows) error) error {
	return eachRowOn(ctx, On(q), query, args, done, func(r Rows) error { return fn(r.(*sql.Rows)) })
}

// ReadWindow runs a claim's read of one window past a cursor
// (driver.PartitionSteps.ReadWindow): each row, as scan reads it with
// whether the group reads it, goes to s.Inspect until s is done. It
// returns how many rows it looked at.
func ReadWindow(ctx context.Context, q Querier, query string, args []any, s *driver.PartitionScan, scan func(*sql.Rows) (driver.Row, bool, error)) (int, error) {
	before := s.Scanned
	err := EachRowUntil(ctx, q, query, args, s.Done, func(rows *sql.Rows) error {
		r, readable, err := scan(rows)
		if err == nil {
			s.Inspect(r, readable)
		}
		return err
	})
	return s.Scanned - before, err
}

// Collect runs query and returns each row as scan reads it.
func Collect[T any](ctx context.Context, q Querier, query string, args []any, scan func(driver.RowScanner) (T, error)) ([]T, error) {
	return collectOn(ctx, On(q), query, args, scan)
}

// Column reads a row of one column as a T: Collect's scan for a list of
// ids.
func Column[T any](r driver.RowScanner) (T, error) {
	var v T
	err := r.Scan(&v)
	return v, err
}

// Map runs query, whose rows are (key, value) pairs with distinct keys (a
// GROUP BY), and returns them as a map.
func Map[K comparable, V any](ctx context.Context, q Querier, query string, args ...any) (map[K]V, error) {
	return mapOn[K, V](ctx, On(q), query, args...)
}

// Mark runs query, whose rows have one column (the ids a statement's
// RETURNING names, the ids or names a read lists), and marks each value in
// marked.
func Mark[K comparable](ctx context.Context, q Querier, query string, args []any, marked map[K]bool) error {
	return markOn(ctx, On(q), query, args, marked)
}

// Affected is how many rows a statement changed, or its error: the count a
// prune or an insert that a conflict turns into nothing reports.
func Affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Changed reports the outcome of a statement that must change a row, from
// the rows it changed (Runner.Exec): its error, else none when it changed
// nothing.
func Changed(n int64, err, none error) error {
	if err != nil {
		return err
	}
	if n == 0 {
		return none
	}
	return nil
}

// Placeholders returns "?, ?, ?" for n values.
func Placeholders(n int) string {
	return Repeated(n, "?", ", ")
}

// Repeated is n copies of s joined by sep: the rows of a VALUES list, the
// alternatives of an OR, the queries of a UNION ALL.
func Repeated(n int, s, sep string) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat(s+sep, n-1) + s
}

// Args passes vs as statement arguments.
func Args[T any](vs []T) []any {
	args := make([]any, len(vs))
	for i, v := range vs {
		args[i] = v
	}
	return args
}

// VersionFilter returns an SQL predicate on column col for versions ("1"
// when every version is read, "0" when none is) and its arguments.
func VersionFilter(col string, versions []int) (string, []any) {
	if versions == nil {
		return "1", nil
	}
	if len(versions) == 0 {
		return "0", nil
	}
	return col + " IN (" + Placeholders(len(versions)) + ")", Args(versions)
}

// StreamColumns are the stream_config columns ScanStream reads, in its
// order.
const StreamColumns = `id, name, partitions, compacted, retention_max_age_us, retention_max_rows, retention_hard, created_at, generation`

// ScanStream reads StreamColumns; the creation time is stored as a T, which
// at turns into UTC.
func ScanStream[T any](r driver.RowScanner, at func(T) time.Time) (driver.StreamConfig, error) {
	var c driver.StreamConfig
	var maxAge int64
	var created T
	err := r.Scan(&c.ID, &c.Name, &c.Partitions, &c.Compacted, &maxAge, &c.Retention.MaxRows, &c.Retention.Hard, &created, &c.Generation)
	if err != nil {
		return c, err
	}
	c.Retention.MaxAge = time.Duration(maxAge) * time.Microsecond
	c.CreatedAt = at(created)
	return c, nil
}

// GroupColumns are the consumer_group columns ScanGroup reads, in its
// order.
const GroupColumns = `stream_id, name, schema_version, all_versions, bindings, converts_from, start_position, created_at, removed_unread, paused_at`

// ScanGroup reads GroupColumns, then the extra destinations after them,
// and returns the group and its removed_unread; the creation time is stored
// as a T, which at turns into UTC.
func ScanGroup[T any](r driver.RowScanner, at func(T) time.Time, extra ...any) (driver.GroupConfig, int64, error) {
	var g driver.GroupConfig
	var bindings, convertsFrom []byte
	var created T
	var paused *T // NULL while the group runs
	var removed int64
	err := r.Scan(append([]any{&g.StreamID, &g.Name, &g.SchemaVersion, &g.AllVersions, &bindings, &convertsFrom, &g.Start, &created, &removed, &paused}, extra...)...)
	if err != nil {
		return g, 0, err
	}
	g.CreatedAt = at(created)
	if paused != nil {
		g.PausedAt = at(*paused)
	}
	if err := json.Unmarshal(bindings, &g.Bindings); err != nil {
		return g, 0, fmt.Errorf("group %q: stored bindings: %w", g.Name, err)
	}
	if err := json.Unmarshal(convertsFrom, &g.ConvertsFrom); err != nil {
		return g, 0, fmt.Errorf("group %q: stored converter versions: %w", g.Name, err)
	}
	g.Bindings, g.ConvertsFrom = NilIfEmpty(g.Bindings), NilIfEmpty(g.ConvertsFrom)
	return g, removed, nil
}

// EncodeGroupLists writes a group's bindings and converter versions as the
// JSON arrays consumer_group stores ([] for none, never null).
func EncodeGroupLists(g driver.GroupConfig) (bindings, convertsFrom string, err error) {
	b, err := json.Marshal(nonNil(g.Bindings))
	if err != nil {
		return "", "", err
	}
	c, err := json.Marshal(nonNil(g.ConvertsFrom))
	return string(b), string(c), err
}

// nonNil makes a nil slice encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// NilIfEmpty reads an empty stored list as none.
func NilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// ClientColumns are the client_heartbeat columns driver.ScanClient reads,
// in its order.
const ClientColumns = `instance, identity, host, pid, library_version, group_list, started_at, last_seen, heartbeat_every_us, closed_at`

// NewStreamID reads the outcome of the INSERT that creates a stream's
// configuration: a unique violation (duplicate, as the engine classifies
// err) is another stream's name, else id is the one the engine assigned.
func NewStreamID(id int64, err error, duplicate bool) (int64, error) {
	if duplicate {
		return 0, driver.ErrStreamExists
	}
	if err != nil {
		return 0, err
	}
	return id, nil
}

// Renamed reads the outcome of the UPDATE that renames a stream: a unique
// violation (duplicate, as the engine classifies err) is another stream's
// name, no row changed is no such stream.
func Renamed(n int64, err error, duplicate bool) error {
	if duplicate {
		return driver.ErrStreamExists
	}
	return Changed(n, err, driver.ErrStreamNotFound)
}

// ExecEach runs the driver's statement for each name in order, all with
// the same arguments: the deletes of a stream's or a group's rows from
// every table that keeps some, when the stream or the group goes.
func ExecEach(ctx context.Context, r Runner, names []string, stmt func(name string) string, args ...any) error {
	for _, name := range names {
		if _, err := r.Exec(ctx, stmt(name), args...); err != nil {
			return err
		}
	}
	return nil
}

// DeferRows records the rows the main claim p defers (the group reads them,
// this member cannot decode them) as delayed exceptions due at now (as the
// engine stores it), for members that decode them, and returns how many it
// recorded. insert is the engine's statement for n such rows, each of
// (stream_id, group_name, msg_id, partition, schema_version, due_at,
// holder, updated_at), which passes over a row the group already has an
// exception for; the rows go chunk at a time.
func DeferRows(ctx context.Context, q Querier, p driver.ClaimParams, rows []driver.Row, now any, chunk int, insert func(n int) string) (int, error) {
	var inserted int64
	for start := 0; start < len(rows); start += chunk {
		part := rows[start:min(start+chunk, len(rows))]
		args := make([]any, 0, len(part)*8)
		for _, r := range part {
			args = append(args, p.Stream.ID, p.Group, r.ID, r.Partition, r.SchemaVersion, now, p.Holder, now)
		}
		res, err := q.ExecContext(ctx, insert(len(part)), args...)
		if err != nil {
			return 0, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return 0, err
		}
		inserted += n
	}
	return int(inserted), nil
}

// SampleColumns are the stream_sample columns ScanSample reads, in its
// order.
const SampleColumns = `stream_id, sampled_at, figures`

// ScanSample reads SampleColumns; the time is stored as a T, which at turns
// into UTC.
func ScanSample[T any](r driver.RowScanner, at func(T) time.Time) (driver.Sample, error) {
	var s driver.Sample
	var when T
	err := r.Scan(&s.StreamID, &when, &s.Figures)
	s.At = at(when)
	return s, err
}

// ByIDs is the WHERE clause naming a group's exception rows by message
// id, and its arguments.
func ByIDs(streamID int64, group string, ids []int64) (string, []any) {
	return ` WHERE stream_id = ? AND group_name = ? AND msg_id IN (` + Placeholders(len(ids)) + `)`,
		append([]any{streamID, group}, Args(ids)...)
}

// DueWrites are what RecordFates's statements differ by from engine to
// engine.
type DueWrites struct {
	// Failures is the SET clause that appends the expired lease's attempt
	// to the failure history ("failures = ..."), taking the error and the
	// time as its arguments.
	Failures string
	// Now and LeaseUntil are the claim's times as the engine stores them.
	Now, LeaseUntil any
}

// RecordFates writes what a claim decided of due exceptions (driver.
// DueFates): the resolved rows go, the buried become dead with the expired
// lease's attempt in their history, the leased are leased again to the
// claim; a statement for each (per fateChunk ids). The statements are the
// same on both engines but for w.
func RecordFates(ctx context.Context, q Querier, p driver.ClaimParams, f *driver.DueFates, w DueWrites) error {
	for _, fate := range []struct {
		ids  []int64
		stmt string
		args []any
	}{
		{f.Resolve, `DELETE FROM delivery_exception`, nil},
		{f.Bury, `UPDATE delivery_exception SET state = 'dead', lease_token = NULL, last_error = ?, first_failed_at = COALESCE(first_failed_at, ?), updated_at = ?, ` + w.Failures,
			[]any{p.LastError, w.Now, w.Now, driver.CutHistoryError(p.LastError), driver.HistoryTime(p.Now)}},
		{f.Lease, `UPDATE delivery_exception SET state = 'leased', attempt = attempt + 1, due_at = ?, lease_token = ?, holder = ?, updated_at = ?`,
			[]any{w.LeaseUntil, p.Token, p.Holder, w.Now}},
	} {
		for chunk := range slices.Chunk(fate.ids, fateChunk) {
			where, args := ByIDs(p.Stream.ID, p.Group, chunk)
			if _, err := q.ExecContext(ctx, fate.stmt+where, append(slices.Clone(fate.args), args...)...); err != nil {
				return err
			}
		}
	}
	return nil
}

// fateChunk bounds the ids one statement of RecordFates names, well within
// every engine's limit on a statement's parameters (SQLite's is 32,766) for
// a claim of any size.
const fateChunk = 1000

// EncodeInts writes integers as delivery_batch stores a batch's ids (and
// SQLite its versions): a JSON array without spaces, which SQL can read
// with its JSON functions. Every writer uses it, so that a settle can
// compare the stored text with the text it expects.
func EncodeInts[T int | int64](vs []T) string {
	b := make([]byte, 0, 2+8*len(vs))
	b = append(b, '[')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(v), 10)
	}
	return string(append(b, ']'))
}

// DecodeInts reads a JSON array of integers, as EncodeInts writes it or
// as an engine's JSON functions do (with spaces).
func DecodeInts[T int | int64](s string) ([]T, error) {
	s = strings.TrimSpace(s)
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return nil, fmt.Errorf("%.40q is not a JSON array of integers", s)
	}
	body := strings.TrimSpace(s[1 : len(s)-1])
	if body == "" {
		return nil, nil
	}
	out := make([]T, 0, strings.Count(body, ",")+1)
	for f := range strings.SplitSeq(body, ",") {
		v, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%.40q: %w", s, err)
		}
		out = append(out, T(v))
	}
	return out, nil
}
