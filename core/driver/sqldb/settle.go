package sqldb

import (
	"context"
	"database/sql"
	"slices"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// SettleMode is what a settle does to the batch members it names.
type SettleMode int

const (
	// SettleAck removes them from their batches.
	SettleAck SettleMode = iota
	// SettleExtend moves the lease of a batch whose every remaining member
	// is named; of a batch with some named, it materializes the smaller
	// side (the named members, or the others while the batch keeps the
	// named ones under the new lease).
	SettleExtend
	// SettleMaterialize materializes them (Fail, Release), for the
	// statement on exception rows that follows.
	SettleMaterialize
)

// Settle is one settle of a group's leases: Mode says what it does to
// those that are batch members, Apply changes the exception rows of the
// others and of the members it materializes.
type Settle struct {
	StreamID int64
	Group    string
	Mode     SettleMode
	// Until and Now are an extension's new lease_until and its time, as the
	// engine stores them.
	Until, Now any
	Apply      Apply
}

// Apply changes the exception rows of op's group named by ids, which the
// settle has locked and found leased with the settle's tokens.
type Apply func(ctx context.Context, q Querier, op Settle, ids []int64) error

// The statements of settles on exception rows, to which the WHERE clause
// naming them is appended: an ack, a release (arguments: due_at and
// updated_at), an extension (the same).
const (
	AckStmt     = `DELETE FROM delivery_exception`
	ReleaseStmt = `UPDATE delivery_exception SET state = 'delayed', due_at = ?, attempt = attempt - 1, lease_token = NULL, updated_at = ?`
	ExtendStmt  = `UPDATE delivery_exception SET due_at = ?, updated_at = ?`
)

// ExecByIDs is an Apply that runs stmt, a statement setting columns (with
// args), on the exception rows named.
func ExecByIDs(stmt string, args ...any) Apply {
	return func(ctx context.Context, q Querier, op Settle, ids []int64) error {
		where, wargs := ByIDs(op.StreamID, op.Group, ids)
		_, err := q.ExecContext(ctx, stmt+where, append(slices.Clone(args), wargs...)...)
		return err
	}
}

// Failed is the statement recording failure f of p, to which the WHERE
// clause is appended, and its arguments: the delivery goes delayed until f.Due, or dead, and the failure is
// appended to its history.
func (l Leases) Failed(p driver.FailParams, f driver.Failure) (string, []any) {
	at := l.Time
	state, due := f.Outcome(p.Now)
	return `UPDATE delivery_exception SET state = ?, due_at = ?, lease_token = NULL, last_error = ?,
		first_failed_at = COALESCE(first_failed_at, ?), updated_at = ?, ` + l.Failures,
		[]any{string(state), at(due), f.Error, at(p.Now), at(p.Now), driver.CutHistoryError(f.Error), driver.HistoryTime(p.Now)}
}

// Fail is the Apply of p's failures: those with the same state, due time
// and error are one statement.
func (l Leases) Fail(p driver.FailParams) Apply {
	byID := make(map[int64]driver.Failure, len(p.Failures))
	for _, f := range p.Failures {
		byID[f.Lease.ID] = f
	}
	return func(ctx context.Context, q Querier, op Settle, ids []int64) error {
		type outcome struct {
			state, err string
			due        any
		}
		var order []outcome
		groups := map[outcome][]int64{}
		for _, id := range ids {
			f := byID[id]
			state, due := f.Outcome(p.Now)
			k := outcome{state: string(state), err: f.Error, due: l.Time(due)}
			if groups[k] == nil {
				order = append(order, k)
			}
			groups[k] = append(groups[k], id)
		}
		for _, k := range order {
			stmt, args := l.Failed(p, byID[groups[k][0]])
			where, wargs := ByIDs(op.StreamID, op.Group, groups[k])
			if _, err := q.ExecContext(ctx, stmt+where, append(args, wargs...)...); err != nil {
				return err
			}
		}
		return nil
	}
}

// Leased lists the leases of p's failures.
func Leased(p driver.FailParams) []driver.Lease {
	leases := make([]driver.Lease, len(p.Failures))
	for i, f := range p.Failures {
		leases[i] = f.Lease
	}
	return leases
}

// ReleaseClaim releases every lease of a claim (token): its batches become
// leased exception rows first, which the statement then releases with the
// rest.
func (l Leases) ReleaseClaim(ctx context.Context, q Querier, p driver.ReleaseParams) error {
	now := l.Time(p.Now)
	if err := l.explodeWhere(ctx, q, p.StreamID, "group_name = ? AND lease_token = ?", p.Group, p.ClaimToken); err != nil {
		return err
	}
	_, err := q.ExecContext(ctx, ReleaseStmt+` WHERE stream_id = ? AND group_name = ? AND lease_token = ? AND state = 'leased'`,
		now, now, p.StreamID, p.Group, p.ClaimToken)
	return err
}

// SettleIn settles leases in the transaction q: first the batch members
// among them (SettleBatches), then the exception rows (SettleRows). It
// marks in changed the leases it settled.
func (l Leases) SettleIn(ctx context.Context, q Querier, op Settle, leases []driver.Lease, changed map[int64]bool) error {
	rest, err := l.SettleBatches(ctx, q, op, leases, changed)
	if err != nil {
		return err
	}
	return l.SettleRows(ctx, q, op, rest, changed)
}

// SettleRows locks the exception rows of leases by primary key, and has
// op.Apply change those still leased with their token; it marks them in
// changed. The locking read names whole keys only, and the token and state
// are checked here: a predicate on them beside the id list (a row
// constructor IN) made MariaDB walk the group's key prefix and lock every
// exception row of the group, so that a caller's transaction holding such
// a lock stalled every member's heartbeat (issue 25).
func (l Leases) SettleRows(ctx context.Context, q Querier, op Settle, leases []driver.Lease, changed map[int64]bool) error {
	tokens := make(map[int64][]string, len(leases))
	for _, lease := range leases {
		tokens[lease.ID] = append(tokens[lease.ID], lease.Token)
	}
	for chunk := range slices.Chunk(leases, l.Chunk) {
		keys := make([]int64, len(chunk))
		for i, lease := range chunk {
			keys[i] = lease.ID
		}
		where, wargs := ByIDs(op.StreamID, op.Group, keys)
		var ids []int64
		if err := EachRow(ctx, q, `SELECT msg_id, COALESCE(lease_token, ''), state FROM `+l.Exceptions+where+l.Lock, wargs, func(r *sql.Rows) error {
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
		if err := op.Apply(ctx, q, op, ids); err != nil {
			return err
		}
		for _, id := range ids {
			changed[id] = true
		}
	}
	return nil
}

// Tokens lists the distinct tokens of leases.
func Tokens(leases []driver.Lease) []string {
	var out []string
	for _, l := range leases {
		if !slices.Contains(out, l.Token) {
			out = append(out, l.Token)
		}
	}
	return out
}

// SettleBatches runs first in a settle's transaction. It locks the group's
// batches with the tokens the leases name and, for the named leases that
// are their members, does what op.Mode says. It marks in changed the
// leases it settled itself (acks, extensions the batch keeps) and returns
// those left for the exception rows: the leases that are no member, and
// the members it materialized for SettleMaterialize and for extensions of
// few of a batch's members.
func (l Leases) SettleBatches(ctx context.Context, q Querier, op Settle, leases []driver.Lease, changed map[int64]bool) ([]driver.Lease, error) {
	tokens := Tokens(leases)
	held, err := l.Batches(ctx, q, op.StreamID, "group_name = ? AND lease_token IN ("+Placeholders(len(tokens))+")",
		append([]any{op.Group}, Args(tokens)...), l.Lock)
	if err != nil || len(held) == 0 {
		return leases, err
	}
	named, rest := namedMembers(held, leases, op.Mode == SettleMaterialize)
	w := batchWrites{l: l, op: op, changed: changed}
	for i, b := range held {
		if named[i] == nil {
			continue
		}
		if err := w.settle(ctx, q, b, named[i]); err != nil {
			return nil, err
		}
	}
	if err := w.finish(ctx, q); err != nil {
		return nil, err
	}
	return append(rest, w.extended...), nil
}

// namedMembers finds the batch of held that each lease is a member of:
// named[i] holds the ids of held[i] the leases name (nil: none). rest is
// the leases that are no member, and with members also those that are.
func namedMembers(held []Batch, leases []driver.Lease, members bool) (named []map[int64]bool, rest []driver.Lease) {
	byToken := map[string][]int{}
	for i, b := range held {
		byToken[b.Token] = append(byToken[b.Token], i)
	}
	named = make([]map[int64]bool, len(held))
	rest = make([]driver.Lease, 0, len(leases))
	for _, l := range leases {
		k := slices.IndexFunc(byToken[l.Token], func(i int) bool { return held[i].Member(l.ID) })
		if k < 0 || members {
			rest = append(rest, l)
		}
		if k < 0 {
			continue
		}
		batch := byToken[l.Token][k]
		if named[batch] == nil {
			named[batch] = map[int64]bool{}
		}
		named[batch][l.ID] = true
	}
	return named, rest
}

// batchWrites is SettleBatches' work on the batches it locked. What it can
// gather is written last, together: the batches acked whole are deleted in
// one statement, and the members to materialize are written before their
// batches shrink.
type batchWrites struct {
	l       Leases
	op      Settle
	changed map[int64]bool
	emptied []Batch           // acked whole
	carve   []materialization // members to materialize
	shrunk  []Batch           // the batches carve takes from, with what they keep
	// extended lists the members an extension materializes, for the
	// exception rows' statement.
	extended []driver.Lease
}

// settle does op.Mode to the members named of batch b.
func (w *batchWrites) settle(ctx context.Context, q Querier, b Batch, named map[int64]bool) error {
	switch {
	case w.op.Mode == SettleAck:
		return w.ack(ctx, q, b, named)
	case w.op.Mode == SettleExtend && 2*len(named) >= len(b.IDs):
		// Most of the batch is extended (all of it, most often): the
		// members left out become leased exception rows with the batch's
		// lease as it is, and the batch keeps the named ones with the new
		// lease. Either side could be materialized; this one writes fewer
		// rows.
		return w.extend(ctx, q, b, named)
	default:
		w.materializeLater(b, named)
		return nil
	}
}

// ack removes the named members from batch b, which goes when none is left.
func (w *batchWrites) ack(ctx context.Context, q Querier, b Batch, named map[int64]bool) error {
	if len(named) == len(b.IDs) {
		w.emptied = append(w.emptied, b)
	} else if err := w.l.writeBack(ctx, q, w.op.StreamID, b.keeping(func(id int64) bool { return !named[id] }), ""); err != nil {
		return err
	}
	for id := range named {
		w.changed[id] = true
	}
	return nil
}

// extend gives batch b the new lease, keeping its named members; the
// others are first materialized with the lease they had.
func (w *batchWrites) extend(ctx context.Context, q Querier, b Batch, named map[int64]bool) error {
	op := w.op
	var err error
	if len(named) == len(b.IDs) {
		_, err = q.ExecContext(ctx, "UPDATE delivery_batch SET lease_until = ?, created_at = ?"+batchKey, op.Until, op.Now, op.StreamID, b.Group, b.Token, b.Part)
	} else if err = w.l.materialize(ctx, q, op.StreamID, []materialization{{b: b, ids: b.keeping(func(id int64) bool { return !named[id] }).IDs}}); err == nil {
		err = w.l.writeBack(ctx, q, op.StreamID, b.keeping(func(id int64) bool { return named[id] }), ", lease_until = ?, created_at = ?", op.Until, op.Now)
	}
	if err != nil {
		return err
	}
	for id := range named {
		w.changed[id] = true
	}
	return nil
}

// materializeLater notes the named members of batch b to materialize, for
// the exception rows' statement (with an extension, as leases of their own).
func (w *batchWrites) materializeLater(b Batch, named map[int64]bool) {
	carved := b.keeping(func(id int64) bool { return named[id] })
	w.carve = append(w.carve, materialization{b: b, all: len(carved.IDs) == len(b.IDs), ids: carved.IDs})
	w.shrunk = append(w.shrunk, b.keeping(func(id int64) bool { return !named[id] }))
	if w.op.Mode == SettleExtend {
		for _, id := range carved.IDs {
			w.extended = append(w.extended, driver.Lease{ID: id, Token: b.Token})
		}
	}
}

// finish writes what the batches' visits gathered.
func (w *batchWrites) finish(ctx context.Context, q Querier) error {
	if len(w.emptied) > 0 {
		if err := deleteBatches(ctx, q, w.op.StreamID, w.emptied); err != nil {
			return err
		}
	}
	if len(w.carve) == 0 {
		return nil
	}
	if err := w.l.materialize(ctx, q, w.op.StreamID, w.carve); err != nil {
		return err
	}
	for _, b := range w.shrunk {
		if err := w.l.writeBack(ctx, q, w.op.StreamID, b, ""); err != nil {
			return err
		}
	}
	return nil
}
