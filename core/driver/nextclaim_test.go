package driver

import (
	"slices"
	"strconv"
	"sync"
	"testing"
)

func TestNextClaim(t *testing.T) {
	t.Parallel()
	var n NextClaim[int]
	if _, ok := n.Hint(1, "g"); ok {
		t.Fatal("a note before any claim")
	}
	n.Set(1, "g", 3)
	n.Set(2, "g", 5)
	for _, tc := range []struct {
		stream int64
		group  string
		want   int
		ok     bool
	}{{1, "g", 3, true}, {2, "g", 5, true}, {1, "h", 0, false}} {
		if got, ok := n.Hint(tc.stream, tc.group); got != tc.want || ok != tc.ok {
			t.Fatalf("Hint(%d, %q) = %d, %v; want %d, %v", tc.stream, tc.group, got, ok, tc.want, tc.ok)
		}
	}
	if got, ok := n.Take(1, "g"); got != 3 || !ok {
		t.Fatalf("Take = %d, %v", got, ok)
	}
	if _, ok := n.Hint(1, "g"); ok {
		t.Fatal("Take left the note")
	}
	n.Forget(2, "g")
	if _, ok := n.Take(2, "g"); ok {
		t.Fatal("Forget left the note")
	}
}

func TestNextClaimNote(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		before bool // a note was there
		filled bool
		want   bool
	}{
		{"a filled claim leaves its note", false, true, true},
		{"a filled claim replaces the note", true, true, true},
		{"a short claim forgets the note", true, false, false},
		{"a short claim leaves none", false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var n NextClaim[int]
			if tc.before {
				n.Set(1, "g", 3)
			}
			n.Note(1, "g", 7, tc.filled)
			got, ok := n.Hint(1, "g")
			if ok != tc.want || (ok && got != 7) {
				t.Fatalf("Hint = %d, %v; want the note %v", got, ok, tc.want)
			}
		})
	}
}

func TestClaimMemo(t *testing.T) {
	t.Parallel()
	var m ClaimMemo[[]int64]
	m.Add(1, "g", "t1", []int64{1, 2})
	m.Add(1, "g", "t2", []int64{3})
	if v, ok := m.Peek(1, "g", "t1"); !ok || !slices.Equal(v, []int64{1, 2}) {
		t.Fatalf("Peek = %v, %v", v, ok)
	}
	m.Update(1, "g", "t1", func(v []int64) ([]int64, bool) { return v[1:], true })
	if v, _ := m.Peek(1, "g", "t1"); !slices.Equal(v, []int64{2}) {
		t.Fatalf("after Update: %v", v)
	}
	m.Update(1, "g", "t1", func([]int64) ([]int64, bool) { return nil, false })
	if _, ok := m.Peek(1, "g", "t1"); ok {
		t.Fatal("Update that drops left the entry")
	}
	m.Update(1, "g", "none", func([]int64) ([]int64, bool) { t.Fatal("f ran for no entry"); return nil, true })
	if v, ok := m.Take(1, "g", "t2"); !ok || !slices.Equal(v, []int64{3}) {
		t.Fatalf("Take = %v, %v", v, ok)
	}
	if _, ok := m.Take(1, "g", "t2"); ok {
		t.Fatal("Take left the entry")
	}
	m.Add(2, "g", "a", nil)
	m.Add(2, "g", "b", nil)
	m.Forget(2, "g", "a", "b")
	if _, ok := m.Peek(2, "g", "b"); ok {
		t.Fatal("Forget left an entry")
	}
}

// The memo holds the last ClaimMemoSize claims, the oldest going first,
// however many were settled away meanwhile.
func TestClaimMemoBound(t *testing.T) {
	t.Parallel()
	var m ClaimMemo[int]
	token := strconv.Itoa
	for i := range 3 * ClaimMemoSize {
		m.Add(1, "g", token(i), i)
		if i%3 == 0 {
			m.Forget(1, "g", token(i))
		}
	}
	if len(m.m) > ClaimMemoSize || len(m.order) > 5*ClaimMemoSize {
		t.Fatalf("%d entries, %d keys in order", len(m.m), len(m.order))
	}
	if _, ok := m.Peek(1, "g", token(3*ClaimMemoSize-1)); !ok {
		t.Fatal("the newest claim was dropped")
	}
	if _, ok := m.Peek(1, "g", token(1)); ok {
		t.Fatal("the oldest claim is still there")
	}
}

// Hints and memos are shared by a driver's goroutines.
func TestHintsConcurrently(t *testing.T) {
	t.Parallel()
	var n NextClaim[int]
	var m ClaimMemo[int]
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 500 {
				n.Set(1, "g", i)
				n.Hint(1, "g")
				m.Add(1, "g", string(rune('a'+g)), i)
				m.Update(1, "g", string(rune('a'+g)), func(v int) (int, bool) { return v + 1, true })
				m.Take(1, "g", string(rune('a'+(g+1)%4)))
			}
		})
	}
	wg.Wait()
}

func TestStreak(t *testing.T) {
	t.Parallel()
	var s Streak
	if s.Stay(2) {
		t.Fatal("no streak yet, and the claim stays")
	}
	for i := 1; i <= StickyClaims; i++ {
		s = s.Then(3)
		if want := i < StickyClaims; s.Stay(2) != want || s.Count != i || s.Partition != 3 {
			t.Fatalf("after %d claims from partition 3: %+v, stay %v; want stay %v", i, s, s.Stay(2), want)
		}
	}
	if !s.Stay(1) {
		t.Fatalf("a stream of one partition ends no streak: %+v", s)
	}
	// The claim after the streak started elsewhere: wherever it filled,
	// its partition starts a new streak, the same one included.
	if s = s.Then(3); s != (Streak{3, 1}) || !s.Stay(2) {
		t.Fatalf("after the streak's end, a claim from partition 3 again: %+v", s)
	}
	if s = s.Then(1); s != (Streak{1, 1}) || !s.Stay(2) {
		t.Fatalf("after a claim from partition 1: %+v", s)
	}
}
