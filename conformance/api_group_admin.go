package conformance

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() {
	register("API_GroupAdmin", testGroupAdmin)
	register("API_ResetCursors", testResetCursors)
	register("API_HealthDetail", testHealthDetail)
	register("API_Browse", testBrowse)
}

// A group is reachable by name alone, whatever version it reads: Describe
// shows its configuration, cursors against the high-water marks, lag and
// lease holders (the client identities); dead letters are listed, read one
// by one with their failure history and holder, replayed and discarded; the
// group can be deleted. Nothing registers or records a reader schema.
func testGroupAdmin(t *testing.T, h *harness) {
	drv, err := h.target.Open(h.ns(t))
	if err != nil {
		t.Fatal(err)
	}
	c := h.clientOn(t, drv, sqlstreams.WithIdentity("pod-a:1"))
	const stream = "admin"
	if _, err := c.Stream[EventV2](stream).Create(ctx(t), &sqlstreams.StreamOptions{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	p := producer[EventV2](t, c, stream)
	keys := keysForPartitions(2)
	ids := map[string][]int64{}
	for i := range 3 {
		for _, k := range keys {
			id, err := p.Produce(ctx(t), EventV2{Seq: i}, sqlstreams.Key(k), sqlstreams.RoutingKey("eu.web"))
			if err != nil {
				t.Fatal(err)
			}
			ids[k] = append(ids[k], id)
		}
	}
	cons := consumer[EventV2](t, c, stream, "fraud", &sqlstreams.ConsumerOptions{Bindings: []string{"eu.#"}, MaxAttempts: 2, LeaseDuration: time.Hour,
		Backoff: func(int) time.Duration { return 0 }})
	ds, err := cons.Claim(ctx(t), 2)
	if err != nil || len(ds) != 2 {
		t.Fatalf("claim: %v, %v", idsOf(ds), err)
	}
	// ds[0] fails twice (dead at the second attempt); ds[1] stays leased.
	if err := ds[0].Retry(ctx(t), 0, errors.New("first failure")); err != nil {
		t.Fatal(err)
	}
	var dead int64
	eventually(t, 30*time.Second, "the retry", func() bool {
		again, err := cons.Claim(ctx(t), 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range again {
			if d.ID != ds[0].ID {
				t.Fatalf("claimed %d, want the retried %d", d.ID, ds[0].ID)
			}
			if err := d.Retry(ctx(t), 0, errors.New("second failure")); err != nil {
				t.Fatal(err)
			}
			dead = d.ID
		}
		return dead != 0
	})

	if gs, err := c.Stream[sqlstreams.RawPayload](stream).Groups(ctx(t)); err != nil || len(gs) != 1 || gs[0].Name != "fraud" ||
		gs[0].SchemaVersion != 2 || !slices.Equal(gs[0].Bindings, []string{"eu.#"}) {
		t.Errorf("groups of %q: %+v, %v", stream, gs, err)
	}
	if c.Identity() != "pod-a:1" {
		t.Errorf("identity %q", c.Identity())
	}
	// A RawPayload handle reaches the v2 group by name.
	g := c.Stream[sqlstreams.RawPayload](stream).Group("fraud")
	d, err := g.Describe(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if d.SchemaVersion != 2 || d.AllVersions || !slices.Equal(d.Bindings, []string{"eu.#"}) || len(d.Partitions) != 2 {
		t.Fatalf("describe: %+v", d)
	}
	var lag, distance int64
	for _, part := range d.Partitions {
		if part.HighWater < part.Cursor || part.Distance != part.HighWater-part.Cursor {
			t.Errorf("partition %+v", part)
		}
		lag += part.Lag
		distance += part.Distance
	}
	if lag != 4 {
		t.Errorf("lag %d over the partitions; want the 4 rows not yet claimed", lag)
	}
	if len(d.Holders) != 1 || d.Holders[0].Holder != "pod-a:1" || d.Holders[0].Leases != 1 || d.Holders[0].Until.Before(time.Now().Add(50*time.Minute)) {
		t.Errorf("holders %+v; want pod-a:1 holding one lease for about an hour", d.Holders)
	}
	if d.Leased != 1 || d.Dead != 1 || d.Delayed != 0 || len(d.Versions) != 1 || d.Versions[0].Version != 2 || d.Versions[0].Unread != 4 {
		t.Errorf("describe counts: leased %d dead %d delayed %d versions %+v", d.Leased, d.Dead, d.Delayed, d.Versions)
	}

	dls, err := g.DeadLetters(ctx(t), 0, 10)
	if err != nil || len(dls) != 1 || dls[0].ID != dead || dls[0].Holder != "pod-a:1" || dls[0].History != nil {
		t.Fatalf("dead letters %+v, %v; want %d held by pod-a:1, without history in a list", dls, err, dead)
	}
	one, err := g.DeadLetter(ctx(t), dead)
	if err != nil {
		t.Fatal(err)
	}
	if len(one.History) != 2 || one.History[0].Attempt != 1 || one.History[0].Error != "first failure" || one.History[1].Attempt != 2 ||
		!strings.Contains(one.History[1].Error, "second failure") || one.History[0].Holder != "pod-a:1" || one.History[0].At.After(one.History[1].At) ||
		len(one.Payload) == 0 || one.Attempt != 2 {
		t.Errorf("dead letter %d: %+v", dead, one)
	}
	if _, err := g.DeadLetter(ctx(t), ds[1].ID); !errors.Is(err, sqlstreams.ErrDeadLetterNotFound) {
		t.Errorf("a leased delivery as a dead letter: %v; want ErrDeadLetterNotFound", err)
	}
	if n, err := g.Replay(ctx(t), dead); err != nil || n != 1 {
		t.Fatalf("replay: %d, %v", n, err)
	}
	// The history survives the replay, and a new failure adds to it.
	again, err := cons.Claim(ctx(t), 10)
	if err != nil || !slices.Contains(idsOf(again), dead) {
		t.Fatalf("after replay claimed %v, %v; want %d among them", idsOf(again), err, dead)
	}
	for _, dl := range again {
		if dl.ID == dead {
			if err := dl.Dead(ctx(t), errors.New("third failure")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if one, err = g.DeadLetter(ctx(t), dead); err != nil || len(one.History) != 3 || one.History[2].Error != "third failure" || one.History[2].Attempt != 1 {
		t.Errorf("after replay and a third failure: %+v, %v; want 3 history entries, the last at attempt 1", one.History, err)
	}
	if n, err := g.DiscardAll(ctx(t)); err != nil || n != 1 {
		t.Errorf("discard all: %d, %v", n, err)
	}
	if readers, err := c.Registry().Readers(ctx(t), stream); err != nil || len(readers) != 1 || readers[0].Group != "fraud" {
		t.Errorf("readers %+v, %v; the name-only handle must record none", readers, err)
	}
	if err := g.Delete(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Describe(ctx(t)); !errors.Is(err, sqlstreams.ErrGroupNotFound) {
		t.Errorf("describe after delete: %v; want ErrGroupNotFound", err)
	}
	// A group that is not there is an error on every delivery operation,
	// not an empty answer a tool would print as "nothing dead".
	missing := c.Stream[sqlstreams.RawPayload](stream).Group("fruad")
	if _, err := missing.DeadLetters(ctx(t), 0, 10); !errors.Is(err, sqlstreams.ErrGroupNotFound) {
		t.Errorf("dead letters of a missing group: %v; want ErrGroupNotFound", err)
	}
	if _, err := missing.DeadLetter(ctx(t), dead); !errors.Is(err, sqlstreams.ErrGroupNotFound) {
		t.Errorf("dead letter of a missing group: %v; want ErrGroupNotFound", err)
	}
	if _, err := missing.Replay(ctx(t), dead); !errors.Is(err, sqlstreams.ErrGroupNotFound) {
		t.Errorf("replay on a missing group: %v; want ErrGroupNotFound", err)
	}
	if _, err := missing.DiscardAll(ctx(t)); !errors.Is(err, sqlstreams.ErrGroupNotFound) {
		t.Errorf("discard all on a missing group: %v; want ErrGroupNotFound", err)
	}
}

// Cursor resets move a group like kafka-consumer-groups --reset-offsets:
// dry runs change nothing; earliest, latest, id, time and shift land where
// they say; members running meanwhile go on from the new position; rows
// leased or dead when the cursor comes back over them keep their state.
func testResetCursors(t *testing.T, h *harness) {
	c := h.client(t)
	const stream = "reset"
	p := producer[EventV1](t, c, stream)
	first := produceV1(t, p, 5)
	time.Sleep(20 * time.Millisecond)
	mid := time.Now()
	time.Sleep(20 * time.Millisecond)
	second := produceV1(t, p, 5)
	all := append(slices.Clone(first), second...)
	cons := consumer[EventV1](t, c, stream, "g", &sqlstreams.ConsumerOptions{LeaseDuration: time.Hour})
	g := c.Stream[sqlstreams.RawPayload](stream).Group("g")
	cursor := func() int64 {
		d, err := g.Describe(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		return d.Partitions[0].Cursor
	}
	reset := func(to sqlstreams.ResetTo, dry bool) []sqlstreams.CursorChange {
		t.Helper()
		ch, err := g.ResetCursors(ctx(t), sqlstreams.ResetOptions{To: to, DryRun: dry})
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
	// Read everything: one held, one dead, the rest acked.
	ds := drainKeep(t, cons, 10)
	held, buried := ds[2], ds[3]
	if err := buried.Dead(ctx(t), errTest); err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if d.ID != held.ID && d.ID != buried.ID {
			if err := d.Ack(ctx(t)); err != nil {
				t.Fatal(err)
			}
		}
	}
	last := all[len(all)-1]
	for _, tc := range []struct {
		name string
		to   sqlstreams.ResetTo
		// The cursor must land in [low, want]. Ids need not be dense (a
		// Galera cluster steps them by its size), and every position from
		// the row before the target to the id before it makes the target
		// the next row read; only "time" searches, and may stop anywhere
		// there. Where ids are dense the range is one id.
		low, want int64
	}{
		{"earliest", sqlstreams.ResetToEarliest(), first[0] - 1, first[0] - 1},
		{"id", sqlstreams.ResetToID(second[1]), second[1] - 1, second[1] - 1},
		{"time", sqlstreams.ResetToTime(mid), first[len(first)-1], second[0] - 1},
		{"latest", sqlstreams.ResetToLatest(), last, last},
		{"shift back 3", sqlstreams.ResetShift(-3), all[len(all)-3] - 1, all[len(all)-3] - 1},
	} {
		before := cursor()
		ch := reset(tc.to, true)
		if len(ch) != 1 || ch[0].From != before || ch[0].To < tc.low || ch[0].To > tc.want || cursor() != before {
			t.Errorf("dry run %s: %+v; want one change %d -> [%d, %d], and the cursor unchanged", tc.name, ch, before, tc.low, tc.want)
		}
		if ch := reset(tc.to, false); len(ch) != 1 || ch[0].To < tc.low || ch[0].To > tc.want || cursor() != ch[0].To {
			t.Errorf("reset %s: %+v, cursor %d; want [%d, %d]", tc.name, ch, cursor(), tc.low, tc.want)
		}
	}
	if ch := reset(sqlstreams.ResetShift(2), false); ch[0].To != all[len(all)-2] {
		t.Errorf("shift forward 2 from 3 back: %+v; want %d", ch, all[len(all)-2])
	}
	// Back to the start: acked rows come again at attempt 1; the held and
	// the dead one keep their state.
	reset(sqlstreams.ResetToEarliest(), false)
	if gh := groupAt(t, health(t, c, stream), 1, "g"); gh.Unread != int64(len(all)-2) || gh.Leased != 1 || gh.Dead != 1 {
		t.Errorf("after resetting to the earliest: unread %d, leased %d, dead %d; want %d unread (not the held and the dead one, counted as exceptions)",
			gh.Unread, gh.Leased, gh.Dead, len(all)-2)
	}
	again := drainKeep(t, cons, 20)
	var againIDs []int64
	for _, d := range again {
		againIDs = append(againIDs, d.ID)
		if d.Attempt != 1 {
			t.Errorf("row %d after the reset came at attempt %d, want 1", d.ID, d.Attempt)
		}
	}
	want := slices.DeleteFunc(slices.Clone(all), func(id int64) bool { return id == held.ID || id == buried.ID })
	if !slices.Equal(againIDs, want) {
		t.Errorf("after resetting to the earliest: claimed %v; want %v (not the held %d or the dead %d)", againIDs, want, held.ID, buried.ID)
	}
	if err := held.Ack(ctx(t)); err != nil {
		t.Errorf("the held delivery's ack after the reset: %v", err)
	}
	if dl, err := g.DeadLetters(ctx(t), 0, 10); err != nil || len(dl) != 1 || dl[0].ID != buried.ID {
		t.Errorf("dead letters after the reset: %v, %v; want only %d", dl, err, buried.ID)
	}
	for _, tc := range []sqlstreams.ResetOptions{{}, {To: sqlstreams.ResetShift(0)}, {To: sqlstreams.ResetToID(0)}, {To: sqlstreams.ResetToLatest(), Partitions: []int{3}}} {
		if _, err := g.ResetCursors(ctx(t), tc); !errors.Is(err, sqlstreams.ErrInvalidOption) {
			t.Errorf("reset %+v: %v; want ErrInvalidOption", tc, err)
		}
	}

	t.Run("WhileRunning", func(t *testing.T) {
		// A member runs; resetting to the earliest makes it handle
		// everything again, once, without an error or a stop.
		cons2 := consumer[EventV1](t, c, stream, "live", fastRetry(sqlstreams.ConsumerOptions{}))
		seen := newHandled()
		stop := runFor(t, cons2, func(_ context.Context, d sqlstreams.Delivery[EventV1]) error {
			seen.add("run", d)
			return nil
		})
		eventually(t, 30*time.Second, "the first pass, acked", func() bool {
			// Every handler has returned before Health is read, so no
			// delivery Health does not count as leased is still unsettled.
			if seen.count() != len(all) {
				return false
			}
			return groupAt(t, health(t, c, stream), 1, "live").Unresolved == 0
		})
		if _, err := c.Stream[EventV1](stream).Group("live").ResetCursors(ctx(t), sqlstreams.ResetOptions{To: sqlstreams.ResetToEarliest()}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "the second pass", func() bool { return seen.count() == 2*len(all) })
		stop()
		seen.mu.Lock()
		defer seen.mu.Unlock()
		for _, id := range all {
			if n := len(seen.calls[id]); n != 2 {
				t.Errorf("row %d handled %d times over the two passes, want 2", id, n)
			}
		}
	})
}

// drainKeep claims until nothing is left, up to max, without settling.
func drainKeep(t testing.TB, c *sqlstreams.Consumer[EventV1], max int) []sqlstreams.Delivery[EventV1] {
	t.Helper()
	var out []sqlstreams.Delivery[EventV1]
	for len(out) < max {
		ds, err := c.Claim(ctx(t), max-len(out))
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 0 {
			break
		}
		out = append(out, ds...)
	}
	return out
}

// Health carries the per-partition figures behind each group's totals,
// stable codes for every reason, and a note for a version no group reads.
func testHealthDetail(t *testing.T, h *harness) {
	c := h.client(t)
	const stream = "health-detail"
	if _, err := c.Stream[EventV1](stream).Create(ctx(t), &sqlstreams.StreamOptions{Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	keys := keysForPartitions(3)
	p1, p2 := producer[EventV1](t, c, stream), producer[EventV2](t, c, stream)
	perPart := []int{2, 0, 3}
	for part, n := range perPart {
		produceV1(t, p1, n, sqlstreams.Key(keys[part]))
	}
	produceV2(t, p2, 2) // nobody reads v2
	cons := consumer[EventV1](t, c, stream, "g", &sqlstreams.ConsumerOptions{LeaseDuration: time.Hour})
	ds, err := cons.Claim(ctx(t), 1)
	if err != nil || len(ds) != 1 {
		t.Fatal(idsOf(ds), err)
	}
	hl := health(t, c, stream)
	g := groupAt(t, hl, 1, "g")
	if len(g.Partitions) != 3 {
		t.Fatalf("partitions %+v", g.Partitions)
	}
	var unread, distance int64
	for _, ph := range g.Partitions {
		unread += ph.Unread
		distance += ph.Distance
		if ph.Distance != ph.HighWater-ph.Cursor {
			t.Errorf("partition %+v: distance is not high-water minus cursor", ph)
		}
	}
	if unread != g.Unread || distance != g.CursorDistance || g.Unread != 4 {
		t.Errorf("per-partition unread %d / distance %d; group totals %d / %d (want 4 unread)", unread, distance, g.Unread, g.CursorDistance)
	}
	claimedPart := ds[0].Partition
	if g.Partitions[claimedPart].Unread != int64(perPart[claimedPart]-1) {
		t.Errorf("partition %d unread %d; want %d after one claim", claimedPart, g.Partitions[claimedPart].Unread, perPart[claimedPart]-1)
	}
	v1, _ := hl.Version(1)
	codes := map[string]int64{}
	for _, r := range v1.Blockers {
		codes[r.Code] = r.Count
		if r.Group != "g" || r.Text == "" {
			t.Errorf("blocker %+v", r)
		}
	}
	if codes[sqlstreams.ReasonUnread] != 4 || codes[sqlstreams.ReasonLeased] != 1 || len(codes) != 2 || len(v1.Reasons) != 2 {
		t.Errorf("v1 blockers %+v; want unread 4 and leased 1", v1.Blockers)
	}
	v2, _ := hl.Version(2)
	if !v2.Retirable || len(v2.Notes) != 1 || v2.Notes[0].Code != sqlstreams.ReasonNoGroup || v2.Notes[0].Count != 2 {
		t.Errorf("v2 with rows and no group: retirable %v, notes %+v; want retirable with a no_group note", v2.Retirable, v2.Notes)
	}
	if err := ds[0].Dead(ctx(t), errTest); err != nil {
		t.Fatal(err)
	}
	v1, _ = health(t, c, stream).Version(1)
	if i := slices.IndexFunc(v1.Blockers, func(r sqlstreams.Reason) bool { return r.Code == sqlstreams.ReasonDead }); i < 0 || v1.Blockers[i].Count != 1 {
		t.Errorf("after Dead: blockers %+v; want a dead blocker", v1.Blockers)
	}
}

// Browse reads the log without claiming: filtered by partition, version and
// key, paged after an id, from a time, or the newest rows; each call
// examines a bounded number of rows and says where to go on.
func testBrowse(t *testing.T, h *harness) {
	c := h.client(t)
	const stream = "browse"
	if _, err := c.Stream[EventV1](stream).Create(ctx(t), &sqlstreams.StreamOptions{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	keys := keysForPartitions(2)
	p1, p2 := producer[EventV1](t, c, stream), producer[EventV2](t, c, stream)
	v1a := produceV1(t, p1, 3, sqlstreams.Key(keys[0]), sqlstreams.Header("h", "1"))
	time.Sleep(20 * time.Millisecond)
	from := time.Now()
	time.Sleep(20 * time.Millisecond)
	v2b := produceV2(t, p2, 2, sqlstreams.Key(keys[1]))
	v1b := produceV1(t, p1, 2, sqlstreams.Key(keys[1]))
	s := c.Stream[sqlstreams.RawPayload](stream)
	browse := func(o sqlstreams.BrowseOptions) sqlstreams.BrowsePage {
		t.Helper()
		page, err := s.Browse(ctx(t), o)
		if err != nil {
			t.Fatal(err)
		}
		return page
	}
	ids := func(p sqlstreams.BrowsePage) []int64 {
		var out []int64
		for _, r := range p.Records {
			out = append(out, r.ID)
		}
		return out
	}
	all := append(append(slices.Clone(v1a), v2b...), v1b...)
	if page := browse(sqlstreams.BrowseOptions{}); !slices.Equal(ids(page), all) || !page.Done {
		t.Errorf("browse all: %v (done %v); want %v", ids(page), page.Done, all)
	}
	first := browse(sqlstreams.BrowseOptions{}).Records[0]
	if first.SchemaVersion != 1 || first.Key != keys[0] || !first.HasKey || first.Headers["h"] != "1" || string(first.Payload) != `{"seq":1,"total":100}` {
		t.Errorf("first record %+v", first)
	}
	one := 1
	if page := browse(sqlstreams.BrowseOptions{Partition: &one}); !slices.Equal(ids(page), append(slices.Clone(v2b), v1b...)) {
		t.Errorf("partition 1: %v", ids(page))
	}
	if page := browse(sqlstreams.BrowseOptions{Versions: []int{2}}); !slices.Equal(ids(page), v2b) {
		t.Errorf("version 2: %v; want %v", ids(page), v2b)
	}
	k := keys[0]
	if page := browse(sqlstreams.BrowseOptions{Key: &k}); !slices.Equal(ids(page), v1a) {
		t.Errorf("key %s: %v; want %v", k, ids(page), v1a)
	}
	if page := browse(sqlstreams.BrowseOptions{From: from}); !slices.Equal(ids(page), append(slices.Clone(v2b), v1b...)) {
		t.Errorf("from a time: %v", ids(page))
	}
	if page := browse(sqlstreams.BrowseOptions{Last: true, Limit: 3}); !slices.Equal(ids(page), all[len(all)-3:]) || page.Next != all[len(all)-1] {
		t.Errorf("last 3: %v next %d; want %v", ids(page), page.Next, all[len(all)-3:])
	}
	// Paging by two.
	var paged []int64
	for after, n := int64(0), 0; n < 10; n++ {
		page := browse(sqlstreams.BrowseOptions{AfterID: after, Limit: 2})
		paged = append(paged, ids(page)...)
		if page.Done {
			break
		}
		after = page.Next
	}
	if !slices.Equal(paged, all) {
		t.Errorf("paged by two: %v; want %v", paged, all)
	}
	// A filter matching nothing on a larger log stops after a bounded scan.
	var msgs []sqlstreams.Message[EventV1]
	for i := range 2500 {
		msgs = append(msgs, sqlstreams.NewMessage(EventV1{Seq: i}, sqlstreams.Key(keys[0])))
	}
	for start := 0; start < len(msgs); start += 500 {
		if _, err := p1.ProduceBatch(ctx(t), msgs[start:start+500]...); err != nil {
			t.Fatal(err)
		}
	}
	nobody := "nobody"
	page := browse(sqlstreams.BrowseOptions{Key: &nobody, Limit: 10})
	if len(page.Records) != 0 || page.Done || page.Next <= all[len(all)-1] {
		t.Errorf("a key nobody has: %d records, done %v, next %d; want an empty page that is not done, to go on from", len(page.Records), page.Done, page.Next)
	}
	pages := 1
	for !page.Done && pages < 100 {
		page = browse(sqlstreams.BrowseOptions{Key: &nobody, Limit: 10, AfterID: page.Next})
		pages++
	}
	if !page.Done || pages < 2 {
		t.Errorf("following Next: done %v after %d pages; want done after more than one", page.Done, pages)
	}
	if _, err := s.Browse(ctx(t), sqlstreams.BrowseOptions{Limit: sqlstreams.MaxBrowseLimit + 1}); !errors.Is(err, sqlstreams.ErrInvalidOption) {
		t.Errorf("limit over the maximum: %v", err)
	}
}
