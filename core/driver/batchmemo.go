package driver

import "slices"

// MemoBatch is a batch lease one of this process's claims wrote in a
// partition, as a BatchMemo keeps it.
type MemoBatch struct {
	Partition int32
	IDs       []int64 // sorted, as the batch stores them
}

// BatchAck is what acks do to one remembered batch: they remove the named
// members (Leases) from Expected, leaving Remaining, or delete the batch
// when nothing remains. A driver writes it as one statement that changes
// the batch only while it holds exactly Expected.IDs.
type BatchAck struct {
	Token     string
	Expected  MemoBatch
	Remaining []int64
	Leases    []Lease
}

// BatchMemo remembers the batches this process's recent claims wrote, and
// what its settles have left in them since, so that a settle naming
// members of such batches (an ack; on MySQL an extension of all that
// remains) changes each with one statement that compares the stored ids
// with those expected, without locking and reading the batch first: a
// claim acked whole or in a few parts costs one small statement per batch.
// Like ClaimMemo, which holds it, it is a hint: a batch changed meanwhile
// by anything else (another process, an expiry, a Fail or Extend of some
// members, a reset) fails the comparison, the statement changes nothing,
// and those leases take the driver's locking path, which reads what is
// stored.
type BatchMemo struct {
	memo ClaimMemo[[]MemoBatch]
}

// Add remembers the batches a claim with token wrote, one per partition.
func (m *BatchMemo) Add(stream int64, group, token string, batches []MemoBatch) {
	if len(batches) > 0 {
		m.memo.Add(stream, group, token, batches)
	}
}

// Known reports whether any lease's token is that of a remembered claim.
func (m *BatchMemo) Known(stream int64, group string, leases []Lease) bool {
	return slices.ContainsFunc(leases, func(l Lease) bool {
		_, ok := m.memo.Peek(stream, group, l.Token)
		return ok
	})
}

// Batches returns the remembered batches of the claim with token.
func (m *BatchMemo) Batches(stream int64, group, token string) []MemoBatch {
	batches, _ := m.memo.Peek(stream, group, token)
	return batches
}

// Forget drops the claims with tokens, after a settle that changed their
// batches without comparing (a locking path, a release).
func (m *BatchMemo) Forget(stream int64, group string, tokens ...string) {
	m.memo.Forget(stream, group, tokens...)
}

// Plan splits leases into the acks of remembered batches, one BatchAck per
// batch, and the rest: leases of claims it does not know, or not among
// their batches' members (rows of their own, with the claim's token).
func (m *BatchMemo) Plan(stream int64, group string, leases []Lease) (acks []BatchAck, rest []Lease) {
	var token string
	var batches []MemoBatch
	at := make([]int, 0, 4) // index in acks of each of the token's batches, -1 before its first lease
	last, next := -1, -1    // the batch of the last lease found, and where in its ids
	for i, l := range leases {
		if i == 0 || l.Token != token {
			token = l.Token
			batches, _ = m.memo.Peek(stream, group, token)
			at, last = at[:0], -1
			for _, b := range batches {
				at = append(at, slices.IndexFunc(acks, func(a BatchAck) bool { return a.Token == token && a.Expected.Partition == b.Partition }))
			}
		}
		// Leases mostly come in their batch's order: the id after the last
		// one found is tried first.
		if next++; last < 0 || next >= len(batches[last].IDs) || batches[last].IDs[next] != l.ID {
			last, next = -1, -1
			for k, b := range batches {
				if at, ok := slices.BinarySearch(b.IDs, l.ID); ok {
					last, next = k, at
					break
				}
			}
		}
		j := last
		if j < 0 {
			rest = append(rest, l)
			continue
		}
		if at[j] < 0 {
			at[j] = len(acks)
			acks = append(acks, BatchAck{Token: token, Expected: batches[j], Leases: make([]Lease, 0, min(len(leases)-i, len(batches[j].IDs)))})
		}
		acks[at[j]].Leases = append(acks[at[j]].Leases, l)
	}
	for i := range acks {
		acks[i].Remaining = remainingAfter(acks[i].Expected.IDs, acks[i].Leases)
	}
	return acks, rest
}

// remainingAfter returns the ids (sorted) that leases do not name.
func remainingAfter(ids []int64, leases []Lease) []int64 {
	named := make([]int64, len(leases))
	for i, l := range leases {
		named[i] = l.ID
	}
	if !slices.IsSorted(named) {
		slices.Sort(named)
	}
	left := make([]int64, 0, len(ids))
	for _, id := range ids {
		for len(named) > 0 && named[0] < id {
			named = named[1:]
		}
		if len(named) == 0 || named[0] != id {
			left = append(left, id)
		}
	}
	return left
}

// Settled records what a's statement did, once its outcome is known:
// changed, the batch now holds a.Remaining; otherwise (it did not compare
// equal, or failed with its outcome unknown) the batch is forgotten. A
// batch another settle of this process changed meanwhile is forgotten too.
func (m *BatchMemo) Settled(stream int64, group string, a BatchAck, changed bool) {
	m.memo.Update(stream, group, a.Token, func(batches []MemoBatch) ([]MemoBatch, bool) {
		i := slices.IndexFunc(batches, func(b MemoBatch) bool { return b.Partition == a.Expected.Partition })
		if i < 0 {
			return batches, true
		}
		batches = slices.Clone(batches)
		if changed && len(a.Remaining) > 0 && slices.Equal(batches[i].IDs, a.Expected.IDs) {
			batches[i].IDs = a.Remaining
		} else {
			batches = slices.Delete(batches, i, i+1)
		}
		return batches, len(batches) > 0
	})
}
