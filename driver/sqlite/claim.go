package sqlite

import (
	"context"
	"strconv"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// claims is the claim's work in its transaction (sqldb.Claims) in SQLite's
// words: the single writer needs no locks; a statement's rows are stepped
// in the process, so a window larger than needed costs nothing past the
// row where the scan stops, and every window is the largest.
var claims = sqldb.Claims{
	Leases:       leaseWrites,
	EmptyPayload: "x''",
	Head:         headExpr,
	Readers:      sqldb.ReadersOf(fromMicros),
	FirstWindow:  func(int) int { return driver.MaxClaimWindow },
	Defer: func(n int) string {
		return `INSERT INTO delivery_exception (stream_id, group_name, msg_id, partition, schema_version, state, attempt, due_at, holder, updated_at)
			VALUES ` + sqldb.Repeated(n, "(?, ?, ?, ?, ?, 'delayed', 0, ?, ?, ?)", ", ") + ` ON CONFLICT (stream_id, group_name, msg_id) DO NOTHING`
	},
	DeferChunk: 100,
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
	var work claimWork
	if _, ok := d.next.Hint(p.Stream.ID, p.Group); (ok && p.Limit > 0) || len(p.Acks) > 0 {
		// After a claim that filled its limit, more work is likely: the probe
		// would only cost a read transaction, so the claim goes straight to
		// the write transaction, which finds out the same itself. A claim
		// carrying acks writes anyway: the write transaction records them.
		work = claimWork{due: p.Limit > 0, fresh: p.Limit > 0}
	} else {
		var err error
		if work, err = d.probe(ctx, p, &res); err != nil || p.Limit <= 0 || (!work.due && !work.fresh) {
			return res, err
		}
	}
	err := d.inTxQ(ctx, nil, func(tx cachedTx) error { return claimIn(ctx, tx, p, work, &res) })
	d.next.Note(p.Stream.ID, p.Group, struct{}{}, err == nil && len(res.Deliveries) >= p.Limit)
	return res, err
}

// claimWork is what a claim looks for: due exceptions or batches whose
// lease ended (their members are due as expired leased rows are), and rows
// past a cursor.
type claimWork struct{ due, fresh bool }

// probe finds out, in a read transaction, what the group has to claim; it
// also checks that the claim can be planned and reports the group.
func (d *Driver) probe(ctx context.Context, p driver.ClaimParams, res *driver.ClaimResult) (claimWork, error) {
	var work claimWork
	err := d.readTxQ(ctx, func(tx cachedTx) error {
		g, err := loadGroup(ctx, tx, p.Stream.ID, p.Group)
		if err != nil {
			return err
		}
		if _, err := driver.PlanClaim(g, p); err != nil {
			return err
		}
		res.Group = g
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM delivery_exception WHERE stream_id = ? AND group_name = ?
			AND state IN ('leased', 'delayed') AND due_at <= ?) OR EXISTS (SELECT 1 FROM delivery_batch WHERE stream_id = ? AND group_name = ? AND lease_until <= ?)`,
			p.Stream.ID, p.Group, micros(p.Now), p.Stream.ID, p.Group, micros(p.Now)).Scan(&work.due); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM group_cursor c WHERE c.stream_id = ? AND c.group_name = ?
			AND EXISTS (SELECT 1 FROM `+logTable(p.Stream.ID)+` m WHERE m.partition = c.partition AND m.id > c.position))`,
			p.Stream.ID, p.Group).Scan(&work.fresh)
	})
	return work, err
}

// claimIn is the claim's write transaction: it gives leases back the time
// a caller's transaction held the writer, records the acks the claim
// carries, then leases due exceptions and new rows, up to the limit.
func claimIn(ctx context.Context, tx cachedTx, p driver.ClaimParams, work claimWork, res *driver.ClaimResult) error {
	res.Deliveries, res.Deferred, res.Lost = res.Deliveries[:0], 0, nil
	if err := resumeLeases(ctx, tx); err != nil {
		return err
	}
	if len(p.Acks) > 0 {
		// First, so that what they resolve is claimable (an ordered
		// partition they free) and commits with the claim.
		acked, err := settleIn(ctx, tx, settlement{streamID: p.Stream.ID, group: p.Group, leases: p.Acks, mode: settleAck}, byStatement(ackStmt))
		if err != nil {
			return err
		}
		res.Lost = acked.Lost
	}
	g, err := loadGroup(ctx, tx, p.Stream.ID, p.Group)
	if err != nil {
		return err
	}
	if err := checkGeneration(ctx, tx, p.Stream); err != nil {
		return err
	}
	plan, err := driver.PlanClaim(g, p)
	if err != nil {
		return err
	}
	res.Group = g
	if work.due {
		if res.Deliveries, err = claims.ClaimDue(ctx, tx, p, plan, true); err != nil {
			return err
		}
	}
	if !work.fresh {
		return nil
	}
	newest, err := newestException(ctx, tx, p)
	if err != nil {
		return err
	}
	out := sqldb.Claimed{ClaimResult: *res, Full: -1}
	// From a random partition on, so that members claiming at once start
	// apart.
	err = claims.ClaimNew(ctx, tx, sqldb.NewRows{P: p, Plan: plan, NewestException: newest, Parts: sqldb.Rotated(allParts(p.Stream.Partitions))}, &out)
	*res = out.ClaimResult
	return err
}

// allParts lists the partitions of a stream of n.
func allParts(n int) []int {
	parts := make([]int, n)
	for i := range parts {
		parts[i] = i
	}
	return parts
}

// newestException reads the group's highest exception id, below which the
// main claim looks each row up (sqldb.NewRows): an exception row past a
// cursor is rare (SetCursors moved the cursor back over it).
func newestException(ctx context.Context, tx querier, p driver.ClaimParams) (int64, error) {
	var newest int64
	err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(msg_id), 0) FROM delivery_exception WHERE stream_id = ? AND group_name = ?`, p.Stream.ID, p.Group).Scan(&newest)
	return newest, err
}
