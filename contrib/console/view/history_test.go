package view_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/contrib/console/view"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// TestHistoryOf: the document names every group and version in its points,
// sorted, and keeps the JSON rules: lists are [] when empty, times RFC 3339,
// spans in seconds.
func TestHistoryOf(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	at := since.Add(30 * time.Minute)
	for _, tc := range []struct {
		name   string
		points []sqlstreams.HistoryPoint
		want   []string // substrings of the JSON
	}{
		{"no samples", nil, []string{`"groups":[]`, `"versions":[]`, `"points":[]`, `"since":"2026-12-06T09:00:00Z"`}},
		{"a point", []sqlstreams.HistoryPoint{{At: at, Span: time.Minute, HighWater: 9, ProduceRate: 0.5,
			Versions: []sqlstreams.VersionPoint{{Version: 2, Rows: 4}, {Version: 1, Rows: 5}},
			Groups: []sqlstreams.GroupPoint{{Group: "shipping", ConsumeRate: 0.25}, {Group: "billing", Unread: 3, DeadArrivals: 1,
				Versions: []sqlstreams.GroupVersionPoint{{Version: 1, Unread: 3}}}}}},
			[]string{`"groups":["billing","shipping"]`, `"versions":[1,2]`, `"at":"2026-12-06T09:30:00Z","span_seconds":60,"high_water":9,"produce_rate":0.5`,
				`{"group":"shipping","unread":0,"dead":0,"consume_rate":0.25,"dead_arrivals":0,"versions":[]}`,
				`{"group":"billing","unread":3,"dead":0,"consume_rate":0,"dead_arrivals":1,"versions":[{"version":1,"unread":3,"dead":0}]}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(view.HistoryOf("orders", "1h", since, tc.points))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("history %s\nlacks %s", b, w)
				}
			}
		})
	}
}
