package mysql

import (
	"context"
	"slices"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// batchCache is the driver.BatchMemo of the batches this driver's claims
// wrote, and what its settles left in them, seen as sqldb.Batch records: a
// settle naming members of one such batch changes it with one statement
// that compares the stored ids with those it expects, without locking and
// reading it first (fastSettle), and an ack of all of a claim's batches
// deletes them in one statement (fastAckWhole). A batch changed meanwhile
// by anything else (another process, an expiry, a reset) fails the
// comparison, and the settle then takes the locking path, which reads what
// is stored.
type batchCache struct {
	memo driver.BatchMemo
}

func (c *batchCache) add(stream int64, group string, batches []sqldb.Batch) {
	memo := make([]driver.MemoBatch, len(batches))
	for i, b := range batches {
		memo[i] = driver.MemoBatch{Partition: int32(b.Part), IDs: b.IDs}
	}
	if len(batches) > 0 {
		c.memo.Add(stream, group, batches[0].Token, memo)
	}
}

// known reports whether any lease's token is that of a remembered claim.
func (c *batchCache) known(stream int64, group string, leases []driver.Lease) bool {
	return c.memo.Known(stream, group, leases)
}

// one returns the remembered batch holding every lease, with the ids it is
// believed to hold, and those it holds without the leases, when there is
// one.
func (c *batchCache) one(stream int64, group string, leases []driver.Lease) (b sqldb.Batch, remaining []int64, ok bool) {
	acks, rest := c.memo.Plan(stream, group, leases)
	if len(acks) != 1 || len(rest) > 0 {
		return b, nil, false
	}
	return batchOf(group, acks[0]), acks[0].Remaining, true
}

func batchOf(group string, a driver.BatchAck) sqldb.Batch {
	return sqldb.Batch{Group: group, Token: a.Token, Part: int(a.Expected.Partition), IDs: a.Expected.IDs}
}

// settled records that batch b, expected to hold b.IDs, now holds remaining.
func (c *batchCache) settled(stream int64, b sqldb.Batch, remaining []int64) {
	c.memo.Settled(stream, b.Group, driver.BatchAck{Token: b.Token, Expected: driver.MemoBatch{Partition: int32(b.Part), IDs: b.IDs},
		Remaining: remaining}, true)
}

// forget drops what the cache remembers of a claim's batches.
func (c *batchCache) forget(stream int64, group string, tokens ...string) {
	c.memo.Forget(stream, group, tokens...)
}

// whole returns the remembered batches of one claim of several partitions
// whose every member the leases name, when the leases name those and
// nothing else.
func (c *batchCache) whole(stream int64, group string, leases []driver.Lease) ([]sqldb.Batch, bool) {
	acks, rest := c.memo.Plan(stream, group, leases)
	if len(acks) < 2 || len(rest) > 0 || len(acks) != len(c.memo.Batches(stream, group, acks[0].Token)) {
		return nil, false
	}
	parts := make([]sqldb.Batch, len(acks))
	for i, a := range acks {
		if a.Token != acks[0].Token || len(a.Remaining) > 0 {
			return nil, false
		}
		parts[i] = batchOf(group, a)
	}
	return parts, true
}

// fastSettle settles leases that are all members of one batch this driver
// claimed, with one statement that commits on its own and names the batch
// and the ids the cache expects it to hold: an ack removes the named ids (deleting the batch when
// none is left), an extension naming every remaining member moves its
// lease. It reports false when that does not apply or the batch is not as
// expected; then nothing changed, and the caller takes the locking path.
func (d *Driver) fastSettle(ctx context.Context, op sqldb.Settle, leases []driver.Lease) (bool, error) {
	cs, ok := d.casSettle(op, leases)
	if !ok {
		return false, nil
	}
	var n int64
	run := func(q querier) error {
		var err error
		n, err = cs.run(ctx, q)
		return err
	}
	if err := d.autocommit(ctx, run); err != nil {
		d.batches.forget(op.StreamID, op.Group, cs.b.Token)
		return false, err
	}
	if n != 1 {
		d.batches.forget(op.StreamID, op.Group, cs.b.Token)
		return false, nil
	}
	d.batches.settled(op.StreamID, cs.b, cs.remaining)
	return true, nil
}

// casStmt is fastSettle's compare-and-set statement on the remembered
// batch b, which leaves it holding remaining.
type casStmt struct {
	b         sqldb.Batch
	remaining []int64
	stmt      string
	args      []any
}

// run executes the statement on q and returns how many batches it changed:
// 1 when the batch was as expected.
func (c casStmt) run(ctx context.Context, q querier) (int64, error) {
	return sqldb.Affected(q.ExecContext(ctx, c.stmt, c.args...))
}

// casSettle builds fastSettle's statement, when it applies.
func (d *Driver) casSettle(op sqldb.Settle, leases []driver.Lease) (casStmt, bool) {
	mode := op.Mode
	if mode == sqldb.SettleMaterialize {
		return casStmt{}, false
	}
	b, remaining, ok := d.batches.one(op.StreamID, op.Group, leases)
	if !ok || (mode == sqldb.SettleExtend && len(remaining) > 0) {
		return casStmt{}, false
	}
	if mode == sqldb.SettleExtend {
		remaining = b.IDs
	}
	pk := " WHERE stream_id = ? AND group_name = ? AND lease_token = ? AND `partition` = ? AND ids = ?"
	var stmt string
	var args []any
	switch {
	case mode == sqldb.SettleExtend:
		stmt, args = "UPDATE delivery_batch SET lease_until = ?, created_at = ?"+pk, []any{op.Until, op.Now}
	case len(remaining) == 0:
		stmt = "DELETE FROM delivery_batch" + pk
	default:
		stmt, args = "UPDATE delivery_batch SET ids = ?, first_id = ?, last_id = ?"+pk, []any{sqldb.EncodeInts(remaining), remaining[0], remaining[len(remaining)-1]}
	}
	args = append(args, op.StreamID, op.Group, b.Token, b.Part, sqldb.EncodeInts(b.IDs))
	return casStmt{b: b, remaining: remaining, stmt: stmt, args: args}, true
}

// fastAckWhole acks a claim's batches on several partitions, every member
// of each named, with one DELETE ... RETURNING (MariaDB) that names each
// batch with the ids the cache expects it to hold. It reports false when
// that does not apply; else the leases of the batches it did not find as
// expected, for the locking path.
func (d *Driver) fastAckWhole(ctx context.Context, streamID int64, group string, leases []driver.Lease) ([]driver.Lease, bool, error) {
	if !d.returning() {
		return nil, false, nil
	}
	parts, ok := d.batches.whole(streamID, group, leases)
	if !ok {
		return nil, false, nil
	}
	var rest []driver.Lease
	err := d.autocommit(ctx, func(q querier) error {
		var err error
		rest, err = ackWholeIn(ctx, q, streamID, group, leases, parts)
		return err
	})
	d.batches.forget(streamID, group, leases[0].Token)
	if err != nil {
		return nil, false, err
	}
	return rest, true, nil
}

// ackWholeIn is fastAckWhole's statement on q, for the remembered batches
// parts of the leases' claim: it returns the leases of the batches it did
// not find as expected.
func ackWholeIn(ctx context.Context, q querier, streamID int64, group string, leases []driver.Lease, parts []sqldb.Batch) ([]driver.Lease, error) {
	args := []any{streamID, group, leases[0].Token}
	for _, b := range parts {
		args = append(args, b.Part, sqldb.EncodeInts(b.IDs))
	}
	deleted := map[int]bool{}
	if err := sqldb.Mark(ctx, q, "DELETE FROM delivery_batch WHERE stream_id = ? AND group_name = ? AND lease_token = ? AND ("+
		sqldb.Repeated(len(parts), "(`partition` = ? AND ids = ?)", " OR ")+") RETURNING `partition`", args, deleted); err != nil {
		return nil, err
	}
	var rest []driver.Lease
	for _, l := range leases {
		if !slices.ContainsFunc(parts, func(b sqldb.Batch) bool { return deleted[b.Part] && b.Member(l.ID) }) {
			rest = append(rest, l)
		}
	}
	return rest, nil
}
