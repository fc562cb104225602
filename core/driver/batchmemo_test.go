package driver

import (
	"reflect"
	"slices"
	"testing"
)

// A claim that wrote batches in two partitions, acked in parts: each part
// plans one BatchAck per batch it names, with what remains in it; leases of
// claims the memo does not know, or that are no members, are left to the
// locking path.
func TestBatchMemoPlan(t *testing.T) {
	t.Parallel()
	l := func(token string, ids ...int64) []Lease {
		var out []Lease
		for _, id := range ids {
			out = append(out, Lease{ID: id, Token: token})
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		leases []Lease
		want   []BatchAck
		rest   []Lease
	}{
		{"whole batch", l("t", 1, 2, 3),
			[]BatchAck{{Token: "t", Expected: MemoBatch{0, []int64{1, 2, 3}}, Remaining: []int64{}, Leases: l("t", 1, 2, 3)}}, nil},
		{"part of a batch, named twice", l("t", 2, 2),
			[]BatchAck{{Token: "t", Expected: MemoBatch{0, []int64{1, 2, 3}}, Remaining: []int64{1, 3}, Leases: l("t", 2, 2)}}, nil},
		{"both partitions", l("t", 5, 1),
			[]BatchAck{{Token: "t", Expected: MemoBatch{1, []int64{4, 5}}, Remaining: []int64{4}, Leases: l("t", 5)},
				{Token: "t", Expected: MemoBatch{0, []int64{1, 2, 3}}, Remaining: []int64{2, 3}, Leases: l("t", 1)}}, nil},
		{"a row of its own and an unknown claim", append(l("t", 9, 3), l("u", 1)...),
			[]BatchAck{{Token: "t", Expected: MemoBatch{0, []int64{1, 2, 3}}, Remaining: []int64{1, 2}, Leases: l("t", 3)}},
			append(l("t", 9), l("u", 1)...)},
		{"another group's", nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var m BatchMemo
			m.Add(1, "g", "t", []MemoBatch{{0, []int64{1, 2, 3}}, {1, []int64{4, 5}}})
			m.Add(1, "h", "u", []MemoBatch{{0, []int64{1}}})
			acks, rest := m.Plan(1, "g", tc.leases)
			if !reflect.DeepEqual(acks, tc.want) || !slices.Equal(rest, tc.rest) {
				t.Errorf("Plan = %+v, rest %v; want %+v, rest %v", acks, rest, tc.want, tc.rest)
			}
		})
	}
}

// What Settled leaves: the remaining ids after a statement that changed the
// batch, so that the next part compares with them; nothing after one that
// did not (the batch changed elsewhere), after the last part, or when
// another settle of this process changed the batch meanwhile.
func TestBatchMemoSettled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		ids     []int64 // acked
		changed bool
		between []int64 // acked by another settle of this process, first
		want    []Lease // planned as batch members afterwards
	}{
		{"a part acked", []int64{1}, true, nil, []Lease{{2, "t"}, {3, "t"}}},
		{"the batch changed elsewhere", []int64{1}, false, nil, nil},
		{"the last part", []int64{1, 2, 3}, true, nil, nil},
		{"changed meanwhile by this process", []int64{1}, true, []int64{2}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var m BatchMemo
			m.Add(1, "g", "t", []MemoBatch{{0, []int64{1, 2, 3}}, {1, []int64{4}}})
			ls := func(ids []int64) []Lease {
				var out []Lease
				for _, id := range ids {
					out = append(out, Lease{id, "t"})
				}
				return out
			}
			acks, _ := m.Plan(1, "g", ls(tc.ids))
			if tc.between != nil {
				other, _ := m.Plan(1, "g", ls(tc.between))
				m.Settled(1, "g", other[0], true)
			}
			m.Settled(1, "g", acks[0], tc.changed)
			left, _ := m.Plan(1, "g", []Lease{{1, "t"}, {2, "t"}, {3, "t"}, {4, "t"}})
			var got []Lease
			for _, a := range left {
				if a.Expected.Partition == 0 {
					got = a.Leases
				} else if !slices.Equal(a.Expected.IDs, []int64{4}) {
					t.Errorf("the other partition's batch became %v", a.Expected.IDs)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("planned as members of partition 0 afterwards: %v; want %v", got, tc.want)
			}
		})
	}
}

// Known and Batches answer for the claims remembered; Forget drops them.
func TestBatchMemoKnownAndForget(t *testing.T) {
	t.Parallel()
	var m BatchMemo
	batches := []MemoBatch{{0, []int64{1, 2}}, {1, []int64{3}}}
	m.Add(1, "g", "t", batches)
	m.Add(1, "g", "u", nil) // a claim that wrote no batch is not remembered
	for _, tc := range []struct {
		leases []Lease
		want   bool
	}{{[]Lease{{9, "x"}, {3, "t"}}, true}, {[]Lease{{3, "u"}}, false}, {nil, false}} {
		if got := m.Known(1, "g", tc.leases); got != tc.want {
			t.Errorf("Known(%v) = %v; want %v", tc.leases, got, tc.want)
		}
	}
	if got := m.Batches(1, "g", "t"); !reflect.DeepEqual(got, batches) {
		t.Errorf("Batches = %v; want %v", got, batches)
	}
	if m.Known(1, "h", []Lease{{3, "t"}}) || m.Known(2, "g", []Lease{{3, "t"}}) {
		t.Error("another group's or stream's claim is known")
	}
	m.Forget(1, "g", "t")
	if m.Known(1, "g", []Lease{{1, "t"}}) || m.Batches(1, "g", "t") != nil {
		t.Error("Forget left the claim")
	}
}
