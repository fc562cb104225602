package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// claimAcks are the acks a claim carries (ClaimParams.Acks), resolved in
// the claim's transaction before it reads anything. They go out in the
// transaction's first round trip, right after it begins:
//
//   - When they name exactly the members of a batch one of this driver's
//     recent claims wrote (claimedBatches), the batch is deleted by primary
//     key with its ids compared (ackWholeQuery), as Ack's fast path does: one
//     small statement, and when it deletes the batch every ack is resolved.
//   - Otherwise Ack's two statements: batchAck (the named batch members)
//     and the exception-row DELETE, which reports exactly what it resolved.
//
// When the fast path's delete finds nothing (the batch changed since the
// claim: some members settled, materialized, claimed again elsewhere), the
// claim runs Ack's two statements in its transaction before it reads
// anything further (fallback): one more round trip, on a rare path. The
// claim's first round trip read only what an ack cannot make claimable (a
// cursor's rows, the group, whether an exception is due, which an ack only
// makes false), so what it read still holds.
type claimAcks struct {
	d      *Driver
	stream int64
	group  string
	leases []driver.Lease
	// whole is the batch of the claim whose members the acks are, when they
	// are exactly those (fast).
	whole claimedBatch
	fast  bool
	// This attempt's (the claim's transaction may run again).
	settled  bool // every ack was resolved (the fast path deleted the batch)
	changed  map[int64]bool
	fellBack bool // the fast path found nothing; settle runs Ack's statements
}

// newClaimAcks takes the acks' batch from the driver's memory, once per
// claim (not per attempt of its transaction).
func (d *Driver) newClaimAcks(p driver.ClaimParams) *claimAcks {
	if len(p.Acks) == 0 {
		return nil
	}
	a := &claimAcks{d: d, stream: p.Stream.ID, group: p.Group, leases: p.Acks}
	a.whole, a.fast = takeClaimed(&d.claimed, p.Stream.ID, p.Group, p.Acks)
	return a
}

// queue resets the attempt's state and queues the acks' statements in the
// claim's first round trip.
func (a *claimAcks) queue(r *roundTrip) {
	a.settled, a.changed, a.fellBack = false, map[int64]bool{}, false
	if !a.fast {
		a.d.queueAck(r, a.stream, a.group, a.leases, a.changed)
		return
	}
	r.add(func(br pgx.BatchResults) error {
		tag, err := br.Exec()
		a.settled = err == nil && tag.RowsAffected() == 1
		a.fellBack = err == nil && !a.settled
		return err
	}, ackWholeQuery, a.stream, a.group, a.leases[0].Token, a.whole.partition, a.whole.ids)
}

// settle runs Ack's statements in the claim's transaction when the fast
// path found nothing to delete, before the claim reads on.
func (a *claimAcks) settle(ctx context.Context, tx *claimTxn) error {
	if !a.fellBack {
		return nil
	}
	r := &roundTrip{}
	a.d.queueAck(r, a.stream, a.group, a.leases, a.changed)
	br := tx.SendBatch(ctx, &r.Batch)
	return errors.Join(r.read(br), br.Close())
}

// lost lists the acks that were not leased with their token.
func (a *claimAcks) lost() []int64 {
	if a.settled {
		return nil
	}
	return driver.Lost(a.leases, a.changed)
}

// failed gives the batch back to the driver's memory after a claim that
// failed (its acks were not recorded, and may be acked again), when the
// fast path took it.
func (a *claimAcks) failed() {
	if a != nil && a.fast {
		a.d.claimed.Add(a.stream, a.group, a.leases[0].Token, a.whole)
	}
}

// queueAck queues Ack's statements for leases, reading the ids they
// resolve into changed: batchAck (a plan for every argument, cached with
// the connection's statements), then the exception-row DELETE. Where the
// connection caches its statements' plans, the DELETE is planned for its
// arguments (plan_cache_mode, for it alone), as settles are (settleMode):
// a generic plan of it could walk the group's every exception.
func (d *Driver) queueAck(r *roundTrip, streamID int64, group string, leases []driver.Lease, changed map[int64]bool) {
	args := newLeaseSet(leases).args(streamID, group)
	collect := func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		for _, id := range ids {
			changed[id] = true
		}
		return err
	}
	r.add(collect, batchAck, args...)
	custom := d.cachesPlans()
	if custom {
		r.add(execRead, `SET LOCAL plan_cache_mode = force_custom_plan`)
	}
	r.add(collect, ackExceptions+leasedPairs+` RETURNING d.msg_id`, args...)
	if custom {
		r.add(execRead, `SET LOCAL plan_cache_mode TO DEFAULT`)
	}
}

// cachesPlans reports whether the connections prepare their statements and
// cache them (pgx's default mode), so that a statement run often gets a
// generic plan.
func (d *Driver) cachesPlans() bool {
	return d.cfg != nil && d.cfg.ConnConfig.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement
}
