package sqldb

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// testLeases is a Leases whose statements name what they do, for reading
// what a settle ran.
var testLeases = Leases{
	Versions:    true,
	Materialize: func(streamID int64, members string) string { return "MATERIALIZE " + members },
	Among:       func(ids []int64) (string, []any) { return "AMONG ?", []any{EncodeInts(ids)} },
	Time:        func(t time.Time) any { return t.Unix() },
	Chunk:       2,
}

// TestBatchWrites: what a settle does to a batch's named members, by
// mode: an ack shrinks or deletes the batch, an extension of most members
// keeps those under the new lease and materializes the others, one of few
// materializes the named ones and hands them to the exception rows'
// statement, as does a materializing settle.
func TestBatchWrites(t *testing.T) {
	t.Parallel()
	b := Batch{Group: "g", Token: "t", Part: 1, IDs: []int64{1, 2, 3, 4}, Versions: []int{5, 5, 6, 6}}
	key := "[7 g t 1]"
	for _, tc := range []struct {
		name        string
		mode        SettleMode
		named       []int64
		want        []string
		wantChanged []int64
		wantLeft    []driver.Lease
	}{
		{"ack some", SettleAck, []int64{2, 3}, []string{"UPDATE delivery_batch SET ids = ?, first_id = ?, last_id = ?, versions = ?" + batchKey + "[[1,4] 1 4 [5,6] 7 g t 1]"}, []int64{2, 3}, nil},
		{"ack all", SettleAck, []int64{1, 2, 3, 4}, []string{"DELETE FROM delivery_batch WHERE stream_id = ? AND ((group_name = ? AND lease_token = ? AND `partition` = ?))" + key}, []int64{1, 2, 3, 4}, nil},
		{"extend all", SettleExtend, []int64{1, 2, 3, 4}, []string{"UPDATE delivery_batch SET lease_until = ?, created_at = ?" + batchKey + "[until now 7 g t 1]"}, []int64{1, 2, 3, 4}, nil},
		{"extend most", SettleExtend, []int64{1, 2, 4}, []string{
			"MATERIALIZE (b.group_name = ? AND b.lease_token = ? AND b.`partition` = ? AND AMONG ?)[7 g t 1 [3]]",
			"UPDATE delivery_batch SET ids = ?, first_id = ?, last_id = ?, lease_until = ?, created_at = ?, versions = ?" + batchKey + "[[1,2,4] 1 4 until now [5,5,6] 7 g t 1]"},
			[]int64{1, 2, 4}, nil},
		{"extend few", SettleExtend, []int64{3}, []string{
			"MATERIALIZE (b.group_name = ? AND b.lease_token = ? AND b.`partition` = ? AND AMONG ?)[7 g t 1 [3]]",
			"UPDATE delivery_batch SET ids = ?, first_id = ?, last_id = ?, versions = ?" + batchKey + "[[1,2,4] 1 4 [5,5,6] 7 g t 1]"},
			nil, []driver.Lease{{ID: 3, Token: "t"}}},
		{"materialize all", SettleMaterialize, []int64{1, 2, 3, 4}, []string{
			"MATERIALIZE (b.group_name = ? AND b.lease_token = ? AND b.`partition` = ?)[7 g t 1]",
			"DELETE FROM delivery_batch WHERE stream_id = ? AND ((group_name = ? AND lease_token = ? AND `partition` = ?))" + key},
			nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q := &execLog{}
			changed := map[int64]bool{}
			w := batchWrites{l: testLeases, op: Settle{StreamID: 7, Group: "g", Mode: tc.mode, Until: "until", Now: "now"}, changed: changed}
			named := map[int64]bool{}
			for _, id := range tc.named {
				named[id] = true
			}
			err := w.settle(context.Background(), q, b, named)
			if err == nil {
				err = w.finish(context.Background(), q)
			}
			var got []int64
			for id := range changed {
				got = append(got, id)
			}
			slices.Sort(got)
			if err != nil || !slices.Equal(q.ran, tc.want) || !slices.Equal(got, tc.wantChanged) || !slices.Equal(w.extended, tc.wantLeft) {
				t.Fatalf("ran\n%s\nchanged %v, left %v, %v; want\n%s\nchanged %v, left %v",
					strings.Join(q.ran, "\n"), got, w.extended, err, strings.Join(tc.want, "\n"), tc.wantChanged, tc.wantLeft)
			}
		})
	}
}

// TestNamedMembers: each lease finds the batch of its token holding its
// id; those of no batch are left for the exception rows, and with a
// materializing settle the members too.
func TestNamedMembers(t *testing.T) {
	t.Parallel()
	held := []Batch{{Token: "a", Part: 0, IDs: []int64{1, 3}}, {Token: "a", Part: 1, IDs: []int64{2, 4}}, {Token: "b", IDs: []int64{5}}}
	leases := []driver.Lease{{ID: 1, Token: "a"}, {ID: 4, Token: "a"}, {ID: 5, Token: "a"}, {ID: 6, Token: "b"}}
	for _, members := range []bool{false, true} {
		named, rest := namedMembers(held, leases, members)
		want := []driver.Lease{{ID: 5, Token: "a"}, {ID: 6, Token: "b"}}
		if members {
			want = leases
		}
		if got := fmt.Sprint(named); got != "[map[1:true] map[4:true] map[]]" || !slices.Equal(rest, want) {
			t.Fatalf("members %v: named %s, rest %v; want [map[1:true] map[4:true] map[]], %v", members, got, rest, want)
		}
	}
}
