package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// scanWindow is how many rows the main claim reads per query while looking
// for claimable rows; maxScan bounds one claim's work when most rows are at
// other versions or match no binding.
const (
	scanWindow = 512
	maxScan    = 20000
)

// versionFilter returns an SQL predicate on column col for versions ("1"
// when every version is read) and its arguments.
func versionFilter(col string, versions []int) (string, []any) {
	if versions == nil {
		return "1", nil
	}
	if len(versions) == 0 {
		return "0", nil
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

// Claim implements driver.Driver. Whether anything is due or new is found
// out on a reader first, without taking the single write lock that
// producers and other claims need; the claim itself runs in one immediate
// transaction, which also makes it atomic with respect to registrations.
func (d *Driver) Claim(ctx context.Context, p driver.ClaimParams) (driver.ClaimResult, error) {
	if err := d.check(); err != nil {
		return driver.ClaimResult{}, err
	}
	var res driver.ClaimResult
	var dueExceptions, newRows bool
	// After a claim that filled its limit, more work is likely: the probe
	// would only cost a read transaction, so the claim goes straight to the
	// write transaction, which finds out the same itself.
	busy := claimKey{p.Stream.ID, p.Group}
	if _, ok := d.fullClaims.Load(busy); (ok && p.Limit > 0) || len(p.Acks) > 0 {
		// A claim carrying acks writes anyway: the write transaction
		// records them and finds out what is claimable itself.
		dueExceptions, newRows = p.Limit > 0, p.Limit > 0
	} else if err := d.readTxQ(ctx, func(tx cachedTx) error {
		g, err := loadGroup(ctx, tx, p.Stream.ID, p.Group)
		if err != nil {
			return err
		}
		if _, err := driver.PlanClaim(g, p); err != nil {
			return err
		}
		res.Group = g
		// Due exceptions, or batches whose lease ended (their members are
		// due as expired leased rows are).
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM delivery_exception WHERE stream_id = ? AND group_name = ?
			AND state IN ('leased', 'delayed') AND due_at <= ?) OR EXISTS (SELECT 1 FROM delivery_batch WHERE stream_id = ? AND group_name = ? AND lease_until <= ?)`,
			p.Stream.ID, p.Group, micros(p.Now), p.Stream.ID, p.Group, micros(p.Now)).Scan(&dueExceptions); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM group_cursor c WHERE c.stream_id = ? AND c.group_name = ?
			AND EXISTS (SELECT 1 FROM `+logTable(p.Stream.ID)+` m WHERE m.partition = c.partition AND m.id > c.position))`,
			p.Stream.ID, p.Group).Scan(&newRows)
	}); err != nil || p.Limit <= 0 || (!dueExceptions && !newRows) {
		return res, err
	}
	err := d.inTxQ(ctx, nil, func(tx cachedTx) error {
		res.Deliveries, res.Deferred, res.Lost = res.Deliveries[:0], 0, nil
		if err := resumeLeases(ctx, tx); err != nil {
			return err
		}
		if len(p.Acks) > 0 {
			// First, so that what they resolve is claimable (an ordered
			// partition they free) and commits with the claim.
			acked, err := settleIn(ctx, tx, p.Stream.ID, p.Group, p.Acks, settleAck, 0, ackStmt)
			if err != nil {
				return err
			}
			res.Lost = acked.Lost
		}
		g, err := loadGroup(ctx, tx, p.Stream.ID, p.Group)
		if err != nil {
			return err
		}
		plan, err := driver.PlanClaim(g, p)
		if err != nil {
			return err
		}
		res.Group = g
		if dueExceptions {
			if res.Deliveries, err = d.claimExceptions(ctx, tx, p, plan); err != nil {
				return err
			}
		}
		if !newRows {
			return nil
		}
		n := p.Stream.Partitions
		first := rand.IntN(n)
		for i := range n {
			if len(res.Deliveries) >= p.Limit {
				break
			}
			got, deferred, err := claimPartition(ctx, tx, p, plan, (first+i)%n, p.Limit-len(res.Deliveries))
			if err != nil {
				return err
			}
			res.Deliveries = append(res.Deliveries, got...)
			res.Deferred += deferred
		}
		return nil
	})
	if err == nil && len(res.Deliveries) >= p.Limit {
		d.fullClaims.Store(busy, struct{}{})
	} else {
		d.fullClaims.Delete(busy)
	}
	return res, err
}

// claimKey names a group's claims for Driver.fullClaims.
type claimKey struct {
	stream int64
	group  string
}

