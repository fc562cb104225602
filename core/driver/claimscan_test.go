package driver

import (
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
