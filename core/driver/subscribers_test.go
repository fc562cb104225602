package driver

import (
	"slices"
	"testing"
	"time"
)

// The subscribers of a key share one reader: the first leads, and when it
// leaves another takes over with the mark as last read, so that an append
// between the two readers' reads still wakes the rest. A read wakes every
// subscriber of its key when the mark moved, and the first read wakes
// nobody; Wake and WakeAll wake a key's subscribers and everyone's. A key
// is dropped with its last subscriber.
func TestSubscribersShare(t *testing.T) {
	t.Parallel()
	var ss Subscribers[int64]
	woken := map[string]int{}
	sub := func(name string, poll time.Duration) SubscribeParams {
		return SubscribeParams{StreamID: 7, PollInterval: poll, Wake: func() { woken[name]++ }}
	}
	a, first := ss.Join(7, sub("a", 40*time.Millisecond))
	if !first || !leads(a) {
		t.Fatal("the first subscriber was not first or not told to lead")
	}
	b, first := ss.Join(7, sub("b", time.Hour))
	if first || leads(b) {
		t.Fatal("a second subscriber was first or was told to lead")
	}
	other, _ := ss.Join(8, sub("other", 0))
	if !leads(other) {
		t.Fatal("the first subscriber of another key was not told to lead")
	}
	if got := ss.Poll(7, time.Second); got != 40*time.Millisecond {
		t.Errorf("poll %v, want the shortest, 40ms", got)
	}
	if got := ss.Poll(8, time.Second); got != time.Second {
		t.Errorf("poll %v of a subscriber that gave none, want the unknown one, 1s", got)
	}
	ss.Observe(7, 5)
	ss.Observe(7, 5)
	if len(woken) != 0 {
		t.Fatalf("woken %v by the first read and an unchanged one; want nobody", woken)
	}
	ss.Observe(7, 6)
	if woken["a"] != 1 || woken["b"] != 1 || woken["other"] != 0 {
		t.Fatalf("woken %v after the mark moved; want a and b once each", woken)
	}
	ss.Leave(7, a)
	if !leads(b) {
		t.Fatal("the reader left and the other subscriber was not told to lead")
	}
	ss.Observe(7, 7)
	if woken["a"] != 1 || woken["b"] != 2 {
		t.Fatalf("woken %v after the reader left and the mark moved; want b alone", woken)
	}
	ss.Wake(8)
	if woken["other"] != 1 || woken["b"] != 2 {
		t.Fatalf("woken %v by a wake-up of key 8; want other alone", woken)
	}
	ss.WakeAll()
	if woken["other"] != 2 || woken["b"] != 3 || woken["a"] != 1 {
		t.Fatalf("woken %v by WakeAll; want b and other once more", woken)
	}
	keys := ss.Keys()
	if slices.Sort(keys); !slices.Equal(keys, []int64{7, 8}) {
		t.Fatalf("keys %v, want [7 8]", keys)
	}
	ss.Leave(7, b)
	ss.Leave(8, other)
	if keys := ss.Keys(); len(keys) != 0 {
		t.Fatalf("keys %v after the last subscribers left; want none", keys)
	}
	c, first := ss.Join(7, sub("c", 0))
	if !first || !leads(c) {
		t.Fatal("a subscriber of a key nobody holds was not first or not told to lead")
	}
	ss.Observe(7, 9)
	if woken["c"] != 0 {
		t.Fatal("the first read after every subscriber left woke the new one; want the mark forgotten")
	}
}

func leads(s *Subscriber) bool {
	select {
	case <-s.Lead():
		return true
	default:
		return false
	}
}
