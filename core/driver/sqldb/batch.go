package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Leases is the write side of leases after a claim as MySQL and SQLite do it
// alike: the delivery_batch records (a claim's leases of one partition, one
// record), materializing members into exception rows of their own, and the
// settles (settle.go). Both engines define delivery_batch and
// delivery_exception alike and accept the same statements on them (SQLite
// reads MySQL's backquoted `partition`), so the Go and most text is here;
// each driver passes what its engine spells differently, and keeps its
// transactions, retries, error classification and fast paths (MySQL's
// batch cache and RETURNING).
type Leases struct {
	// Lock follows a read of batch records or exception rows that the
	// transaction then changes (" FOR UPDATE"; empty under SQLite's one
	// writer).
	Lock string
	// SkipLocked follows a claim's read of the group's expired batches
	// (" FOR UPDATE SKIP LOCKED": another claim's are passed over).
	SkipLocked string
	// Exceptions names delivery_exception in the locking read of a
	// settle's exception rows by primary key, with any index hint.
	Exceptions string
	// Versions says that a batch record stores its members' schema versions
	// (SQLite's versions column, kept in step with ids); without it the
	// versions come from the log (MySQL).
	Versions bool
	// Materialize is the INSERT ... SELECT that writes the leased exception
	// rows of the members of the stream's batches (b: delivery_batch) that
	// members, a predicate, names, passing over a member that has an
	// exception row already. Its first argument is the stream id
	// (b.stream_id = ?), members' follow.
	Materialize func(streamID int64, members string) string
	// Among is the predicate that a member in Materialize's statement is
	// one of ids, and its arguments.
	Among func(ids []int64) (string, []any)
	// Failures is the SET clause that appends a failure to the history, as
	// DueWrites.Failures.
	Failures string
	// Time turns a time into the stored value.
	Time func(time.Time) any
	// Chunk bounds the ids one statement on exception rows names.
	Chunk int
}

// Batch is one delivery_batch record as a settle or maintenance reads it,
// under its lock.
type Batch struct {
	Group, Token string
	Part         int
	IDs          []int64 // the members still held, ascending
	Versions     []int   // each member's version, with Leases.Versions; else nil
}

// Member reports whether id is still held by the batch.
func (b Batch) Member(id int64) bool {
	_, ok := slices.BinarySearch(b.IDs, id)
	return ok
}

// keeping is b with only the members keep reports, versions in step.
func (b Batch) keeping(keep func(int64) bool) Batch {
	out := b
	out.IDs, out.Versions = make([]int64, 0, len(b.IDs)), nil
	for i, id := range b.IDs {
		if !keep(id) {
			continue
		}
		out.IDs = append(out.IDs, id)
		if b.Versions != nil {
			out.Versions = append(out.Versions, b.Versions[i])
		}
	}
	return out
}

// batchKey names one batch of a stream.
const batchKey = " WHERE stream_id = ? AND group_name = ? AND lease_token = ? AND `partition` = ?"

// BatchColumns are the delivery_batch columns ReadBatches reads, in its
// order.
func (l Leases) BatchColumns() string {
	if l.Versions {
		return "group_name, lease_token, `partition`, ids, versions"
	}
	return "group_name, lease_token, `partition`, ids"
}

// ReadBatches reads the batches query selects (BatchColumns).
func (l Leases) ReadBatches(ctx context.Context, q Querier, query string, args []any) ([]Batch, error) {
	return Collect(ctx, q, query, args, func(r driver.RowScanner) (Batch, error) {
		var b Batch
		var ids string
		var versions sql.NullString
		dest := []any{&b.Group, &b.Token, &b.Part, &ids}
		if l.Versions {
			dest = append(dest, &versions)
		}
		if err := r.Scan(dest...); err != nil {
			return b, err
		}
		var err error
		if b.IDs, err = DecodeInts[int64](ids); err != nil {
			return b, fmt.Errorf("batch %s: stored ids: %w", b.Token, err)
		}
		if !l.Versions {
			return b, nil
		}
		if b.Versions, err = DecodeInts[int](versions.String); err != nil {
			return b, fmt.Errorf("batch %s: stored versions: %w", b.Token, err)
		}
		if len(b.IDs) != len(b.Versions) {
			return b, fmt.Errorf("batch %s: %d ids but %d versions stored", b.Token, len(b.IDs), len(b.Versions))
		}
		return b, nil
	})
}

// Batches reads the stream's batches matching cond (a predicate on
// delivery_batch, with args); tail follows (order, limit, then l.Lock or
// l.SkipLocked where the transaction changes them).
func (l Leases) Batches(ctx context.Context, q Querier, streamID int64, cond string, args []any, tail string) ([]Batch, error) {
	return l.ReadBatches(ctx, q, "SELECT "+l.BatchColumns()+" FROM delivery_batch WHERE stream_id = ? AND "+cond+tail, append([]any{streamID}, args...))
}

// materialization names members of a batch to write as exception rows:
// ids, or every member when all is set.
type materialization struct {
	b   Batch
	all bool
	ids []int64
}

// materializeChunk bounds the batches one statement names.
const materializeChunk = 100

