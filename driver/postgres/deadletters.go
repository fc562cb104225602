package postgres

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// ListDead implements driver.Driver. The failure history is read only when
// p.History asks for it.
func (d *Driver) ListDead(ctx context.Context, p driver.ListDeadParams) ([]driver.DeadLetter, error) {
	var out []driver.DeadLetter
	err := d.read(ctx, func() error {
		out = out[:0]
		rows, err := d.pool.Query(ctx, `SELECT `+rowColumns+`, e.attempt, COALESCE(e.last_error, ''), COALESCE(e.first_failed_at, e.updated_at), e.updated_at,
				COALESCE(e.holder, ''), CASE WHEN $5::boolean THEN e.failures END
			FROM delivery_exception e JOIN `+logTable(p.StreamID)+` m ON m.id = e.msg_id
			WHERE e.stream_id = $1::bigint AND e.group_name = $2::text AND e.state = 'dead' AND e.msg_id > $3::bigint ORDER BY e.msg_id LIMIT $4::integer`,
			p.StreamID, p.Group, p.AfterID, int32(p.Limit), p.History)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var dl driver.DeadLetter
			var attempt int32
			var history []byte
			if dl.Row, err = scanRow(rows, &attempt, &dl.Error, &dl.FirstFailed, &dl.DiedAt, &dl.Holder, &history); err != nil {
				return err
			}
			dl.Attempt = int(attempt)
			dl.FirstFailed, dl.DiedAt = dl.FirstFailed.UTC(), dl.DiedAt.UTC()
			if dl.History, err = parseHistory(dl.ID, history); err != nil {
				return err
			}
			out = append(out, dl)
		}
		return rows.Err()
	})
	return out, err
}

// Replay implements driver.Driver.
func (d *Driver) Replay(ctx context.Context, p driver.ReplayParams) (int64, error) {
	return d.onDead(ctx, p.StreamID, p.Group, p.IDs, `UPDATE delivery_exception SET state = 'delayed', attempt = 0, due_at = $4::timestamptz, updated_at = $4::timestamptz`, ts(p.Now))
}

// Discard implements driver.Driver.
func (d *Driver) Discard(ctx context.Context, p driver.DiscardParams) (int64, error) {
	return d.onDead(ctx, p.StreamID, p.Group, p.IDs, `DELETE FROM delivery_exception`)
}

// onDead runs stmt over the group's dead deliveries, all of them when ids is
// nil. stmt's own parameters start at $4.
func (d *Driver) onDead(ctx context.Context, streamID int64, group string, ids []int64, stmt string, args ...any) (int64, error) {
	where := ` WHERE stream_id = $1::bigint AND group_name = $2::text AND state = 'dead' AND ($3::bigint[] IS NULL OR msg_id = ANY($3::bigint[]))`
	var list []int64 // nil: every dead delivery
	if ids != nil {
		list = driver.DistinctIDs(ids)
	}
	all := append([]any{streamID, group, list}, args...)
	var n int64
	err := d.write(ctx, func(c *pgxpool.Conn) error {
		tag, err := c.Exec(ctx, stmt+where, all...)
		n = tag.RowsAffected()
		return err
	})
	return n, err
}
