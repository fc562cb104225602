package postgres

import (
	"slices"
	"testing"
	"time"
)

// An append inside the debounce interval carries no NOTIFY, and nothing is
// scheduled for it until it has committed: a trailing NOTIFY sent before its
// commit would wake consumers to an empty claim and leave its rows to the
// next poll (TestNotifyWakesOtherClients lost messages that way under load).
func TestTrailingNotifyWaitsForCommit(t *testing.T) {
	t.Parallel()
	d := &Driver{notify: true} // no prefix: a trailing NOTIFY that fires sends nothing
	const stream = 7
	if !d.notifyNow(stream) {
		t.Fatal("the first append of an interval must carry its NOTIFY")
	}
	if d.notifyNow(stream) {
		t.Fatal("a second append inside the interval carried a NOTIFY; want it debounced")
	}
	s := d.notifyState(stream)
	s.mu.Lock()
	pending := s.pending
	s.mu.Unlock()
	if pending {
		t.Fatal("a trailing NOTIFY was scheduled before the debounced append committed")
	}
	d.notifyAfterCommit(stream)
	s.mu.Lock()
	pending = s.pending
	s.mu.Unlock()
	if !pending {
		t.Fatal("no trailing NOTIFY scheduled after the debounced append committed")
	}
	// The trailing NOTIFY fires within the interval's end and clears the
	// state; wait for it with a bound, not a sleep.
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		pending = s.pending
		s.mu.Unlock()
		if !pending {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the trailing NOTIFY did not fire within 10s")
		}
		time.Sleep(time.Millisecond)
	}
	if (&Driver{}).notifyNow(stream) {
		t.Error("a driver WithoutNotify carried a NOTIFY")
	}
}

// The checks of ProduceTx transactions after an idle spell come at
// intervals that double from txWakeFirst up to notifyEvery: a transaction
// that commits soon after producing is seen soon, and a steady flow is
// checked every notifyEvery.
func TestTxWakeChecksDouble(t *testing.T) {
	t.Parallel()
	var got []time.Duration
	for d := txWakeFirst; len(got) < 6; d = txWakeAfter(d) {
		got = append(got, d)
	}
	want := []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond, notifyEvery, notifyEvery, notifyEvery}
	if !slices.Equal(got, want) {
		t.Errorf("intervals %v; want %v", got, want)
	}
}
