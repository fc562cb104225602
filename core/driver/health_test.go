package driver

import (
	"reflect"
	"testing"
)

func TestVersionStatsOf(t *testing.T) {
	for _, tc := range []struct {
		name        string
		rows, heads map[int]int64
		want        []VersionStats
	}{
		{"none", nil, nil, nil},
		{"rows and heads joined, in version order", map[int]int64{3: 5, 1: 2}, map[int]int64{1: 1, 3: 4},
			[]VersionStats{{Version: 1, Rows: 2, Heads: 1}, {Version: 3, Rows: 5, Heads: 4}}},
		{"heads of a version whose rows are gone", map[int]int64{2: 0}, map[int]int64{2: 1, 4: 3},
			[]VersionStats{{Version: 2, Heads: 1}, {Version: 4, Heads: 3}}},
		{"a version with nothing is left out", map[int]int64{1: 0, 2: 7}, map[int]int64{1: 0},
			[]VersionStats{{Version: 2, Rows: 7}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := VersionStatsOf(tc.rows, tc.heads); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("VersionStatsOf(%v, %v) = %+v, want %+v", tc.rows, tc.heads, got, tc.want)
			}
		})
	}
}

func TestHealthScanners(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		scan func(RowScanner) (any, error)
		row  scanned
		want any
	}{
		{"unread", func(r RowScanner) (any, error) { return ScanUnreadCount("billing", 2)(r) },
			scanned{3, "eu.web", int64(40)}, UnreadCount{Group: "billing", Partition: 2, Version: 3, RoutingKey: "eu.web", Rows: 40}},
		{"exceptions", func(r RowScanner) (any, error) { return ScanExceptionCount(r) },
			scanned{"billing", 3, StateDelayed, int64(7)}, ExceptionCount{Group: "billing", Version: 3, State: StateDelayed, Count: 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := tc.scan(tc.row)
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
			if _, err := tc.scan(tc.row[:1]); err == nil {
				t.Fatal("a short row read without an error")
			}
		})
	}
}
