package driver

import (
	"slices"
	"sync"
)

// NextClaim is a driver's in-process guess at a group's next claim: what
// this process's last claim of the group left for it, a note of the
// driver's own (T). A claim that filled its limit leaves one, since more
// work is then likely; the next claim uses it to skip its probe (a round
// trip that would only say so again) and start where the backlog is. The
// drivers note: SQLite nothing (the note's presence is the hint), MySQL the
// partition whose new rows filled the claim, PostgreSQL where that claim
// left its cursor and, in a second NextClaim, the window of rows it read
// past it.
//
// A note may be wrong at any time: another process claimed, a producer
// stopped, a group was reset. So a driver may let it decide only what to try
// first, never what a claim returns: the claim's transaction reads again,
// under its locks, everything it relies on, and a stale note costs a round
// trip. Drivers forget the note when a claim does not fill its limit or
// fails; entries are per (stream, group) a process claims, and a group's
// entry is replaced by its next claim.
type NextClaim[T any] struct {
	m sync.Map // groupKey -> T
}

type groupKey struct {
	stream int64
	group  string
}

// Hint returns the note the group's last claim left, if it left one.
func (n *NextClaim[T]) Hint(stream int64, group string) (T, bool) {
	v, ok := n.m.Load(groupKey{stream, group})
	if !ok {
		var zero T
		return zero, false
	}
	return v.(T), true
}

// Take is Hint for a note that the claim using it uses up: it is forgotten.
func (n *NextClaim[T]) Take(stream int64, group string) (T, bool) {
	v, ok := n.m.LoadAndDelete(groupKey{stream, group})
	if !ok {
		var zero T
		return zero, false
	}
	return v.(T), true
}

// Set leaves note for the group's next claim.
func (n *NextClaim[T]) Set(stream int64, group string, note T) {
	n.m.Store(groupKey{stream, group}, note)
}

// Forget drops the group's note.
func (n *NextClaim[T]) Forget(stream int64, group string) {
	n.m.Delete(groupKey{stream, group})
}

// Note records how the group's claim ended: one that filled its limit
// leaves note for the next claim, any other (or a failed one) forgets what
// was there.
func (n *NextClaim[T]) Note(stream int64, group string, note T, filled bool) {
	if filled {
		n.Set(stream, group, note)
	} else {
		n.Forget(stream, group)
	}
}

// StickyClaims bounds how many claims in a row a member starts at the
// partition whose rows filled its claim before. Staying saves a round trip
// (the engines read the rows past that cursor ahead, or go there without a
// probe); moving on after a few keeps a partition that never runs dry from
// starving the others of a member that reads them all.
const StickyClaims = 16

// Streak is a group's claims in a row, in this process, that filled their
// limit from one partition: Count of them, from Partition.
type Streak struct {
	Partition, Count int
}

// Then is the streak after a claim that filled its limit from partition
// part. The claim after StickyClaims in a row started elsewhere (Stay), so
// wherever its rows were, a new streak begins there.
func (s Streak) Then(part int) Streak {
	if s.Count > 0 && s.Count < StickyClaims && s.Partition == part {
		return Streak{part, s.Count + 1}
	}
	return Streak{part, 1}
}

// Stay reports whether the next claim starts at s.Partition again: after
// fewer than StickyClaims in a row there, or always on a stream of one
// partition, which has no other to starve. Otherwise it starts where the
// engine draws, as a claim does without a streak.
func (s Streak) Stay(partitions int) bool {
	return s.Count > 0 && (partitions == 1 || s.Count < StickyClaims)
}

// ClaimMemo remembers what this process's recent claims wrote (V: the
// driver's record of a claim's batch leases), by claim token, so that a
// settle naming exactly what a claim wrote can change it in one statement
// that compares what is stored with what the memo expects, without reading
// it first. Like NextClaim it is a hint: a batch changed meanwhile by
// anything else (another process, an expiry, a settle of some members)
// fails the comparison, and the settle then takes the path that reads what
// is stored. It holds the last ClaimMemoSize claims; the oldest go first.
type ClaimMemo[V any] struct {
	mu    sync.Mutex
	m     map[claimKey]V
	order []claimKey
}

type claimKey struct {
	stream int64
	group  string
	token  string
}

// ClaimMemoSize bounds the claims a ClaimMemo remembers.
const ClaimMemoSize = 4096

// Add remembers v for the claim with token.
func (c *ClaimMemo[V]) Add(stream int64, group, token string, v V) {
	k := claimKey{stream, group, token}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[claimKey]V{}
	}
	for len(c.m) >= ClaimMemoSize && len(c.order) > 0 {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
	if len(c.order) > 4*ClaimMemoSize {
		// Keys of entries settled away pile up in order: keep the live ones.
		c.order = slices.DeleteFunc(c.order, func(k claimKey) bool { _, ok := c.m[k]; return !ok })
	}
	c.m[k] = v
	c.order = append(c.order, k)
}

// Peek returns what the claim with token wrote, if it is remembered. The
// caller must not change v in place: Update replaces it.
func (c *ClaimMemo[V]) Peek(stream int64, group, token string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[claimKey{stream, group, token}]
	return v, ok
}

// Take returns and forgets what the claim with token wrote.
func (c *ClaimMemo[V]) Take(stream int64, group, token string) (V, bool) {
	k := claimKey{stream, group, token}
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	if ok {
		delete(c.m, k)
	}
	return v, ok
}

// Update replaces what the claim with token wrote by what f makes of it,
// or forgets it when f says so; f runs under the memo's lock, only for a
// remembered claim.
func (c *ClaimMemo[V]) Update(stream int64, group, token string, f func(V) (next V, keep bool)) {
	k := claimKey{stream, group, token}
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	if !ok {
		return
	}
	if next, keep := f(v); keep {
		c.m[k] = next
	} else {
		delete(c.m, k)
	}
}

// Forget drops what the claims with tokens wrote.
func (c *ClaimMemo[V]) Forget(stream int64, group string, tokens ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range tokens {
		delete(c.m, claimKey{stream, group, t})
	}
}
