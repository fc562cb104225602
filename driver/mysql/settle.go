package mysql

import (
	"context"
	"database/sql"
	"slices"
	"strings"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// leasedPairs is the predicate naming deliveries still leased with their
// token, and its arguments. The msg_id list lets the engine find the rows by
// primary key; the pairs check each one's token.
func leasedPairs(leases []driver.Lease) (string, []any) {
	var sb strings.Builder
	args := make([]any, 0, 3*len(leases))
	sb.WriteString("state = 'leased' AND msg_id IN (")
	for i, l := range leases {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString("?")
		args = append(args, l.ID)
	}
	sb.WriteString(") AND (msg_id, lease_token) IN (")
	for i, l := range leases {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString("(?, ?)")
		args = append(args, l.ID, l.Token)
	}
	sb.WriteString(")")
	return sb.String(), args
}

// returning reports DELETE ... RETURNING (MariaDB 10.5+).
func (d *Driver) returning() bool { return d.mariadb.Load() && !d.forceNoReturning }

// settleOp is one settle of a group's leases. mode says what it does to
// those that are batch members (until and now are an extension's new
// lease_until and its time); apply changes the exception rows of the
// others, and of the members it materializes, named by id, in tx.
type settleOp struct {
	streamID   int64
	group      string
	mode       settleMode
	until, now string
	apply      func(tx querier, ids []int64) error
}

// execByIDs is an apply that runs stmt, a statement setting columns (with
// args), on the exception rows named.
func execByIDs(ctx context.Context, streamID int64, group, stmt string, args ...any) func(querier, []int64) error {
	return func(tx querier, ids []int64) error {
		where, wargs := sqldb.ByIDs(streamID, group, ids)
		_, err := tx.ExecContext(ctx, stmt+where, append(slices.Clone(args), wargs...)...)
		return err
	}
}

// settleOne settles a single delivery with one statement (stmt, setting
// columns with args), whose matched-row count (clientFoundRows) says
// exactly whether it changed.
func (d *Driver) settleOne(ctx context.Context, op settleOp, l driver.Lease, stmt string, args ...any) (driver.SettleResult, error) {
	res, err := d.exec(ctx, stmt+` WHERE stream_id = ? AND group_name = ? AND msg_id = ? AND lease_token = ? AND state = 'leased'`,
		append(slices.Clone(args), op.streamID, op.group, l.ID, l.Token)...)
	if err != nil {
		return driver.SettleResult{}, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return driver.SettleResult{}, d.wrap(ctx, err, opRead)
	}
	if n != 1 {
		return driver.SettleResult{Lost: []int64{l.ID}}, nil
	}
	return driver.SettleResult{}, nil
}

// settleLocked settles leases in one transaction of the driver's own that
// first settles the batch members among them (settleBatches), then locks
// the exception rows still leased with their token and has op.apply change
// exactly those (a caller's transaction never locks batches:
// settleInCallerTx).
func (d *Driver) settleLocked(ctx context.Context, op settleOp, leases []driver.Lease) (driver.SettleResult, error) {
	changed := map[int64]bool{}
	err := d.inTx(ctx, nil, func(tx querier) error {
		clear(changed)
		return settleLockedIn(ctx, tx, op, leases, changed)
	})
	if err != nil {
		return driver.SettleResult{}, err
	}
	d.forgetTokens(op.streamID, op.group, leases)
	return driver.SettleResult{Lost: driver.Lost(leases, changed)}, nil
}

// settleLockedIn is settleLocked's work in the transaction tx: it marks in
// changed the leases it settled.
func settleLockedIn(ctx context.Context, tx querier, op settleOp, leases []driver.Lease, changed map[int64]bool) error {
	rest, err := settleBatches(ctx, tx, op, leases, changed)
	if err != nil {
		return err
	}
	return settleRowsIn(ctx, tx, op, rest, changed)
}

// settleRowsIn locks the exception rows of leases by primary key, and has
// op.apply change those still leased with their token; it marks them in
// changed. The locking read names whole keys only, and the token and state
// are checked here: a predicate on them beside the id list (a row
// constructor IN) made MariaDB walk the group's key prefix and lock every
// exception row of the group, so that a caller's transaction holding such
// a lock stalled every member's heartbeat (issue 25). The primary key is
// forced: on a small table the optimizer may otherwise walk the prefix (or
// the due index) for the id list too, and wait on every row locked there.
func settleRowsIn(ctx context.Context, tx querier, op settleOp, leases []driver.Lease, changed map[int64]bool) error {
	tokens := make(map[int64][]string, len(leases))
	for _, l := range leases {
		tokens[l.ID] = append(tokens[l.ID], l.Token)
	}
	for s := 0; s < len(leases); s += idChunk {
		chunk := leases[s:min(s+idChunk, len(leases))]
		keys := make([]int64, len(chunk))
		for i, l := range chunk {
			keys[i] = l.ID
		}
		where, wargs := sqldb.ByIDs(op.streamID, op.group, keys)
		var ids []int64
		if err := sqldb.EachRow(ctx, tx, `SELECT msg_id, COALESCE(lease_token, ''), state FROM delivery_exception FORCE INDEX (PRIMARY)`+where+` FOR UPDATE`,
			wargs, func(r *sql.Rows) error {
				var id int64
				var token, state string
				if err := r.Scan(&id, &token, &state); err != nil {
					return err
				}
				if state == string(driver.StateLeased) && slices.Contains(tokens[id], token) && !slices.Contains(ids, id) {
					ids = append(ids, id)
				}
				return nil
			}); err != nil {
			return err
		}
		if len(ids) == 0 {
			continue
		}
		if err := op.apply(tx, ids); err != nil {
			return err
		}
		for _, id := range ids {
			changed[id] = true
		}
	}
	return nil
}

// settleInCallerTx settles leases in the caller's transaction tx, which may
// stay open long after (the inbox pattern). Their batch members are first
// materialized in a transaction of the driver's own, committed at once;
// the caller's transaction then locks and changes only the leases'
// exception rows. It never locks a batch record, so the other members of
// the batch are extended, acked and claimed past meanwhile (issue 25).
// Materialized rows are what the batch stood for: when tx rolls back they
// stay leased with their token until their lease expires.
func (d *Driver) settleInCallerTx(ctx context.Context, tx driver.Tx, op settleOp, leases []driver.Lease) (driver.SettleResult, error) {
	materializing := op
	materializing.mode = settleMaterialize
	err := d.inTx(ctx, nil, func(q querier) error {
		_, err := settleBatches(ctx, q, materializing, leases, map[int64]bool{})
		return err
	})
	if err != nil {
		return driver.SettleResult{}, err
	}
	d.forgetTokens(op.streamID, op.group, leases)
	changed := map[int64]bool{}
	err = d.inTx(ctx, tx, func(q querier) error {
		clear(changed)
		return settleRowsIn(ctx, q, op, leases, changed)
	})
	if err != nil {
		return driver.SettleResult{}, err
	}
	return driver.SettleResult{Lost: driver.Lost(leases, changed)}, nil
}

// forgetTokens drops the cached batches of the leases' claims after the
// locking path changed them.
func (d *Driver) forgetTokens(streamID int64, group string, leases []driver.Lease) {
	if d.batches.known(streamID, group, leases) {
		d.batches.forget(streamID, group, tokensOf(leases)...)
	}
}

// tokensOf lists the distinct tokens of leases.
func tokensOf(leases []driver.Lease) []string {
	var out []string
	for _, l := range leases {
		if !slices.Contains(out, l.Token) {
			out = append(out, l.Token)
		}
	}
	return out
}

// thenBatches settles, after a statement on exception rows that reported
// res, the leases it left unchanged on the locking path: they may be
// members of a batch (one another process wrote, or this one no longer
// remembers). Nothing more runs when every lease changed, the common case.
func (d *Driver) thenBatches(ctx context.Context, op settleOp, leases []driver.Lease, res driver.SettleResult, err error) (driver.SettleResult, error) {
	if err != nil || len(res.Lost) == 0 {
		return res, err
	}
	lost := make(map[int64]bool, len(res.Lost))
	for _, id := range res.Lost {
		lost[id] = true
	}
	again := make([]driver.Lease, 0, len(res.Lost))
	for _, l := range leases {
		if lost[l.ID] {
			again = append(again, l)
		}
	}
	return d.settleLocked(ctx, op, again)
}

// settleAll changes leases with stmt, a statement setting columns (with
// args) to which the WHERE clause is appended, doing op.mode to batch
// members: members of one batch this driver claimed, when the mode allows,
// one statement on the batch (fastSettle); one lease of no such batch, one
// statement on its exception row (then the locking path if that did not
// change it); else the transaction of settleLocked.
func (d *Driver) settleAll(ctx context.Context, op settleOp, leases []driver.Lease, stmt string, args ...any) (driver.SettleResult, error) {
	if len(leases) == 0 {
		return driver.SettleResult{}, d.check()
	}
	if ok, err := d.fastSettle(ctx, op, leases); ok || err != nil {
		return driver.SettleResult{}, err
	}
	op.apply = execByIDs(ctx, op.streamID, op.group, stmt, args...)
	if len(leases) == 1 && !d.batches.known(op.streamID, op.group, leases) {
		res, err := d.settleOne(ctx, op, leases[0], stmt, args...)
		return d.thenBatches(ctx, op, leases, res, err)
	}
	return d.settleLocked(ctx, op, leases)
}

// checkTx validates a caller's transaction given with nothing to settle.
func (d *Driver) checkTx(ctx context.Context, tx driver.Tx) error {
	return d.inTx(ctx, tx, func(querier) error { return nil })
}

// ackStmt is the per-delivery statement of an ack, to which the WHERE
// clause is appended.
const ackStmt = `DELETE FROM delivery_exception`

// ackOp is the settle of an ack.
func ackOp(ctx context.Context, streamID int64, group string) settleOp {
	return settleOp{streamID: streamID, group: group, mode: settleAck, apply: execByIDs(ctx, streamID, group, ackStmt)}
}

// Ack implements driver.Driver. On MariaDB several deliveries are one
// DELETE ... RETURNING per chunk, which names the rows it deleted. In the
// caller's transaction (p.Tx) the deliveries still leased with their token
// are locked first (SELECT ... FOR UPDATE) and then deleted, whatever the
// engine and the caller's pool settings (settleInCallerTx).
func (d *Driver) Ack(ctx context.Context, p driver.AckParams) (driver.SettleResult, error) {
	op := ackOp(ctx, p.StreamID, p.Group)
	if p.Tx != nil {
		if len(p.Leases) == 0 {
			return driver.SettleResult{}, d.checkTx(ctx, p.Tx)
		}
		return d.settleInCallerTx(ctx, p.Tx, op, p.Leases)
	}
	if rest, ok, err := d.fastAckWhole(ctx, p.StreamID, p.Group, p.Leases); ok || err != nil {
		if err != nil || len(rest) == 0 {
			return driver.SettleResult{}, err
		}
		return d.settleLocked(ctx, op, rest)
	}
	if len(p.Leases) < 2 || !d.returning() || d.batches.known(p.StreamID, p.Group, p.Leases) {
		return d.settleAll(ctx, op, p.Leases, ackStmt)
	}
	changed := map[int64]bool{}
	run := func(q querier) error {
		clear(changed)
		return ackReturning(ctx, q, p.StreamID, p.Group, p.Leases, changed)
	}
	var err error
	if len(p.Leases) <= idChunk {
		// One statement: exact and atomic on its own.
		err = d.autocommit(ctx, run)
	} else {
		// Several: one transaction, so that a failure changes none.
		err = d.inTx(ctx, nil, run)
	}
	if err != nil {
		return driver.SettleResult{}, err
	}
	return d.thenBatches(ctx, op, p.Leases, driver.SettleResult{Lost: driver.Lost(p.Leases, changed)}, nil)
}

// ackReturning deletes the exception rows of leases still leased with their
// token with DELETE ... RETURNING (MariaDB), one statement per chunk, and
// marks in changed those it deleted.
func ackReturning(ctx context.Context, q querier, streamID int64, group string, leases []driver.Lease, changed map[int64]bool) error {
	for s := 0; s < len(leases); s += idChunk {
		pred, pargs := leasedPairs(leases[s:min(s+idChunk, len(leases))])
		if err := sqldb.Mark(ctx, q, ackStmt+` WHERE stream_id = ? AND group_name = ? AND `+pred+` RETURNING msg_id`,
			append([]any{streamID, group}, pargs...), changed); err != nil {
			return err
		}
	}
	return nil
}

// appendFailure appends one entry to a delivery's failure history, in the
// statement that records the failure: the attempt and holder of the lease
// (the row's own columns, which that statement does not change) and two
// parameters, the error cut to driver.MaxHistoryError bytes and the time
// (historyTime). The holder is VARBINARY: converted, so that MySQL writes a
// JSON string rather than base64 (identities are UTF-8).
const appendFailure = `failures = JSON_ARRAY_APPEND(COALESCE(failures, '[]'), '$',
	JSON_OBJECT('attempt', attempt, 'error', ?, 'at', ?, 'holder', COALESCE(CONVERT(holder USING utf8mb4), '')))`

// Fail implements driver.Driver. Failures with the same state, due time and
// error are one statement; all run in one transaction (the caller's, with
// p.Tx). Each appends to its delivery's failure history.
func (d *Driver) Fail(ctx context.Context, p driver.FailParams) (driver.SettleResult, error) {
	const set = `UPDATE delivery_exception SET state = ?, due_at = ?, lease_token = NULL, last_error = ?,
		first_failed_at = COALESCE(first_failed_at, ?), updated_at = ?, ` + appendFailure
	now, at := ts(p.Now), driver.HistoryTime(p.Now)
	outcome := func(f driver.Failure) (string, string) {
		if f.Dead {
			return string(driver.StateDead), now
		}
		return string(driver.StateDelayed), ts(f.Due)
	}
	leases := make([]driver.Lease, len(p.Failures))
	byID := make(map[int64]driver.Failure, len(p.Failures))
	for i, f := range p.Failures {
		leases[i] = f.Lease
		byID[f.Lease.ID] = f
	}
	switch {
	case len(p.Failures) == 0 && p.Tx != nil:
		return driver.SettleResult{}, d.checkTx(ctx, p.Tx)
	case len(p.Failures) == 0:
		return driver.SettleResult{}, d.check()
	}
	op := settleOp{streamID: p.StreamID, group: p.Group, mode: settleMaterialize}
	op.apply = func(tx querier, ids []int64) error {
		type values struct{ state, due, error string }
		var order []values
		groups := map[values][]int64{}
		for _, id := range ids {
			f := byID[id]
			state, due := outcome(f)
			v := values{state, due, f.Error}
			if groups[v] == nil {
				order = append(order, v)
			}
			groups[v] = append(groups[v], id)
		}
		for _, v := range order {
			where, wargs := sqldb.ByIDs(p.StreamID, p.Group, groups[v])
			if _, err := tx.ExecContext(ctx, set+where, append([]any{v.state, v.due, v.error, now, now, driver.CutHistoryError(v.error), at}, wargs...)...); err != nil {
				return err
			}
		}
		return nil
	}
	if len(p.Failures) == 1 && p.Tx == nil && !d.batches.known(p.StreamID, p.Group, leases) {
		f := p.Failures[0]
		state, due := outcome(f)
		res, err := d.settleOne(ctx, op, leases[0], set, state, due, f.Error, now, now, driver.CutHistoryError(f.Error), at)
		return d.thenBatches(ctx, op, leases, res, err)
	}
	if p.Tx != nil {
		return d.settleInCallerTx(ctx, p.Tx, op, leases)
	}
	return d.settleLocked(ctx, op, leases)
}

const releaseSet = `UPDATE delivery_exception SET state = 'delayed', due_at = ?, attempt = attempt - 1, lease_token = NULL, updated_at = ?`

// Release implements driver.Driver.
func (d *Driver) Release(ctx context.Context, p driver.ReleaseParams) (driver.SettleResult, error) {
	now := ts(p.Now)
	if p.ClaimToken != "" {
		// The claim's batches become leased exception rows first, which the
		// statement then releases with the rest.
		err := d.inTx(ctx, nil, func(tx querier) error {
			if _, err := explodeWhole(ctx, tx, p.StreamID, "group_name = ? AND lease_token = ?", []any{p.Group, p.ClaimToken}, " FOR UPDATE"); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, releaseSet+` WHERE stream_id = ? AND group_name = ? AND lease_token = ? AND state = 'leased'`,
				now, now, p.StreamID, p.Group, p.ClaimToken)
			return err
		})
		d.batches.forget(p.StreamID, p.Group, p.ClaimToken)
		return driver.SettleResult{}, err
	}
	return d.settleAll(ctx, settleOp{streamID: p.StreamID, group: p.Group, mode: settleMaterialize}, p.Leases, releaseSet, now, now)
}

// Extend implements driver.Driver. Extending every remaining member of a
// batch moves the batch's lease; extending some of them materializes those.
func (d *Driver) Extend(ctx context.Context, p driver.ExtendParams) (driver.SettleResult, error) {
	until, now := ts(p.Until), ts(p.Now)
	op := settleOp{streamID: p.StreamID, group: p.Group, mode: settleExtend, until: until, now: now}
	return d.settleAll(ctx, op, p.Leases, `UPDATE delivery_exception SET due_at = ?, updated_at = ?`, until, now)
}
