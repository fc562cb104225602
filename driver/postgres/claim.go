package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// maxWindow is the most rows the main claim reads per query while looking
// for claimable rows; maxScan bounds one claim's work when most rows are at
// other versions or match no binding.
const (
	maxWindow = 512
	maxScan   = 20000
)

// Claim implements driver.Driver. It locks one group cursor at a time with
// FOR UPDATE SKIP LOCKED, choosing among partitions that have rows past the
// cursor, starting at a random partition, until it has Limit rows or no
// unlocked partition has work.
func (d *Driver) Claim(ctx context.Context, req driver.ClaimRequest) ([]driver.Delivery, error) {
	if req.Limit <= 0 {
		return nil, nil
	}
	var out []driver.Delivery
	err := d.claimTx(ctx, func(tx pgx.Tx) error {
		out = out[:0]
		visited := []int32{}
		first := int32(rand.IntN(req.Stream.Partitions))
		for len(out) < req.Limit && len(visited) < req.Stream.Partitions {
			p, cursor, ok, err := d.lockCursor(ctx, tx, req, visited, first)
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			visited = append(visited, p)
			if req.Ordered {
				// Exceptions of a partition are created only under its cursor
				// lock, which this transaction now holds: this read is current.
				var pending bool
				if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM delivery_exception WHERE stream_id = $1::bigint AND group_name = $2::text
					AND partition = $3::integer AND state <> 'dead')`, req.Stream.ID, req.Group, p).Scan(&pending); err != nil {
					return err
				}
				if pending {
					continue
				}
			}
			got, err := d.claimPartition(ctx, tx, req, p, cursor, req.Limit-len(out))
			if err != nil {
				return err
			}
			out = append(out, got...)
		}
		if len(visited) == 0 {
			// Tell a missing group from an idle one.
			var exists bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM group_cursor WHERE stream_id = $1::bigint AND group_name = $2::text)`,
				req.Stream.ID, req.Group).Scan(&exists); err != nil {
				return err
			}
			if !exists {
				return fmt.Errorf("group %q: %w", req.Group, driver.ErrGroupNotFound)
			}
		}
		return nil
	})
	return out, err
}

// lockCursor locks the cursor of a partition not yet visited that has rows
// past it and that no other claimer holds.
func (d *Driver) lockCursor(ctx context.Context, tx pgx.Tx, req driver.ClaimRequest, visited []int32, first int32) (p int32, cursor int64, ok bool, err error) {
	err = tx.QueryRow(ctx, `SELECT c.partition, c.position FROM group_cursor c
		WHERE c.stream_id = $1::bigint AND c.group_name = $2::text AND NOT (c.partition = ANY($3::integer[]))
			AND EXISTS (SELECT 1 FROM `+logTable(req.Stream.ID)+` m WHERE m.partition = c.partition AND m.id > c.position)
		ORDER BY (c.partition + $4::integer - $5::integer) % $4::integer
		LIMIT 1 FOR UPDATE OF c SKIP LOCKED`,
		req.Stream.ID, req.Group, visited, int32(req.Stream.Partitions), first).Scan(&p, &cursor)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, 0, false, nil
	}
	return p, cursor, err == nil, err
}

