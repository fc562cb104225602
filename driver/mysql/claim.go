package mysql

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// The main claim reads a partition in windows of rows after the cursor:
// the first window is about the size asked for and each further one doubles,
// up to maxWindow; maxScan bounds one claim's work when most rows are at
// other versions or match no binding.
const (
	minWindow = 16
	maxWindow = 512
	maxScan   = 20000
)

// versionFilter returns an SQL predicate on column col for the request's
// versions ("1" when every version is read) and its arguments.
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

// Claim implements driver.Driver. It visits the partitions from a random
// one, locking each partition's cursor row FOR UPDATE SKIP LOCKED: a
// partition another consumer of the group is claiming from is passed over,
// never waited for.
func (d *Driver) Claim(ctx context.Context, req driver.ClaimRequest) ([]driver.Delivery, error) {
	if req.Limit <= 0 {
		return nil, d.check()
	}
	var out []driver.Delivery
	err := d.withLog(ctx, req.Stream.ID, func() error {
		return d.inTx(ctx, nil, func(tx *sql.Tx) error {
			out = out[:0]
			n := max(req.Stream.Partitions, 1)
			first := rand.IntN(n)
			found := false
			for i := range n {
				if len(out) >= req.Limit {
					break
				}
				p := (first + i) % n
				got, ok, err := claimPartition(ctx, tx, req, p, req.Limit-len(out))
				if err != nil {
					return err
				}
				found = found || ok
				out = append(out, got...)
			}
			if found {
				return nil
			}
			// Every cursor row was locked by other claimers, or there is none.
			var cursors int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM group_cursor WHERE stream_id = ? AND group_name = ?`,
				req.Stream.ID, req.Group).Scan(&cursors); err != nil {
				return err
			}
			if cursors == 0 {
				return fmt.Errorf("group %q: %w", req.Group, driver.ErrGroupNotFound)
			}
			return nil
		})
	})
	return out, err
}

// claimPartition claims up to limit rows of partition p. found is false
// when the partition's cursor row is missing or locked by another claimer.
func claimPartition(ctx context.Context, tx *sql.Tx, req driver.ClaimRequest, p, limit int) (taken []driver.Delivery, found bool, err error) {
	var cursor int64
	err = tx.QueryRowContext(ctx, "SELECT position FROM group_cursor WHERE stream_id = ? AND group_name = ? AND `partition` = ? FOR UPDATE SKIP LOCKED",
		req.Stream.ID, req.Group, p).Scan(&cursor)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if req.Ordered {
		// A pending (leased or delayed) exception holds the partition. New
		// exceptions of a partition are only made under its cursor lock,
		// which this transaction holds.
		var pending int
		err := tx.QueryRowContext(ctx, "SELECT 1 FROM delivery_exception WHERE stream_id = ? AND group_name = ? AND `partition` = ? AND state IN ('leased', 'delayed') LIMIT 1",
			req.Stream.ID, req.Group, p).Scan(&pending)
		if err == nil {
			return nil, true, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, true, err
		}
	}
	vf, vargs := versionFilter("m.schema_version", req.Versions)
	// Payloads are read only for rows at the group's versions: other rows
	// are passed over without their payload leaving the database. The read
	// is a consistent read of committed rows; appends commit a partition's
	// ids in increasing order, so it sees a gap-free prefix (C5).
	query := "SELECT m.id, m.`partition`, m.schema_version, m.msg_key, m.routing_key, m.compaction_rank, " +
		"CASE WHEN " + vf + " THEN m.payload ELSE '' END, m.headers, m.produced_at, " + vf + ", " + headExpr(req.Stream) +
		" FROM " + logTable(req.Stream.ID) + " m WHERE m.`partition` = ? AND m.id > ? ORDER BY m.id LIMIT ?"
	start, scanned := cursor, 0
	window := min(max(limit, minWindow), maxWindow)
	for len(taken) < limit && scanned < maxScan {
		args := append(append(append(make([]any, 0, 2*len(vargs)+3), vargs...), vargs...), p, cursor, window)
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return nil, true, err
		}
		n := 0
		for rows.Next() {
			var versionOK, head bool
			r, err := scanRow(rows, &versionOK, &head)
			if err != nil {
				rows.Close()
				return nil, true, err
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
			return nil, true, err
		}
		scanned += n
		if n < window && len(taken) < limit {
			break
		}
		window = min(2*window, maxWindow)
	}
	if cursor == start {
		return nil, true, nil
	}
	if _, err := tx.ExecContext(ctx, "UPDATE group_cursor SET position = ? WHERE stream_id = ? AND group_name = ? AND `partition` = ?",
		cursor, req.Stream.ID, req.Group, p); err != nil {
		return nil, true, err
	}
	if len(taken) == 0 {
		return nil, true, nil
	}
	var sb strings.Builder
	sb.WriteString("INSERT INTO delivery_exception (stream_id, group_name, msg_id, `partition`, schema_version, state, attempt, due_at, lease_token, updated_at) VALUES ")
	args := make([]any, 0, len(taken)*8)
	until, now := ts(req.LeaseUntil), ts(req.Now)
	for i, t := range taken {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString("(?, ?, ?, ?, ?, 'leased', 1, ?, ?, ?)")
		args = append(args, req.Stream.ID, req.Group, t.ID, t.Partition, t.SchemaVersion, until, req.Token, now)
	}
	if _, err := tx.ExecContext(ctx, sb.String(), args...); err != nil {
		return nil, true, err
	}
	return taken, true, nil
}

// ClaimExceptions implements driver.Driver. Due exception rows are locked
// FOR UPDATE SKIP LOCKED, so concurrent claimers take different ones.
func (d *Driver) ClaimExceptions(ctx context.Context, req driver.ClaimRequest) ([]driver.Delivery, error) {
	if err := d.check(); err != nil || req.Limit <= 0 {
		return nil, err
	}
	// Most claims find nothing due: find that out without a transaction.
	vf, vargs := versionFilter("schema_version", req.Versions)
	var due int
	err := d.db.QueryRowContext(ctx, `SELECT 1 FROM delivery_exception WHERE stream_id = ? AND group_name = ?
		AND state IN ('leased', 'delayed') AND due_at <= ? AND `+vf+` LIMIT 1`,
		append([]any{req.Stream.ID, req.Group, ts(req.Now)}, vargs...)...).Scan(&due)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []driver.Delivery
	err = d.withLog(ctx, req.Stream.ID, func() error {
		return d.inTx(ctx, nil, func(tx *sql.Tx) error {
			out = out[:0]
			// Candidates that are resolved (superseded or removed rows) or
			// buried (out of attempts) do not count toward the limit: look
			// again until the limit is met or no candidate is left, so that
			// an empty claim means nothing is due.
			for len(out) < req.Limit {
				got, dropped, err := claimExceptionBatch(ctx, tx, req, req.Limit-len(out))
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
	})
	slices.SortFunc(out, func(a, b driver.Delivery) int { return cmp.Compare(a.ID, b.ID) })
	return out, err
}

type candidate struct {
	msgID     int64
	partition int
	state     string
	attempt   int
}

// lockDue locks up to limit due exceptions with SKIP LOCKED. For an ordered
// group only the lowest pending exception of each partition qualifies.
func lockDue(ctx context.Context, tx *sql.Tx, req driver.ClaimRequest, limit int) ([]candidate, error) {
	vf, vargs := versionFilter("schema_version", req.Versions)
	now := ts(req.Now)
	var cands []candidate
	scan := func(r *sql.Rows) error {
		var c candidate
		err := r.Scan(&c.msgID, &c.partition, &c.state, &c.attempt)
		cands = append(cands, c)
		return err
	}
	if !req.Ordered {
		// One state at a time, in due order along the index, so that the
		// scan stops at the limit and locks no more rows than it returns.
		for _, state := range []string{"leased", "delayed"} {
			if len(cands) >= limit {
				break
			}
			if err := eachRow(ctx, tx, "SELECT msg_id, `partition`, state, attempt FROM delivery_exception WHERE stream_id = ? AND group_name = ? AND state = ? AND due_at <= ? AND "+vf+
				" ORDER BY due_at LIMIT ? FOR UPDATE SKIP LOCKED",
				append(append([]any{req.Stream.ID, req.Group, state, now}, vargs...), limit-len(cands)), scan); err != nil {
				return nil, err
			}
		}
		return cands, nil
	}
	lowest, err := lowestPending(ctx, tx, req, nil)
	if err != nil || len(lowest) == 0 {
		return nil, err
	}
	ids := make([]int64, 0, len(lowest))
	for _, id := range lowest {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if err := eachRow(ctx, tx, "SELECT msg_id, `partition`, state, attempt FROM delivery_exception WHERE stream_id = ? AND group_name = ? AND msg_id IN ("+placeholders(len(ids))+
		") AND state IN ('leased', 'delayed') AND due_at <= ? AND "+vf+" ORDER BY msg_id LIMIT ? FOR UPDATE SKIP LOCKED",
		append(append(append([]any{req.Stream.ID, req.Group}, int64sToArgs(ids)...), now), append(vargs, limit)...), scan); err != nil {
		return nil, err
	}
	if len(cands) == 0 {
		return nil, nil
	}
	// Re-check under the locks: a replay may have made a lower row pending.
	parts := make([]int, 0, len(cands))
	for _, c := range cands {
		parts = append(parts, c.partition)
	}
	lowest, err = lowestPending(ctx, tx, req, parts)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(cands, func(c candidate) bool { return lowest[c.partition] != c.msgID }), nil
}

// lowestPending returns the lowest pending (leased or delayed) exception of
// each partition of the group, at any version, or of the given partitions.
func lowestPending(ctx context.Context, tx *sql.Tx, req driver.ClaimRequest, parts []int) (map[int]int64, error) {
	q := "SELECT `partition`, MIN(msg_id) FROM delivery_exception WHERE stream_id = ? AND group_name = ? AND state IN ('leased', 'delayed')"
	args := []any{req.Stream.ID, req.Group}
	if parts != nil {
		q += " AND `partition` IN (" + placeholders(len(parts)) + ")"
		for _, p := range parts {
			args = append(args, p)
		}
	}
	out := map[int]int64{}
	err := eachRow(ctx, tx, q+" GROUP BY `partition`", args, func(r *sql.Rows) error {
		var p int
		var id int64
		err := r.Scan(&p, &id)
		out[p] = id
		return err
	})
	return out, err
}

// claimExceptionBatch examines up to limit due exceptions: it leases those
// still claimable and resolves or buries the others, which it counts as
// dropped.
func claimExceptionBatch(ctx context.Context, tx *sql.Tx, req driver.ClaimRequest, limit int) (out []driver.Delivery, dropped int, err error) {
	cands, err := lockDue(ctx, tx, req, limit)
	if err != nil || len(cands) == 0 {
		return nil, 0, err
	}
	ids := make([]int64, len(cands))
	for i, c := range cands {
		ids[i] = c.msgID
	}
	// The log rows are read apart from the locking read: MariaDB has no
	// FOR UPDATE OF, and log rows must not be locked.
	found := map[int64]driver.Row{}
	heads := map[int64]bool{}
	if err := eachRow(ctx, tx, `SELECT `+rowColumns+`, `+headExpr(req.Stream)+` FROM `+logTable(req.Stream.ID)+` m WHERE m.id IN (`+placeholders(len(ids))+`)`,
		int64sToArgs(ids), func(r *sql.Rows) error {
			var head bool
			row, err := scanRow(r, &head)
			found[row.ID] = row
			heads[row.ID] = head
			return err
		}); err != nil {
		return nil, 0, err
	}
	var resolve, bury, lease []int64
	for _, c := range cands {
		row, exists := found[c.msgID]
		switch {
		case !exists || !heads[c.msgID]:
			// The row was removed or superseded: nothing is left to deliver.
			resolve = append(resolve, c.msgID)
		case c.state == string(driver.StateLeased) && req.MaxAttempts > 0 && c.attempt >= req.MaxAttempts:
			bury = append(bury, c.msgID)
		default:
			lease = append(lease, c.msgID)
			out = append(out, driver.Delivery{Row: row, Attempt: c.attempt + 1, LeaseUntil: req.LeaseUntil})
		}
	}
	where := ` WHERE stream_id = ? AND group_name = ? AND msg_id IN (`
	if len(resolve) > 0 {
		if _, err := tx.ExecContext(ctx, `DELETE FROM delivery_exception`+where+placeholders(len(resolve))+`)`,
			append([]any{req.Stream.ID, req.Group}, int64sToArgs(resolve)...)...); err != nil {
			return nil, 0, err
		}
	}
	now := ts(req.Now)
	if len(bury) > 0 {
		if _, err := tx.ExecContext(ctx, `UPDATE delivery_exception SET state = 'dead', lease_token = NULL, last_error = ?,
			first_failed_at = COALESCE(first_failed_at, ?), updated_at = ?`+where+placeholders(len(bury))+`)`,
			append([]any{req.LastError, now, now, req.Stream.ID, req.Group}, int64sToArgs(bury)...)...); err != nil {
			return nil, 0, err
		}
	}
	if len(lease) > 0 {
		if _, err := tx.ExecContext(ctx, `UPDATE delivery_exception SET state = 'leased', attempt = attempt + 1, due_at = ?, lease_token = ?,
			updated_at = ?`+where+placeholders(len(lease))+`)`,
			append([]any{ts(req.LeaseUntil), req.Token, now, req.Stream.ID, req.Group}, int64sToArgs(lease)...)...); err != nil {
			return nil, 0, err
		}
	}
	return out, len(resolve) + len(bury), nil
}

// leased runs an update or delete over leased deliveries named by ref and
// fails with ErrLeaseLost, changing nothing, unless every one matched. One
// delivery needs no transaction: a single statement is all or nothing.
func (d *Driver) leased(ctx context.Context, ref driver.LeaseRef, stmt string, args ...any) error {
	ids := dedupe(ref.IDs)
	if len(ids) == 0 {
		return d.check()
	}
	all := append(append(args, ref.StreamID, ref.Group, ref.Token), int64sToArgs(ids)...)
	query := stmt + ` WHERE stream_id = ? AND group_name = ? AND lease_token = ? AND state = 'leased' AND msg_id IN (` + placeholders(len(ids)) + `)`
	lost := func(n int64) error {
		return fmt.Errorf("%d of %d deliveries are no longer leased to this consumer (group %q): %w", int64(len(ids))-n, len(ids), ref.Group, driver.ErrLeaseLost)
	}
	if len(ids) == 1 {
		res, err := d.exec(ctx, query, all...)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return lost(n)
		}
		return nil
	}
	return d.inTx(ctx, nil, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, query, all...)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != int64(len(ids)) {
			return lost(n)
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
	now := ts(f.Now)
	return d.leased(ctx, ref, `UPDATE delivery_exception SET state = ?, due_at = ?, lease_token = NULL, last_error = ?,
		first_failed_at = COALESCE(first_failed_at, ?), updated_at = ?`, string(state), ts(due), f.Error, now, now)
}

// Release implements driver.Driver.
func (d *Driver) Release(ctx context.Context, ref driver.LeaseRef) error {
	now := ts(time.Now())
	return d.leased(ctx, ref, `UPDATE delivery_exception SET state = 'delayed', due_at = ?, attempt = attempt - 1, lease_token = NULL, updated_at = ?`, now, now)
}

// Extend implements driver.Driver.
func (d *Driver) Extend(ctx context.Context, ref driver.LeaseRef, until time.Time) error {
	return d.leased(ctx, ref, `UPDATE delivery_exception SET due_at = ?, updated_at = ?`, ts(until), ts(time.Now()))
}

// ListDead implements driver.Driver.
func (d *Driver) ListDead(ctx context.Context, streamID int64, group string, afterID int64, limit int) ([]driver.DeadLetter, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	var out []driver.DeadLetter
	err := d.withLog(ctx, streamID, func() error {
		out = out[:0]
		return eachRow(ctx, d.db, `SELECT `+rowColumns+`, e.attempt, COALESCE(e.last_error, ''), COALESCE(e.first_failed_at, e.updated_at), e.updated_at
			FROM delivery_exception e JOIN `+logTable(streamID)+` m ON m.id = e.msg_id
			WHERE e.stream_id = ? AND e.group_name = ? AND e.state = 'dead' AND e.msg_id > ? ORDER BY e.msg_id LIMIT ?`,
			[]any{streamID, group, afterID, limit}, func(r *sql.Rows) error {
				var dl driver.DeadLetter
				var first, died time.Time
				var err error
				if dl.Row, err = scanRow(r, &dl.Attempt, &dl.Error, &first, &died); err != nil {
					return err
				}
				dl.FirstFailed, dl.DiedAt = utc(first), utc(died)
				out = append(out, dl)
				return nil
			})
	})
	return out, err
}

// Replay implements driver.Driver.
func (d *Driver) Replay(ctx context.Context, streamID int64, group string, ids []int64, now time.Time) (int64, error) {
	return d.onDead(ctx, streamID, group, ids, `UPDATE delivery_exception SET state = 'delayed', attempt = 0, due_at = ?, updated_at = ?`, ts(now), ts(now))
}

// Discard implements driver.Driver.
func (d *Driver) Discard(ctx context.Context, streamID int64, group string, ids []int64) (int64, error) {
	return d.onDead(ctx, streamID, group, ids, `DELETE FROM delivery_exception`)
}

// onDead runs one statement over dead deliveries; a single statement is
// atomic, so it needs no transaction.
func (d *Driver) onDead(ctx context.Context, streamID int64, group string, ids []int64, stmt string, args ...any) (int64, error) {
	where := ` WHERE stream_id = ? AND group_name = ? AND state = 'dead'`
	all := append(args, streamID, group)
	if ids != nil {
		ids = dedupe(ids)
		if len(ids) == 0 {
			return 0, d.check()
		}
		where += ` AND msg_id IN (` + placeholders(len(ids)) + `)`
		all = append(all, int64sToArgs(ids)...)
	}
	res, err := d.exec(ctx, stmt+where, all...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
