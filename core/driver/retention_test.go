package driver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
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
		to := reflect.ValueOf(dest[i]).Elem()
		if v == nil { // NULL: a nil pointer
			to.SetZero()
			continue
		}
		from := reflect.ValueOf(v)
		if to.Kind() == reflect.Pointer && from.Type().AssignableTo(to.Type().Elem()) {
			p := reflect.New(from.Type())
			p.Elem().Set(from)
			from = p
		}
		if !from.Type().AssignableTo(to.Type()) {
			return errors.New("unexpected destination")
		}
		to.Set(from)
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

// retainLog is a log a RetainPass runs over: rows 1..n, produced an hour
// apart and the newest now, and a record of the steps it was asked for.
type retainLog struct {
	now     time.Time
	stream  StreamConfig
	rows    []RetainCandidate
	groups  []GroupStats
	held    Held
	fail    string // the step that fails
	steps   []string
	removed []RetainCandidate
	unread  map[string]int64
}

var errStep = errors.New("step failed")

func (l *retainLog) step(name string) error {
	l.steps = append(l.steps, name)
	if l.fail == name {
		return errStep
	}
	return nil
}

func (l *retainLog) Stream(context.Context, int64) (StreamConfig, error) {
	return l.stream, l.step("stream")
}

func (l *retainLog) Probe(context.Context, StreamConfig) RetentionProbe {
	produced := make([]time.Time, len(l.rows))
	for i := range produced {
		produced[i] = l.now.Add(-time.Duration(len(l.rows)-1-i) * time.Hour)
	}
	return probeOf(produced)
}

func (l *retainLog) Victims(_ context.Context, _ StreamConfig, bound int64, limit int) ([]RetainCandidate, error) {
	var out []RetainCandidate
	for _, r := range l.rows {
		if r.ID < bound && len(out) < limit {
			out = append(out, r)
		}
	}
	return out, l.step("victims")
}

func (l *retainLog) Unread(context.Context, StreamConfig, []RetainCandidate) ([]GroupStats, Held, error) {
	return l.groups, l.held, l.step("unread")
}

func (l *retainLog) Remove(_ context.Context, _ StreamConfig, victims []RetainCandidate, unread map[string]int64) error {
	l.removed, l.unread = victims, unread
	return l.step("remove")
}

func TestRetainPass(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	rows := []RetainCandidate{{ID: 1, Version: 1}, {ID: 2, Version: 1}, {ID: 3, Version: 1}, {ID: 4, Version: 1}}
	reader := GroupStats{GroupConfig: GroupConfig{Name: "reader", SchemaVersion: 1}, Cursors: []int64{1}}
	for _, tc := range []struct {
		name        string
		retention   Retention
		limit       int
		fail        string
		wantSteps   []string
		wantRemoved int64
		wantUnread  map[string]int64
		wantErr     error
	}{
		{"nothing over the limits: no rows read", Retention{MaxRows: 10}, 10, "", []string{"stream"}, 0, map[string]int64{}, nil},
		{"soft: the victims go, nothing counted", Retention{MaxRows: 1}, 10, "", []string{"stream", "victims", "remove"}, 3, map[string]int64{}, nil},
		{"soft: the pass's limit", Retention{MaxRows: 1}, 2, "", []string{"stream", "victims", "remove"}, 2, map[string]int64{}, nil},
		{"hard: unread rows counted per group", Retention{MaxRows: 1, Hard: true}, 10, "", []string{"stream", "victims", "unread", "remove"}, 3,
			map[string]int64{"reader": 3}, nil}, // row 1 held, rows 2 and 3 past the cursor
		{"a failed stream read", Retention{MaxRows: 1}, 10, "stream", []string{"stream"}, 0, map[string]int64{}, errStep},
		{"a failed read of the unread", Retention{MaxRows: 1, Hard: true}, 10, "unread", []string{"stream", "victims", "unread"}, 0, map[string]int64{}, errStep},
		{"a failed removal", Retention{MaxRows: 1}, 10, "remove", []string{"stream", "victims", "remove"}, 3, map[string]int64{}, errStep},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := &retainLog{now: now, stream: StreamConfig{ID: 7, Retention: tc.retention}, rows: rows, groups: []GroupStats{reader},
				held: Held{"reader": {1: true}}, fail: tc.fail}
			res, err := RetainPass(context.Background(), RetainParams{StreamID: 7, Now: now, Limit: tc.limit}, l)
			if !errors.Is(err, tc.wantErr) || !slices.Equal(l.steps, tc.wantSteps) || res.Removed != tc.wantRemoved ||
				!maps.Equal(res.RemovedUnread, tc.wantUnread) {
				t.Fatalf("RetainPass = %+v, %v after %v; want removed %d, unread %v, %v after %v",
					res, err, l.steps, tc.wantRemoved, tc.wantUnread, tc.wantErr, tc.wantSteps)
			}
			if err == nil && len(l.steps) > 1 && (int64(len(l.removed)) != res.Removed || !maps.Equal(l.unread, res.RemovedUnread)) {
				t.Fatalf("Remove got %v and %v, the result says %d and %v", l.removed, l.unread, res.Removed, res.RemovedUnread)
			}
		})
	}
}