func (d *Driver) claimPartition(ctx context.Context, tx pgx.Tx, req driver.ClaimRequest, p int32, cursor int64, limit int) ([]driver.Delivery, error) {
	vf, vargs := versionFilter("m.schema_version", req.Versions, 4)
	// Payloads are read only for rows at the group's versions: other rows
	// are passed over without their payload leaving the database.
	query := `SELECT m.id, m.partition, m.schema_version, m.msg_key, m.routing_key, m.compaction_rank,
		CASE WHEN ` + vf + ` THEN m.payload END, m.headers, m.produced_at, ` + vf + `, ` + headExpr(req.Stream) + `
		FROM ` + logTable(req.Stream.ID) + ` m WHERE m.partition = $1::integer AND m.id > $2::bigint ORDER BY m.id LIMIT $3::integer`
	var taken []driver.Delivery
	start, scanned := cursor, 0
	window := min(max(limit, 16), maxWindow)
	for len(taken) < limit && scanned < maxScan {
		args := append([]any{p, cursor, int32(window)}, vargs...)
		rows, err := tx.Query(ctx, query, args...)
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
				taken = append(taken, driver.Delivery{Row: r, Attempt: 1, LeaseUntil: ts(req.LeaseUntil)})
				if len(taken) == limit {
					break
				}
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		scanned += n
		if n < window {
			break
		}
		window = min(window*2, maxWindow)
	}
	if cursor == start {
		return nil, nil
	}
	b := &pgx.Batch{}
	b.Queue(`UPDATE group_cursor SET position = $1::bigint WHERE stream_id = $2::bigint AND group_name = $3::text AND partition = $4::integer`,
		cursor, req.Stream.ID, req.Group, p)
	if len(taken) > 0 {
		ids := make([]int64, len(taken))
		versions := make([]int32, len(taken))
		for i, t := range taken {
			ids[i], versions[i] = t.ID, int32(t.SchemaVersion)
		}
		b.Queue(`INSERT INTO delivery_exception (stream_id, group_name, msg_id, partition, schema_version, state, attempt, due_at, lease_token, updated_at)
			SELECT $1::bigint, $2::text, u.id, $3::integer, u.v, 'leased', 1, $4::timestamptz, $5::text, $6::timestamptz
			FROM unnest($7::bigint[], $8::integer[]) AS u(id, v)`,
			req.Stream.ID, req.Group, p, ts(req.LeaseUntil), req.Token, ts(req.Now), ids, versions)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}
	return taken, nil
}

