package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// ListDead implements driver.Driver.
func (d *Driver) ListDead(ctx context.Context, p driver.ListDeadParams) ([]driver.DeadLetter, error) {
	var out []driver.DeadLetter
	err := d.readTx(ctx, func(tx *sql.Tx) error {
		history := "NULL"
		if p.History {
			history = "e.failures"
		}
		return sqldb.EachRow(ctx, tx, `SELECT `+rowColumns+`, e.attempt, COALESCE(e.last_error, ''), COALESCE(e.first_failed_at, e.updated_at), e.updated_at,
			COALESCE(e.holder, ''), `+history+`
			FROM delivery_exception e JOIN `+logTable(p.StreamID)+` m ON m.id = e.msg_id
			WHERE e.stream_id = ? AND e.group_name = ? AND e.state = 'dead' AND e.msg_id > ? ORDER BY e.msg_id LIMIT ?`,
			[]any{p.StreamID, p.Group, p.AfterID, p.Limit}, func(r *sql.Rows) error {
				var dl driver.DeadLetter
				var first, died int64
				var failures sql.NullString
				var err error
				if dl.Row, err = scanRow(r, &dl.Attempt, &dl.Error, &first, &died, &dl.Holder, &failures); err != nil {
					return err
				}
				dl.FirstFailed, dl.DiedAt = fromMicros(first), fromMicros(died)
				if dl.History, err = driver.ParseFailureHistory(failures.String); err != nil {
					return fmt.Errorf("row %d: stored failure history: %w", dl.ID, err)
				}
				out = append(out, dl)
				return nil
			})
	})
	return out, err
}

// Replay implements driver.Driver.
func (d *Driver) Replay(ctx context.Context, p driver.ReplayParams) (int64, error) {
	return d.onDead(ctx, p.StreamID, p.Group, p.IDs, `UPDATE delivery_exception SET state = 'delayed', attempt = 0, due_at = ?, updated_at = ?`, micros(p.Now), micros(p.Now))
}

// Discard implements driver.Driver.
func (d *Driver) Discard(ctx context.Context, p driver.DiscardParams) (int64, error) {
	return d.onDead(ctx, p.StreamID, p.Group, p.IDs, `DELETE FROM delivery_exception`)
}

func (d *Driver) onDead(ctx context.Context, streamID int64, group string, ids []int64, stmt string, args ...any) (int64, error) {
	var n int64
	err := d.inTx(ctx, nil, func(tx *sql.Tx) error {
		where := ` WHERE stream_id = ? AND group_name = ? AND state = 'dead'`
		all := append(args, streamID, group)
		if ids != nil {
			ids = driver.DistinctIDs(ids)
			where += ` AND msg_id IN (` + sqldb.Placeholders(len(ids)) + `)`
			all = append(all, sqldb.Args(ids)...)
		}
		var err error
		n, err = sqldb.Affected(tx.ExecContext(ctx, stmt+where, all...))
		return err
	})
	return n, err
}
