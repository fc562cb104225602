package postgres

import (
	"slices"
	"testing"
	"time"
)

// The first append of a debounce interval carries its NOTIFY and the next
// one none (driver.Debounce; TestDebounceAfterCommit holds the trailing
// NOTIFY to its commit); a driver WithoutNotify carries none.
func TestNotifyNow(t *testing.T) {
	t.Parallel()
	d := &Driver{notify: true}
	const stream = 7
	if !d.notifyNow(stream) {
		t.Fatal("the first append of an interval must carry its NOTIFY")
	}
	if d.notifyNow(stream) {
		t.Fatal("a second append inside the interval carried a NOTIFY; want it debounced")
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
