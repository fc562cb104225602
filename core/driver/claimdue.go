package driver

import (
	"cmp"
	"slices"
	"time"
)

// DueFate is what the exception claim does with a due exception it
// examined.
type DueFate int

const (
	// LeaseDue leases the delivery again, at its next attempt.
	LeaseDue DueFate = iota
	// ResolveDue deletes the exception: its row was removed (retention) or
	// is no longer its key's head (compaction), so nothing is left to
	// deliver.
	ResolveDue
	// BuryDue makes the delivery dead: its lease expired on the last
	// attempt p.MaxAttempts allows.
	BuryDue
)

// FateOfDue decides what the claim p does with a due exception in state at
// attempt, whose row is claimable (still in the log and, on a compacted
// stream, its key's head), so that every engine resolves, buries and leases
// alike.
func FateOfDue(p ClaimParams, state ExceptionState, attempt int, claimable bool) DueFate {
	switch {
	case !claimable:
		return ResolveDue
	case state == StateLeased && p.MaxAttempts > 0 && attempt >= p.MaxAttempts:
		return BuryDue
	}
	return LeaseDue
}

// ClaimDue runs the exception claim's pages until it has leased limit
// deliveries or a page dropped nothing. page examines up to n due
// exceptions, leases those still claimable and resolves or buries the others
// (FateOfDue), which it counts as dropped. Dropped candidates do not count
// toward the limit, so the claim looks again past them: an empty claim then
// means that nothing is due. The deliveries are returned in id order, as the
// main claim returns its rows.
func ClaimDue(limit int, page func(n int) (leased []Delivery, dropped int, err error)) ([]Delivery, error) {
	var out []Delivery
	for len(out) < limit {
		got, dropped, err := page(limit - len(out))
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
		if dropped == 0 {
			break
		}
	}
	slices.SortFunc(out, func(a, b Delivery) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// DueFates sorts the due exceptions a claim examined by FateOfDue, for an
// engine that then changes each kind in one statement: the ids to resolve,
// the ids to bury, and the ids to lease again with their deliveries.
type DueFates struct {
	Resolve, Bury, Lease []int64
	Leased               []Delivery
}

// Add sorts the due exception of row id, in state at attempt (claimable as
// FateOfDue reads it); row is read only for a delivery leased again, at its
// next attempt, until leaseUntil (as the engine stores it).
func (f *DueFates) Add(p ClaimParams, id int64, state ExceptionState, attempt int, claimable bool, row func() (Row, error), leaseUntil time.Time) error {
	switch FateOfDue(p, state, attempt, claimable) {
	case ResolveDue:
		f.Resolve = append(f.Resolve, id)
	case BuryDue:
		f.Bury = append(f.Bury, id)
	default:
		r, err := row()
		if err != nil {
			return err
		}
		f.Lease = append(f.Lease, id)
		f.Leased = append(f.Leased, Delivery{Row: r, Attempt: attempt + 1, LeaseUntil: leaseUntil})
	}
	return nil
}

// Examined counts the exceptions sorted; Dropped those resolved or buried,
// which ClaimDue looks past.
func (f *DueFates) Examined() int { return len(f.Resolve) + len(f.Bury) + len(f.Lease) }

// Dropped counts the exceptions resolved or buried.
func (f *DueFates) Dropped() int { return len(f.Resolve) + len(f.Bury) }
