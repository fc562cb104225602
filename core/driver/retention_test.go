package driver

import (
	"errors"
	"slices"
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

// scanned is a result row for the scanners' tests.
type scanned []any

func (r scanned) Scan(dest ...any) error {
	if len(dest) != len(r) {
		return errors.New("wrong column count")
	}
	for i, v := range r {
		switch d := dest[i].(type) {
		case *string:
			*d = v.(string)
		case *int64:
			*d = v.(int64)
		case *int:
			*d = v.(int)
		default:
			return errors.New("unexpected destination")
		}
	}
	return nil
}

func TestHeldAndCandidatesScan(t *testing.T) {
	t.Parallel()
	held := Held{}
	for _, r := range []scanned{{"a", int64(3)}, {"b", int64(3)}, {"a", int64(7)}, {"a", int64(3)}} {
		if err := held.Scan(r); err != nil {
			t.Fatal(err)
		}
	}
	if len(held) != 2 || len(held["a"]) != 2 || !held["a"][7] || !held["b"][3] || held["b"][7] {
		t.Fatalf("held = %v", held)
	}
	if err := held.Scan(scanned{"a"}); err == nil {
		t.Fatal("a short row scanned")
	}
	c, err := ScanRetainCandidate(scanned{int64(9), 2, 3, "eu.web"})
	if err != nil || c != (RetainCandidate{ID: 9, Partition: 2, Version: 3, RoutingKey: "eu.web"}) {
		t.Fatalf("candidate %+v, %v", c, err)
	}
	if ids := RetainIDs([]RetainCandidate{{ID: 4}, {ID: 2}}); !slices.Equal(ids, []int64{4, 2}) {
		t.Fatalf("RetainIDs = %v", ids)
	}
}

// Without limits RetainBound asks the log nothing: a stream without
// retention costs its maintenance pass no read.
func TestRetainBoundWithoutLimitsProbesNothing(t *testing.T) {
	t.Parallel()
	fail := func() (int64, int64, bool, error) { return 0, 0, false, errors.New("probed") }
	if b, err := RetainBound(Retention{Hard: true}, time.Now(), RetentionProbe{Span: fail}); b != 0 || err != nil {
		t.Fatalf("RetainBound = %d, %v; want 0 without probing", b, err)
	}
}
