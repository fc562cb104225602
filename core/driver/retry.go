package driver

import (
	"context"
	"math/rand/v2"
	"time"
)

// Retries decides when a driver runs its own transaction or autocommit
// statement again after a failure that wrote nothing: each kind of failure
// (the engine classifies its errors into kinds) up to its limit, after a
// pause that grows with the failures so far, cut short when the context
// ends. One value serves one operation's attempts.
type Retries struct {
	// Limits is how many attempts each kind of failure allows, the first
	// included; a kind is an index into it.
	Limits []int
	counts []int
	total  int
}

// Again counts a failure of kind (negative: one not to retry) and reports
// whether to run again, after the pause Backoff gives; when the context
// ends meanwhile it returns the context's error.
func (r *Retries) Again(ctx context.Context, kind int) (bool, error) {
	if kind < 0 || kind >= len(r.Limits) {
		return false, nil
	}
	if r.counts == nil {
		r.counts = make([]int, len(r.Limits))
	}
	r.counts[kind]++
	r.total++
	if r.counts[kind] >= r.Limits[kind] {
		return false, nil
	}
	return true, Sleep(ctx, Backoff(r.total))
}

// Run calls attempt until it succeeds, or fails with a failure kind says
// not to run again (Again), or ctx ends in the pause before the next
// attempt. It returns the last attempt's error, and the context's error in
// the last case.
func (r *Retries) Run(ctx context.Context, attempt func() error, kind func(error) int) (last, ended error) {
	for {
		if last = attempt(); last == nil {
			return nil, nil
		}
		again, err := r.Again(ctx, kind(last))
		if err != nil || !again {
			return last, err
		}
	}
}

// Backoff is the pause before the attempt after the n-th failure: 5 ms a
// failure up to 30 ms, spread over half to one and a half times that, so
// that two transactions that conflicted do not meet again.
func Backoff(n int) time.Duration {
	base := time.Duration(min(max(n, 1), 6)) * 5 * time.Millisecond
	return base/2 + rand.N(base)
}

// Sleep waits d, or until ctx ends, whose error it then returns.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
