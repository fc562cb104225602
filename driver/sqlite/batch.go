package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// A batch lease (delivery_batch, migration 0007) is how the main claim
// leases what it takes from one partition: one record standing for the
// leased exception rows of its members, all with the same token, holder,
// attempt 1 and expiry. Paths other than a bulk ack or an extension of the
// whole batch first materialize the members they name, writing exactly
// those exception rows ("rows of their own") and taking the ids out of the
// batch, and then run the SQL on rows of their own, which also settles rows
// an older member leased one by one. A member has no exception row, and
// every member is at or below its partition's cursor (SetCursors
// materializes), so the main claim never meets one (docs/decisions.md,
// "Performance: batch leases" and "One lease model").

// batch is one delivery_batch record.
type batch struct {
	group      string
	token      string
	partition  int
	ids        []int64 // the members still held, ascending
	versions   []int   // each member's schema version
	holder     sql.NullString
	leaseUntil int64
	createdAt  int64
}

const batchColumns = `group_name, lease_token, partition, ids, versions, holder, lease_until, created_at`

func scanBatch(r driver.RowScanner) (batch, error) {
	var b batch
	var ids, versions string
	if err := r.Scan(&b.group, &b.token, &b.partition, &ids, &versions, &b.holder, &b.leaseUntil, &b.createdAt); err != nil {
		return b, err
	}
	var err error
	if b.ids, err = sqldb.DecodeInts[int64](ids); err != nil {
		return b, fmt.Errorf("batch %s: stored ids: %w", b.token, err)
	}
	if b.versions, err = sqldb.DecodeInts[int](versions); err != nil {
		return b, fmt.Errorf("batch %s: stored versions: %w", b.token, err)
	}
	if len(b.ids) != len(b.versions) {
		return b, fmt.Errorf("batch %s: %d ids but %d versions stored", b.token, len(b.ids), len(b.versions))
	}
	return b, nil
}

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

// queryBatches reads the batches query selects (batchColumns first).
func queryBatches(ctx context.Context, tx querier, query string, args ...any) ([]batch, error) {
	return sqldb.Collect(ctx, tx, query, args, scanBatch)
}

// split parts b's members into those in ids (all of them when ids is nil)
// and the rest.
func (b batch) split(ids map[int64]bool) (named, rest batch) {
	named, rest = b, b
	named.ids, named.versions, rest.ids, rest.versions = nil, nil, nil, nil
	for i, id := range b.ids {
		if ids == nil || ids[id] {
			named.ids, named.versions = append(named.ids, id), append(named.versions, b.versions[i])
		} else {
			rest.ids, rest.versions = append(rest.ids, id), append(rest.versions, b.versions[i])
		}
	}
	return named, rest
}

