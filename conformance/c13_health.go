package conformance

import (
	"slices"
	"strings"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() { register("C13_Health", testHealth) }

// C13: for every version present, Health reports its rows and compaction
// heads and, per group at that version, unread rows (at the version, past
// the cursor, matching bindings, claimable), leased, delayed and dead
// deliveries, and the raw cursor distance (which spans skipped ids). A
// version is "retirable" only with no heads, no unread rows and no
// unresolved exceptions; otherwise the reasons are listed, and heads read
// "compaction heads remain". Processed rows still in the log do not block.
func testHealth(t *testing.T, h *harness) {
	c := h.client(t) // creates the namespace under the parent test
	t.Run("Counts", func(t *testing.T) { testHealthCounts(t, c) })
	t.Run("CompactionHeads", func(t *testing.T) { testHealthHeads(t, c) })
}

// healthGroups returns the names of the groups listed at version v.
func healthGroups(h sqlstreams.Health, v int) []string {
	vh, _ := h.Version(v)
	var names []string
	for _, g := range vh.Groups {
		names = append(names, g.Group)
	}
	slices.Sort(names)
	return names
}

// wantBlocked checks that version v is not retirable and that some reason
// names each of the given groups.
func wantBlocked(t *testing.T, h sqlstreams.Health, v int, groups ...string) {
	t.Helper()
	vh, ok := h.Version(v)
	if !ok {
		t.Fatalf("health has no version %d", v)
	}
	if vh.Retirable || len(vh.Reasons) == 0 || vh.Verdict() == "retirable" {
		t.Errorf("v%d: retirable %v, reasons %q, verdict %q; want not retirable with reasons", v, vh.Retirable, vh.Reasons, vh.Verdict())
	}
	for _, g := range groups {
		named := false
		for _, r := range vh.Reasons {
			named = named || strings.Contains(r, g)
		}
		if !named {
			t.Errorf("v%d: no reason names group %q: %q", v, g, vh.Reasons)
		}
	}
}

func wantRetirable(t *testing.T, h sqlstreams.Health, v int) {
	t.Helper()
	vh, ok := h.Version(v)
	if !ok {
		t.Fatalf("health has no version %d", v)
	}
	if !vh.Retirable || len(vh.Reasons) != 0 || vh.Verdict() != "retirable" {
		t.Errorf("v%d: retirable %v, reasons %q, verdict %q; want retirable", v, vh.Retirable, vh.Reasons, vh.Verdict())
	}
}

type groupFigures struct {
	unread, leased, delayed, dead, distance int64
}

func wantFigures(t *testing.T, h sqlstreams.Health, v int, group string, want groupFigures) {
	t.Helper()
	g := groupAt(t, h, v, group)
	got := groupFigures{g.Unread, g.Leased, g.Delayed, g.Dead, g.CursorDistance}
	if got != want {
		t.Errorf("v%d group %s: got %+v, want %+v", v, group, got, want)
	}
	if g.Unresolved != g.Leased+g.Delayed+g.Dead {
		t.Errorf("v%d group %s: unresolved %d is not leased+delayed+dead (%d)", v, group, g.Unresolved, g.Leased+g.Delayed+g.Dead)
	}
}

func testHealthCounts(t *testing.T, c *sqlstreams.Client) {
	const stream = "c13"
	p1 := producer[EventV1](t, c, stream)
	p2 := producer[EventV2](t, c, stream)
	g1 := consumer[EventV1](t, c, stream, "g1", &sqlstreams.ConsumerOptions{Bindings: []string{"eu.#"}})
	g2 := consumer[EventV2](t, c, stream, "g2", nil)
	raw := consumer[sqlstreams.RawPayload](t, c, stream, "raw", nil)

	// The log, in id order. g1 reads the v1 rows routed eu.* (a, d, f, g);
	// the row after f is one it reads, so that its cursor after claiming up
	// to f is exactly f.
	layout := []struct {
		version int
		rk      string
	}{
		{1, "eu.web"}, // a
		{2, "eu.web"}, // b
		{1, "us.web"}, // c
		{1, "eu.web"}, // d
		{2, "eu.web"}, // e
		{1, "eu.app"}, // f
		{1, "eu.web"}, // g
		{1, "us.app"}, // h
		{2, "us.web"}, // i
	}
	ids := make([]int64, len(layout))
	for i, l := range layout {
		var err error
		if l.version == 1 {
			ids[i], err = p1.Produce(ctx(t), EventV1{Seq: i}, sqlstreams.RoutingKey(l.rk))
		} else {
			ids[i], err = p2.Produce(ctx(t), EventV2{Seq: i}, sqlstreams.RoutingKey(l.rk))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	high := ids[len(ids)-1]
	a, d, f, g := ids[0], ids[3], ids[5], ids[6]

	// Nothing read yet.
	hl := health(t, c, stream)
	if hl.Stream != stream || hl.HighWater != high || hl.Compacted {
		t.Errorf("health header: stream %q high-water %d compacted %v; want %q, %d, false", hl.Stream, hl.HighWater, hl.Compacted, stream, high)
	}
	if vs := len(hl.Versions); vs != 2 {
		t.Fatalf("health lists %d versions, want 2: %+v", vs, hl.Versions)
	}
	for v, n := range map[int]int64{1: 6, 2: 3} {
		vh, _ := hl.Version(v)
		if vh.Rows != n || vh.Heads != 0 {
			t.Errorf("v%d: %d rows %d heads, want %d rows, no heads", v, vh.Rows, vh.Heads, n)
		}
	}
	if got := healthGroups(hl, 1); !slices.Equal(got, []string{"g1", "raw"}) {
		t.Errorf("groups at v1: %v, want [g1 raw]", got)
	}
	if got := healthGroups(hl, 2); !slices.Equal(got, []string{"g2", "raw"}) {
		t.Errorf("groups at v2: %v, want [g2 raw]", got)
	}
	if gh := groupAt(t, hl, 1, "raw"); !gh.AllVersions {
		t.Errorf("the RawPayload group is not marked AllVersions: %+v", gh)
	}
	// g1 has 4 rows to read, yet its cursor is 9 ids behind: the distance
	// spans v2 rows and rows its bindings skip.
	wantFigures(t, hl, 1, "g1", groupFigures{unread: 4, distance: high})
	wantFigures(t, hl, 2, "g2", groupFigures{unread: 3, distance: high})
	wantFigures(t, hl, 1, "raw", groupFigures{unread: 6, distance: high})
	wantFigures(t, hl, 2, "raw", groupFigures{unread: 3, distance: high})
	wantBlocked(t, hl, 1, "g1", "raw")
	wantBlocked(t, hl, 2, "g2", "raw")

	if n := len(drain(t, raw)); n != len(layout) {
		t.Fatalf("RawPayload group drained %d rows, want %d", n, len(layout))
	}
	hl = health(t, c, stream)
	wantFigures(t, hl, 1, "raw", groupFigures{})
	wantFigures(t, hl, 2, "raw", groupFigures{})

	// g1: a is delayed, d dead, f leased, g unread. Claim first, so that no
	// claim depends on whether a's retry has come due yet.
	ds := claimN(t, g1, 2)
	if !equalIDs(idsOf(ds), []int64{a, d}) {
		t.Fatalf("g1 claimed %v, want %v", idsOf(ds), []int64{a, d})
	}
	held := claimN(t, g1, 1)
	if !equalIDs(idsOf(held), []int64{f}) {
		t.Fatalf("g1 claimed %v, want [%d]", idsOf(held), f)
	}
	const delay = 300 * time.Millisecond
	if err := ds[0].Retry(ctx(t), delay, errTest); err != nil {
		t.Fatal(err)
	}
	delayedUntil := time.Now().Add(delay)
	if err := ds[1].Dead(ctx(t), errTest); err != nil {
		t.Fatal(err)
	}
	hl = health(t, c, stream)
	wantFigures(t, hl, 1, "g1", groupFigures{unread: 1, leased: 1, delayed: 1, dead: 1, distance: high - f})
	wantBlocked(t, hl, 1, "g1")
	wantFigures(t, hl, 2, "g2", groupFigures{unread: 3, distance: high}) // untouched by g1

	// Resolve all but the dead one: the dead delivery alone still blocks.
	if err := held[0].Ack(ctx(t)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(delayedUntil) + 20*time.Millisecond)
	got := drain(t, g1)
	if !equalIDs(idsOf(got), []int64{a, g}) {
		t.Fatalf("g1 drained %v, want %v", idsOf(got), []int64{a, g})
	}
	for _, dl := range got {
		if dl.ID == a && dl.Attempt != 2 {
			t.Errorf("retried row %d came back at attempt %d, want 2", a, dl.Attempt)
		}
	}
	hl = health(t, c, stream)
	wantFigures(t, hl, 1, "g1", groupFigures{dead: 1})
	wantBlocked(t, hl, 1, "g1")

	// Discarding the dead one makes v1 retirable, though its six rows are
	// still in the log; v2 stays blocked by g2's unread rows.
	if n, err := g1.DiscardAll(ctx(t)); err != nil || n != 1 {
		t.Fatalf("discard: %d, %v; want 1", n, err)
	}
	hl = health(t, c, stream)
	wantFigures(t, hl, 1, "g1", groupFigures{})
	wantRetirable(t, hl, 1)
	if vh, _ := hl.Version(1); vh.Rows != 6 {
		t.Errorf("v1 rows after processing: %d, want 6 (retention has not run)", vh.Rows)
	}
	wantBlocked(t, hl, 2, "g2")
	drain(t, g2)
	wantRetirable(t, health(t, c, stream), 2)
}

// Heads count per version, unread counts only claimable rows (heads), and
// any head at a version blocks it with "compaction heads remain", however
// drained its groups are.
func testHealthHeads(t *testing.T, c *sqlstreams.Client) {
	const stream = "c13-compacted"
	createCompacted(t, c, stream, 1)
	ps := newC11Producers(t, c, stream)
	g1 := consumer[EventV1](t, c, stream, "g1", nil)
	g2 := consumer[EventV2](t, c, stream, "g2", nil)

	ps.write(t, "k1", c11Write{1, 0}, 1)
	ps.write(t, "k2", c11Write{1, 0}, 2)
	ps.write(t, "k1", c11Write{2, -1}, 3)

	hl := health(t, c, stream)
	if !hl.Compacted {
		t.Errorf("health of a compacted stream says Compacted false")
	}
	for v, want := range map[int][2]int64{1: {2, 1}, 2: {1, 1}} {
		vh, _ := hl.Version(v)
		if vh.Rows != want[0] || vh.Heads != want[1] {
			t.Errorf("v%d: %d rows %d heads, want %d rows %d heads", v, vh.Rows, vh.Heads, want[0], want[1])
		}
	}
	// k1's v1 row is no longer a head, so it is not unread work.
	if gh := groupAt(t, hl, 1, "g1"); gh.Unread != 1 {
		t.Errorf("v1 group unread %d, want 1 (only k2's v1 row is claimable)", gh.Unread)
	}
	drain(t, g1)
	drain(t, g2)

	hl = health(t, c, stream)
	for _, v := range []int{1, 2} {
		vh, _ := hl.Version(v)
		if vh.Retirable || !slices.Equal(vh.Reasons, []string{"compaction heads remain"}) {
			t.Errorf("v%d with a head and drained groups: retirable %v, reasons %q; want exactly [compaction heads remain]",
				v, vh.Retirable, vh.Reasons)
		}
	}
	// Once k2 has a v2 head too, v1 has no head left and is retirable with
	// its two rows still in the log.
	ps.write(t, "k2", c11Write{2, -1}, 4)
	drain(t, g2)
	hl = health(t, c, stream)
	wantRetirable(t, hl, 1)
	if vh, _ := hl.Version(1); vh.Rows != 2 || vh.Heads != 0 {
		t.Errorf("v1 after the move: %d rows %d heads, want 2 rows, no heads", vh.Rows, vh.Heads)
	}
	if n := headsAt(hl, 2); n != 2 {
		t.Errorf("v2 heads %d, want 2", n)
	}
}
