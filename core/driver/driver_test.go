package driver_test

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

func TestCountRemovedUnread(t *testing.T) {
	t.Parallel()
	rows := []driver.RetainCandidate{
		{ID: 1, Partition: 0, Version: 1, RoutingKey: "eu.web"},
		{ID: 2, Partition: 1, Version: 1, RoutingKey: "us.web"},
		{ID: 3, Partition: 0, Version: 2, RoutingKey: "eu.app"},
		{ID: 4, Partition: 1, Version: 2, RoutingKey: "eu.web"},
	}
	euOnly := func(bindings []string, key string) bool {
		return len(bindings) == 0 || strings.HasPrefix(key, "eu.")
	}
	group := func(name string, version int, cursors ...int64) driver.GroupStats {
		return driver.GroupStats{GroupConfig: driver.GroupConfig{Name: name, SchemaVersion: version}, Cursors: cursors}
	}
	converting := group("converts", 2, 0, 0)
	converting.ConvertsFrom = []int{1}
	raw := group("raw", 0, 0, 2)
	raw.AllVersions = true
	eu := group("eu", 1, 0, 0)
	eu.Bindings = []string{"eu.#"}
	for _, tc := range []struct {
		name  string
		group driver.GroupStats
		held  map[string]map[int64]bool
		want  int64
	}{
		{"every row at its version is past the cursor", group("v1", 1, 0, 0), nil, 2},
		{"rows the cursor passed are resolved", group("v1", 1, 1, 2), nil, 0},
		{"a held exception counts though the cursor passed it", group("v1", 1, 1, 2), map[string]map[int64]bool{"v1": {2: true}}, 1},
		{"other versions are not the group's", group("v3", 3, 0, 0), nil, 0},
		{"converter versions are the group's", converting, nil, 4},
		{"a RawPayload group reads every version", raw, nil, 3},
		{"bindings leave out what the group skips", eu, nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := driver.CountRemovedUnread([]driver.GroupStats{tc.group}, rows, tc.held, euOnly)
			want := map[string]int64{}
			if tc.want > 0 {
				want[tc.group.Name] = tc.want
			}
			if !maps.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestPlanClaim(t *testing.T) {
	t.Parallel()
	g := driver.GroupConfig{Name: "g", SchemaVersion: 2, ConvertsFrom: []int{1}, Bindings: []string{"eu.#"}}
	euOnly := func(b []string) func(string) bool {
		return func(k string) bool { return len(b) == 0 || strings.HasPrefix(k, "eu.") }
	}
	for _, tc := range []struct {
		name      string
		group     driver.GroupConfig
		p         driver.ClaimParams
		versions  []int
		decodable []int
		err       error
	}{
		{"member with the converter", g, driver.ClaimParams{Member: driver.Member{SchemaVersion: 2}, Decodes: []int{2, 1}}, []int{2, 1}, []int{2, 1}, nil},
		{"member without it defers v1", g, driver.ClaimParams{Member: driver.Member{SchemaVersion: 2}, Decodes: []int{2}}, []int{2, 1}, []int{2}, nil},
		{"group re-created at another version", g, driver.ClaimParams{Member: driver.Member{SchemaVersion: 1}, Decodes: []int{1}}, nil, nil, driver.ErrGroupVersion},
		{"raw member of a typed group", g, driver.ClaimParams{Member: driver.Member{AllVersions: true}}, nil, nil, driver.ErrGroupVersion},
		{"raw group", driver.GroupConfig{AllVersions: true}, driver.ClaimParams{Member: driver.Member{AllVersions: true}}, nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.p.Match = euOnly
			plan, err := driver.PlanClaim(tc.group, tc.p)
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			if !slices.Equal(plan.Versions, tc.versions) || !slices.Equal(plan.Decodable, tc.decodable) {
				t.Errorf("versions %v decodable %v, want %v and %v", plan.Versions, plan.Decodable, tc.versions, tc.decodable)
			}
			for v := 1; v <= 3; v++ {
				if want := tc.versions == nil || slices.Contains(tc.versions, v); plan.Reads(v) != want {
					t.Errorf("Reads(%d) = %v, want %v", v, !want, want)
				}
			}
			if !plan.Matches("eu.web") || (len(tc.group.Bindings) > 0 && plan.Matches("us.web")) {
				t.Errorf("the plan does not filter with the stored bindings %v", tc.group.Bindings)
			}
		})
	}
}

func TestFailureHistory(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", driver.MaxHistoryError) // 2 bytes a rune
	if cut := driver.CutHistoryError(long); len(cut) > driver.MaxHistoryError || !utf8.ValidString(cut) || len(cut) < driver.MaxHistoryError-1 {
		t.Errorf("cut to %d bytes (valid UTF-8: %v)", len(cut), utf8.ValidString(cut))
	}
	got, err := driver.ParseFailureHistory(`[{"attempt":1,"error":"boom","at":"2026-12-01T10:00:00.123456Z","holder":"h:1"},{"attempt":2,"error":"again","at":"2026-12-01T10:00:01Z","holder":""}]`)
	if err != nil || len(got) != 2 || got[0].Attempt != 1 || got[0].Error != "boom" || got[0].Holder != "h:1" ||
		!got[0].At.Equal(time.Date(2026, 12, 1, 10, 0, 0, 123456000, time.UTC)) || got[1].Attempt != 2 {
		t.Errorf("ParseFailureHistory = %+v, %v", got, err)
	}
	if got, err := driver.ParseFailureHistory(""); got != nil || err != nil {
		t.Errorf("empty history = %v, %v", got, err)
	}
}

// TestSharesValues: rows share their values when every one but partition,
// key and payload matches the first row's, production times compared at
// the microsecond and absent headers equal to empty ones.
func TestSharesValues(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 0, 0, 123456000, time.UTC)
	row := func(change func(*driver.AppendRow)) driver.AppendRow {
		r := driver.AppendRow{Partition: 1, SchemaVersion: 2, SchemaRevision: 3, Key: "k", HasKey: true, RoutingKey: "eu",
			CompactionRank: 4, Payload: []byte(`{}`), Headers: map[string]string{"a": "1"}, ProducedAt: at}
		if change != nil {
			change(&r)
		}
		return r
	}
	for _, tc := range []struct {
		name string
		rows []driver.AppendRow
		want bool
	}{
		{"none", nil, true},
		{"one", []driver.AppendRow{row(nil)}, true},
		{"partition, key and payload differ", []driver.AppendRow{row(nil), row(func(r *driver.AppendRow) {
			r.Partition, r.Key, r.HasKey, r.Payload = 0, "", false, []byte(`[]`)
		})}, true},
		{"same microsecond, another zone", []driver.AppendRow{row(nil), row(func(r *driver.AppendRow) { r.ProducedAt = at.Add(999).In(time.FixedZone("x", 3600)) })}, true},
		{"nil and empty headers", []driver.AppendRow{row(func(r *driver.AppendRow) { r.Headers = nil }), row(func(r *driver.AppendRow) { r.Headers = map[string]string{} })}, true},
		{"version", []driver.AppendRow{row(nil), row(func(r *driver.AppendRow) { r.SchemaVersion = 5 })}, false},
		{"revision", []driver.AppendRow{row(nil), row(func(r *driver.AppendRow) { r.SchemaRevision = 5 })}, false},
		{"routing key", []driver.AppendRow{row(nil), row(func(r *driver.AppendRow) { r.RoutingKey = "us" })}, false},
		{"rank", []driver.AppendRow{row(nil), row(func(r *driver.AppendRow) { r.CompactionRank = 5 })}, false},
		{"headers", []driver.AppendRow{row(nil), row(func(r *driver.AppendRow) { r.Headers = map[string]string{"a": "2"} })}, false},
		{"next microsecond", []driver.AppendRow{row(nil), row(func(r *driver.AppendRow) { r.ProducedAt = at.Add(time.Microsecond) })}, false},
		{"the last differs", []driver.AppendRow{row(nil), row(nil), row(func(r *driver.AppendRow) { r.CompactionRank = 5 })}, false},
	} {
		if got := driver.SharesValues(tc.rows); got != tc.want {
			t.Errorf("%s: SharesValues = %v, want %v", tc.name, got, tc.want)
		}
	}
}
