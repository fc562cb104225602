package sqldb

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Retention is a retention pass's steps (driver.RetainSteps) in one
// transaction, as the three engines take them alike, on a Runner (On for
// MySQL and SQLite, pgx's adapter for PostgreSQL), over the steps each
// engine takes its own way: how it reads (MySQL: locks) the stream and the
// groups, whether it materializes the batch members among the victims
// before it removes them (MySQL bounds its lock waits; PostgreSQL does it
// in Delete, after the stream's counting lock), and how it removes the
// rows (each keeps its high-water marks and its lock order its own way).
type Retention struct {
	R Runner
	// Table is a stream's log table.
	Table func(streamID int64) string
	// Span reads the lowest and highest ids of a log table
	// (driver.RetentionStatements.Span), which the engines plan
	// differently.
	Span func(table string) string
	// Time turns a time into the stored value.
	Time func(time.Time) any
	// Held, when set, reads the (group name, row id) pairs of the victims
	// that groups hold, from the stream id and the lowest and highest victim
	// id; by default the exception rows, which the batch members among the
	// victims are by then (Materialize). PostgreSQL, which materializes them
	// later, reads the batches' members too.
	Held string
	// ReadStream, Groups, Materialize and Delete are the engine's steps: the
	// stream read first (Stream), the groups with their cursors (Unread),
	// the batch members among the victims made exception rows (Unread; nil:
	// Delete does it), and the rows removed with their exceptions and heads
	// (Remove), groups being those whose counts Remove updates next (in name
	// order), for an engine that locks them with the rows.
	ReadStream  func(ctx context.Context, streamID int64) (driver.StreamConfig, error)
	Groups      func(ctx context.Context, stream driver.StreamConfig) ([]driver.GroupStats, error)
	Materialize func(ctx context.Context, streamID int64, victims []driver.RetainCandidate) error
	Delete      func(ctx context.Context, stream driver.StreamConfig, victims []driver.RetainCandidate, groups []string) error
}

// Stream implements driver.RetainSteps.
func (r Retention) Stream(ctx context.Context, streamID int64) (driver.StreamConfig, error) {
	return r.ReadStream(ctx, streamID)
}

// Probe implements driver.RetainSteps: RetainBound's index dives on the
// log table.
func (r Retention) Probe(ctx context.Context, stream driver.StreamConfig) driver.RetentionProbe {
	table := r.Table(stream.ID)
	return probeOn(ctx, r.R, driver.RetentionStatements{
		Span:       r.Span(table),
		FirstYoung: `SELECT id FROM ` + table + ` WHERE produced_at >= ? ORDER BY id LIMIT 1`,
		NthNewest:  `SELECT id FROM ` + table + ` ORDER BY id DESC LIMIT 1 OFFSET ?`,
		At:         r.Time,
	})
}

// errNoRow is the sentinel of probeOn's reads for a query without a row.
var errNoRow = errors.New("sqldb: no row")

// probeOn answers RetainBound's index dives (driver.RetentionStatements,
// the engine's text) on r.
func probeOn(ctx context.Context, r Runner, s driver.RetentionStatements) driver.RetentionProbe {
	return s.Probe(func(query string, args ...any) driver.RowScanner { return firstRow{ctx, r, query, args} }, errNoRow)
}

// firstRow reads a query's first row when scanned, as *sql.Row does.
type firstRow struct {
	ctx   context.Context
	r     Runner
	query string
	args  []any
}

func (f firstRow) Scan(dest ...any) error {
	found, err := scanRow(f.ctx, f.r, f.query, f.args, dest...)
	if err == nil && !found {
		return errNoRow
	}
	return err
}

// Victims implements driver.RetainSteps: the rows below bound, the first
// limit in id order; under a soft limit only those every group's cursor
// passed, that no group has an exception for, and below every batch's
// lowest member (batch members are leased exceptions; one snapshot sees a
// batch or the rows materialized from it).
func (r Retention) Victims(ctx context.Context, stream driver.StreamConfig, bound int64, limit int) ([]driver.RetainCandidate, error) {
	where := `m.id < ?`
	if sid := strconv.FormatInt(stream.ID, 10); !stream.Retention.Hard {
		where += " AND NOT EXISTS (SELECT 1 FROM group_cursor c WHERE c.stream_id = " + sid + " AND c.`partition` = m.`partition` AND c.position < m.id)" +
			" AND NOT EXISTS (SELECT 1 FROM delivery_exception e WHERE e.stream_id = " + sid + " AND e.msg_id = m.id)" +
			" AND m.id < COALESCE((SELECT MIN(b.first_id) FROM delivery_batch b WHERE b.stream_id = " + sid + "), m.id + 1)"
	}
	return collectOn(ctx, r.R, "SELECT m.id, m.`partition`, m.schema_version, m.routing_key FROM "+r.Table(stream.ID)+" m WHERE "+where+" ORDER BY m.id LIMIT ?",
		[]any{bound, limit}, driver.ScanRetainCandidate)
}

// Unread implements driver.RetainSteps: the groups, then which hold a
// victim (Held). It is asked under a hard limit only, whose victims are
// every row of the log between the lowest and the highest.
func (r Retention) Unread(ctx context.Context, stream driver.StreamConfig, victims []driver.RetainCandidate) ([]driver.GroupStats, driver.Held, error) {
	groups, err := r.Groups(ctx, stream)
	if err != nil {
		return nil, nil, err
	}
	if r.Materialize != nil {
		if err := r.Materialize(ctx, stream.ID, victims); err != nil {
			return nil, nil, err
		}
	}
	query := cmp.Or(r.Held, `SELECT group_name, msg_id FROM delivery_exception WHERE stream_id = ? AND msg_id BETWEEN ? AND ?`)
	held := driver.Held{}
	return groups, held, eachRowOn(ctx, r.R, query, []any{stream.ID, victims[0].ID, victims[len(victims)-1].ID}, never,
		func(rs Rows) error { return held.Scan(rs) })
}

// Remove implements driver.RetainSteps: the rows, then the counts, whose
// groups the engine locked by then (MySQL with the groups, PostgreSQL with
// the rows).
func (r Retention) Remove(ctx context.Context, stream driver.StreamConfig, victims []driver.RetainCandidate, removedUnread map[string]int64) error {
	if err := r.Delete(ctx, stream, victims, slices.Sorted(maps.Keys(removedUnread))); err != nil {
		return err
	}
	return driver.AddRemovedUnread(removedUnread, func(group string, n int64) error {
		_, err := r.R.Exec(ctx, `UPDATE consumer_group SET removed_unread = removed_unread + ? WHERE stream_id = ? AND name = ?`, n, stream.ID, group)
		return err
	})
}

// CompactVictims reads the first limit rows of the log table, in id order,
// that compaction removes: those head, the engine's predicate that a row m
// is its key's head, says are not.
func CompactVictims(ctx context.Context, r Runner, table, head string, limit int) ([]driver.RetainCandidate, error) {
	return collectOn(ctx, r, "SELECT m.id, m.`partition`, m.schema_version, m.routing_key FROM "+table+" m WHERE NOT "+head+" ORDER BY m.id LIMIT ?",
		[]any{limit}, driver.ScanRetainCandidate)
}
