package driver

import (
	"errors"
	"testing"
	"time"
)

// A log of ids 1..n whose rows are produced[id-1], probed as a driver's
// index dives would answer.
func probeOf(produced []time.Time) RetentionProbe {
	n := int64(len(produced))
	return RetentionProbe{
		Span: func() (int64, int64, bool, error) { return 1, n, n > 0, nil },
		FirstYoung: func(t time.Time) (int64, bool, error) {
			for i, p := range produced {
				if !p.Before(t) {
					return int64(i + 1), true, nil
				}
			}
			return 0, false, nil
		},
		NthNewest: func(k int64) (int64, bool, error) {
			if k >= n {
				return 0, false, nil
			}
			return n - k, true, nil
		},
	}
}

func TestRetainBound(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ago := func(hours ...int) []time.Time {
		out := make([]time.Time, len(hours))
		for i, h := range hours {
			out[i] = now.Add(-time.Duration(h) * time.Hour)
		}
		return out
	}
	for _, c := range []struct {
		name     string
		r        Retention
		produced []time.Time
		want     int64
	}{
		{"empty log", Retention{MaxAge: time.Hour, MaxRows: 1}, nil, 0},
		{"no limits", Retention{}, ago(5, 4, 3), 0},
		{"age: the old prefix", Retention{MaxAge: time.Hour}, ago(3, 2, 0, 2, 3), 3},
		{"age: every row old", Retention{MaxAge: time.Hour}, ago(3, 2), 3},
		{"age: nothing old", Retention{MaxAge: time.Hour}, ago(0, 0), 0},
		{"rows: within the limit", Retention{MaxRows: 3}, ago(0, 0, 0), 0},
		{"rows: over the limit", Retention{MaxRows: 2}, ago(0, 0, 0, 0, 0), 4},
		{"both: the further bound wins", Retention{MaxAge: time.Hour, MaxRows: 4}, ago(3, 3, 0, 0, 0, 0), 3},
		{"both: rows further", Retention{MaxAge: time.Hour, MaxRows: 1}, ago(3, 0, 0), 3},
	} {
		got, err := RetainBound(c.r, now, probeOf(c.produced))
		if err != nil || got != c.want {
			t.Errorf("%s: bound %d, %v; want %d", c.name, got, err, c.want)
		}
	}
	boom := errors.New("boom")
	p := probeOf(ago(3, 0))
	p.FirstYoung = func(time.Time) (int64, bool, error) { return 0, false, boom }
	if _, err := RetainBound(Retention{MaxAge: time.Hour}, now, p); !errors.Is(err, boom) {
		t.Errorf("a failed probe: %v, want it returned", err)
	}
}
