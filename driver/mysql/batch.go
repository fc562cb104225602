package mysql

import (
	"context"
	"database/sql"
	"slices"
	"strconv"
	"strings"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// Batch leases (migration 0007). The main claim leases the rows it takes
// from a partition as one delivery_batch row: the compressed form of the
// leased exception rows, one per row, that a claim would otherwise write
// (same token, partition, holder, attempt 1, due_at = lease_until). The
// fast paths act on the batch itself: an ack removes members from ids, an
// extension naming every remaining member moves lease_until. Everything
// else first materializes the members it names (writes their leased
// exception rows and removes them from the batch) and then runs the
// per-delivery SQL unchanged, which also serves every delivery with an
// exception row of its own.

// jsonIDs joins a batch b's members as rows j(id).
const jsonIDs = `JSON_TABLE(b.ids, '$[*]' COLUMNS (id BIGINT PATH '$')) j`

// batchRef names one batch of a stream.
type batchRef struct {
	group string
	token string
	part  int
}

// heldBatch is a batch read under a lock, with its members.
type heldBatch struct {
	batchRef
	ids []int64
}

// member reports whether id is still held by the batch.
func (b *heldBatch) member(id int64) bool {
	_, ok := slices.BinarySearch(b.ids, id)
	return ok
}

// lockBatches reads the stream's batches matching cond (a predicate on
// delivery_batch, with args) FOR UPDATE, with their members; lock may add
// SKIP LOCKED, order and limit come first.
func lockBatches(ctx context.Context, q querier, streamID int64, cond string, args []any, tail string) ([]heldBatch, error) {
	var out []heldBatch
	err := sqldb.EachRow(ctx, q, "SELECT group_name, lease_token, `partition`, ids FROM delivery_batch WHERE stream_id = ? AND "+cond+tail,
		append([]any{streamID}, args...), func(r *sql.Rows) error {
			var b heldBatch
			var ids string
			if err := r.Scan(&b.group, &b.token, &b.part, &ids); err != nil {
				return err
			}
			var err error
			b.ids, err = sqldb.DecodeInts[int64](ids)
			out = append(out, b)
			return err
		})
	return out, err
}

// materialization names members of a batch to write back as exception rows:
// ids, or every member when all is set.
type materialization struct {
	ref batchRef
	all bool
	ids []int64
}

// materializeChunk bounds the batches one materializing statement names.
const materializeChunk = 100

// materialize writes the named members of locked batches as the leased
// exception rows they stand for, at their rows' versions (a member whose row
// is gone has nothing left to deliver and gets none). It leaves the batches
// as they are: the caller removes the members (writeBatch, deleteBatches).
// INSERT IGNORE passes over a member that has an exception row already,
// which the invariant rules out.
func materialize(ctx context.Context, q querier, streamID int64, ms []materialization) error {
	for s := 0; s < len(ms); s += materializeChunk {
		chunk := ms[s:min(s+materializeChunk, len(ms))]
		var sb strings.Builder
		args := []any{streamID}
		for i, m := range chunk {
			if i > 0 {
				sb.WriteString(" OR ")
			}
			sb.WriteString("(b.group_name = ? AND b.lease_token = ? AND b.`partition` = ?")
			args = append(args, m.ref.group, m.ref.token, m.ref.part)
			if !m.all {
				if len(m.ids) == 0 {
					sb.WriteString(" AND 0")
				} else {
					sb.WriteString(" AND j.id IN (" + sqldb.Placeholders(len(m.ids)) + ")")
					args = append(args, sqldb.Args(m.ids)...)
				}
			}
			sb.WriteString(")")
		}
		if _, err := q.ExecContext(ctx, "INSERT IGNORE INTO delivery_exception (stream_id, group_name, msg_id, `partition`, schema_version, state, attempt, due_at, lease_token, holder, updated_at)"+
			" SELECT b.stream_id, b.group_name, j.id, b.`partition`, m.schema_version, 'leased', 1, b.lease_until, b.lease_token, b.holder, b.created_at"+
			" FROM delivery_batch b JOIN "+jsonIDs+" JOIN "+logTable(streamID)+" m ON m.id = j.id WHERE b.stream_id = ? AND ("+sb.String()+")", args...); err != nil {
			return err
		}
	}
	return nil
}

// writeBatch stores what is left of a locked batch: its remaining members,
// or nothing when none is left.
func writeBatch(ctx context.Context, q querier, streamID int64, ref batchRef, remaining []int64) error {
	if len(remaining) == 0 {
		return deleteBatches(ctx, q, streamID, []batchRef{ref})
	}
	_, err := q.ExecContext(ctx, "UPDATE delivery_batch SET ids = ?, first_id = ?, last_id = ? WHERE stream_id = ? AND group_name = ? AND lease_token = ? AND `partition` = ?",
		sqldb.EncodeInts(remaining), remaining[0], remaining[len(remaining)-1], streamID, ref.group, ref.token, ref.part)
	return err
}

// deleteBatches deletes batches of a stream.
func deleteBatches(ctx context.Context, q querier, streamID int64, refs []batchRef) error {
	for s := 0; s < len(refs); s += materializeChunk {
		chunk := refs[s:min(s+materializeChunk, len(refs))]
		args := []any{streamID}
		for _, r := range chunk {
			args = append(args, r.group, r.token, r.part)
		}
		if _, err := q.ExecContext(ctx, "DELETE FROM delivery_batch WHERE stream_id = ? AND ("+
			sqldb.Repeated(len(chunk), "(group_name = ? AND lease_token = ? AND `partition` = ?)", " OR ")+")", args...); err != nil {
			return err
		}
	}
	return nil
}

// explodeWhole materializes every member of the stream's batches matching
// cond, locked FOR UPDATE (tail adds to the locking read), and deletes them.
// It returns how many it exploded.
func explodeWhole(ctx context.Context, q querier, streamID int64, cond string, args []any, tail string) (int, error) {
	held, err := lockBatches(ctx, q, streamID, cond, args, tail)
	if err != nil || len(held) == 0 {
		return 0, err
	}
	ms := make([]materialization, len(held))
	refs := make([]batchRef, len(held))
	for i, b := range held {
		ms[i] = materialization{ref: b.batchRef, all: true}
		refs[i] = b.batchRef
	}
	if err := materialize(ctx, q, streamID, ms); err != nil {
		return 0, err
	}
	return len(held), deleteBatches(ctx, q, streamID, refs)
}

// explodeLimit is how many expired batches a claim explodes at most.
const explodeLimit = 100

// explodeExpired turns the group's expired batches (the oldest first, up to
// explodeLimit, passing over those another transaction holds) into leased
// exception rows due now, which the exception claim then takes as it takes
// any expired lease.
func explodeExpired(ctx context.Context, tx querier, p driver.ClaimParams) error {
	_, err := explodeWhole(ctx, tx, p.Stream.ID, "group_name = ? AND lease_until <= ?", []any{p.Group, ts(p.Now)},
		" ORDER BY lease_until LIMIT "+strconv.Itoa(explodeLimit)+" FOR UPDATE SKIP LOCKED")
	return err
}

// settleMode is what a settle does to the batch members it names.
type settleMode int

const (
	// settleAck removes them from their batches.
	settleAck settleMode = iota
	// settleExtend moves the lease of a batch whose every remaining member
	// is named; of a batch with some named, it materializes the smaller
	// side (the named members, or the others while the batch keeps the
	// named ones under the new lease).
	settleExtend
	// settleMaterialize materializes them (Fail, Release), for the per-delivery
	// statement that follows.
	settleMaterialize
)

// settleBatches runs first in a settle's transaction. It locks the group's
// batches with the tokens the leases name (FOR UPDATE) and, for the named
// leases that are their members, does what op.mode says. It marks in
// changed the leases it settled itself (acks, extensions the batch keeps)
// and returns those left for the exception rows: the leases that are no
// member, and the members it materialized for settleMaterialize and for
// extensions of few of a batch's members.
func settleBatches(ctx context.Context, tx querier, op settleOp, leases []driver.Lease, changed map[int64]bool) ([]driver.Lease, error) {
	tokens := tokensOf(leases)
	held, err := lockBatches(ctx, tx, op.streamID, "group_name = ? AND lease_token IN ("+sqldb.Placeholders(len(tokens))+")",
		append([]any{op.group}, sqldb.Args(tokens)...), " FOR UPDATE")
	if err != nil || len(held) == 0 {
		return leases, err
	}
	named, rest := namedMembers(held, leases, op.mode == settleMaterialize)
	w := batchWrites{op: op, changed: changed}
	for i, b := range held {
		if named[i] == nil {
			continue
		}
		if err := w.settle(ctx, tx, b, named[i]); err != nil {
			return nil, err
		}
	}
	if err := w.finish(ctx, tx); err != nil {
		return nil, err
	}
	return append(rest, w.extended...), nil
}

// namedMembers finds the batch of held that each lease is a member of:
// named[i] holds the ids of held[i] the leases name (nil: none). rest is
// the leases that are no member, and with members also those that are.
func namedMembers(held []heldBatch, leases []driver.Lease, members bool) (named []map[int64]bool, rest []driver.Lease) {
	byToken := map[string][]int{}
	for i, b := range held {
		byToken[b.token] = append(byToken[b.token], i)
	}
	named = make([]map[int64]bool, len(held))
	rest = make([]driver.Lease, 0, len(leases))
	for _, l := range leases {
		k := slices.IndexFunc(byToken[l.Token], func(i int) bool { return held[i].member(l.ID) })
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

// batchWrites is settleBatches' work on the batches it locked. What it can
// gather is written last, together: the batches acked whole are deleted in
// one statement, and the members to materialize are written before their
// batches shrink.
type batchWrites struct {
	op      settleOp
	changed map[int64]bool
	emptied []batchRef        // acked whole
	carve   []materialization // members to materialize
	shrunk  []heldBatch       // the batches carve takes from, with what they keep
	// extended lists the members an extension materializes, for the
	// exception rows' statement.
	extended []driver.Lease
}

// settle does op.mode to the members named of batch b.
func (w *batchWrites) settle(ctx context.Context, tx querier, b heldBatch, named map[int64]bool) error {
	switch {
	case w.op.mode == settleAck:
		return w.ack(ctx, tx, b, named)
	case w.op.mode == settleExtend && len(named) == len(b.ids):
		return w.extend(ctx, tx, b, b.ids, nil)
	case w.op.mode == settleExtend && 2*len(named) >= len(b.ids):
		// Most of the batch is extended: the members left out become
		// leased exception rows with the batch's lease as it is, and the
		// batch keeps the named ones with the new lease. Either side
		// could be materialized; this one writes fewer rows.
		keep := make([]int64, 0, len(named))
		out := make([]int64, 0, len(b.ids)-len(named))
		for _, id := range b.ids {
			if named[id] {
				keep = append(keep, id)
			} else {
				out = append(out, id)
			}
		}
		return w.extend(ctx, tx, b, keep, out)
	default:
		w.materializeLater(b, named)
		return nil
	}
}

// ack removes the named members from batch b, which goes when none is left.
func (w *batchWrites) ack(ctx context.Context, tx querier, b heldBatch, named map[int64]bool) error {
	if len(named) == len(b.ids) {
		w.emptied = append(w.emptied, b.batchRef)
	} else if err := writeBatch(ctx, tx, w.op.streamID, b.batchRef, remainingAfter(b.ids, named)); err != nil {
		return err
	}
	for id := range named {
		w.changed[id] = true
	}
	return nil
}

// extend gives batch b the new lease, keeping its members keep; the others
// (out) are first materialized with the lease they had.
func (w *batchWrites) extend(ctx context.Context, tx querier, b heldBatch, keep, out []int64) error {
	op := w.op
	pk := " WHERE stream_id = ? AND group_name = ? AND lease_token = ? AND `partition` = ?"
	var err error
	if len(out) == 0 {
		_, err = tx.ExecContext(ctx, "UPDATE delivery_batch SET lease_until = ?, created_at = ?"+pk, op.until, op.now, op.streamID, b.group, b.token, b.part)
	} else if err = materialize(ctx, tx, op.streamID, []materialization{{ref: b.batchRef, ids: out}}); err == nil {
		_, err = tx.ExecContext(ctx, "UPDATE delivery_batch SET ids = ?, first_id = ?, last_id = ?, lease_until = ?, created_at = ?"+pk,
			sqldb.EncodeInts(keep), keep[0], keep[len(keep)-1], op.until, op.now, op.streamID, b.group, b.token, b.part)
	}
	if err != nil {
		return err
	}
	for _, id := range keep {
		w.changed[id] = true
	}
	return nil
}

// materializeLater notes the named members of batch b to materialize, for
// the exception rows' statement (with an extension, as leases of their own).
func (w *batchWrites) materializeLater(b heldBatch, named map[int64]bool) {
	ids := make([]int64, 0, len(named))
	for id := range named {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	w.carve = append(w.carve, materialization{ref: b.batchRef, all: len(ids) == len(b.ids), ids: ids})
	w.shrunk = append(w.shrunk, heldBatch{batchRef: b.batchRef, ids: remainingAfter(b.ids, named)})
	if w.op.mode == settleExtend {
		for _, id := range ids {
			w.extended = append(w.extended, driver.Lease{ID: id, Token: b.token})
		}
	}
}

// finish writes what the batches' visits gathered.
func (w *batchWrites) finish(ctx context.Context, tx querier) error {
	if len(w.emptied) > 0 {
		if err := deleteBatches(ctx, tx, w.op.streamID, w.emptied); err != nil {
			return err
		}
	}
	if len(w.carve) == 0 {
		return nil
	}
	if err := materialize(ctx, tx, w.op.streamID, w.carve); err != nil {
		return err
	}
	for _, b := range w.shrunk {
		if err := writeBatch(ctx, tx, w.op.streamID, b.batchRef, b.ids); err != nil {
			return err
		}
	}
	return nil
}

// remainingAfter is ids without those in gone.
func remainingAfter(ids []int64, gone map[int64]bool) []int64 {
	out := make([]int64, 0, len(ids))
	for _, id := range ids {
		if !gone[id] {
			out = append(out, id)
		}
	}
	return out
}
