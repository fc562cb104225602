package sqlstreams

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/memdriver"
)

// TestHistoryPoint pins how rates come from two consecutive samples.
func TestHistoryPoint(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	one := func(g string, v int, unread, backlog, dead, cursors int64) sampleGroup {
		return sampleGroup{Group: g, Version: v, Unread: unread, Backlog: backlog, Dead: dead, Cursors: cursors}
	}
	tests := []struct {
		name        string
		span        time.Duration
		prev, cur   sampleFigures
		produce     float64
		consume     map[string]float64
		deadArrived map[string]int64
		unread      map[string]int64
		rowsRate    map[int]float64
	}{
		{
			name:    "a group keeping up settles what was produced",
			span:    10 * time.Second,
			prev:    sampleFigures{HighWater: 100, Versions: []sampleVersion{{1, 100}}, Groups: []sampleGroup{one("g", 1, 5, 5, 0, 95)}},
			cur:     sampleFigures{HighWater: 200, Versions: []sampleVersion{{1, 200}}, Groups: []sampleGroup{one("g", 1, 5, 5, 0, 195)}},
			produce: 10, consume: map[string]float64{"g": 10}, deadArrived: map[string]int64{"g": 0}, unread: map[string]int64{"g": 5},
			rowsRate: map[int]float64{1: 10},
		},
		{
			name:    "a stopped group consumes nothing and its lag grows",
			span:    10 * time.Second,
			prev:    sampleFigures{HighWater: 100, Groups: []sampleGroup{one("g", 1, 0, 0, 0, 100)}},
			cur:     sampleFigures{HighWater: 150, Groups: []sampleGroup{one("g", 1, 50, 50, 0, 100)}},
			produce: 5, consume: map[string]float64{"g": 0}, deadArrived: map[string]int64{"g": 0}, unread: map[string]int64{"g": 50},
		},
		{
			name: "a stopped group with bindings: its cursors bound the rate",
			span: 10 * time.Second,
			prev: sampleFigures{HighWater: 100, Groups: []sampleGroup{one("g", 1, 0, 0, 0, 100)}},
			// 100 rows produced, 10 of them for g: unread grew by 10
			cur:     sampleFigures{HighWater: 200, Groups: []sampleGroup{one("g", 1, 10, 10, 0, 100)}},
			produce: 10, consume: map[string]float64{"g": 0}, deadArrived: map[string]int64{"g": 0}, unread: map[string]int64{"g": 10},
		},
		{
			name: "groups summed over versions; dead arrivals net of replays",
			span: 2 * time.Second,
			prev: sampleFigures{HighWater: 10, Versions: []sampleVersion{{1, 10}, {2, 0}}, Groups: []sampleGroup{
				one("a", 1, 0, 0, 1, 10), one("a", 2, 0, 0, 0, 10), one("b", 1, 0, 0, 3, 10)}},
			cur: sampleFigures{HighWater: 14, Versions: []sampleVersion{{1, 6}, {2, 4}}, Groups: []sampleGroup{
				one("a", 1, 0, 0, 2, 14), one("a", 2, 2, 2, 1, 14), one("b", 1, 0, 0, 0, 14)}},
			produce: 2, consume: map[string]float64{"a": 1, "b": 2}, deadArrived: map[string]int64{"a": 2, "b": 0},
			unread: map[string]int64{"a": 2, "b": 0}, rowsRate: map[int]float64{1: -2, 2: 2},
		},
		{
			name:    "a group new since the previous sample has no rate yet",
			span:    time.Second,
			prev:    sampleFigures{HighWater: 10},
			cur:     sampleFigures{HighWater: 20, Groups: []sampleGroup{one("new", 1, 0, 0, 0, 20)}},
			produce: 10, consume: map[string]float64{"new": 0}, deadArrived: map[string]int64{"new": 0}, unread: map[string]int64{"new": 0},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := historyPoint(t0, t0.Add(tc.span), tc.prev, tc.cur)
			if p.Span != tc.span || p.HighWater != tc.cur.HighWater || p.ProduceRate != tc.produce {
				t.Errorf("point %+v; want span %v, high water %d, produce rate %v", p, tc.span, tc.cur.HighWater, tc.produce)
			}
			if len(p.Groups) != len(tc.consume) {
				t.Fatalf("groups %+v; want %d", p.Groups, len(tc.consume))
			}
			for _, g := range p.Groups {
				if g.ConsumeRate != tc.consume[g.Group] || g.DeadArrivals != tc.deadArrived[g.Group] || g.Unread != tc.unread[g.Group] {
					t.Errorf("group %+v; want consume %v, dead arrivals %d, unread %d", g, tc.consume[g.Group], tc.deadArrived[g.Group], tc.unread[g.Group])
				}
			}
			for _, v := range p.Versions {
				if v.RowsRate != tc.rowsRate[v.Version] {
					t.Errorf("version %+v; want rows rate %v", v, tc.rowsRate[v.Version])
				}
			}
		})
	}
}

// TestFiguresOfBounded: a stream with very many groups is sampled without
// its group rows rather than beyond driver.MaxSampleFigures.
func TestFiguresOfBounded(t *testing.T) {
	t.Parallel()
	h := Health{HighWater: 7, Versions: []VersionHealth{{Version: 1, Rows: 7}}}
	for i := range 2000 {
		h.Versions[0].Groups = append(h.Versions[0].Groups, GroupHealth{Group: strings.Repeat("g", 40) + string(rune('a'+i%26)), Unread: 1})
	}
	doc := figuresOf(h)
	var f sampleFigures
	if err := json.Unmarshal([]byte(doc), &f); err != nil {
		t.Fatal(err)
	}
	if len(doc) > driver.MaxSampleFigures || f.Groups != nil || f.HighWater != 7 || len(f.Versions) != 1 {
		t.Errorf("figures of %d bytes, %d groups, high water %d; want at most %d bytes, no groups, high water 7",
			len(doc), len(f.Groups), f.HighWater, driver.MaxSampleFigures)
	}
	h.Versions[0].Groups = h.Versions[0].Groups[:2]
	if err := json.Unmarshal([]byte(figuresOf(h)), &f); err != nil || len(f.Groups) != 2 {
		t.Errorf("a small stream's figures: %d groups, %v; want 2", len(f.Groups), err)
	}
}

// TestSampleOptions: a negative interval or a retention that is not
// positive is refused at Open; 0 turns sampling off, and then maintenance
// stores nothing.
func TestSampleOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opt  ClientOption
		ok   bool
	}{
		{"negative interval", WithSampleInterval(-time.Second), false},
		{"zero retention", WithSampleRetention(0), false},
		{"no samples", WithSampleInterval(0), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := Open(t.Context(), memdriver.Open(), WithMaintenanceInterval(0), tc.opt)
			if !tc.ok {
				if !errors.Is(err, ErrInvalidOption) {
					t.Fatalf("Open: %v; want ErrInvalidOption", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Stream[RawPayload]("quiet").Create(t.Context(), nil); err != nil {
				t.Fatal(err)
			}
			rep, err := c.Maintain(t.Context())
			if err != nil || rep.Sampled != 0 {
				t.Fatalf("maintenance with sampling off stored %d samples, %v", rep.Sampled, err)
			}
		})
	}
}
