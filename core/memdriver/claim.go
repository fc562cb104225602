package memdriver

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// maxScan bounds how many log rows one partition's main claim examines when
// most rows are at other versions or match no binding, as the SQL drivers
// bound it.
const maxScan = 20000

// Claim implements driver.Driver. It runs with the writer held, which makes
// it atomic with respect to registrations (C19) and other claims. Every
// main-claim delivery is leased with an exception of its own: in memory a
// batch record would save nothing.
func (d *Driver) Claim(ctx context.Context, p driver.ClaimParams) (driver.ClaimResult, error) {
	var res driver.ClaimResult
	err := d.write(ctx, nil, func(b *db) error {
		s, err := b.writable(p.Stream.ID)
		if err != nil {
			return fmt.Errorf("memdriver: group %q: %w", p.Group, driver.ErrGroupNotFound)
		}
		g, err := s.group(p.Group)
		if err != nil {
			return err
		}
		if err := s.stale(p.Stream); err != nil {
			return err
		}
		plan, err := driver.PlanClaim(g.cfg, p)
		if err != nil {
			return err
		}
		res.Group = g.cfg
		if len(p.Acks) > 0 {
			// First, so that what they resolve is claimable (an ordered
			// partition they free).
			res.Lost = g.settle(p.Acks, ack)
		}
		if p.Limit <= 0 {
			return nil
		}
		res.Deliveries = s.claimExceptions(g, p, plan)
		n := s.cfg.Partitions
		first := rand.IntN(n)
		for i := range n {
			if len(res.Deliveries) >= p.Limit {
				break
			}
			got, deferred := s.claimPartition(g, p, plan, (first+i)%n, p.Limit-len(res.Deliveries))
			res.Deliveries = append(res.Deliveries, got...)
			res.Deferred += deferred
		}
		return nil
	})
	if err != nil {
		return driver.ClaimResult{}, err
	}
	return res, nil
}

// claimPartition runs the main claim on one partition: it moves the
// group's cursor past every row it examines and leases the claimable ones.
func (s *streamData) claimPartition(g *groupData, p driver.ClaimParams, plan driver.ClaimPlan, part, limit int) ([]driver.Delivery, int) {
	if p.Ordered {
		for _, e := range g.ex {
			if e.partition == part && e.pending() {
				return nil, 0
			}
		}
	}
	var taken []driver.Delivery
	var deferred []*row
	cursor := g.cursors[part]
	for n, id := range s.parts[part].after(cursor) {
		if len(taken) >= limit || n >= maxScan {
			break
		}
		r := s.rows[id]
		cursor = id
		if !plan.Reads(r.SchemaVersion) || !s.isHead(r) || !plan.Matches(r.RoutingKey) {
			continue
		}
		if !plan.Decodes(r.SchemaVersion) {
			// The group reads this version, this member cannot decode it:
			// leave it due for a member that can. An ordered group stops
			// here, so that the partition's order holds.
			deferred = append(deferred, r)
			if p.Ordered {
				break
			}
			continue
		}
		taken = append(taken, driver.Delivery{Row: r.out(), Attempt: 1, LeaseUntil: p.LeaseUntil})
	}
	g.cursors[part] = cursor
	// A row the group already has an exception for (a cursor moved back
	// over it) keeps that exception and is passed over.
	taken = slices.DeleteFunc(taken, func(dl driver.Delivery) bool { _, held := g.ex[dl.ID]; return held })
	deferred = slices.DeleteFunc(deferred, func(r *row) bool { _, held := g.ex[r.ID]; return held })
	now, until := micro(p.Now), micro(p.LeaseUntil)
	for _, t := range taken {
		g.ex[t.ID] = exception{id: t.ID, partition: part, version: t.SchemaVersion, state: driver.StateLeased, attempt: 1, due: until,
			token: p.Token, holder: p.Holder, updated: now}
	}
	for _, r := range deferred {
		g.ex[r.ID] = exception{id: r.ID, partition: part, version: r.SchemaVersion, state: driver.StateDelayed, due: now, holder: p.Holder, updated: now}
	}
	return taken, len(deferred)
}

// claimExceptions leases due exceptions at the versions the member
// decodes: expired leases first, then delayed retries, each earliest due
// first, handed out in id order. Exceptions whose row is gone or no longer
// a head are resolved, and expired leases that used the last attempt are
// buried; neither counts toward the limit.
func (s *streamData) claimExceptions(g *groupData, p driver.ClaimParams, plan driver.ClaimPlan) []driver.Delivery {
	now := micro(p.Now)
	var lowest map[int]int64
	if p.Ordered {
		lowest = g.lowestPending()
	}
	var due []exception
	for _, e := range g.ex {
		if e.pending() && !e.due.After(now) && plan.Decodes(e.version) && (!p.Ordered || lowest[e.partition] == e.id) {
			due = append(due, e)
		}
	}
	leasedFirst := func(e exception) int {
		if e.state == driver.StateLeased {
			return 0
		}
		return 1
	}
	slices.SortFunc(due, func(a, b exception) int {
		return cmp.Or(cmp.Compare(leasedFirst(a), leasedFirst(b)), a.due.Compare(b.due), cmp.Compare(a.id, b.id))
	})
	var picked []exception
	for _, e := range due {
		if len(picked) >= p.Limit {
			break
		}
		r, ok := s.rows[e.id]
		switch {
		case !ok || !s.isHead(r):
			delete(g.ex, e.id) // removed or superseded: nothing is left to deliver
		case e.state == driver.StateLeased && p.MaxAttempts > 0 && e.attempt >= p.MaxAttempts:
			g.ex[e.id] = e.failed(p.LastError, now, driver.StateDead, now)
		default:
			picked = append(picked, e)
		}
	}
	slices.SortFunc(picked, func(a, b exception) int { return cmp.Compare(a.id, b.id) })
	out := make([]driver.Delivery, len(picked))
	until := micro(p.LeaseUntil)
	for i, e := range picked {
		e.state, e.attempt, e.due, e.token, e.holder, e.updated = driver.StateLeased, e.attempt+1, until, p.Token, p.Holder, now
		g.ex[e.id] = e
		out[i] = driver.Delivery{Row: s.rows[e.id].out(), Attempt: e.attempt, LeaseUntil: until}
	}
	return out
}

// lowestPending returns each partition's lowest pending exception, the
// only one an ordered group may hand out there (C10).
func (g *groupData) lowestPending() map[int]int64 {
	out := map[int]int64{}
	for _, e := range g.ex {
		if low, ok := out[e.partition]; e.pending() && (!ok || e.id < low) {
			out[e.partition] = e.id
		}
	}
	return out
}

// failed returns e after a failed attempt: delayed until due, or dead, with
// the failure added to its history.
func (e exception) failed(msg string, now time.Time, state driver.ExceptionState, due time.Time) exception {
	e.history = append(slices.Clip(e.history), driver.FailureRecord{Attempt: e.attempt, Error: driver.CutHistoryError(msg), At: now, Holder: e.holder})
	e.state, e.due, e.token, e.lastError, e.updated = state, due, "", msg, now
	if e.firstFailed.IsZero() {
		e.firstFailed = now
	}
	return e
}
