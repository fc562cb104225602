package mysql

import (
	"context"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// Batch leases (migration 0007). The main claim leases the rows it takes
// from a partition as one delivery_batch row: the compressed form of the
// leased exception rows, one per row, that a claim would otherwise write
// (same token, partition, holder, attempt 1, due_at = lease_until). The
// fast paths act on the batch itself: an ack removes members from ids, an
// extension naming at least half of the remaining members moves lease_until
// and materializes the rest. Everything
// else first materializes the members it names (writes their leased
// exception rows and removes them from the batch) and then runs the
// per-delivery SQL unchanged, which also serves every delivery with an
// exception row of its own. The Go is sqldb.Leases', over the text below;
// what is MySQL's own is the batch cache (batchcache.go) and the lock
// waits.

// jsonIDs joins a batch b's members as rows j(id).
const jsonIDs = `JSON_TABLE(b.ids, '$[*]' COLUMNS (id BIGINT PATH '$')) j`

// leaseWrites is the write side of leases (sqldb.Leases) in MySQL's words:
// batch records and exception rows are locked FOR UPDATE, the exception
// rows by primary key (forced: on a small table the optimizer may
// otherwise walk the group's key prefix, or the due index, and wait on
// every row locked there); a member is materialized at its row's version
// (a member whose row is gone has nothing left to deliver and gets none),
// and INSERT IGNORE passes over one that has an exception row already,
// which the invariant rules out.
var leaseWrites = sqldb.Leases{
	Lock:       " FOR UPDATE",
	SkipLocked: " FOR UPDATE SKIP LOCKED",
	Exceptions: "delivery_exception FORCE INDEX (PRIMARY)",
	Materialize: func(streamID int64, members string) string {
		return "INSERT IGNORE INTO delivery_exception (stream_id, group_name, msg_id, `partition`, schema_version, state, attempt, due_at, lease_token, holder, updated_at)" +
			" SELECT b.stream_id, b.group_name, j.id, b.`partition`, m.schema_version, 'leased', 1, b.lease_until, b.lease_token, b.holder, b.created_at" +
			" FROM delivery_batch b JOIN " + jsonIDs + " JOIN " + logTable(streamID) + " m ON m.id = j.id WHERE b.stream_id = ? AND (" + members + ")"
	},
	Among: func(ids []int64) (string, []any) {
		return "j.id IN (" + sqldb.Placeholders(len(ids)) + ")", sqldb.Args(ids)
	},
	Failures: appendFailure,
	Time:     func(t time.Time) any { return ts(t) },
	Chunk:    idChunk,
}

// explodeWhole materializes every member of the stream's batches matching
// cond, locked FOR UPDATE (tail adds to the locking read), and deletes them.
// It returns how many it exploded.
func explodeWhole(ctx context.Context, q querier, streamID int64, cond string, args []any, tail string) (int, error) {
	held, err := leaseWrites.Batches(ctx, q, streamID, cond, args, tail)
	if err != nil {
		return 0, err
	}
	return len(held), leaseWrites.Explode(ctx, q, streamID, held)
}