// materialize writes the leased exception rows of b's members in ids (all
// of them when ids is nil) and takes those ids out of the batch.
func materialize(ctx context.Context, tx querier, streamID int64, b batch, ids map[int64]bool) error {
	named, rest := b.split(ids)
	if len(named.ids) == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO delivery_exception (stream_id, group_name, msg_id, partition, schema_version, state, attempt, due_at, lease_token, holder, updated_at)
		SELECT ?, ?, i.value, ?, v.value, 'leased', 1, ?, ?, ?, ? FROM json_each(?) i JOIN json_each(?) v ON v.key = i.key WHERE 1
		ON CONFLICT (stream_id, group_name, msg_id) DO NOTHING`,
		streamID, b.group, b.partition, b.leaseUntil, b.token, b.holder, b.createdAt, sqldb.EncodeInts(named.ids), sqldb.EncodeInts(named.versions)); err != nil {
		return err
	}
	return storeBatch(ctx, tx, streamID, rest)
}

// storeBatch writes b's members back, deleting the batch when none is left.
func storeBatch(ctx context.Context, tx querier, streamID int64, b batch) error {
	if len(b.ids) == 0 {
		_, err := tx.ExecContext(ctx, `DELETE FROM delivery_batch WHERE stream_id = ? AND group_name = ? AND lease_token = ? AND partition = ?`,
			streamID, b.group, b.token, b.partition)
		return err
	}
	_, err := tx.ExecContext(ctx, `UPDATE delivery_batch SET ids = ?, versions = ?, first_id = ?, last_id = ?
		WHERE stream_id = ? AND group_name = ? AND lease_token = ? AND partition = ?`,
		sqldb.EncodeInts(b.ids), sqldb.EncodeInts(b.versions), b.ids[0], b.ids[len(b.ids)-1], streamID, b.group, b.token, b.partition)
	return err
}

// materializeAll materializes every member of the batches query selects.
func materializeAll(ctx context.Context, tx querier, streamID int64, query string, args ...any) error {
	bs, err := queryBatches(ctx, tx, query, args...)
	if err != nil {
		return err
	}
	for _, b := range bs {
		if err := materialize(ctx, tx, streamID, b, nil); err != nil {
			return err
		}
	}
	return nil
}

// materializeRange materializes the stream's batches that may hold an id in
// [lo, hi], before compaction or a hard retention limit removes those rows:
// their exception rows then go with the rows, as leased rows always did.
func materializeRange(ctx context.Context, tx querier, streamID, lo, hi int64) error {
	return materializeAll(ctx, tx, streamID, `SELECT `+batchColumns+` FROM delivery_batch WHERE stream_id = ? AND first_id <= ? AND last_id >= ?`,
		streamID, hi, lo)
}

// explodeExpired materializes the group's batches whose lease ended, so
// that the exception claim hands their members out again as it does
// expired leased rows.
func explodeExpired(ctx context.Context, tx querier, p driver.ClaimParams) error {
	return materializeAll(ctx, tx, p.Stream.ID, `SELECT `+batchColumns+` FROM delivery_batch WHERE stream_id = ? AND group_name = ? AND lease_until <= ?
		ORDER BY lease_until LIMIT 100`, p.Stream.ID, p.Group, micros(p.Now))
}

// batchSettle is what a settle does to the members of batches it names.
type batchSettle int

const (
	// settleAck resolves the members.
	settleAck batchSettle = iota
	// settleExtend moves the lease of a batch all of whose members are named
	// and materializes the members of other batches.
	settleExtend
	// settleCarve materializes the members, for the SQL on rows of their own
	// to change.
	settleCarve
)

// settleBatches applies s.op to the leases s names that are batch members,
// in tx. It returns the leases it did not settle itself (those it did are
// marked changed), materialized ones included, for the statement on rows of
// their own.
func settleBatches(ctx context.Context, tx querier, s settlement, changed map[int64]bool) ([]driver.Lease, error) {
	byToken := map[string]map[int64]bool{}
	for _, l := range s.leases {
		if byToken[l.Token] == nil {
			byToken[l.Token] = map[int64]bool{}
		}
		byToken[l.Token][l.ID] = true
	}
	for token, ids := range byToken {
		bs, err := queryBatches(ctx, tx, `SELECT `+batchColumns+` FROM delivery_batch WHERE stream_id = ? AND group_name = ? AND lease_token = ?`,
			s.streamID, s.group, token)
		if err != nil {
			return nil, err
		}
		for _, b := range bs {
			named, rest := b.split(ids)
			switch {
			case len(named.ids) == 0:
				continue
			case s.op == settleAck:
				err = storeBatch(ctx, tx, s.streamID, rest)
			case s.op == settleExtend && len(rest.ids) == 0:
				_, err = tx.ExecContext(ctx, `UPDATE delivery_batch SET lease_until = ? WHERE stream_id = ? AND group_name = ? AND lease_token = ? AND partition = ?`,
					s.until, s.streamID, s.group, b.token, b.partition)
			default:
				if err := materialize(ctx, tx, s.streamID, b, ids); err != nil {
					return nil, err
				}
				continue
			}
			if err != nil {
				return nil, err
			}
			for _, id := range named.ids {
				changed[id] = true
			}
		}
	}
	if len(changed) == 0 {
		return s.leases, nil
	}
	return slices.DeleteFunc(slices.Clone(s.leases), func(l driver.Lease) bool { return changed[l.ID] }), nil
}
