package conformance

import (
	"fmt"
	"testing"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() { register("C13_RowCounts", testHealthRowCounts) }

// C13: Health's rows per version stay exact while a driver keeps counts
// instead of counting the log on every read: rows appended since the last
// read, rows that read counted, and rows retention removes on either side of
// what was counted, over several partitions, and for every later read.
func testHealthRowCounts(t *testing.T, h *harness) {
	c := h.client(t)
	const stream = "c13-row-counts"
	if _, err := c.Stream[sqlstreams.RawPayload](stream).Create(ctx(t), &sqlstreams.StreamOptions{Partitions: 3,
		Retention: sqlstreams.Retention{MaxRows: 3}}); err != nil {
		t.Fatal(err)
	}
	p1, p2 := producer[EventV1](t, c, stream), producer[EventV2](t, c, stream)
	// versions lists every row's version in id order, so that what is left
	// after retention (the newest rows) is known.
	var versions []int
	produce := func(vs ...int) {
		t.Helper()
		for _, v := range vs {
			key := sqlstreams.Key(fmt.Sprintf("k%d", len(versions)))
			var err error
			if v == 1 {
				_, err = p1.Produce(ctx(t), EventV1{Seq: len(versions)}, key)
			} else {
				_, err = p2.Produce(ctx(t), EventV2{Seq: len(versions)}, key)
			}
			if err != nil {
				t.Fatal(err)
			}
			versions = append(versions, v)
		}
	}
	want := func(when string, from int) {
		t.Helper()
		counts := map[int]int64{}
		for _, v := range versions[from:] {
			counts[v]++
		}
		// Twice: the first read may count rows the second reads as counted.
		for range 2 {
			hl := health(t, c, stream)
			for _, v := range []int{1, 2} {
				if got := rowsAt(hl, v); got != counts[v] {
					t.Errorf("%s: v%d rows %d, want %d", when, v, got, counts[v])
				}
			}
			if len(hl.Versions) != len(counts) {
				t.Errorf("%s: versions %+v, want only those with rows %v", when, hl.Versions, counts)
			}
		}
	}
	g := consumer[sqlstreams.RawPayload](t, c, stream, "g", nil)
	produce(1, 1, 2, 1, 2, 1)
	want("after the first appends", 0)
	produce(2, 2, 1, 1)
	want("after more appends", 0)
	// Retention removes rows the reads counted and, of the appends no read
	// has seen since, rows no read counted.
	produce(1, 2, 1, 2, 2)
	drain(t, g)
	maintain(t, c)
	want("after retention", len(versions)-3)
	produce(2, 2)
	want("after appends past retention", len(versions)-5)
	drain(t, g)
	maintain(t, c)
	want("after retention again", len(versions)-3)
}
