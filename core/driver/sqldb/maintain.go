package sqldb

import (
	"context"
	"database/sql"
	"strconv"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Retention is a retention pass's steps (driver.RetainSteps) in one
// transaction on database/sql, as MySQL and SQLite take them alike, over
// the steps each engine takes its own way: how it reads (MySQL: locks) the
// stream and the groups, how it materializes the batch members among the
// victims (MySQL bounds its lock waits), and how it removes the rows (each
// keeps its high-water marks its own way).
type Retention struct {
	Q Querier
	// Table is a stream's log table.
	Table func(streamID int64) string
	// Span reads the lowest and highest ids of a log table
	// (driver.RetentionStatements.Span), which the engines plan
	// differently.
	Span func(table string) string
	// Time turns a time into the stored value.
	Time func(time.Time) any
	// ReadStream, Groups, Materialize and Delete are the engine's steps: the
	// stream read first (Stream), the groups with their cursors (Unread),
	// the batch members among the victims made exception rows (Unread),
	// and the rows removed with their exceptions and heads (Remove).
	ReadStream  func(ctx context.Context, streamID int64) (driver.StreamConfig, error)
	Groups      func(ctx context.Context, stream driver.StreamConfig) ([]driver.GroupStats, error)
	Materialize func(ctx context.Context, streamID int64, victims []driver.RetainCandidate) error
	Delete      func(ctx context.Context, stream driver.StreamConfig, victims []driver.RetainCandidate) error
}

// Stream implements driver.RetainSteps.
func (r Retention) Stream(ctx context.Context, streamID int64) (driver.StreamConfig, error) {
	return r.ReadStream(ctx, streamID)
}

// Probe implements driver.RetainSteps: RetainBound's index dives on the
// log table.
func (r Retention) Probe(ctx context.Context, stream driver.StreamConfig) driver.RetentionProbe {
	table := r.Table(stream.ID)
	return Probe(ctx, r.Q, driver.RetentionStatements{
		Span:       r.Span(table),
		FirstYoung: `SELECT id FROM ` + table + ` WHERE produced_at >= ? ORDER BY id LIMIT 1`,
		NthNewest:  `SELECT id FROM ` + table + ` ORDER BY id DESC LIMIT 1 OFFSET ?`,
		At:         r.Time,
	})
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
	return Collect(ctx, r.Q, "SELECT m.id, m.`partition`, m.schema_version, m.routing_key FROM "+r.Table(stream.ID)+" m WHERE "+where+" ORDER BY m.id LIMIT ?",
		[]any{bound, limit}, driver.ScanRetainCandidate)
}

// Unread implements driver.RetainSteps: the groups, then which hold an
// exception among the victims, once the batch members among them are
// exception rows (which count as held and go with their rows).
func (r Retention) Unread(ctx context.Context, stream driver.StreamConfig, victims []driver.RetainCandidate) ([]driver.GroupStats, driver.Held, error) {
	groups, err := r.Groups(ctx, stream)
	if err != nil {
		return nil, nil, err
	}
	if err := r.Materialize(ctx, stream.ID, victims); err != nil {
		return nil, nil, err
	}
	held := driver.Held{}
	return groups, held, EachRow(ctx, r.Q, `SELECT group_name, msg_id FROM delivery_exception WHERE stream_id = ? AND msg_id BETWEEN ? AND ?`,
		[]any{stream.ID, victims[0].ID, victims[len(victims)-1].ID}, func(rs *sql.Rows) error { return held.Scan(rs) })
}

// Remove implements driver.RetainSteps: the counts first, then the rows.
func (r Retention) Remove(ctx context.Context, stream driver.StreamConfig, victims []driver.RetainCandidate, removedUnread map[string]int64) error {
	if err := AddRemovedUnread(ctx, r.Q, `UPDATE consumer_group SET removed_unread = removed_unread + ? WHERE stream_id = ? AND name = ?`,
		stream.ID, removedUnread); err != nil {
		return err
	}
	return r.Delete(ctx, stream, victims)
}

// CompactVictims reads the first limit rows of the log table, in id order,
// that compaction removes: those head, the engine's predicate that a row m
// is its key's head, says are not.
func CompactVictims(ctx context.Context, q Querier, table, head string, limit int) ([]driver.RetainCandidate, error) {
	return Collect(ctx, q, "SELECT m.id, m.`partition`, m.schema_version, m.routing_key FROM "+table+" m WHERE NOT "+head+" ORDER BY m.id LIMIT ?",
		[]any{limit}, driver.ScanRetainCandidate)
}
