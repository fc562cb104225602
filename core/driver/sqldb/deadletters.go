package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// ListDead implements driver.Driver.ListDead on q.
func (s Store[T]) ListDead(ctx context.Context, q Runner, p driver.ListDeadParams) ([]driver.DeadLetter, error) {
	// The history is read only when asked for: it may be long.
	history := "NULL"
	if p.History {
		history = "e.failures"
	}
	return collectOn(ctx, q, `SELECT `+RowColumns+`, e.attempt, COALESCE(e.last_error, ''), COALESCE(e.first_failed_at, e.updated_at), e.updated_at,
		COALESCE(e.holder, ''), `+history+`
		FROM delivery_exception e JOIN `+LogTable(p.StreamID)+` m ON m.id = e.msg_id
		WHERE e.stream_id = ? AND e.group_name = ? AND e.state = 'dead' AND e.msg_id > ? ORDER BY e.msg_id LIMIT ?`,
		[]any{p.StreamID, p.Group, p.AfterID, p.Limit}, func(r driver.RowScanner) (driver.DeadLetter, error) {
			var dl driver.DeadLetter
			var first, died T
			var failures sql.NullString
			var err error
			if dl.Row, err = ScanRow(r, s.At, &dl.Attempt, &dl.Error, &first, &died, &dl.Holder, &failures); err != nil {
				return dl, err
			}
			dl.FirstFailed, dl.DiedAt = s.At(first), s.At(died)
			if dl.History, err = driver.ParseFailureHistory(failures.String); err != nil {
				return dl, fmt.Errorf("row %d: stored failure history: %w", dl.ID, err)
			}
			for i := range dl.History {
				dl.History[i].At = dl.History[i].At.Truncate(time.Microsecond)
			}
			return dl, nil
		})
}

// Replay implements driver.Driver.Replay on q (one statement, atomic on
// its own).
func (s Store[T]) Replay(ctx context.Context, q Runner, p driver.ReplayParams) (int64, error) {
	return onDead(ctx, q, p.StreamID, p.Group, p.IDs, `UPDATE delivery_exception SET state = 'delayed', attempt = 0, due_at = ?, updated_at = ?`, s.Time(p.Now), s.Time(p.Now))
}

// Discard implements driver.Driver.Discard on q (one statement).
func (s Store[T]) Discard(ctx context.Context, q Runner, p driver.DiscardParams) (int64, error) {
	return onDead(ctx, q, p.StreamID, p.Group, p.IDs, `DELETE FROM delivery_exception`)
}

// onDead runs stmt, with args, over a group's dead deliveries: those of
// ids, or all when ids is nil.
func onDead(ctx context.Context, q Runner, streamID int64, group string, ids []int64, stmt string, args ...any) (int64, error) {
	where := ` WHERE stream_id = ? AND group_name = ? AND state = 'dead'`
	all := append(args, streamID, group)
	if ids != nil {
		ids = driver.DistinctIDs(ids)
		if len(ids) == 0 {
			return 0, nil
		}
		where += ` AND msg_id IN (` + Placeholders(len(ids)) + `)`
		all = append(all, Args(ids)...)
	}
	return q.Exec(ctx, stmt+where, all...)
}
