package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// claimAcks are the acks a claim carries (ClaimParams.Acks), resolved in
// the claim's transaction before it reads anything. They go out in the
// transaction's first round trip, right after it begins: the members of
// batches this driver's recent claims wrote as Ack's statements that
// compare each batch's ids (batchAcks), one per batch; the others as Ack's
// two statements, batchAck (batch members) and the exception-row DELETE,
// which report exactly what they resolved.
//
// A batch statement that finds its batch changed since (some members
// settled, materialized, claimed again elsewhere) changes nothing: the
// claim then runs Ack's two statements for those acks in its transaction
// before it reads anything further (settle), one more round trip on a rare
// path. The claim's first round trip read only what an ack cannot make
// claimable (a cursor's rows, the group, whether an exception is due, which
// an ack only makes false), so what it read still holds.
type claimAcks struct {
	d       *Driver
	leases  []driver.Lease
	batches *batchAcks     // with the stream and group
	rest    []driver.Lease // not members of a remembered batch
	// This attempt's (the claim's transaction may run again).
	changed map[int64]bool
}

// newClaimAcks plans the acks from the driver's memory, once per claim (not
// per attempt of its transaction).
func (d *Driver) newClaimAcks(p driver.ClaimParams) *claimAcks {
	if len(p.Acks) == 0 {
		return nil
	}
	a := &claimAcks{d: d, leases: p.Acks}
	a.batches, a.rest = d.newBatchAcks(p.Stream.ID, p.Group, p.Acks)
	return a
}

// queue resets the attempt's state and queues the acks' statements in the
// claim's first round trip.
func (a *claimAcks) queue(r *roundTrip) {
	a.changed = map[int64]bool{}
	a.batches.queue(r)
	if len(a.rest) > 0 {
		a.d.queueAck(r, a.batches.stream, a.batches.group, a.rest, a.changed)
	}
}

// settle runs Ack's statements in the claim's transaction for the acks
// whose batch did not compare equal, before the claim reads on.
func (a *claimAcks) settle(ctx context.Context, tx *claimTxn) error {
	missed := a.batches.missed()
	if len(missed) == 0 {
		return nil
	}
	r := &roundTrip{}
	a.d.queueAck(r, a.batches.stream, a.batches.group, missed, a.changed)
	br := tx.SendBatch(ctx, &r.Batch)
	return errors.Join(r.read(br), br.Close())
}

// lost lists the acks that were not leased with their token: of those no
// batch statement resolved, the ones Ack's statements did not find.
func (a *claimAcks) lost() []int64 {
	return driver.Lost(unresolved(a.leases, a.batches.missed(), a.rest), a.changed)
}

// done updates the driver's memory of the acks' batches once the claim
// ended: committed, or failed (nil: the claim carried no acks).
func (a *claimAcks) done(committed bool) {
	if a != nil {
		a.batches.done(&a.d.claimed, committed)
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
		ids, err := collectIDs(rows, len(leases))
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
