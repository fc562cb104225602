package driver

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestFateOfDue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		maxAttempts int
		state       ExceptionState
		attempt     int
		claimable   bool
		want        DueFate
	}{
		{"removed or superseded", 3, StateLeased, 1, false, ResolveDue},
		{"removed while delayed", 0, StateDelayed, 0, false, ResolveDue},
		{"expired on the last attempt", 3, StateLeased, 3, true, BuryDue},
		{"expired past the last attempt", 3, StateLeased, 4, true, BuryDue},
		{"expired with attempts left", 3, StateLeased, 2, true, LeaseDue},
		{"no attempt limit", 0, StateLeased, 50, true, LeaseDue},
		{"a retry is leased whatever its attempt", 3, StateDelayed, 3, true, LeaseDue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := FateOfDue(ClaimParams{MaxAttempts: tc.maxAttempts}, tc.state, tc.attempt, tc.claimable)
			if got != tc.want {
				t.Fatalf("FateOfDue = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestClaimDue(t *testing.T) {
	t.Parallel()
	deliveries := func(ids ...int64) []Delivery {
		out := make([]Delivery, len(ids))
		for i, id := range ids {
			out[i].ID = id
		}
		return out
	}
	type page struct {
		leased  []int64
		dropped int
	}
	errPage := errors.New("page failed")
	for _, tc := range []struct {
		name  string
		limit int
		pages []page
		asked []int   // the n each page was called with
		want  []int64 // nil with wantErr
		err   bool
	}{
		{"one page fills the limit", 3, []page{{[]int64{9, 4, 7}, 0}}, []int{3}, []int64{4, 7, 9}, false},
		{"nothing due", 3, []page{{nil, 0}}, []int{3}, nil, false},
		{"looks again past dropped candidates", 3, []page{{[]int64{8}, 2}, {[]int64{5, 6}, 0}}, []int{3, 2}, []int64{5, 6, 8}, false},
		{"stops once a page drops nothing", 4, []page{{[]int64{1}, 1}, {[]int64{2}, 0}, {[]int64{3}, 0}}, []int{4, 3}, []int64{1, 2}, false},
		{"stops at the limit", 2, []page{{[]int64{1}, 1}, {[]int64{2}, 1}, {[]int64{3}, 0}}, []int{2, 1}, []int64{1, 2}, false},
		{"a zero limit asks nothing", 0, nil, nil, nil, false},
		{"a failed page fails the claim", 3, []page{{[]int64{1}, 2}, {nil, -1}}, []int{3, 2}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var asked []int
			got, err := ClaimDue(tc.limit, func(n int) ([]Delivery, int, error) {
				asked = append(asked, n)
				pg := tc.pages[len(asked)-1]
				if pg.dropped < 0 {
					return nil, 0, errPage
				}
				return deliveries(pg.leased...), pg.dropped, nil
			})
			if tc.err != errors.Is(err, errPage) || (!tc.err && err != nil) {
				t.Fatalf("error %v, want failure %v", err, tc.err)
			}
			ids := []int64{}
			for _, d := range got {
				ids = append(ids, d.ID)
			}
			if !slices.Equal(ids, append([]int64{}, tc.want...)) || !slices.Equal(asked, tc.asked) {
				t.Fatalf("leased %v after asking %v, want %v after %v", ids, asked, tc.want, tc.asked)
			}
		})
	}
}

func TestDistinctIDs(t *testing.T) {
	t.Parallel()
	in := []int64{5, 1, 5, 3, 1}
	if got := DistinctIDs(in); !slices.Equal(got, []int64{1, 3, 5}) {
		t.Fatalf("DistinctIDs = %v", got)
	}
	if !slices.Equal(in, []int64{5, 1, 5, 3, 1}) {
		t.Fatalf("DistinctIDs changed its argument: %v", in)
	}
}

func TestDueFates(t *testing.T) {
	t.Parallel()
	until := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	p := ClaimParams{MaxAttempts: 3}
	type due struct {
		id        int64
		state     ExceptionState
		attempt   int
		claimable bool
	}
	broken := errors.New("unreadable row")
	for _, tc := range []struct {
		name                      string
		dues                      []due
		rowErr                    error
		resolve, bury, lease      []int64
		wantAttempts              []int
		wantErr                   error
		wantExamined, wantDropped int
	}{
		{"each to its kind", []due{{1, StateLeased, 1, false}, {2, StateLeased, 3, true}, {3, StateDelayed, 1, true}, {4, StateLeased, 2, true}}, nil,
			[]int64{1}, []int64{2}, []int64{3, 4}, []int{2, 3}, nil, 4, 2},
		{"an unreadable row to lease", []due{{1, StateDelayed, 1, true}}, broken, nil, nil, nil, nil, broken, 0, 0},
		{"the row of one dropped is not read", []due{{1, StateLeased, 3, true}}, broken, nil, []int64{1}, nil, nil, nil, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var f DueFates
			var err error
			for _, d := range tc.dues {
				if err = f.Add(p, d.id, d.state, d.attempt, d.claimable, func() (Row, error) { return Row{ID: d.id}, tc.rowErr }, until); err != nil {
					break
				}
			}
			var attempts []int
			for i, l := range f.Leased {
				if l.ID != f.Lease[i] || !l.LeaseUntil.Equal(until) {
					t.Fatalf("leased %+v for id %d", l, f.Lease[i])
				}
				attempts = append(attempts, l.Attempt)
			}
			if !errors.Is(err, tc.wantErr) || !slices.Equal(f.Resolve, tc.resolve) || !slices.Equal(f.Bury, tc.bury) || !slices.Equal(f.Lease, tc.lease) ||
				!slices.Equal(attempts, tc.wantAttempts) || f.Examined() != tc.wantExamined || f.Dropped() != tc.wantDropped {
				t.Fatalf("got %+v (attempts %v), %v", f, attempts, err)
			}
		})
	}
}

func TestHistoryTime(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 12, 0, 0, 123456789, time.FixedZone("x", 3600))
	if got, want := HistoryTime(at), "2026-12-01T11:00:00.123456Z"; got != want {
		t.Fatalf("HistoryTime = %q, want %q", got, want)
	}
}
