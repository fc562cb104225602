package memdriver

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// settle applies fn to each delivery still leased with its lease's token,
// on its own (C20): fn returns the exception to keep, or false to resolve
// it. It returns the ids of the leases that were not held.
func (g *groupData) settle(leases []driver.Lease, fn func(exception) (exception, bool)) []int64 {
	changed := map[int64]bool{}
	for _, l := range leases {
		e, ok := g.ex[l.ID]
		if !ok || e.state != driver.StateLeased || e.token != l.Token || changed[l.ID] {
			continue
		}
		changed[l.ID] = true
		if next, keep := fn(e); keep {
			g.ex[l.ID] = next
		} else {
			delete(g.ex, l.ID)
		}
	}
	return driver.Lost(leases, changed)
}

// ack resolves a delivery.
func ack(exception) (exception, bool) { return exception{}, false }

// settleGroup runs fn on the group's exceptions, in the caller's
// transaction when tx is not nil. A stream or group that is gone holds no
// lease: every lease is lost.
func (d *Driver) settleGroup(ctx context.Context, tx driver.Tx, streamID int64, group string, leases []driver.Lease,
	fn func(*groupData) []int64) (driver.SettleResult, error) {
	var res driver.SettleResult
	err := d.write(ctx, tx, func(b *db) error {
		s, err := b.writable(streamID)
		if err != nil {
			res.Lost = driver.Lost(leases, nil)
			return nil
		}
		g, err := s.group(group)
		if err != nil {
			res.Lost = driver.Lost(leases, nil)
			return nil
		}
		res.Lost = fn(g)
		return nil
	})
	if err != nil {
		return driver.SettleResult{}, err
	}
	return res, nil
}

// Ack implements driver.Driver.
func (d *Driver) Ack(ctx context.Context, p driver.AckParams) (driver.SettleResult, error) {
	return d.settleGroup(ctx, p.Tx, p.StreamID, p.Group, p.Leases, func(g *groupData) []int64 { return g.settle(p.Leases, ack) })
}

// Fail implements driver.Driver: each failure with its own error and due
// time, added to the delivery's failure history.
func (d *Driver) Fail(ctx context.Context, p driver.FailParams) (driver.SettleResult, error) {
	leases := make([]driver.Lease, len(p.Failures))
	for i, f := range p.Failures {
		leases[i] = f.Lease
	}
	now := micro(p.Now)
	return d.settleGroup(ctx, p.Tx, p.StreamID, p.Group, leases, func(g *groupData) []int64 {
		changed := map[int64]bool{}
		for _, f := range p.Failures {
			lost := g.settle([]driver.Lease{f.Lease}, func(e exception) (exception, bool) {
				if f.Dead {
					return e.failed(f.Error, now, driver.StateDead, now), true
				}
				return e.failed(f.Error, now, driver.StateDelayed, micro(f.Due)), true
			})
			if len(lost) == 0 {
				changed[f.Lease.ID] = true
			}
		}
		return driver.Lost(leases, changed)
	})
}

// release gives a delivery back unstarted: due now, its attempt as before
// the claim.
func release(now time.Time) func(exception) (exception, bool) {
	return func(e exception) (exception, bool) {
		e.state, e.due, e.attempt, e.token, e.updated = driver.StateDelayed, now, e.attempt-1, "", now
		return e, true
	}
}

// Release implements driver.Driver.
func (d *Driver) Release(ctx context.Context, p driver.ReleaseParams) (driver.SettleResult, error) {
	now := micro(p.Now)
	if p.ClaimToken == "" {
		return d.settleGroup(ctx, nil, p.StreamID, p.Group, p.Leases, func(g *groupData) []int64 { return g.settle(p.Leases, release(now)) })
	}
	_, err := d.settleGroup(ctx, nil, p.StreamID, p.Group, nil, func(g *groupData) []int64 {
		var leases []driver.Lease
		for id, e := range g.ex {
			if e.state == driver.StateLeased && e.token == p.ClaimToken {
				leases = append(leases, driver.Lease{ID: id, Token: e.token})
			}
		}
		g.settle(leases, release(now))
		return nil
	})
	return driver.SettleResult{}, err
}

// Extend implements driver.Driver.
func (d *Driver) Extend(ctx context.Context, p driver.ExtendParams) (driver.SettleResult, error) {
	until, now := micro(p.Until), micro(p.Now)
	return d.settleGroup(ctx, nil, p.StreamID, p.Group, p.Leases, func(g *groupData) []int64 {
		return g.settle(p.Leases, func(e exception) (exception, bool) {
			e.due, e.updated = until, now
			return e, true
		})
	})
}

// ListDead implements driver.Driver.
func (d *Driver) ListDead(ctx context.Context, p driver.ListDeadParams) ([]driver.DeadLetter, error) {
	var out []driver.DeadLetter
	err := d.read(ctx, func(b *db) error {
		s, err := b.stream(p.StreamID)
		if err != nil {
			return nil
		}
		g, err := s.group(p.Group)
		if err != nil {
			return nil
		}
		for id, e := range g.ex {
			r, ok := s.rows[id]
			if e.state != driver.StateDead || id <= p.AfterID || !ok {
				continue
			}
			dl := driver.DeadLetter{Row: r.out(), Attempt: e.attempt, Error: e.lastError, FirstFailed: e.firstFailed, DiedAt: e.updated, Holder: e.holder}
			if dl.FirstFailed.IsZero() {
				dl.FirstFailed = e.updated
			}
			if p.History {
				dl.History = slices.Clone(e.history)
			}
			out = append(out, dl)
		}
		slices.SortFunc(out, func(a, b driver.DeadLetter) int { return cmp.Compare(a.ID, b.ID) })
		if len(out) > p.Limit {
			out = out[:p.Limit]
		}
		return nil
	})
	return out, err
}

// Replay implements driver.Driver.
func (d *Driver) Replay(ctx context.Context, p driver.ReplayParams) (int64, error) {
	now := micro(p.Now)
	return d.onDead(ctx, p.StreamID, p.Group, p.IDs, func(g *groupData, e exception) {
		e.state, e.attempt, e.due, e.updated = driver.StateDelayed, 0, now, now
		g.ex[e.id] = e
	})
}

// Discard implements driver.Driver.
func (d *Driver) Discard(ctx context.Context, p driver.DiscardParams) (int64, error) {
	return d.onDead(ctx, p.StreamID, p.Group, p.IDs, func(g *groupData, e exception) { delete(g.ex, e.id) })
}

// onDead applies fn to the group's dead deliveries among ids (all of them
// when ids is nil) and counts them.
func (d *Driver) onDead(ctx context.Context, streamID int64, group string, ids []int64, fn func(*groupData, exception)) (int64, error) {
	var n int64
	err := d.write(ctx, nil, func(b *db) error {
		s, err := b.writable(streamID)
		if err != nil {
			return nil
		}
		g, err := s.group(group)
		if err != nil {
			return nil
		}
		named := map[int64]bool{}
		for _, id := range ids {
			named[id] = true
		}
		for id, e := range g.ex {
			if e.state == driver.StateDead && (ids == nil || named[id]) {
				fn(g, e)
				n++
			}
		}
		return nil
	})
	return n, err
}
