package sqlite

import (
	"context"
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
