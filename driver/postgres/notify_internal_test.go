package postgres

import "testing"

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
