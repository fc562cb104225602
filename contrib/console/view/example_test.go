package view_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sqlstreams/sqlstreams/contrib/console/view"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// A stream's configuration as the CLI's -o json and the console's /api
// show it: snake_case keys, the retention age in seconds, times in RFC
// 3339 UTC.
func ExampleStreamOf() {
	info := sqlstreams.StreamInfo{ID: 7, Name: "orders.placed", Partitions: 4,
		Retention: sqlstreams.Retention{MaxAge: 36 * time.Hour}, CreatedAt: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	out, _ := json.Marshal(view.StreamOf(info))
	fmt.Println(string(out))
	// Output:
	// {"id":7,"name":"orders.placed","partitions":4,"compacted":false,"max_age_seconds":129600,"max_rows":0,"hard":false,"created_at":"2026-12-01T09:00:00Z"}
}

// What Stream.Alter would change, and what that means for the rows already
// in the log, before anything is changed: the plan `sqlstreams streams
// alter` prints without --execute.
func ExamplePlanAlter() {
	info := sqlstreams.StreamInfo{Name: "orders.placed", Partitions: 2}
	on := true
	plan, err := view.PlanAlter(info, sqlstreams.StreamChanges{Partitions: 4, Compacted: &on})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range plan.Settings {
		if s.Changed {
			fmt.Printf("%s: %s -> %s\n", s.Setting, s.Before, s.After)
		}
	}
	fmt.Println(len(plan.Notes), "notes")
	_, err = view.PlanAlter(info, sqlstreams.StreamChanges{Partitions: 1})
	fmt.Println(errors.Is(err, sqlstreams.ErrFewerPartitions))
	// Output:
	// partitions: 2 -> 4
	// compacted: false -> true
	// 2 notes
	// true
}
