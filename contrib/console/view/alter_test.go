package view_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/contrib/console/view"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func TestPlanAlter(t *testing.T) {
	t.Parallel()
	on, off := true, false
	stored := sqlstreams.StreamInfo{Name: "s", Partitions: 2, Compacted: true, Retention: sqlstreams.Retention{MaxAge: time.Hour}}
	cases := []struct {
		name    string
		changes sqlstreams.StreamChanges
		changed []string
		notes   int
		err     error
	}{
		{"more partitions", sqlstreams.StreamChanges{Partitions: 3}, []string{"partitions"}, 1, nil},
		{"compaction off", sqlstreams.StreamChanges{Compacted: &off}, []string{"compacted"}, 1, nil},
		{"hard retention", sqlstreams.StreamChanges{Retention: &sqlstreams.Retention{MaxAge: time.Hour, Hard: true}}, []string{"hard"}, 2, nil},
		{"limits replaced", sqlstreams.StreamChanges{Retention: &sqlstreams.Retention{MaxRows: 9}}, []string{"max-age", "max-rows"}, 1, nil},
		{"fewer partitions", sqlstreams.StreamChanges{Partitions: 1}, nil, 0, sqlstreams.ErrFewerPartitions},
		{"nothing changes", sqlstreams.StreamChanges{Partitions: 2, Compacted: &on}, nil, 0, sqlstreams.ErrInvalidOption},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			plan, err := view.PlanAlter(stored, c.changes)
			if !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, c.err)
			}
			if err != nil {
				return
			}
			var changed []string
			for _, s := range plan.Settings {
				if s.Changed {
					changed = append(changed, s.Setting)
				}
			}
			if !slices.Equal(changed, c.changed) || len(plan.Notes) != c.notes || plan.Executed {
				t.Errorf("changed %v, %d notes (%v), executed %t; want %v, %d notes", changed, len(plan.Notes), plan.Notes, plan.Executed, c.changed, c.notes)
			}
		})
	}
}