// claimPartition runs the main claim on one partition: the rows it leases
// become one batch lease.
func claimPartition(ctx context.Context, tx querier, p driver.ClaimParams, plan driver.ClaimPlan, part, limit int) ([]driver.Delivery, int, error) {
	if p.Ordered {
		var pending bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM delivery_exception WHERE stream_id = ? AND group_name = ? AND partition = ? AND state IN ('leased', 'delayed'))
			OR EXISTS (SELECT 1 FROM delivery_batch WHERE stream_id = ? AND group_name = ? AND partition = ?)`,
			p.Stream.ID, p.Group, part, p.Stream.ID, p.Group, part).Scan(&pending); err != nil {
			return nil, 0, err
		}
		if pending {
			return nil, 0, nil
		}
	}
	var cursor int64
	err := tx.QueryRowContext(ctx, `SELECT position FROM group_cursor WHERE stream_id = ? AND group_name = ? AND partition = ?`,
		p.Stream.ID, p.Group, part).Scan(&cursor)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, 0, fmt.Errorf("group %q partition %d: %w", p.Group, part, driver.ErrGroupNotFound)
	}
	if err != nil {
		return nil, 0, err
	}
	vf, vargs := versionFilter("m.schema_version", plan.Versions)
	// Payloads are read only for rows at the group's versions: other rows
	// are passed over without their payload leaving the database.
	query := `SELECT m.id, m.partition, m.schema_version, m.msg_key, m.routing_key, m.compaction_rank,
		CASE WHEN ` + vf + ` THEN m.payload ELSE x'' END, m.headers, m.produced_at, ` + vf + `, ` + headExpr(p.Stream) + `
		FROM ` + logTable(p.Stream.ID) + ` m WHERE m.partition = ? AND m.id > ? ORDER BY m.id LIMIT ?`
	var taken []driver.Delivery
	var deferred []driver.Row
	start, scanned := cursor, 0
scan:
	for len(taken) < limit && scanned < maxScan {
		args := append(append(append([]any{}, vargs...), vargs...), part, cursor, scanWindow)
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return nil, 0, err
		}
		n := 0
		for rows.Next() {
			var versionOK, head bool
			r, err := scanRow(rows, &versionOK, &head)
			if err != nil {
				rows.Close()
				return nil, 0, err
			}
			n++
			cursor = r.ID
			if !versionOK || !head || !plan.Matches(r.RoutingKey) {
				continue
			}
			if !plan.Decodes(r.SchemaVersion) {
				// The group reads this version, this member cannot decode it:
				// leave it due for a member that can. An ordered group stops
				// here, so that the partition's order holds.
				deferred = append(deferred, r)
				if p.Ordered {
					rows.Close()
					break scan
				}
				continue
			}
			taken = append(taken, driver.Delivery{Row: r, Attempt: 1, LeaseUntil: p.LeaseUntil})
			if len(taken) == limit {
				break
			}
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, 0, err
		}
		scanned += n
		if n < scanWindow && len(taken) < limit {
			break
		}
	}
	if cursor == start {
		return nil, 0, nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE group_cursor SET position = ? WHERE stream_id = ? AND group_name = ? AND partition = ?`,
		cursor, p.Stream.ID, p.Group, part); err != nil {
		return nil, 0, err
	}
	if len(taken) > 0 {
		// A row the group already has an exception for (a cursor moved back
		// over it) keeps that exception and is passed over.
		held := map[int64]bool{}
		if err := eachRow(ctx, tx, `SELECT msg_id FROM delivery_exception WHERE stream_id = ? AND group_name = ? AND msg_id BETWEEN ? AND ?`,
			[]any{p.Stream.ID, p.Group, taken[0].ID, taken[len(taken)-1].ID}, func(r *sql.Rows) error {
				var id int64
				err := r.Scan(&id)
				held[id] = true
				return err
			}); err != nil {
			return nil, 0, err
		}
		taken = slices.DeleteFunc(taken, func(d driver.Delivery) bool { return held[d.ID] })
		if len(taken) > 0 {
			if err := insertBatch(ctx, tx, p, part, taken); err != nil {
				return nil, 0, err
			}
		}
	}
	// Deferred rows become delayed exception rows; a row the group already
	// has an exception for keeps it: the insert passes over it.
	inserted := map[int64]bool{}
	const chunk = 100
	for s := 0; s < len(deferred); s += chunk {
		part := deferred[s:min(s+chunk, len(deferred))]
		var sb strings.Builder
		sb.WriteString(`INSERT INTO delivery_exception (stream_id, group_name, msg_id, partition, schema_version, state, attempt, due_at, lease_token, holder, updated_at) VALUES `)
		args := make([]any, 0, len(part)*11)
		for i, r := range part {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
			args = append(args, p.Stream.ID, p.Group, r.ID, r.Partition, r.SchemaVersion, "delayed", 0, micros(p.Now), nil, p.Holder, micros(p.Now))
		}
		sb.WriteString(` ON CONFLICT (stream_id, group_name, msg_id) DO NOTHING RETURNING msg_id`)
		if err := eachRow(ctx, tx, sb.String(), args, func(r *sql.Rows) error {
			var id int64
			err := r.Scan(&id)
			inserted[id] = true
			return err
		}); err != nil {
			return nil, 0, err
		}
	}
	return taken, len(inserted), nil
}

