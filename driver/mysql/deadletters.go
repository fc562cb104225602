package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// ListDead implements driver.Driver.
func (d *Driver) ListDead(ctx context.Context, p driver.ListDeadParams) ([]driver.DeadLetter, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	// The history is read only when asked for: it may be long.
	history := "NULL"
	if p.History {
		history = "e.failures"
	}
	var out []driver.DeadLetter
	err := d.withLog(ctx, p.StreamID, func() error {
		out = out[:0]
		return sqldb.EachRow(ctx, d.db, `SELECT `+rowColumns+`, e.attempt, COALESCE(e.last_error, ''), COALESCE(e.first_failed_at, e.updated_at), e.updated_at,
			COALESCE(e.holder, ''), `+history+`
			FROM delivery_exception e JOIN `+logTable(p.StreamID)+` m ON m.id = e.msg_id
			WHERE e.stream_id = ? AND e.group_name = ? AND e.state = 'dead' AND e.msg_id > ? ORDER BY e.msg_id LIMIT ?`,
			[]any{p.StreamID, p.Group, p.AfterID, p.Limit}, func(r *sql.Rows) error {
				var dl driver.DeadLetter
				var first, died time.Time
				var holder []byte
				var failures sql.NullString
				var err error
				if dl.Row, err = scanRow(r, &dl.Attempt, &dl.Error, &first, &died, &holder, &failures); err != nil {
					return err
				}
				dl.FirstFailed, dl.DiedAt, dl.Holder = utc(first), utc(died), string(holder)
				if dl.History, err = parseHistory(failures.String); err != nil {
					return fmt.Errorf("row %d: stored failure history: %w", dl.ID, err)
				}
				out = append(out, dl)
				return nil
			})
	})
	return out, d.wrap(ctx, err, opRead)
}

// Replay implements driver.Driver.
func (d *Driver) Replay(ctx context.Context, p driver.ReplayParams) (int64, error) {
	return d.onDead(ctx, p.StreamID, p.Group, p.IDs, `UPDATE delivery_exception SET state = 'delayed', attempt = 0, due_at = ?, updated_at = ?`, ts(p.Now), ts(p.Now))
}

// Discard implements driver.Driver.
func (d *Driver) Discard(ctx context.Context, p driver.DiscardParams) (int64, error) {
	return d.onDead(ctx, p.StreamID, p.Group, p.IDs, `DELETE FROM delivery_exception`)
}

// onDead runs one statement over dead deliveries; a single statement is
// atomic, so it needs no transaction.
func (d *Driver) onDead(ctx context.Context, streamID int64, group string, ids []int64, stmt string, args ...any) (int64, error) {
	where := ` WHERE stream_id = ? AND group_name = ? AND state = 'dead'`
	all := append(args, streamID, group)
	if ids != nil {
		ids = driver.DistinctIDs(ids)
		if len(ids) == 0 {
			return 0, d.check()
		}
		where += ` AND msg_id IN (` + sqldb.Placeholders(len(ids)) + `)`
		all = append(all, sqldb.Args(ids)...)
	}
	res, err := d.exec(ctx, stmt+where, all...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return n, d.wrap(ctx, err, opRead)
}

// parseHistory reads a stored failure history, with times at microsecond
// precision in UTC.
func parseHistory(stored string) ([]driver.FailureRecord, error) {
	h, err := driver.ParseFailureHistory(stored)
	for i := range h {
		h[i].At = h[i].At.UTC().Truncate(time.Microsecond)
	}
	return h, err
}