// stmtRow answers a statement as a database would: by its text, or with
// noRows.
type stmtRow struct {
	answers map[string]scanned
	noRows  error
	asked   *[]string
}

func (s stmtRow) row(query string, args ...any) RowScanner {
	*s.asked = append(*s.asked, fmt.Sprint(query, args))
	if a, ok := s.answers[query]; ok {
		return a
	}
	return failing{s.noRows}
}

type failing struct{ err error }

func (f failing) Scan(...any) error { return f.err }

func TestRetentionStatementsProbe(t *testing.T) {
	t.Parallel()
	noRows := errors.New("no rows")
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	stmts := RetentionStatements{Span: "span", FirstYoung: "young", NthNewest: "nth", At: func(t time.Time) any { return t.Unix() }}
	oldest, newest, young, nth := int64(3), int64(9), int64(5), int64(7)
	for _, tc := range []struct {
		name    string
		answers map[string]scanned
		ask     func(RetentionProbe) (any, error)
		want    any
		asked   []string
	}{
		{"span", map[string]scanned{"span": {&oldest, &newest}},
			func(p RetentionProbe) (any, error) { o, n, ok, err := p.Span(); return [3]any{o, n, ok}, err },
			[3]any{int64(3), int64(9), true}, []string{"span[]"}},
		{"span of an empty log", map[string]scanned{"span": {nil, nil}},
			func(p RetentionProbe) (any, error) { o, n, ok, err := p.Span(); return [3]any{o, n, ok}, err },
			[3]any{int64(0), int64(0), false}, []string{"span[]"}},
		{"first young, its time as stored", map[string]scanned{"young": {young}},
			func(p RetentionProbe) (any, error) { id, ok, err := p.FirstYoung(at); return [2]any{id, ok}, err },
			[2]any{int64(5), true}, []string{fmt.Sprint("young", []any{at.Unix()})}},
		{"no young row", nil,
			func(p RetentionProbe) (any, error) { id, ok, err := p.FirstYoung(at); return [2]any{id, ok}, err },
			[2]any{int64(0), false}, []string{fmt.Sprint("young", []any{at.Unix()})}},
		{"nth newest", map[string]scanned{"nth": {nth}},
			func(p RetentionProbe) (any, error) { id, ok, err := p.NthNewest(2); return [2]any{id, ok}, err },
			[2]any{int64(7), true}, []string{"nth[2]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var asked []string
			got, err := tc.ask(stmts.Probe(stmtRow{tc.answers, noRows, &asked}.row, noRows))
			if err != nil || got != tc.want || !slices.Equal(asked, tc.asked) {
				t.Fatalf("got %v, %v after %q; want %v after %q", got, err, asked, tc.want, tc.asked)
			}
		})
	}
}