// ClaimExceptions implements driver.Driver. Candidate exceptions are locked
// with FOR UPDATE SKIP LOCKED, so concurrent claimers take different ones.
func (d *Driver) ClaimExceptions(ctx context.Context, req driver.ClaimRequest) ([]driver.Delivery, error) {
	if req.Limit <= 0 {
		return nil, nil
	}
	// Most claims find nothing due: one autocommit probe instead of a
	// transaction's three round trips.
	pf, pargs := versionFilter("e.schema_version", req.Versions, 4)
	var due bool
	err := d.retry(ctx, func() error {
		return d.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM delivery_exception e WHERE e.stream_id = $1::bigint AND e.group_name = $2::text
			AND e.state <> 'dead' AND e.due_at <= $3::timestamptz AND `+pf+`)`, append([]any{req.Stream.ID, req.Group, ts(req.Now)}, pargs...)...).Scan(&due)
	})
	if err != nil || !due {
		return nil, err
	}
	var out []driver.Delivery
	err = d.inTx(ctx, func(tx pgx.Tx) error {
		out = out[:0]
		vf, vargs := versionFilter("e.schema_version", req.Versions, 5)
		ordered := ""
		if req.Ordered {
			// Only the lowest pending exception of a partition may be handed out.
			ordered = ` AND NOT EXISTS (SELECT 1 FROM delivery_exception e2 WHERE e2.stream_id = e.stream_id AND e2.group_name = e.group_name
				AND e2.partition = e.partition AND e2.state <> 'dead' AND e2.msg_id < e.msg_id)`
		}
		// Superseded or removed rows are resolved and buried ones leave the
		// due set as they are found; look past them until Limit deliveries
		// are leased or nothing due is left.
		for len(out) < req.Limit {
			more, full, err := d.claimExceptionsPage(ctx, tx, req, vf, vargs, ordered, req.Limit-len(out))
			if err != nil {
				return err
			}
			out = append(out, more...)
			if !full {
				break
			}
		}
		return nil
	})
	return out, err
}

// claimExceptionsPage handles up to limit due exceptions and reports whether
// it found that many candidates.
func (d *Driver) claimExceptionsPage(ctx context.Context, tx pgx.Tx, req driver.ClaimRequest, vf string, vargs []any, ordered string, limit int) ([]driver.Delivery, bool, error) {
	args := append([]any{req.Stream.ID, req.Group, ts(req.Now), int32(limit)}, vargs...)
	rows, err := tx.Query(ctx, `SELECT `+rowColumns+`, e.msg_id, e.state, e.attempt, m.id IS NOT NULL AND `+headExpr(req.Stream)+`
		FROM delivery_exception e LEFT JOIN `+logTable(req.Stream.ID)+` m ON m.id = e.msg_id
		WHERE e.stream_id = $1::bigint AND e.group_name = $2::text AND e.state <> 'dead' AND e.due_at <= $3::timestamptz AND `+vf+ordered+`
		ORDER BY e.msg_id LIMIT $4::integer FOR UPDATE OF e SKIP LOCKED`, args...)
	if err != nil {
		return nil, false, err
	}
	var resolve, bury, lease []int64
	var leased []driver.Delivery
	for rows.Next() {
		var (
			id                  *int64
			part, version, rank *int32
			key, rk             *string
			payload, headers    []byte
			produced            *time.Time
			msgID               int64
			state               string
			attempt             int32
			claimable           bool
		)
		if err := rows.Scan(&id, &part, &version, &key, &rk, &rank, &payload, &headers, &produced, &msgID, &state, &attempt, &claimable); err != nil {
			rows.Close()
			return nil, false, err
		}
		switch {
		case !claimable:
			// The row was removed or superseded: nothing is left to deliver.
			resolve = append(resolve, msgID)
		case state == string(driver.StateLeased) && req.MaxAttempts > 0 && int(attempt) >= req.MaxAttempts:
			bury = append(bury, msgID)
		default:
			r := driver.Row{ID: *id, Partition: int(*part), SchemaVersion: int(*version), RoutingKey: *rk,
				CompactionRank: int(*rank), Payload: payload, ProducedAt: produced.UTC()}
			if key != nil {
				r.Key, r.HasKey = *key, true
			}
			if len(headers) > 0 {
				if err := json.Unmarshal(headers, &r.Headers); err != nil {
					rows.Close()
					return nil, false, fmt.Errorf("row %d: stored headers: %w", r.ID, err)
				}
			}
			lease = append(lease, msgID)
			leased = append(leased, driver.Delivery{Row: r, Attempt: int(attempt) + 1, LeaseUntil: ts(req.LeaseUntil)})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	b := &pgx.Batch{}
	where := ` WHERE stream_id = $1::bigint AND group_name = $2::text AND msg_id = ANY($3::bigint[])`
	if len(resolve) > 0 {
		b.Queue(`DELETE FROM delivery_exception`+where, req.Stream.ID, req.Group, resolve)
	}
	if len(bury) > 0 {
		b.Queue(`UPDATE delivery_exception SET state = 'dead', lease_token = NULL, last_error = $4::text,
			first_failed_at = COALESCE(first_failed_at, $5::timestamptz), updated_at = $5::timestamptz`+where,
			req.Stream.ID, req.Group, bury, req.LastError, ts(req.Now))
	}
	if len(lease) > 0 {
		b.Queue(`UPDATE delivery_exception SET state = 'leased', attempt = attempt + 1, due_at = $4::timestamptz, lease_token = $5::text,
			updated_at = $6::timestamptz`+where, req.Stream.ID, req.Group, lease, ts(req.LeaseUntil), req.Token, ts(req.Now))
	}
	if b.Len() > 0 {
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return nil, false, err
		}
	}
	return leased, len(resolve)+len(bury)+len(lease) == limit, nil
}

// leased applies set (an UPDATE's SET list, or "" to delete) to the leased
// deliveries named by ref, in one statement that changes nothing unless
// every one is still leased with ref.Token; then it fails with ErrLeaseLost.
// setArgs are parameters $5 onwards.
func (d *Driver) leased(ctx context.Context, ref driver.LeaseRef, set string, setArgs ...any) error {
	ids := dedupe(ref.IDs)
	if len(ids) == 0 {
		return nil
	}
	// The target rows are locked, so the change sees them as target did.
	where := ` WHERE d.stream_id = $1::bigint AND d.group_name = $2::text AND d.msg_id = ANY($4::bigint[])
		AND d.lease_token = $3::text AND d.state = 'leased' AND (SELECT count(*) FROM target) = cardinality($4::bigint[])`
	change := `DELETE FROM delivery_exception d` + where
	if set != "" {
		change = `UPDATE delivery_exception d SET ` + set + where
	}
	query := `WITH target AS (
			SELECT msg_id FROM delivery_exception WHERE stream_id = $1::bigint AND group_name = $2::text AND lease_token = $3::text
				AND state = 'leased' AND msg_id = ANY($4::bigint[]) FOR UPDATE),
		changed AS (` + change + ` RETURNING 1)
		SELECT (SELECT count(*) FROM target), (SELECT count(*) FROM changed)`
	args := append([]any{ref.StreamID, ref.Group, ref.Token, ids}, setArgs...)
	var held, changed int64
	err := d.retry(ctx, func() error {
		return d.pool.QueryRow(ctx, query, args...).Scan(&held, &changed)
	})
	if err != nil {
		return err
	}
	if changed != int64(len(ids)) {
		return fmt.Errorf("%d of %d deliveries are no longer leased to this consumer (group %q): %w", int64(len(ids))-held, len(ids), ref.Group, driver.ErrLeaseLost)
	}
	return nil
}

// Ack implements driver.Driver.
func (d *Driver) Ack(ctx context.Context, ref driver.LeaseRef) error {
	return d.leased(ctx, ref, "")
}

// Fail implements driver.Driver.
func (d *Driver) Fail(ctx context.Context, ref driver.LeaseRef, f driver.Failure) error {
	state, due := driver.StateDelayed, f.Due
	if f.Dead {
		state, due = driver.StateDead, f.Now
	}
	return d.leased(ctx, ref, `state = $5::text, due_at = $6::timestamptz, lease_token = NULL, last_error = $7::text,
		first_failed_at = COALESCE(d.first_failed_at, $8::timestamptz), updated_at = $8::timestamptz`,
		string(state), ts(due), f.Error, ts(f.Now))
}

// Release implements driver.Driver.
func (d *Driver) Release(ctx context.Context, ref driver.LeaseRef) error {
	now := ts(time.Now())
	return d.leased(ctx, ref, `state = 'delayed', due_at = $5::timestamptz, attempt = d.attempt - 1, lease_token = NULL, updated_at = $5::timestamptz`, now)
}

// Extend implements driver.Driver.
func (d *Driver) Extend(ctx context.Context, ref driver.LeaseRef, until time.Time) error {
	return d.leased(ctx, ref, `due_at = $5::timestamptz, updated_at = $6::timestamptz`, ts(until), ts(time.Now()))
}

// ListDead implements driver.Driver.
func (d *Driver) ListDead(ctx context.Context, streamID int64, group string, afterID int64, limit int) ([]driver.DeadLetter, error) {
	var out []driver.DeadLetter
	err := d.retry(ctx, func() error {
		out = out[:0]
		rows, err := d.pool.Query(ctx, `SELECT `+rowColumns+`, e.attempt, COALESCE(e.last_error, ''), COALESCE(e.first_failed_at, e.updated_at), e.updated_at
			FROM delivery_exception e JOIN `+logTable(streamID)+` m ON m.id = e.msg_id
			WHERE e.stream_id = $1::bigint AND e.group_name = $2::text AND e.state = 'dead' AND e.msg_id > $3::bigint ORDER BY e.msg_id LIMIT $4::integer`,
			streamID, group, afterID, int32(limit))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var dl driver.DeadLetter
			var attempt int32
			if dl.Row, err = scanRow(rows, &attempt, &dl.Error, &dl.FirstFailed, &dl.DiedAt); err != nil {
				return err
			}
			dl.Attempt = int(attempt)
			dl.FirstFailed, dl.DiedAt = dl.FirstFailed.UTC(), dl.DiedAt.UTC()
			out = append(out, dl)
		}
		return rows.Err()
	})
	return out, err
}

// Replay implements driver.Driver.
func (d *Driver) Replay(ctx context.Context, streamID int64, group string, ids []int64, now time.Time) (int64, error) {
	return d.onDead(ctx, streamID, group, ids, `UPDATE delivery_exception SET state = 'delayed', attempt = 0, due_at = $4::timestamptz, updated_at = $4::timestamptz`, ts(now))
}

// Discard implements driver.Driver.
func (d *Driver) Discard(ctx context.Context, streamID int64, group string, ids []int64) (int64, error) {
	return d.onDead(ctx, streamID, group, ids, `DELETE FROM delivery_exception`)
}

// onDead runs stmt over the group's dead deliveries, all of them when ids is
// nil. stmt's own parameters start at $4.
func (d *Driver) onDead(ctx context.Context, streamID int64, group string, ids []int64, stmt string, args ...any) (int64, error) {
	where := ` WHERE stream_id = $1::bigint AND group_name = $2::text AND state = 'dead' AND ($3::bigint[] IS NULL OR msg_id = ANY($3::bigint[]))`
	var list []int64 // nil: every dead delivery
	if ids != nil {
		list = dedupe(ids)
	}
	all := append([]any{streamID, group, list}, args...)
	var n int64
	err := d.retry(ctx, func() error {
		tag, err := d.pool.Exec(ctx, stmt+where, all...)
		n = tag.RowsAffected()
		return err
	})
	return n, err
}
