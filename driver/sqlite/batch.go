package sqlite

import (
	"context"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// A batch lease (delivery_batch, migration 0007) is how the main claim
// leases what it takes from one partition: one record standing for the
// leased exception rows of its members, all with the same token, holder,
// attempt 1 and expiry. Paths other than a bulk ack or an extension naming at
// least half of the remaining members (which moves the batch's expiry and
// materializes the rest) first materialize the members they name, writing exactly
// those exception rows ("rows of their own") and taking the ids out of the
// batch, and then run the SQL on rows of their own, which also settles rows
// an older member leased one by one. A member has no exception row, and
// every member is at or below its partition's cursor (SetCursors
// materializes), so the main claim never meets one (docs/decisions.md,
// "Performance: batch leases" and "One lease model"). The Go is
// sqldb.Leases', over SQLite's text (leaseWrites, settle.go).

// batchColumns are the delivery_batch columns materializeAll's query
// selects first.
var batchColumns = leaseWrites.BatchColumns()

// insertBatch leases taken (rows of one partition, ascending) as one batch.
func insertBatch(ctx context.Context, tx querier, p driver.ClaimParams, part int, taken []driver.Delivery) error {
	ids := make([]int64, len(taken))
	versions := make([]int, len(taken))
	for i, t := range taken {
		ids[i], versions[i] = t.ID, t.SchemaVersion
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO delivery_batch (stream_id, group_name, lease_token, partition, first_id, last_id, ids, versions, holder, lease_until, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, p.Stream.ID, p.Group, p.Token, part, ids[0], ids[len(ids)-1], sqldb.EncodeInts(ids), sqldb.EncodeInts(versions),
		p.Holder, micros(p.LeaseUntil), micros(p.Now))
	return err
}

// materializeAll materializes every member of the batches query selects
// (batchColumns first).
func materializeAll(ctx context.Context, tx querier, streamID int64, query string, args ...any) error {
	bs, err := leaseWrites.ReadBatches(ctx, tx, query, args)
	if err != nil {
		return err
	}
	return leaseWrites.Explode(ctx, tx, streamID, bs)
}

// materializeRemoved materializes the members among ids of the stream's
// batches, before compaction or a hard retention limit removes those rows:
// their exception rows then go with the rows, as leased rows always did.
func materializeRemoved(ctx context.Context, tx querier, streamID int64, ids []int64) error {
	held, err := leaseWrites.Overlapping(ctx, tx, streamID, ids, "")
	if err != nil {
		return err
	}
	return leaseWrites.MaterializeRemoved(ctx, tx, streamID, held, ids)
}

// explodeExpired materializes the group's batches whose lease ended, so
// that the exception claim hands their members out again as it does
// expired leased rows.
func explodeExpired(ctx context.Context, tx querier, p driver.ClaimParams) error {
	return leaseWrites.ExplodeExpired(ctx, tx, p)
}
