package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// scanWindow is how many rows the main claim reads per query while looking
// for claimable rows; maxScan bounds one claim's work when most rows are at
// other versions or match no binding.
const (
	scanWindow = 512
	maxScan    = 20000
)

// versionFilter returns an SQL predicate on column col for the request's
// versions ("1" when every version is read) and its arguments.
func versionFilter(col string, versions []int) (string, []any) {
	if versions == nil {
		return "1", nil
	}
	args := make([]any, len(versions))
	for i, v := range versions {
		args[i] = v
	}
	return col + " IN (" + placeholders(len(versions)) + ")", args
}

// headExpr is 1 when row m is claimable: on a compacted stream, only a head.
func headExpr(stream driver.StreamConfig) string {
	if !stream.Compacted {
		return "1"
	}
	return `EXISTS (SELECT 1 FROM compaction_head h WHERE h.stream_id = ` + strconv.FormatInt(stream.ID, 10) + ` AND h.msg_key = m.msg_key AND h.head_id = m.id)`
}

// Claim implements driver.Driver.
func (d *Driver) Claim(ctx context.Context, req driver.ClaimRequest) ([]driver.Delivery, error) {
	var out []driver.Delivery
	err := d.inTx(ctx, nil, func(tx *sql.Tx) error {
		out = out[:0]
		n := req.Stream.Partitions
		first := rand.IntN(n)
		for i := range n {
			if len(out) >= req.Limit {
				break
			}
			p := (first + i) % n
			got, err := d.claimPartition(ctx, tx, req, p, req.Limit-len(out))
			if err != nil {
				return err
			}
			out = append(out, got...)
		}
		return nil
	})
	return out, err
}

func (d *Driver) claimPartition(ctx context.Context, tx *sql.Tx, req driver.ClaimRequest, p, limit int) ([]driver.Delivery, error) {
	if req.Ordered {
		var pending bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM delivery_exception WHERE stream_id = ? AND group_name = ? AND partition = ? AND state <> 'dead')`,
			req.Stream.ID, req.Group, p).Scan(&pending); err != nil {
			return nil, err
		}
		if pending {
			return nil, nil
		}
	}
	var cursor int64
	err := tx.QueryRowContext(ctx, `SELECT position FROM group_cursor WHERE stream_id = ? AND group_name = ? AND partition = ?`,
		req.Stream.ID, req.Group, p).Scan(&cursor)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("group %q partition %d: %w", req.Group, p, driver.ErrGroupNotFound)
	}
	if err != nil {
		return nil, err
	}
	vf, vargs := versionFilter("m.schema_version", req.Versions)
	// Payloads are read only for rows at the group's versions: other rows
	// are passed over without their payload leaving the database.
	query := `SELECT m.id, m.partition, m.schema_version, m.msg_key, m.routing_key, m.compaction_rank,
		CASE WHEN ` + vf + ` THEN m.payload ELSE x'' END, m.headers, m.produced_at, ` + vf + `, ` + headExpr(req.Stream) + `
		FROM ` + logTable(req.Stream.ID) + ` m WHERE m.partition = ? AND m.id > ? ORDER BY m.id LIMIT ?`
	var taken []driver.Delivery
	start, scanned := cursor, 0
	for len(taken) < limit && scanned < maxScan {
		args := append(append(append([]any{}, vargs...), vargs...), p, cursor, scanWindow)
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return nil, err
		}
		n := 0
		for rows.Next() {
			var versionOK, head bool
			r, err := scanRow(rows, &versionOK, &head)
			if err != nil {
				rows.Close()
				return nil, err
			}
			n++
			cursor = r.ID
			if versionOK && head && (req.Match == nil || req.Match(r.RoutingKey)) {
				taken = append(taken, driver.Delivery{Row: r, Attempt: 1, LeaseUntil: req.LeaseUntil})
				if len(taken) == limit {
					break
				}
			}
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, err
		}
		scanned += n
		if n < scanWindow && len(taken) < limit {
			break
		}
	}
	if cursor == start {
		return nil, nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE group_cursor SET position = ? WHERE stream_id = ? AND group_name = ? AND partition = ?`,
		cursor, req.Stream.ID, req.Group, p); err != nil {
		return nil, err
	}
	if len(taken) == 0 {
		return nil, nil
	}
	var sb strings.Builder
	sb.WriteString(`INSERT INTO delivery_exception (stream_id, group_name, msg_id, partition, schema_version, state, attempt, due_at, lease_token, updated_at) VALUES `)
	args := make([]any, 0, len(taken)*8)
	for i, t := range taken {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString("(?, ?, ?, ?, ?, 'leased', 1, ?, ?, ?)")
		args = append(args, req.Stream.ID, req.Group, t.ID, t.Partition, t.SchemaVersion, micros(req.LeaseUntil), req.Token, micros(req.Now))
	}
	if _, err := tx.ExecContext(ctx, sb.String(), args...); err != nil {
		return nil, err
	}
	return taken, nil
}

