package driver

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// fakePartition is PartitionSteps over ids 1..rows, all readable and
// decodable; it notes what the claim asked of it.
type fakePartition struct {
	rows     int64
	pending  bool
	fail     error
	windows  []int
	recorded *PartitionScan
}

func (f *fakePartition) Pending(context.Context) (bool, error) { return f.pending, nil }

func (f *fakePartition) ReadWindow(_ context.Context, from int64, size int, s *PartitionScan) (int, error) {
	f.windows = append(f.windows, size)
	if f.fail != nil {
		return 0, f.fail
	}
	n := 0
	for id := from + 1; id <= f.rows && n < size; id++ {
		n++
		if !s.Inspect(Row{ID: id, SchemaVersion: 1}, true) {
			break
		}
	}
	return n, nil
}

func (f *fakePartition) Record(_ context.Context, s *PartitionScan) ([]Delivery, int, error) {
	f.recorded = s
	return s.Taken, len(s.Deferred), nil
}

func TestClaimPartition(t *testing.T) {
	t.Parallel()
	plan := ClaimPlan{Versions: []int{1}, Decodable: []int{1}}
	boom := errors.New("boom")
	for _, tc := range []struct {
		name        string
		steps       fakePartition
		ordered     bool
		cursor      int64
		wantTaken   []int64
		wantWindows []int
		wantRecord  bool
		wantErr     error
	}{
		{"takes past the cursor and records", fakePartition{rows: 10}, false, 7, []int64{8, 9, 10}, []int{16}, true, nil},
		{"stops at the limit", fakePartition{rows: 100}, false, 0, []int64{1, 2, 3, 4}, []int{16}, true, nil},
		{"nothing past the cursor records nothing", fakePartition{rows: 10}, false, 10, nil, []int{16}, false, nil},
		{"an ordered group's held partition is not read", fakePartition{rows: 10, pending: true}, true, 0, nil, nil, false, nil},
		{"a pending delivery does not hold an unordered group", fakePartition{rows: 2, pending: true}, false, 0, []int64{1, 2}, []int{16}, true, nil},
		{"a read error records nothing", fakePartition{rows: 10, fail: boom}, false, 0, nil, []int{16}, false, boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			steps := tc.steps
			got, deferred, err := ClaimPartition(context.Background(), &steps, PartitionClaim{
				Params: ClaimParams{Ordered: tc.ordered}, Plan: plan, Cursor: tc.cursor, Limit: 4, FirstWindow: FirstWindow(4),
			})
			var ids []int64
			for _, d := range got {
				ids = append(ids, d.ID)
			}
			if !errors.Is(err, tc.wantErr) || !slices.Equal(ids, tc.wantTaken) || deferred != 0 || !slices.Equal(steps.windows, tc.wantWindows) || (steps.recorded != nil) != tc.wantRecord {
				t.Errorf("taken %v, deferred %d, windows %v, recorded %v, err %v; want %v, 0, %v, %v, %v",
					ids, deferred, steps.windows, steps.recorded != nil, err, tc.wantTaken, tc.wantWindows, tc.wantRecord, tc.wantErr)
			}
			if steps.recorded != nil && steps.recorded.Cursor != tc.cursor+int64(len(tc.wantTaken)) {
				t.Errorf("recorded cursor %d", steps.recorded.Cursor)
			}
		})
	}
}

// The scan's bound and whether rows may remain reach the record: a scan
// stopped at its limit or its bound has More, one at the partition's end
// has not.
func TestClaimPartitionBoundAndMore(t *testing.T) {
	t.Parallel()
	plan := ClaimPlan{Versions: []int{1}, Decodable: []int{1}}
	for _, tc := range []struct {
		name         string
		rows         int64
		limit, bound int
		wantScanned  int
		wantMore     bool
	}{
		{"limit", 100, 4, 0, 4, true},
		{"bound", 100, 50, 20, 48, true}, // windows of 16 and 32
		{"end", 10, 50, 0, 10, false},
	} {
		steps := fakePartition{rows: tc.rows}
		if _, _, err := ClaimPartition(context.Background(), &steps, PartitionClaim{Params: ClaimParams{}, Plan: plan, Limit: tc.limit, FirstWindow: MinClaimWindow, Bound: tc.bound}); err != nil {
			t.Fatal(err)
		}
		if s := steps.recorded; s == nil || s.Scanned != tc.wantScanned || s.More != tc.wantMore {
			t.Errorf("%s: recorded %v; want %d scanned, more %v", tc.name, s != nil, tc.wantScanned, tc.wantMore)
			if s != nil {
				t.Logf("scanned %d, more %v", s.Scanned, s.More)
			}
		}
	}
}