// materialize writes the named members of locked batches as the leased
// exception rows they stand for. It leaves the batches as they are: the
// caller removes the members (store, deleteBatches).
func (l Leases) materialize(ctx context.Context, q Querier, streamID int64, ms []materialization) error {
	for chunk := range slices.Chunk(ms, materializeChunk) {
		conds := make([]string, 0, len(chunk))
		args := []any{streamID}
		for _, m := range chunk {
			cond := "(b.group_name = ? AND b.lease_token = ? AND b.`partition` = ?"
			args = append(args, m.b.Group, m.b.Token, m.b.Part)
			switch {
			case m.all:
			case len(m.ids) == 0:
				cond += " AND 0"
			default:
				among, aargs := l.Among(m.ids)
				cond += " AND " + among
				args = append(args, aargs...)
			}
			conds = append(conds, cond+")")
		}
		if _, err := q.ExecContext(ctx, l.Materialize(streamID, strings.Join(conds, " OR ")), args...); err != nil {
			return err
		}
	}
	return nil
}

// writeBack writes back what is left of a locked batch b: its members, or no
// record when none is left.
func (l Leases) writeBack(ctx context.Context, q Querier, streamID int64, b Batch, set string, args ...any) error {
	if len(b.IDs) == 0 && set == "" {
		return deleteBatches(ctx, q, streamID, []Batch{b})
	}
	set = "ids = ?, first_id = ?, last_id = ?" + set
	args = append([]any{EncodeInts(b.IDs), b.IDs[0], b.IDs[len(b.IDs)-1]}, args...)
	if l.Versions {
		set += ", versions = ?"
		args = append(args, EncodeInts(b.Versions))
	}
	_, err := q.ExecContext(ctx, "UPDATE delivery_batch SET "+set+batchKey, append(args, streamID, b.Group, b.Token, b.Part)...)
	return err
}

// deleteBatches deletes batches of a stream.
func deleteBatches(ctx context.Context, q Querier, streamID int64, bs []Batch) error {
	for chunk := range slices.Chunk(bs, materializeChunk) {
		args := []any{streamID}
		for _, b := range chunk {
			args = append(args, b.Group, b.Token, b.Part)
		}
		if _, err := q.ExecContext(ctx, "DELETE FROM delivery_batch WHERE stream_id = ? AND ("+
			Repeated(len(chunk), "(group_name = ? AND lease_token = ? AND `partition` = ?)", " OR ")+")", args...); err != nil {
			return err
		}
	}
	return nil
}

// Explode materializes every member of the locked batches held, and
// deletes them.
func (l Leases) Explode(ctx context.Context, q Querier, streamID int64, held []Batch) error {
	if len(held) == 0 {
		return nil
	}
	ms := make([]materialization, len(held))
	for i, b := range held {
		ms[i] = materialization{b: b, all: true}
	}
	if err := l.materialize(ctx, q, streamID, ms); err != nil {
		return err
	}
	return deleteBatches(ctx, q, streamID, held)
}

// explodeWhere explodes the stream's batches matching cond (with args),
// locked with l.Lock.
func (l Leases) explodeWhere(ctx context.Context, q Querier, streamID int64, cond string, args ...any) error {
	held, err := l.Batches(ctx, q, streamID, cond, args, l.Lock)
	if err != nil {
		return err
	}
	return l.Explode(ctx, q, streamID, held)
}

// explodeLimit is how many expired batches a claim explodes at most.
const explodeLimit = 100

// ExplodeExpired turns the group's batches whose lease ended at p.Now, the
// oldest first and up to explodeLimit, passing over
// those another transaction holds, into leased exception rows, which the
// exception claim then takes as it takes any expired lease.
func (l Leases) ExplodeExpired(ctx context.Context, q Querier, p driver.ClaimParams) error {
	held, err := l.Batches(ctx, q, p.Stream.ID, "group_name = ? AND lease_until <= ?", []any{p.Group, l.Time(p.Now)},
		fmt.Sprintf(" ORDER BY lease_until LIMIT %d%s", explodeLimit, l.SkipLocked))
	if err != nil {
		return err
	}
	return l.Explode(ctx, q, p.Stream.ID, held)
}

// Overlapping reads the stream's batches whose id range overlaps ids, the
// rows compaction or retention is about to remove, locked with lock.
func (l Leases) Overlapping(ctx context.Context, q Querier, streamID int64, ids []int64, lock string) ([]Batch, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return l.Batches(ctx, q, streamID, "first_id <= ? AND last_id >= ?", []any{slices.Max(ids), slices.Min(ids)}, lock)
}

// MaterializeRemoved writes back as exception rows the members of the
// locked batches held that are among ids, and removes them from their
// batches, before those rows are removed: the exception rows then go with
// them (hard retention counts them as held, not unread), and the holders'
// settles find those leases lost, as they find removed exception rows.
func (l Leases) MaterializeRemoved(ctx context.Context, q Querier, streamID int64, held []Batch, ids []int64) error {
	gone := make(map[int64]bool, len(ids))
	for _, id := range ids {
		gone[id] = true
	}
	w := batchWrites{l: l, op: Settle{StreamID: streamID, Mode: SettleMaterialize}}
	for _, b := range held {
		named := map[int64]bool{}
		for _, id := range b.IDs {
			if gone[id] {
				named[id] = true
			}
		}
		if len(named) > 0 {
			w.materializeLater(b, named)
		}
	}
	return w.finish(ctx, q)
}
