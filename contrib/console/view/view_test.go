package view_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/contrib/console/view"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// TestStableNulls: a value built from zero core values has every key, its
// lists as [] and its maps as {}; only unset times (and a keyless record's
// key, a dead letter's unread history) are null.
func TestStableNulls(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		v     any
		nulls []string
	}{
		{"stream", view.StreamOf(sqlstreams.StreamInfo{}), []string{"created_at"}},
		{"description", view.DescribeStream(sqlstreams.StreamInfo{}, nil, sqlstreams.Health{}, nil), nil},
		{"group description", view.DescribeGroup(sqlstreams.GroupDescription{}, sqlstreams.Health{}, false), []string{"created_at", "live_members", "paused_at"}},
		{"group description with heartbeats", view.DescribeGroup(sqlstreams.GroupDescription{}, sqlstreams.Health{}, true), []string{"created_at", "paused_at"}},
		{"member", view.MemberOf(sqlstreams.MemberInfo{State: sqlstreams.MemberLive}), []string{"started_at", "last_seen", "closed_at"}},
		{"record", view.RecordOf(sqlstreams.Record{}), []string{"key", "produced_at", "payload"}},
		{"dead letter", view.DeadLetterOf(sqlstreams.DeadLetter{}), []string{"first_failed", "died_at", "produced_at", "payload", "history"}},
		{"dead letter with history", view.DeadLetterOf(sqlstreams.DeadLetter{History: []sqlstreams.FailureRecord{}}),
			[]string{"first_failed", "died_at", "produced_at", "payload"}},
		{"record page", view.RecordPage{Records: view.RecordsOf(nil)}, nil},
		{"dead letter page", view.DeadLetterPage{DeadLetters: view.DeadLettersOf(nil)}, nil},
		{"cursor changes", view.ActionResult{Changes: view.CursorChangesOf(nil)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Fatal(err)
			}
			var nulls []string
			for k, v := range doc {
				if v == nil {
					nulls = append(nulls, k)
				}
			}
			if strings.Join(sorted(nulls), ",") != strings.Join(sorted(tc.nulls), ",") {
				t.Fatalf("null keys %v, want %v in %s", nulls, tc.nulls, raw)
			}
		})
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

func TestAgo(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		before time.Duration
		want   string
	}{
		{0, "just now"},
		{999 * time.Millisecond, "just now"},
		{42 * time.Second, "42s ago"},
		{5*time.Minute + 59*time.Second, "5m ago"},
		{3 * time.Hour, "3h ago"},
		{47 * time.Hour, "47h ago"},
		{50 * time.Hour, "2d ago"},
		{-time.Minute, "just now"}, // a clock a little ahead of ours
	} {
		if got := view.Ago(now.Add(-tc.before), now); got != tc.want {
			t.Errorf("Ago(now-%v) = %q, want %q", tc.before, got, tc.want)
		}
	}
	if got := view.Ago(time.Time{}, now); got != "-" {
		t.Errorf("Ago(zero) = %q", got)
	}
}

// TestLiveMembers: a group's live count counts live members of that group
// only, and is null, not 0, where no heartbeats are recorded.
func TestLiveMembers(t *testing.T) {
	t.Parallel()
	g := []sqlstreams.GroupInfo{{Name: "billing"}}
	in := func(group string) []sqlstreams.MemberGroup {
		return []sqlstreams.MemberGroup{{Stream: "orders", Group: group}}
	}
	members := []sqlstreams.MemberInfo{
		{Identity: "a", State: sqlstreams.MemberLive, Groups: in("billing")},
		{Identity: "b", State: sqlstreams.MemberGone, Groups: in("billing")},
		{Identity: "c", State: sqlstreams.MemberLeft, Groups: in("billing")},
		{Identity: "d", State: sqlstreams.MemberLive, Groups: in("audit")},
	}
	for _, tc := range []struct {
		name    string
		members []sqlstreams.MemberInfo
		want    string
	}{
		{"no heartbeats", nil, "null"},
		{"none", []sqlstreams.MemberInfo{}, "0"},
		{"one live of three", members, "1"},
	} {
		got := view.GroupsOf("orders", g, sqlstreams.Health{}, tc.members)[0].LiveMembers
		raw, _ := json.Marshal(got)
		if string(raw) != tc.want {
			t.Errorf("%s: live_members %s, want %s", tc.name, raw, tc.want)
		}
	}
}
