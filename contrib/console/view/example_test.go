package view_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sqlstreams/sqlstreams/contrib/console/view"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/memdriver"
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

// Page through a group's dead letters two at a time, as `sqlstreams dead
// list --limit 2` and the console's dead-letter page do: next is where the
// following page starts, 0 on the last one.
func ExampleReadDeadLetters() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, err := sqlstreams.Open(ctx, memdriver.Open(), sqlstreams.WithMaintenanceInterval(0))
	if err != nil {
		panic(err)
	}
	defer client.Close()
	p, err := client.Stream[Refund]("refunds").Producer().Register(ctx, nil)
	if err != nil {
		panic(err)
	}
	for _, id := range []string{"r-1", "r-2", "r-3"} {
		if _, err := p.Produce(ctx, Refund{ID: id}); err != nil {
			panic(err)
		}
	}
	c, err := client.Stream[Refund]("refunds").Consumer("payouts").Register(ctx, nil)
	if err != nil {
		panic(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	var seen sync.WaitGroup
	seen.Add(3)
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		_ = c.Run(runCtx, func(ctx context.Context, d sqlstreams.Delivery[Refund]) error {
			defer seen.Done()
			return sqlstreams.Dead(fmt.Errorf("refund %s: account closed", d.Value.ID))
		})
	}()
	// Run records an outcome after its handler returns: once every handler
	// has returned, a stopped Run returns with all three recorded.
	seen.Wait()
	stop()
	<-ran

	g := client.Stream[sqlstreams.RawPayload]("refunds").Group("payouts")
	var after int64
	for {
		page, next, err := view.ReadDeadLetters(ctx, g, after, 2)
		if err != nil {
			panic(err)
		}
		for _, d := range page {
			fmt.Printf("%d: %s\n", d.ID, d.Error)
		}
		fmt.Println("next:", next)
		if next == 0 {
			break
		}
		after = next
	}
	// Output:
	// 1: refund r-1: account closed
	// 2: refund r-2: account closed
	// next: 2
	// 3: refund r-3: account closed
	// next: 0
}

// Refund is the message of ExampleReadDeadLetters.
type Refund struct {
	ID string `json:"id"`
}

func (Refund) SchemaVersion() int { return 1 }

// A payload as the CLI's dead show and the console print it: indented when
// it is JSON, as it is when it is not.
func ExamplePrettyJSON() {
	fmt.Println(view.PrettyJSON([]byte(`{"id":"r-1","amount":{"cents":250}}`)))
	fmt.Println(view.PrettyJSON([]byte("not json")))
	// Output:
	// {
	//   "id": "r-1",
	//   "amount": {
	//     "cents": 250
	//   }
	// }
	// not json
}

// A schema goes into JSON as itself when it is JSON (JSON Schema, Avro) and
// as a string when it is not (a .proto text), as SchemaDiff's a_schema.
func ExampleSchemaText() {
	fmt.Println(string(view.SchemaText(`{"type":"string"}`)))
	fmt.Println(string(view.SchemaText("syntax = \"proto3\";\nmessage M {}\n")))
	// Output:
	// {"type":"string"}
	// "syntax = \"proto3\";\nmessage M {}\n"
}
