package driver

import (
	"testing"
	"time"
)

// A write inside the debounce interval carries no hint, and nothing is
// scheduled for it until it has committed: a trailing hint sent before its
// commit would wake consumers to an empty claim and leave its rows to the
// next poll (PostgreSQL's TestNotifyWakesOtherClients lost messages that
// way under load). Once it has, one hint follows at the interval's end.
func TestDebounceAfterCommit(t *testing.T) {
	t.Parallel()
	const every = 5 * time.Millisecond
	var b Debounce
	if !b.Now(every) {
		t.Fatal("the first write of an interval must carry its hint")
	}
	if b.Now(every) {
		t.Fatal("a second write inside the interval carried a hint; want it debounced")
	}
	pending := func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.pending
	}
	if pending() {
		t.Fatal("a trailing hint was scheduled before the debounced write committed")
	}
	sent := make(chan struct{}, 2)
	b.After(every, func() { sent <- struct{}{} })
	b.After(every, func() { sent <- struct{}{} })
	if !pending() {
		t.Fatal("no trailing hint scheduled after the debounced write committed")
	}
	select {
	case <-sent:
	case <-time.After(10 * time.Second):
		t.Fatal("the trailing hint was not sent within 10s")
	}
	if pending() {
		t.Fatal("the trailing hint was sent and is still pending")
	}
	select {
	case <-sent:
		t.Fatal("two commits inside one interval sent two trailing hints; want one")
	case <-time.After(3 * every):
	}
	b.Sent(time.Now().Add(time.Hour))
	if b.Now(every) {
		t.Error("a write an hour before the interval of a hint noted as Sent carried one")
	}
}