// claimExceptions leases due exceptions at the versions the member decodes.
func (d *Driver) claimExceptions(ctx context.Context, tx querier, p driver.ClaimParams, plan driver.ClaimPlan) ([]driver.Delivery, error) {
	if err := explodeExpired(ctx, tx, p); err != nil {
		return nil, err
	}
	var out []driver.Delivery
	// Candidates that are resolved (superseded or removed rows) or buried
	// (out of attempts) do not count toward the limit: look again until the
	// limit is met or no candidate is left, so that an empty claim means
	// nothing is due.
	for len(out) < p.Limit {
		got, dropped, err := claimExceptionBatch(ctx, tx, p, plan, p.Limit-len(out))
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
		if dropped == 0 {
			break
		}
	}
	return out, nil
}

// claimExceptionBatch examines up to limit due exceptions: it leases those
// still claimable and resolves or buries the others, which it counts as
// dropped.
func claimExceptionBatch(ctx context.Context, tx querier, p driver.ClaimParams, plan driver.ClaimPlan, limit int) (out []driver.Delivery, dropped int, err error) {
	vf, vargs := versionFilter("e.schema_version", plan.Decodable)
	ordered := ""
	if p.Ordered {
		// Only the lowest pending exception of a partition may be handed out.
		ordered = ` AND NOT EXISTS (SELECT 1 FROM delivery_exception e2 WHERE e2.stream_id = e.stream_id AND e2.group_name = e.group_name
			AND e2.partition = e.partition AND e2.state IN ('leased', 'delayed') AND e2.msg_id < e.msg_id)
			AND NOT EXISTS (SELECT 1 FROM delivery_batch b WHERE b.stream_id = e.stream_id AND b.group_name = e.group_name
			AND b.partition = e.partition AND b.first_id < e.msg_id)`
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
	// One state at a time, in due order along delivery_exception_due
	// (stream_id, group_name, state, due_at), so that the read stops at the
	// limit and never walks retries that are due later: in id order it
	// read the group's every exception (45 ms behind 100k delayed retries).
	for _, state := range []string{string(driver.StateLeased), string(driver.StateDelayed)} {
		if len(cands) >= limit {
			break
		}
		args := append([]any{p.Stream.ID, p.Group, state, micros(p.Now)}, vargs...)
		args = append(args, limit-len(cands))
		rows, err := tx.QueryContext(ctx, `SELECT `+rowColumns+`, e.msg_id, e.state, e.attempt, `+headExpr(p.Stream)+`
			FROM delivery_exception e LEFT JOIN `+logTable(p.Stream.ID)+` m ON m.id = e.msg_id
			WHERE e.stream_id = ? AND e.group_name = ? AND e.state = ? AND e.due_at <= ? AND `+vf+ordered+`
			ORDER BY e.due_at LIMIT ?`, args...)
		if err != nil {
			return nil, 0, err
		}
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
	}
	// The deliveries go out in id order, as the main claim hands them out.
	slices.SortFunc(cands, func(a, b candidate) int { return cmp.Compare(a.msgID, b.msgID) })
	for _, c := range cands {
		switch {
		case !c.exists || !c.head:
			// The row was removed or superseded: nothing is left to deliver.
			if _, err := tx.ExecContext(ctx, `DELETE FROM delivery_exception WHERE stream_id = ? AND group_name = ? AND msg_id = ?`,
				p.Stream.ID, p.Group, c.msgID); err != nil {
				return nil, 0, err
			}
			dropped++
		case c.state == string(driver.StateLeased) && p.MaxAttempts > 0 && c.attempt >= p.MaxAttempts:
			if _, err := tx.ExecContext(ctx, `UPDATE delivery_exception SET state = 'dead', lease_token = NULL, last_error = ?,
				first_failed_at = COALESCE(first_failed_at, ?), updated_at = ?, failures = `+appendFailure+`
				WHERE stream_id = ? AND group_name = ? AND msg_id = ?`,
				p.LastError, micros(p.Now), micros(p.Now), driver.CutHistoryError(p.LastError), historyTime(p.Now), p.Stream.ID, p.Group, c.msgID); err != nil {
				return nil, 0, err
			}
			dropped++
		default:
			if _, err := tx.ExecContext(ctx, `UPDATE delivery_exception SET state = 'leased', attempt = attempt + 1, due_at = ?, lease_token = ?,
				holder = ?, updated_at = ? WHERE stream_id = ? AND group_name = ? AND msg_id = ?`,
				micros(p.LeaseUntil), p.Token, p.Holder, micros(p.Now), p.Stream.ID, p.Group, c.msgID); err != nil {
				return nil, 0, err
			}
			out = append(out, driver.Delivery{Row: c.row, Attempt: c.attempt + 1, LeaseUntil: p.LeaseUntil})
		}
	}
	return out, dropped, nil
}

func rowFromNullable(id, part, version int64, key sql.NullString, rk string, rank int64, payload []byte, headers sql.NullString, produced int64) (driver.Row, error) {
	r := driver.Row{ID: id, Partition: int(part), SchemaVersion: int(version), Key: key.String, HasKey: key.Valid,
		RoutingKey: rk, CompactionRank: rank, Payload: payload, ProducedAt: fromMicros(produced)}
	if headers.Valid && headers.String != "" {
		if err := json.Unmarshal([]byte(headers.String), &r.Headers); err != nil {
			return r, fmt.Errorf("row %d: stored headers: %w", id, err)
		}
	}
	return r, nil
}
