package view_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

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
		{"description", view.DescribeStream(sqlstreams.StreamInfo{}, nil, sqlstreams.Health{}), nil},
		{"group description", view.DescribeGroup(sqlstreams.GroupDescription{}, sqlstreams.Health{}), []string{"created_at"}},
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
