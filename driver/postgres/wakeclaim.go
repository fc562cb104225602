package postgres

import (
	"sync"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// A claim woken by a notification: NOTIFY says rows were appended to the
// stream, so the probe (a round trip that would only say so again) is
// skipped, and the claim's first round trip also reads the rows past where
// the group's last claim here left the cursor it took rows from, which is
// where a consumer that keeps up finds the new rows. That takes an idle
// consumer's claim of a new row from four round trips (probe, begin and
// lock, read, record and commit) to two. Both are hints: the transaction
// locks the cursor and reads everything it relies on again (nextCursor uses
// the window only when it follows the locked cursor at its position), and
// a wrong guess costs a claim transaction that finds nothing, or a window
// read for nothing.
type wakeNotes struct {
	mu       sync.Mutex
	notified map[int64]int64 // stream id -> notifications received
	// Per group, under mu: the stream's notifications when the group's
	// last claim here began.
	seen driver.NextClaim[int64]
	// Per group: where its last claim here left the cursor it took rows
	// from (ok: it took some).
	left driver.NextClaim[busyState]
}

// notifiedFor counts a notification received for the stream.
func (w *wakeNotes) notifiedFor(stream int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.notified == nil {
		w.notified = map[int64]int64{}
	}
	w.notified[stream]++
}

// woken reports whether a notification for the stream arrived since the
// group's last claim here began, and where that claim left its cursor; it
// marks the notifications seen by the claim beginning now.
func (w *wakeNotes) woken(stream int64, group string) (bool, busyState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.notified[stream]
	left, _ := w.left.Hint(stream, group)
	if seen, _ := w.seen.Hint(stream, group); seen == n {
		return false, left
	}
	w.seen.Set(stream, group, n)
	return true, left
}

// leftAt notes where a claim of the group left the cursor it took rows from.
func (w *wakeNotes) leftAt(stream int64, group string, at busyState) {
	w.left.Set(stream, group, at)
}
