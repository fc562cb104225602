package mysql

import (
	"context"
	"slices"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// leasedPairs is the predicate naming deliveries still leased with their
// token, and its arguments. The msg_id list lets the engine find the rows by
// primary key; the pairs check each one's token.
func leasedPairs(leases []driver.Lease) (string, []any) {
	args := make([]any, len(leases), 3*len(leases))
	for i, l := range leases {
		args[i] = l.ID
	}
	for _, l := range leases {
		args = append(args, l.ID, l.Token)
	}
	return "state = 'leased' AND msg_id IN (" + sqldb.Placeholders(len(leases)) + ") AND (msg_id, lease_token) IN (" +
		sqldb.Repeated(len(leases), "(?, ?)", ", ") + ")", args
}

// returning reports DELETE ... RETURNING (MariaDB 10.5+).
func (d *Driver) returning() bool { return d.mariadb.Load() && !d.forceNoReturning }

// settleOne settles a single delivery with one statement (stmt, setting
// columns with args), whose matched-row count (clientFoundRows) says
// exactly whether it changed.
func (d *Driver) settleOne(ctx context.Context, op sqldb.Settle, l driver.Lease, stmt string, args ...any) (driver.SettleResult, error) {
	res, err := d.exec(ctx, stmt+` WHERE stream_id = ? AND group_name = ? AND msg_id = ? AND lease_token = ? AND state = 'leased'`,
		append(slices.Clone(args), op.StreamID, op.Group, l.ID, l.Token)...)
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

// settleLocked settles ls in one transaction of the driver's own that
// first settles the batch members among them, then locks the exception
// rows still leased with their token and has op.Apply change exactly those
// (sqldb.Leases.SettleIn; a caller's transaction never locks batches:
// settleInCallerTx).
func (d *Driver) settleLocked(ctx context.Context, op sqldb.Settle, ls []driver.Lease) (driver.SettleResult, error) {
	changed := map[int64]bool{}
	err := d.inTx(ctx, nil, func(tx querier) error {
		clear(changed)
		return leaseWrites.SettleIn(ctx, tx, op, ls, changed)
	})
	if err != nil {
		return driver.SettleResult{}, err
	}
	d.forgetTokens(op.StreamID, op.Group, ls)
	return driver.SettleResult{Lost: driver.Lost(ls, changed)}, nil
}

// settleInCallerTx settles leases in the caller's transaction tx, which may
// stay open long after (the inbox pattern). Their batch members are first
// materialized in a transaction of the driver's own, committed at once;
// the caller's transaction then locks and changes only the leases'
// exception rows. It never locks a batch record, so the other members of
// the batch are extended, acked and claimed past meanwhile (issue 25).
// Materialized rows are what the batch stood for: when tx rolls back they
// stay leased with their token until their lease expires.
func (d *Driver) settleInCallerTx(ctx context.Context, tx driver.Tx, op sqldb.Settle, ls []driver.Lease) (driver.SettleResult, error) {
	materializing := op
	materializing.Mode = sqldb.SettleMaterialize
	err := d.inTx(ctx, nil, func(q querier) error {
		_, err := leaseWrites.SettleBatches(ctx, q, materializing, ls, map[int64]bool{})
		return err
	})
	if err != nil {
		return driver.SettleResult{}, err
	}
	d.forgetTokens(op.StreamID, op.Group, ls)
	changed := map[int64]bool{}
	err = d.inTx(ctx, tx, func(q querier) error {
		clear(changed)
		return leaseWrites.SettleRows(ctx, q, op, ls, changed)
	})
	if err != nil {
		return driver.SettleResult{}, err
	}
	return driver.SettleResult{Lost: driver.Lost(ls, changed)}, nil
}

// forgetTokens drops the cached batches of the leases' claims after the
// locking path changed them.
func (d *Driver) forgetTokens(streamID int64, group string, leases []driver.Lease) {
	if d.batches.known(streamID, group, leases) {
		d.batches.forget(streamID, group, sqldb.Tokens(leases)...)
	}
}

// thenBatches settles, after a statement on exception rows that reported
// res, the leases it left unchanged on the locking path: they may be
// members of a batch (one another process wrote, or this one no longer
// remembers). Nothing more runs when every lease changed, the common case.
func (d *Driver) thenBatches(ctx context.Context, op sqldb.Settle, leases []driver.Lease, res driver.SettleResult, err error) (driver.SettleResult, error) {
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
// args) to which the WHERE clause is appended, doing op.Mode to batch
// members: members of one batch this driver claimed, when the mode allows,
// one statement on the batch (fastSettle); one lease of no such batch, one
// statement on its exception row (then the locking path if that did not
// change it); else the transaction of settleLocked.
func (d *Driver) settleAll(ctx context.Context, op sqldb.Settle, leases []driver.Lease, stmt string, args ...any) (driver.SettleResult, error) {
	if len(leases) == 0 {
		return driver.SettleResult{}, d.check()
	}
	if ok, err := d.fastSettle(ctx, op, leases); ok || err != nil {
		return driver.SettleResult{}, err
	}
	op.Apply = sqldb.ExecByIDs(stmt, args...)
	if len(leases) == 1 && !d.batches.known(op.StreamID, op.Group, leases) {
		res, err := d.settleOne(ctx, op, leases[0], stmt, args...)
		return d.thenBatches(ctx, op, leases, res, err)
	}
	return d.settleLocked(ctx, op, leases)
}

// checkTx validates a caller's transaction given with nothing to settle.
func (d *Driver) checkTx(ctx context.Context, tx driver.Tx) error {
	return d.inTx(ctx, tx, func(querier) error { return nil })
}

// ackOp is the settle of an ack.
func ackOp(streamID int64, group string) sqldb.Settle {
	return sqldb.Settle{StreamID: streamID, Group: group, Mode: sqldb.SettleAck, Apply: sqldb.ExecByIDs(sqldb.AckStmt)}
}

// Ack implements driver.Driver. On MariaDB several deliveries are one
// DELETE ... RETURNING per chunk, which names the rows it deleted. In the
// caller's transaction (p.Tx) the deliveries still leased with their token
// are locked first (SELECT ... FOR UPDATE) and then deleted, whatever the
// engine and the caller's pool settings (settleInCallerTx).
func (d *Driver) Ack(ctx context.Context, p driver.AckParams) (driver.SettleResult, error) {
	op := ackOp(p.StreamID, p.Group)
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
		return d.settleAll(ctx, op, p.Leases, sqldb.AckStmt)
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
		if err := sqldb.Mark(ctx, q, sqldb.AckStmt+` WHERE stream_id = ? AND group_name = ? AND `+pred+` RETURNING msg_id`,
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
	switch {
	case len(p.Failures) == 0 && p.Tx != nil:
		return driver.SettleResult{}, d.checkTx(ctx, p.Tx)
	case len(p.Failures) == 0:
		return driver.SettleResult{}, d.check()
	}
	ls := sqldb.Leased(p)
	op := sqldb.Settle{StreamID: p.StreamID, Group: p.Group, Mode: sqldb.SettleMaterialize, Apply: leaseWrites.Fail(p)}
	if len(p.Failures) == 1 && p.Tx == nil && !d.batches.known(p.StreamID, p.Group, ls) {
		stmt, args := leaseWrites.Failed(p, p.Failures[0])
		res, err := d.settleOne(ctx, op, ls[0], stmt, args...)
		return d.thenBatches(ctx, op, ls, res, err)
	}
	if p.Tx != nil {
		return d.settleInCallerTx(ctx, p.Tx, op, ls)
	}
	return d.settleLocked(ctx, op, ls)
}

// Release implements driver.Driver.
func (d *Driver) Release(ctx context.Context, p driver.ReleaseParams) (driver.SettleResult, error) {
	if p.ClaimToken != "" {
		err := d.inTx(ctx, nil, func(tx querier) error { return leaseWrites.ReleaseClaim(ctx, tx, p) })
		d.batches.forget(p.StreamID, p.Group, p.ClaimToken)
		return driver.SettleResult{}, err
	}
	now := ts(p.Now)
	return d.settleAll(ctx, sqldb.Settle{StreamID: p.StreamID, Group: p.Group, Mode: sqldb.SettleMaterialize}, p.Leases, sqldb.ReleaseStmt, now, now)
}

// Extend implements driver.Driver. Extending every remaining member of a
// batch moves the batch's lease; extending some of them materializes those.
func (d *Driver) Extend(ctx context.Context, p driver.ExtendParams) (driver.SettleResult, error) {
	until, now := ts(p.Until), ts(p.Now)
	op := sqldb.Settle{StreamID: p.StreamID, Group: p.Group, Mode: sqldb.SettleExtend, Until: until, Now: now}
	return d.settleAll(ctx, op, p.Leases, sqldb.ExtendStmt, until, now)
}
