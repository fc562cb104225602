package driver

import (
	"sync"
	"time"
)

// Debounce spaces the wake-up hints a process sends for one key (a
// stream): at most one per interval from its own writes. A write inside
// the interval carries none; once it has committed it calls After, which
// makes sure one follows at the interval's end, so a burst's last rows
// still wake consumers promptly. The zero value is ready to use.
type Debounce struct {
	mu      sync.Mutex
	last    time.Time
	pending bool
}

// Now reports whether a write should carry its hint in its own
// transaction: none went out in the last interval every. One that does not
// must call After once it has committed.
func (b *Debounce) Now(every time.Duration) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if now.Sub(b.last) >= every {
		b.last = now
		return true
	}
	return false
}

// After makes sure send runs at the interval's end, after a write that
// carried no hint committed. It runs after that commit, and so does the
// hint: either this call schedules it, or a scheduled one has yet to take
// the lock this call holds, and sends after it. (A hint scheduled before
// the commit could arrive first, wake the consumers to find nothing, and
// leave the rows waiting for a poll.)
func (b *Debounce) After(every time.Duration, send func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending {
		return
	}
	b.pending = true
	time.AfterFunc(max(every-time.Since(b.last), 0), func() {
		b.mu.Lock()
		b.pending, b.last = false, time.Now()
		b.mu.Unlock()
		send()
	})
}

// Sent notes a hint sent at t: the next one goes no sooner than an
// interval after it.
func (b *Debounce) Sent(t time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.last = t
}
