package driver

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// The checks after an idle spell come at intervals that double from
// TxWatchFirst up to every, 100 intervals after a failed check; the
// checker ends once nothing is left. Time runs through the test's timer.
func TestTxWatchIntervalsDouble(t *testing.T) {
	t.Parallel()
	const every = 5 * time.Millisecond
	asked, fire := make(chan time.Duration), make(chan time.Time)
	type answer struct {
		ended bool
		err   error
	}
	answers := make(chan answer)
	w := &TxWatch[int]{after: func(d time.Duration) <-chan time.Time { asked <- d; return fire }}
	defer w.Close()
	w.Add(1, every, checkFunc(func(_ context.Context, items []int) ([]bool, error) {
		a := <-answers
		return []bool{a.ended}, a.err
	}))
	step := func(want time.Duration, a answer) {
		t.Helper()
		if got := <-asked; got != want {
			t.Fatalf("check after %v; want %v", got, want)
		}
		fire <- time.Time{}
		answers <- a
	}
	for _, d := range []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond, every, every} {
		step(d, answer{})
	}
	step(every, answer{err: errors.New("server away")})
	step(100*every, answer{ended: true})
	w.Close() // returns once the checker ended: it asks for no further check
}

// Past TxWatchMax the oldest watched items are dropped; an item is
// watched until it ends or for TxWatchMaxAge, not longer. The clock is
// the test's.
func TestTxWatchCapAndAge(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	w := &TxWatch[int]{max: 3, now: func() time.Time { return now }}
	w.Manual()
	var seen []int
	var end int = -1
	check := checkFunc(func(_ context.Context, items []int) ([]bool, error) {
		seen = slices.Clone(items)
		ended := make([]bool, len(items))
		for i, it := range items {
			ended[i] = it == end
		}
		return ended, nil
	})
	for i := range 5 {
		w.Add(i, time.Second, check)
	}
	pass := func(wantLeft int, wantSeen ...int) {
		t.Helper()
		left, err := w.Pass(context.Background(), check)
		if err != nil || left != wantLeft || !slices.Equal(seen, wantSeen) {
			t.Fatalf("pass saw %v, left %d, %v; want %v, %d left", seen, left, err, wantSeen, wantLeft)
		}
	}
	pass(3, 2, 3, 4) // the cap dropped the two oldest
	now = now.Add(TxWatchMaxAge)
	w.Add(5, time.Second, check) // drops 2
	pass(3, 3, 4, 5)             // exactly TxWatchMaxAge old: still watched
	now = now.Add(time.Nanosecond)
	pass(1, 3, 4, 5) // 3 and 4 too old
	end = 5
	pass(0, 5) // ended
}

// Close cancels a running check and returns only after the checker has;
// an Add after it starts none.
func TestTxWatchCloseWaits(t *testing.T) {
	t.Parallel()
	fired := make(chan time.Time, 1)
	fired <- time.Time{}
	var timers atomic.Int32
	w := &TxWatch[int]{after: func(time.Duration) <-chan time.Time {
		if timers.Add(1) == 1 {
			return fired
		}
		return nil // never fires
	}}
	checking, cancelled, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var returned atomic.Bool
	check := checkFunc(func(ctx context.Context, items []int) ([]bool, error) {
		close(checking)
		<-ctx.Done()
		close(cancelled)
		<-release
		returned.Store(true)
		return nil, ctx.Err()
	})
	w.Add(1, time.Second, check)
	<-checking
	closed := make(chan bool)
	go func() {
		w.Close()
		closed <- returned.Load()
	}()
	<-cancelled
	close(release)
	if !<-closed {
		t.Fatal("Close returned while the checker still ran")
	}
	n := timers.Load()
	w.Add(2, time.Second, check)
	w.Close()
	if timers.Load() != n {
		t.Fatal("an Add after Close started a checker")
	}
	none := checkFunc(func(context.Context, []int) ([]bool, error) { return nil, nil })
	if left, _ := w.Pass(context.Background(), none); left != 1 {
		t.Fatalf("%d watched after Close; want only the one from before it", left)
	}
}

type checkFunc func(ctx context.Context, items []int) ([]bool, error)

func (f checkFunc) Check(ctx context.Context, items []int) ([]bool, error) { return f(ctx, items) }
