package mysql

import (
	"context"
	"errors"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// claimAcking is Claim with acks (ClaimParams.Acks): one transaction of the
// driver's own records the acks first, as Ack would, and then claims as
// Claim does, so that the consumer commits once per batch and an ordered
// partition the acks free is claimable at once. The probe, which would
// cost a round trip outside the transaction, is read inside it, after the
// acks; right after a claim that took its limit the transaction starts
// with claimHot's cursor lock instead, and goes on with the probe and the
// usual claim in the same transaction when that got nothing. Either way
// the acks are recorded once, with the claim, also when nothing is left to
// claim, and not at all when the claim fails. Deadlocks and lock wait
// timeouts re-run the whole transaction, acks included (ownTx).
func (d *Driver) claimAcking(ctx context.Context, p driver.ClaimParams) (driver.ClaimResult, error) {
	hot, isHot := d.hotPartition(p)
	var out claimOut
	var acked ackedIn
	err := d.withLog(ctx, p.Stream.ID, func() error {
		return d.ownTx(ctx, false, func(tx querier) error {
			out.Reset(driver.ClaimResult{})
			var err error
			if acked, err = d.ackIn(ctx, tx, p.Stream.ID, p.Group, p.Acks); err != nil {
				return err
			}
			deferred := 0
			if isHot {
				ok, err := d.claimHotIn(ctx, tx, p, hot, &out)
				if err != nil || ok {
					return err
				}
				deferred = out.Deferred
			}
			pr, err := d.probe(ctx, tx, p)
			if err != nil {
				return err
			}
			out.Reset(driver.ClaimResult{Group: pr.group, Deferred: deferred})
			if !pr.worthClaiming(p) {
				return nil
			}
			return d.claim(ctx, tx, p, pr, &out)
		})
	})
	if err != nil {
		// A transaction that failed changed no batch, and the cache learns
		// what the acks did only after COMMIT; after a COMMIT of unknown
		// outcome it cannot know.
		if errors.Is(err, driver.ErrOutcomeUnknown) {
			d.batches.forget(p.Stream.ID, p.Group, sqldb.Tokens(p.Acks)...)
		}
		return driver.ClaimResult{}, err
	}
	if acked.commit != nil {
		acked.commit()
	}
	out.Lost = acked.lost
	d.claimed(p, &out)
	return out.ClaimResult, nil
}

// ackedIn is what ackIn did in a transaction: the leases it found lost, and
// what the cache of batches learns once the transaction commits (nil:
// nothing).
type ackedIn struct {
	lost   []int64
	commit func()
}

// ackIn acks leases in the transaction tx, with the statements Ack takes
// outside one, and reports exactly the leases that were not leased with
// their token. Members of one batch this driver claimed are one
// compare-and-set statement on it; all the batches of one such claim, one
// DELETE ... RETURNING (MariaDB); other leases on MariaDB one
// DELETE ... RETURNING on their exception rows per chunk. Whatever those
// leave (a batch changed meanwhile, members of batches the driver does not
// remember, MySQL) takes the locking path: the leases' batches locked,
// then their exception rows.
func (d *Driver) ackIn(ctx context.Context, tx querier, streamID int64, group string, leases []driver.Lease) (ackedIn, error) {
	op := ackOp(streamID, group)
	forget := func() { d.forgetTokens(streamID, group, leases) }
	if cs, ok := d.casSettle(op, leases); ok {
		n, err := cs.run(ctx, tx)
		if err != nil {
			return ackedIn{}, err
		}
		if n == 1 {
			return ackedIn{commit: func() { d.batches.settled(streamID, cs.b, cs.remaining) }}, nil
		}
		// The batch changed since the claim: the locking path reads it.
		return ackLockedIn(ctx, tx, op, leases, leases, nil, forget)
	}
	if parts, ok := d.batches.whole(streamID, group, leases); ok && d.returning() {
		rest, err := ackWholeIn(ctx, tx, streamID, group, leases, parts)
		if err != nil {
			return ackedIn{}, err
		}
		changed := make(map[int64]bool, len(leases))
		for _, l := range leases {
			changed[l.ID] = true
		}
		for _, l := range rest {
			changed[l.ID] = false
		}
		return ackLockedIn(ctx, tx, op, leases, rest, changed, forget)
	}
	if !d.returning() || d.batches.known(streamID, group, leases) {
		return ackLockedIn(ctx, tx, op, leases, leases, nil, forget)
	}
	changed := make(map[int64]bool, len(leases))
	if err := ackReturning(ctx, tx, streamID, group, leases, changed); err != nil {
		return ackedIn{}, err
	}
	// Those it did not find may be members of batches another process
	// wrote (or this one no longer remembers): nothing more runs when every
	// lease was found, the common case.
	var rest []driver.Lease
	for _, l := range leases {
		if !changed[l.ID] {
			rest = append(rest, l)
		}
	}
	commit := func() { d.forgetTokens(streamID, group, rest) }
	return ackLockedIn(ctx, tx, op, leases, rest, changed, commit)
}

// ackLockedIn acks rest, of ls, on the locking path (leaseWrites.SettleIn) in
// tx, after the leases already marked in changed; commit is what the cache
// learns once tx commits.
func ackLockedIn(ctx context.Context, tx querier, op sqldb.Settle, ls, rest []driver.Lease, changed map[int64]bool, commit func()) (ackedIn, error) {
	if changed == nil {
		changed = make(map[int64]bool, len(ls))
	}
	if len(rest) > 0 {
		if err := leaseWrites.SettleIn(ctx, tx, op, rest, changed); err != nil {
			return ackedIn{}, err
		}
	}
	return ackedIn{lost: driver.Lost(ls, changed), commit: commit}, nil
}
