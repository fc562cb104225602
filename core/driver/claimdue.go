package driver

import (
	"cmp"
	"slices"
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
