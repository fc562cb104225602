package mysql

import (
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// The subscribers of a stream share one reader: the first leads, and when
// it leaves another takes over with the marks as last read, so that an
// append between the two readers' reads still wakes the rest. The reader
// reads as often as the subscriber that polls most often asks, within
// bounds; a read wakes everyone when the marks moved, and the first read
// wakes nobody.
func TestWatchShares(t *testing.T) {
	ws := watches{m: map[watchKey]*watch{}}
	key := watchKey{stream: 7}
	woken := map[string]int{}
	sub := func(name string, poll time.Duration) driver.SubscribeParams {
		return driver.SubscribeParams{StreamID: 7, PollInterval: poll, Wake: func() { woken[name]++ }}
	}
	w, a := ws.join(key, sub("a", 40*time.Millisecond))
	if !leads(a) {
		t.Fatal("the first subscriber was not told to lead")
	}
	w2, b := ws.join(key, sub("b", time.Hour))
	if w2 != w || leads(b) {
		t.Fatal("a second subscriber got a watch of its own or was told to lead")
	}
	if got := ws.period(w); got != 10*time.Millisecond {
		t.Errorf("period %v, want a quarter of the shortest poll, 10ms", got)
	}
	wake := func(mark int64) {
		for _, f := range ws.observe(w, mark) {
			f()
		}
	}
	wake(5)
	wake(5)
	if len(woken) != 0 {
		t.Fatalf("woken %v by the first read and an unchanged one; want nobody", woken)
	}
	wake(6)
	if woken["a"] != 1 || woken["b"] != 1 {
		t.Fatalf("woken %v after the marks moved; want a and b once each", woken)
	}
	ws.leave(w, a)
	if !leads(b) {
		t.Fatal("the reader left and the other subscriber was not told to lead")
	}
	if got := ws.period(w); got != maxWatchPeriod {
		t.Errorf("period %v for an hour's poll, want the bound %v", got, maxWatchPeriod)
	}
	wake(7)
	if woken["a"] != 1 || woken["b"] != 2 {
		t.Fatalf("woken %v after the reader left and the marks moved; want b alone", woken)
	}
	ws.leave(w, b)
	if len(ws.m) != 0 {
		t.Fatalf("%d watches left after the last subscriber; want none", len(ws.m))
	}
	_, c := ws.join(key, sub("c", 0))
	if !leads(c) {
		t.Fatal("a subscriber of a watch nobody holds was not told to lead")
	}
	if c.period != defaultWatchPoll/watchesPerPoll {
		t.Errorf("period %v without a poll interval, want %v", c.period, defaultWatchPoll/watchesPerPoll)
	}
}

func leads(s *subscriber) bool {
	select {
	case <-s.lead:
		return true
	default:
		return false
	}
}
