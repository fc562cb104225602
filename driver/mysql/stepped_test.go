package mysql_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/driver/mysql"
	"github.com/sqlstreams/sqlstreams/driver/mysql/mysqltest"
)

// TestSteppedIDs: with ids stepped by 3, the ids ProduceBatch returns name
// the rows it wrote (computed from LAST_INSERT_ID with the step, or read
// back), Health and Describe report exact figures (high-water ids, row
// counts past cursors, and distances that are high-water id minus
// cursor), and retention by row count keeps exactly that many rows.
func TestSteppedIDs(t *testing.T) {
	t.Parallel()
	for _, readBack := range []bool{false, true} {
		t.Run(fmt.Sprintf("readBack=%v", readBack), func(t *testing.T) {
			t.Parallel()
			drv := mysql.Open(withParams(newDatabase(t), mysqltest.SteppedIDs))
			if readBack {
				mysql.ForceReadBack(drv)
			}
			c := openClient(t, drv)
			const name, parts = "stepped", 2
			stream := c.Stream[event](name)
			if _, err := stream.Create(testCtx(t), &sqlstreams.StreamOptions{Partitions: parts}); err != nil {
				t.Fatal(err)
			}
			all, err := stream.Consumer("all").Register(testCtx(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := stream.Consumer("eu").Register(testCtx(t), &sqlstreams.ConsumerOptions{Bindings: []string{"eu.#"}}); err != nil {
				t.Fatal(err)
			}
			p, err := stream.Producer().Register(testCtx(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			msgs := make([]sqlstreams.Message[event], 30)
			eu := map[int64]bool{}
			for i := range msgs {
				rk := "us.web"
				if i%3 == 0 {
					rk = "eu.web"
				}
				msgs[i] = sqlstreams.NewMessage(event{N: i}, sqlstreams.Key(fmt.Sprint("key-", i)), sqlstreams.RoutingKey(rk))
			}
			ids, err := p.ProduceBatch(testCtx(t), msgs...)
			if err != nil {
				t.Fatal(err)
			}
			one, err := p.Produce(testCtx(t), event{N: len(msgs)}, sqlstreams.Key("key-last"), sqlstreams.RoutingKey("eu.app"))
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, one)
			partOf := map[int64]int{}
			for i, id := range ids {
				if id%3 != 2 {
					t.Fatalf("id %d: the server does not step ids by 3 from 2 (%v)", id, ids)
				}
				key := "key-last"
				if i < len(msgs) {
					key = fmt.Sprint("key-", i)
					eu[id] = i%3 == 0
				} else {
					eu[id] = true
				}
				partOf[id] = sqlstreams.PartitionForKey(key, parts)
			}
			// Every id names the row produced with it.
			rows, err := c.Stream[sqlstreams.RawPayload](name).Browse(testCtx(t), sqlstreams.BrowseOptions{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			byID := map[int64]string{}
			for _, r := range rows.Records {
				byID[r.ID] = string(r.Payload)
			}
			for i, id := range ids {
				if want := fmt.Sprintf(`{"n":%d}`, i); byID[id] != want {
					t.Fatalf("id %d was returned for message %d, but its row holds %q", id, i, byID[id])
				}
			}
			if len(byID) != len(ids) {
				t.Fatalf("the log holds %d rows, want %d", len(byID), len(ids))
			}

			// check compares Health and Describe with what the ids say.
			check := func(when string) {
				t.Helper()
				hl, err := c.Stream[sqlstreams.RawPayload](name).Health(testCtx(t))
				if err != nil {
					t.Fatal(err)
				}
				if want := slices.Max(ids); hl.HighWater != want {
					t.Errorf("%s: high-water %d, want the newest id %d", when, hl.HighWater, want)
				}
				for _, group := range []string{"all", "eu"} {
					d, err := c.Stream[sqlstreams.RawPayload](name).Group(group).Describe(testCtx(t))
					if err != nil {
						t.Fatal(err)
					}
					var gh sqlstreams.GroupHealth
					if vh, ok := hl.Version(1); ok {
						for _, g := range vh.Groups {
							if g.Group == group {
								gh = g
							}
						}
					}
					var unread, distance int64
					for part, dp := range d.Partitions {
						var hw, lag int64
						for _, id := range ids {
							if partOf[id] != part {
								continue
							}
							hw = max(hw, id)
							if id > dp.Cursor && (group == "all" || eu[id]) {
								lag++
							}
						}
						if dp.HighWater != hw || dp.Lag != lag || dp.Distance != hw-dp.Cursor {
							t.Errorf("%s: group %s partition %d: %+v; want high-water %d, lag %d (rows past the cursor), distance %d (high-water minus cursor)",
								when, group, part, dp, hw, lag, hw-dp.Cursor)
						}
						if dp.Cursor != 0 && partOf[dp.Cursor] != part {
							t.Errorf("%s: group %s partition %d: cursor %d is not an id of the partition", when, group, part, dp.Cursor)
						}
						if ph := gh.Partitions[part]; ph.Unread != lag || ph.Distance != dp.Distance || ph.HighWater != hw {
							t.Errorf("%s: health of group %s partition %d: %+v; want unread %d, distance %d", when, group, part, ph, lag, dp.Distance)
						}
						unread += lag
						distance += hw - dp.Cursor
					}
					if gh.Unread != unread || gh.CursorDistance != distance {
						t.Errorf("%s: health of group %s: unread %d, distance %d; want %d and %d", when, group, gh.Unread, gh.CursorDistance, unread, distance)
					}
				}
			}
			check("before any claim")
			ds, err := all.Claim(testCtx(t), 7)
			if err != nil || len(ds) != 7 {
				t.Fatalf("claim: %d deliveries, %v", len(ds), err)
			}
			if err := all.Ack(testCtx(t), ds...); err != nil {
				t.Fatal(err)
			}
			check("after 7 claimed")
			drainIDs(t, all)
			check("after draining")
		})
	}
}

// TestRetainRowsSteppedIDs: a row-count limit keeps exactly the newest
// MaxRows rows when ids step (it counts rows, not ids).
func TestRetainRowsSteppedIDs(t *testing.T) {
	t.Parallel()
	c := openClient(t, mysql.Open(withParams(newDatabase(t), mysqltest.SteppedIDs)))
	const name = "stepped-retain"
	stream := c.Stream[event](name)
	if _, err := stream.Create(testCtx(t), &sqlstreams.StreamOptions{Retention: sqlstreams.Retention{MaxRows: 5}}); err != nil {
		t.Fatal(err)
	}
	g, err := stream.Consumer("g").Register(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := stream.Producer().Register(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i := range 12 {
		id, err := p.Produce(testCtx(t), event{N: i})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if ids[1]-ids[0] != 3 {
		t.Fatalf("ids %v do not step by 3", ids)
	}
	drainIDs(t, g)
	ctx := testCtx(t)
	deadline := time.Now().Add(time.Minute)
	var removed int64
	for removed < 7 && time.Now().Before(deadline) {
		rep, err := c.Maintain(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Retained == 0 {
			break
		}
		removed += rep.Retained
	}
	page, err := c.Stream[sqlstreams.RawPayload](name).Browse(ctx, sqlstreams.BrowseOptions{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var kept []int64
	for _, r := range page.Records {
		kept = append(kept, r.ID)
	}
	if removed != 7 || !slices.Equal(kept, ids[7:]) {
		t.Errorf("retention removed %d rows and kept %v; want 7 removed and the newest 5, %v", removed, kept, ids[7:])
	}
}