// ClaimExceptions implements driver.Driver.
func (d *Driver) ClaimExceptions(ctx context.Context, req driver.ClaimRequest) ([]driver.Delivery, error) {
	if err := d.check(); err != nil || req.Limit <= 0 {
		return nil, err
	}
	// Most claims find nothing due: find that out on a reader, without
	// taking the single write lock that producers and other claims need.
	vf, vargs := versionFilter("schema_version", req.Versions)
	var due bool
	if err := d.read.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM delivery_exception WHERE stream_id = ? AND group_name = ?
		AND state <> 'dead' AND due_at <= ? AND `+vf+`)`, append([]any{req.Stream.ID, req.Group, micros(req.Now)}, vargs...)...).Scan(&due); err != nil || !due {
		return nil, err
	}
	var out []driver.Delivery
	err := d.inTx(ctx, nil, func(tx *sql.Tx) error {
		out = out[:0]
		// Candidates that are resolved (superseded or removed rows) or buried
		// (out of attempts) do not count toward the limit: look again until
		// the limit is met or no candidate is left, so that an empty claim
		// means nothing is due.
		for len(out) < req.Limit {
			got, dropped, err := d.claimExceptionBatch(ctx, tx, req, req.Limit-len(out))
			if err != nil {
				return err
			}
			out = append(out, got...)
			if dropped == 0 {
				break
			}
		}
		return nil
	})
	return out, err
}

// claimExceptionBatch examines up to limit due exceptions: it leases those
// still claimable and resolves or buries the others, which it counts as
// dropped.
func (d *Driver) claimExceptionBatch(ctx context.Context, tx *sql.Tx, req driver.ClaimRequest, limit int) (out []driver.Delivery, dropped int, err error) {
	vf, vargs := versionFilter("e.schema_version", req.Versions)
	ordered := ""
	if req.Ordered {
		// Only the lowest pending exception of a partition may be handed out.
		ordered = ` AND NOT EXISTS (SELECT 1 FROM delivery_exception e2 WHERE e2.stream_id = e.stream_id AND e2.group_name = e.group_name
			AND e2.partition = e.partition AND e2.state <> 'dead' AND e2.msg_id < e.msg_id)`
	}
	args := append([]any{req.Stream.ID, req.Group, micros(req.Now)}, vargs...)
	args = append(args, limit)
	rows, err := tx.QueryContext(ctx, `SELECT `+rowColumns+`, e.msg_id, e.state, e.attempt, `+headExpr(req.Stream)+`
		FROM delivery_exception e LEFT JOIN `+logTable(req.Stream.ID)+` m ON m.id = e.msg_id
		WHERE e.stream_id = ? AND e.group_name = ? AND e.state <> 'dead' AND e.due_at <= ? AND `+vf+ordered+`
		ORDER BY e.msg_id LIMIT ?`, args...)
	if err != nil {
		return nil, 0, err
	}
	type candidate struct {
		row     driver.Row
		msgID   int64
		state   string
		attempt int
		exists  bool
		head    bool
	}
	var cands []candidate
	for rows.Next() {
		var c candidate
		var id sql.NullInt64
		var part, version, rank sql.NullInt64
		var key, rk, headers sql.NullString
		var payload []byte
		var produced sql.NullInt64
		if err := rows.Scan(&id, &part, &version, &key, &rk, &rank, &payload, &headers, &produced, &c.msgID, &c.state, &c.attempt, &c.head); err != nil {
			rows.Close()
			return nil, 0, err
		}
		c.exists = id.Valid
		if c.exists {
			c.row, err = rowFromNullable(id.Int64, part.Int64, version.Int64, key, rk.String, rank.Int64, payload, headers, produced.Int64)
			if err != nil {
				rows.Close()
				return nil, 0, err
			}
		}
		cands = append(cands, c)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, 0, err
	}
	for _, c := range cands {
		switch {
		case !c.exists || !c.head:
			// The row was removed or superseded: nothing is left to deliver.
			if _, err := tx.ExecContext(ctx, `DELETE FROM delivery_exception WHERE stream_id = ? AND group_name = ? AND msg_id = ?`,
				req.Stream.ID, req.Group, c.msgID); err != nil {
				return nil, 0, err
			}
			dropped++
		case c.state == string(driver.StateLeased) && req.MaxAttempts > 0 && c.attempt >= req.MaxAttempts:
			if _, err := tx.ExecContext(ctx, `UPDATE delivery_exception SET state = 'dead', lease_token = NULL, last_error = ?,
				first_failed_at = COALESCE(first_failed_at, ?), updated_at = ? WHERE stream_id = ? AND group_name = ? AND msg_id = ?`,
				req.LastError, micros(req.Now), micros(req.Now), req.Stream.ID, req.Group, c.msgID); err != nil {
				return nil, 0, err
			}
			dropped++
		default:
			if _, err := tx.ExecContext(ctx, `UPDATE delivery_exception SET state = 'leased', attempt = attempt + 1, due_at = ?, lease_token = ?,
				updated_at = ? WHERE stream_id = ? AND group_name = ? AND msg_id = ?`,
				micros(req.LeaseUntil), req.Token, micros(req.Now), req.Stream.ID, req.Group, c.msgID); err != nil {
				return nil, 0, err
			}
			out = append(out, driver.Delivery{Row: c.row, Attempt: c.attempt + 1, LeaseUntil: req.LeaseUntil})
		}
	}
	return out, dropped, nil
}

func rowFromNullable(id, part, version int64, key sql.NullString, rk string, rank int64, payload []byte, headers sql.NullString, produced int64) (driver.Row, error) {
	r := driver.Row{ID: id, Partition: int(part), SchemaVersion: int(version), Key: key.String, HasKey: key.Valid,
		RoutingKey: rk, CompactionRank: int(rank), Payload: payload, ProducedAt: fromMicros(produced)}
	if headers.Valid && headers.String != "" {
		if err := json.Unmarshal([]byte(headers.String), &r.Headers); err != nil {
			return r, fmt.Errorf("row %d: stored headers: %w", id, err)
		}
	}
	return r, nil
}

// leased runs an update or delete over leased deliveries named by ref and
// fails with ErrLeaseLost, changing nothing, unless every one matched.
func (d *Driver) leased(ctx context.Context, ref driver.LeaseRef, stmt string, args ...any) error {
	ids := dedupe(ref.IDs)
	if len(ids) == 0 {
		return nil
	}
	return d.inTx(ctx, nil, func(tx *sql.Tx) error {
		all := append(append(args, ref.StreamID, ref.Group, ref.Token), int64sToArgs(ids)...)
		res, err := tx.ExecContext(ctx, stmt+` WHERE stream_id = ? AND group_name = ? AND lease_token = ? AND state = 'leased' AND msg_id IN (`+placeholders(len(ids))+`)`, all...)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != int64(len(ids)) {
			return fmt.Errorf("%d of %d deliveries are no longer leased to this consumer (group %q): %w", int64(len(ids))-n, len(ids), ref.Group, driver.ErrLeaseLost)
		}
		return nil
	})
}

// Ack implements driver.Driver.
func (d *Driver) Ack(ctx context.Context, ref driver.LeaseRef) error {
	return d.leased(ctx, ref, `DELETE FROM delivery_exception`)
}

// Fail implements driver.Driver.
func (d *Driver) Fail(ctx context.Context, ref driver.LeaseRef, f driver.Failure) error {
	state, due := driver.StateDelayed, f.Due
	if f.Dead {
		state, due = driver.StateDead, f.Now
	}
	return d.leased(ctx, ref, `UPDATE delivery_exception SET state = ?, due_at = ?, lease_token = NULL, last_error = ?,
		first_failed_at = COALESCE(first_failed_at, ?), updated_at = ?`, string(state), micros(due), f.Error, micros(f.Now), micros(f.Now))
}

// Release implements driver.Driver.
func (d *Driver) Release(ctx context.Context, ref driver.LeaseRef) error {
	now := micros(time.Now())
	return d.leased(ctx, ref, `UPDATE delivery_exception SET state = 'delayed', due_at = ?, attempt = attempt - 1, lease_token = NULL, updated_at = ?`, now, now)
}

// Extend implements driver.Driver.
func (d *Driver) Extend(ctx context.Context, ref driver.LeaseRef, until time.Time) error {
	return d.leased(ctx, ref, `UPDATE delivery_exception SET due_at = ?, updated_at = ?`, micros(until), micros(time.Now()))
}

// ListDead implements driver.Driver.
func (d *Driver) ListDead(ctx context.Context, streamID int64, group string, afterID int64, limit int) ([]driver.DeadLetter, error) {
	var out []driver.DeadLetter
	err := d.readTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+rowColumns+`, e.attempt, COALESCE(e.last_error, ''), COALESCE(e.first_failed_at, e.updated_at), e.updated_at
			FROM delivery_exception e JOIN `+logTable(streamID)+` m ON m.id = e.msg_id
			WHERE e.stream_id = ? AND e.group_name = ? AND e.state = 'dead' AND e.msg_id > ? ORDER BY e.msg_id LIMIT ?`,
			streamID, group, afterID, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var dl driver.DeadLetter
			var first, died int64
			if dl.Row, err = scanRow(rows, &dl.Attempt, &dl.Error, &first, &died); err != nil {
				return err
			}
			dl.FirstFailed, dl.DiedAt = fromMicros(first), fromMicros(died)
			out = append(out, dl)
		}
		return rows.Err()
	})
	return out, err
}

// Replay implements driver.Driver.
func (d *Driver) Replay(ctx context.Context, streamID int64, group string, ids []int64, now time.Time) (int64, error) {
	return d.onDead(ctx, streamID, group, ids, `UPDATE delivery_exception SET state = 'delayed', attempt = 0, due_at = ?, updated_at = ?`, micros(now), micros(now))
}

// Discard implements driver.Driver.
func (d *Driver) Discard(ctx context.Context, streamID int64, group string, ids []int64) (int64, error) {
	return d.onDead(ctx, streamID, group, ids, `DELETE FROM delivery_exception`)
}

func (d *Driver) onDead(ctx context.Context, streamID int64, group string, ids []int64, stmt string, args ...any) (int64, error) {
	var n int64
	err := d.inTx(ctx, nil, func(tx *sql.Tx) error {
		where := ` WHERE stream_id = ? AND group_name = ? AND state = 'dead'`
		all := append(args, streamID, group)
		if ids != nil {
			ids = dedupe(ids)
			where += ` AND msg_id IN (` + placeholders(len(ids)) + `)`
			all = append(all, int64sToArgs(ids)...)
		}
		res, err := tx.ExecContext(ctx, stmt+where, all...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}
