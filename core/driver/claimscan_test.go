package driver

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPartitionScan(t *testing.T) {
	t.Parallel()
	until := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	// The group reads versions 1 and 2, the member decodes 1 only, and its
	// bindings select keys under "eu.".
	plan := ClaimPlan{Versions: []int{1, 2}, Decodable: []int{1}, Match: func(k string) bool { return strings.HasPrefix(k, "eu.") }}
	row := func(id int64, version int, key string) Row {
		return Row{ID: id, SchemaVersion: version, RoutingKey: key}
	}
	type seen struct {
		row      Row
		readable bool
	}
	rows := []seen{
		{row(1, 1, "eu.a"), true},  // taken
		{row(2, 1, "us.a"), true},  // not selected
		{row(3, 3, "eu.a"), false}, // another version (or not a head, or excepted)
		{row(4, 2, "eu.a"), true},  // deferred
		{row(5, 1, "eu.b"), true},  // taken
		{row(6, 1, "eu.c"), true},  // taken
	}
	for _, tc := range []struct {
		name         string
		ordered      bool
		limit        int
		wantTaken    []int64
		wantDeferred []int64
		wantCursor   int64
		wantStopped  bool
	}{
		{"every row looked at", false, 10, []int64{1, 5, 6}, []int64{4}, 6, false},
		{"stops at the limit", false, 2, []int64{1, 5}, []int64{4}, 5, false},
		{"ordered: stops at a deferred row", true, 10, []int64{1}, []int64{4}, 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := PartitionScan{Plan: plan, Ordered: tc.ordered, Limit: tc.limit, LeaseUntil: until, Cursor: 0}
			for _, r := range rows {
				if !s.Inspect(r.row, r.readable) {
					break
				}
			}
			var taken, deferred []int64
			for _, d := range s.Taken {
				if d.Attempt != 1 || !d.LeaseUntil.Equal(until) {
					t.Fatalf("taken %d: attempt %d until %v", d.ID, d.Attempt, d.LeaseUntil)
				}
				taken = append(taken, d.ID)
			}
			for _, r := range s.Deferred {
				deferred = append(deferred, r.ID)
			}
			if !slices.Equal(taken, tc.wantTaken) || !slices.Equal(deferred, tc.wantDeferred) || s.Cursor != tc.wantCursor ||
				s.Stopped != tc.wantStopped || s.Scanned != int(tc.wantCursor) || !s.Done() == (tc.wantStopped || len(taken) == tc.limit) {
				t.Fatalf("taken %v deferred %v cursor %d scanned %d stopped %v; want %v %v %d %v",
					taken, deferred, s.Cursor, s.Scanned, s.Stopped, tc.wantTaken, tc.wantDeferred, tc.wantCursor, tc.wantStopped)
			}
		})
	}
}

func TestReadWindows(t *testing.T) {
	t.Parallel()
	// A partition of ids 1..n: every id divisible by 10 is at another
	// version (not readable), id 55 is at a version the member cannot
	// decode (deferred).
	plan := ClaimPlan{Versions: []int{1, 2}, Decodable: []int{1}}
	partition := func(n int64) func(s *PartitionScan, from int64, size int) int {
		return func(s *PartitionScan, from int64, size int) int {
			read := 0
			for id := from + 1; id <= n && read < size; id++ {
				read++
				version := 1
				if id == 55 {
					version = 2
				}
				if !s.Inspect(Row{ID: id, SchemaVersion: version}, id%10 != 0) {
					break
				}
			}
			return read
		}
	}
	for _, tc := range []struct {
		name        string
		rows        int64
		ordered     bool
		limit       int
		first       int
		bound       int
		wantSizes   []int
		wantTaken   int
		wantCursor  int64
		wantMore    bool
		wantStopped bool
	}{
		{"one window fills the limit", 1000, false, 9, 16, 100, []int{16}, 9, 9, true, false},
		{"windows double up to the most", 5000, false, 1000, 300, 5000, []int{300, 512, 512}, 1000, 1112, true, false},
		{"a short window ends the partition", 30, false, 100, 100, 1000, []int{100}, 27, 30, false, false},
		{"the bound stops the scan", 1000, false, 500, 16, 40, []int{16, 32}, 44, 48, true, false},
		{"an ordered group stops at a deferred row", 1000, true, 100, 16, 1000, []int{16, 32, 64}, 49, 55, false, true},
		{"nothing to take", 1000, false, 0, 16, 100, nil, 0, 0, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := PartitionScan{Plan: plan, Ordered: tc.ordered, Limit: tc.limit}
			read := partition(tc.rows)
			var sizes []int
			more, err := s.ReadWindows(tc.first, tc.bound, func(from int64, size int) (int, error) {
				if from != s.Cursor {
					t.Fatalf("window past %d, cursor at %d", from, s.Cursor)
				}
				sizes = append(sizes, size)
				return read(&s, from, size), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(sizes, tc.wantSizes) || len(s.Taken) != tc.wantTaken || s.Cursor != tc.wantCursor || more != tc.wantMore || s.Stopped != tc.wantStopped {
				t.Errorf("windows %v, taken %d, cursor %d, more %v, stopped %v; want %v, %d, %d, %v, %v",
					sizes, len(s.Taken), s.Cursor, more, s.Stopped, tc.wantSizes, tc.wantTaken, tc.wantCursor, tc.wantMore, tc.wantStopped)
			}
		})
	}
	t.Run("an error ends the scan", func(t *testing.T) {
		t.Parallel()
		s := PartitionScan{Plan: plan, Limit: 10}
		boom := errors.New("boom")
		if more, err := s.ReadWindows(16, 100, func(int64, int) (int, error) { return 0, boom }); !errors.Is(err, boom) || more {
			t.Errorf("more %v, err %v", more, err)
		}
	})
	if got := []int{FirstWindow(1), FirstWindow(100), FirstWindow(10000)}; !slices.Equal(got, []int{MinClaimWindow, 100, MaxClaimWindow}) {
		t.Errorf("FirstWindow: %v", got)
	}
}

func TestPartitionScanExpect(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name              string
		limit, taken, win int
		more              bool
		want, most        int // the room for rows at least, and at most
	}{
		{"a window within the limit", 100, 0, 40, false, 40, 64},
		{"a window past the limit", 100, 80, 40, false, 20, 100},
		{"the limit reached", 10, 10, 40, false, 0, 10},
		{"an empty window", 10, 0, 0, false, 0, 0},
		{"a full window with more to come: the rest of the limit", 1000, 0, 512, true, 1000, 1100},
		{"a full window past the limit", 1000, 900, 512, true, 100, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := PartitionScan{Limit: tc.limit, Taken: make([]Delivery, tc.taken)}
			s.Expect(tc.win, tc.more)
			if room := cap(s.Taken) - len(s.Taken); room < tc.want || room > tc.most {
				t.Errorf("room for %d rows, want %d to %d", room, tc.want, tc.most)
			}
			if len(s.Taken) != tc.taken {
				t.Errorf("Expect changed what was taken: %d rows, want %d", len(s.Taken), tc.taken)
			}
		})
	}
}
