package driver

import (
	"slices"
	"time"
)

// PartitionScan is the main claim's reading of one partition past the
// group's cursor, row by row in id order, as every engine does it: the
// engine reads the rows (its SQL, in windows of its size), the scan decides
// what each is. A row the group does not read (another version, not its
// key's head, a routing key its bindings do not select, or a row the group
// already has an exception for) is passed over; one the group reads but
// this member cannot decode is deferred for a member that can; the rest
// are taken, up to Limit.
type PartitionScan struct {
	Plan ClaimPlan
	// Ordered stops the scan at the first deferred row, so that the
	// partition's order holds.
	Ordered bool
	// Limit is the most rows to take.
	Limit int
	// LeaseUntil is when the leases of the taken rows end, as the engine
	// stores it.
	LeaseUntil time.Time

	Taken    []Delivery
	Deferred []Row
	// Cursor is the id of the last row looked at: the claim moves the
	// group's cursor there.
	Cursor int64
	// Scanned counts the rows looked at.
	Scanned int
	// Stopped says an ordered scan met a deferred row.
	Stopped bool
	// More says the scan stopped at its limit or its bound: rows may
	// remain past Cursor (ReadWindows).
	More bool
}

// Done reports whether the scan has its limit or was stopped: it looks at
// no further row.
func (s *PartitionScan) Done() bool { return s.Stopped || len(s.Taken) >= s.Limit }

// Expect makes room in Taken for a window of rows about to be inspected,
// as many as the scan may still take: most windows are taken whole, and
// growing Taken row by row was a claim's largest allocation after its rows.
// more says the window came back full, so that more windows may follow:
// the room is then for the rest of the limit, so that Taken grows once per
// claim rather than once per window.
func (s *PartitionScan) Expect(rows int, more bool) {
	if more {
		rows = s.Limit
	}
	s.Taken = slices.Grow(s.Taken, max(min(rows, s.Limit-len(s.Taken)), 0))
}

// Inspect looks at the next row past the cursor: readable is what the
// engine's statement found out (the row is at the group's versions and
// claimable: its key's head on a compacted stream, no exception row of the
// group for it). It reports whether the scan goes on to the next row.
func (s *PartitionScan) Inspect(r Row, readable bool) bool {
	s.Scanned++
	s.Cursor = r.ID
	switch {
	case !readable || !s.Plan.Matches(r.RoutingKey):
	case !s.Plan.Decodes(r.SchemaVersion):
		s.Deferred = append(s.Deferred, r)
		s.Stopped = s.Ordered
	default:
		s.Taken = append(s.Taken, Delivery{Row: r, Attempt: 1, LeaseUntil: s.LeaseUntil})
	}
	return !s.Done()
}

// The main claim reads a partition in windows of rows past the cursor. The
// first is about the size the claim asks for (FirstWindow), each further
// one twice as large up to MaxClaimWindow, and MaxClaimScan bounds one
// claim's reading when most rows are passed over (other versions, keys the
// bindings do not select): the claim then returns short and the next one
// goes on from the cursor it moved.
const (
	MinClaimWindow = 16
	MaxClaimWindow = 512
	MaxClaimScan   = 20000
)

// FirstWindow is the first window of a claim of limit rows.
func FirstWindow(limit int) int { return min(max(limit, MinClaimWindow), MaxClaimWindow) }

// ReadWindows is the main claim's reading loop, the same on every engine:
// read reads up to size rows past from, handing each to Inspect (and may
// stop early once Done), and returns how many rows its window held. The
// loop reads windows of first rows, then twice as many each time up to
// MaxClaimWindow, until the scan is done, a window comes back short (the
// partition ends), or bound rows were looked at. more reports that the scan
// stopped at its limit or its bound, so rows may remain past its cursor for
// the claim to take; not at the end of the partition or at an ordered
// group's deferred row.
func (s *PartitionScan) ReadWindows(first, bound int, read func(from int64, size int) (int, error)) (more bool, err error) {
	for size := first; !s.Done() && s.Scanned < bound; size = min(2*size, MaxClaimWindow) {
		n, err := read(s.Cursor, size)
		switch {
		case err != nil:
			return false, err
		case s.Stopped:
			return false, nil
		case s.Done():
			return true, nil
		case n < size:
			return false, nil
		}
	}
	return !s.Stopped, nil
}
