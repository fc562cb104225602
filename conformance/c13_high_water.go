package conformance

import (
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() { register("C13_HighWater", testHighWater) }

// C13's high-water mark is the greatest id ever assigned: compaction and
// retention remove rows, never the mark, so cursor distances do not shrink
// when the newest rows go.
func testHighWater(t *testing.T, h *harness) {
	t.Run("Compaction", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		c := h.client(t)
		const stream = "c13-hw-compact"
		if _, err := c.Stream[EventV1](stream).Create(ctx(t), &sqlstreams.StreamOptions{Compacted: true}); err != nil {
			t.Fatal(err)
		}
		p := producer[EventV1](t, c, stream)
		if _, err := p.Produce(ctx(t), EventV1{Seq: 1}, sqlstreams.Key("k")); err != nil {
			t.Fatal(err)
		}
		// A lower rank loses at once: the newest row is superseded.
		last, err := p.Produce(ctx(t), EventV1{Seq: 2}, sqlstreams.Key("k"), sqlstreams.CompactionRank(-1))
		if err != nil {
			t.Fatal(err)
		}
		consumer[EventV1](t, c, stream, "g", nil)
		before := health(t, c, stream)
		rep, err := c.Maintain(ctx(t))
		if err != nil || rep.Compacted != 1 {
			t.Fatalf("maintain: %+v, %v; want the superseded row compacted", rep, err)
		}
		after := health(t, c, stream)
		if before.HighWater != last || after.HighWater != last {
			t.Errorf("high-water %d before and %d after compacting the newest row; want %d both times", before.HighWater, after.HighWater, last)
		}
		if g := groupAt(t, after, 1, "g"); g.CursorDistance != last {
			t.Errorf("cursor distance %d after compaction; want %d (from cursor 0)", g.CursorDistance, last)
		}
	})

	t.Run("Retention", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		c := h.client(t)
		const stream = "c13-hw-retain"
		if _, err := c.Stream[EventV1](stream).Create(ctx(t), &sqlstreams.StreamOptions{Partitions: 2,
			Retention: sqlstreams.Retention{MaxAge: time.Millisecond, Hard: true}}); err != nil {
			t.Fatal(err)
		}
		p := producer[EventV1](t, c, stream)
		ids := produceV1(t, p, 4)
		time.Sleep(20 * time.Millisecond)
		rep, err := c.Maintain(ctx(t))
		if err != nil || rep.Retained != 4 {
			t.Fatalf("maintain: %+v, %v; want all 4 rows retained away", rep, err)
		}
		hl := health(t, c, stream)
		if hl.HighWater != ids[3] {
			t.Errorf("high-water %d after retention removed every row; want %d", hl.HighWater, ids[3])
		}
		next := produceV1(t, p, 1)
		if next[0] <= ids[3] {
			t.Errorf("a new row got id %d after retention; ids must keep increasing past %d", next[0], ids[3])
		}
	})
}
