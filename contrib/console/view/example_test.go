package view_test

import (
	"encoding/json"
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
