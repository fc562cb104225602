package postgres

import "sync"

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
	notified map[int64]int64         // stream id -> notifications received
	groups   map[groupKey]groupNotes // what each group's last claim here saw and left
}

type groupKey struct {
	stream int64
	group  string
}

type groupNotes struct {
	seen int64     // the stream's notifications when the claim began
	left busyState // where it left the cursor it took rows from (ok: it took some)
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
	k := groupKey{stream, group}
	g, ok := w.groups[k]
	if n == 0 || (ok && g.seen == n) {
		return false, g.left
	}
	if w.groups == nil {
		w.groups = map[groupKey]groupNotes{}
	}
	g.seen = n
	w.groups[k] = g
	return true, g.left
}

// leftAt notes where a claim of the group left the cursor it took rows from.
func (w *wakeNotes) leftAt(stream int64, group string, at busyState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.groups == nil {
		w.groups = map[groupKey]groupNotes{}
	}
	k := groupKey{stream, group}
	g := w.groups[k]
	g.left = at
	w.groups[k] = g
}
