package conformance

import (
	"errors"
	"fmt"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() { register("C11_CompactionOrder", testCompactionOrder) }

// C11: on a compacted stream the head of a key is the row with the greatest
// (schema_version, compaction_rank, id). Only heads are claimable, by the
// main claim and by the exception claim; a row that is no longer head when
// the cursor reaches it is passed over; compaction removes superseded rows
// and never a head; every message on a compacted stream needs a key.
func testCompactionOrder(t *testing.T, h *harness) {
	c := h.client(t) // creates the namespace under the parent test
	t.Run("HeadOrder", func(t *testing.T) { testHeadOrder(t, c) })
	t.Run("PassedOver", func(t *testing.T) { testSupersededPassedOver(t, c) })
	t.Run("ExceptionClaim", func(t *testing.T) { testSupersededExceptions(t, c) })
	// Maintain works on every stream of a namespace: give it one of its own.
	t.Run("Compaction", func(t *testing.T) { testCompactionRemoves(t, (&harness{target: h.target}).client(t)) })
	t.Run("KeyRequired", func(t *testing.T) { testCompactedNeedsKey(t, c) })
}

// c11Write is one write of a key: a schema version (1 or 2) and a rank.
type c11Write struct {
	version int
	rank    int64
}

// c11Producers writes EventV1 or EventV2 rows by version.
type c11Producers struct {
	p1 *sqlstreams.Producer[EventV1]
	p2 *sqlstreams.Producer[EventV2]
}

func newC11Producers(t testing.TB, c *sqlstreams.Client, stream string) c11Producers {
	return c11Producers{p1: producer[EventV1](t, c, stream), p2: producer[EventV2](t, c, stream)}
}

// write appends one row for key at w's version and rank; seq tells rows apart.
func (ps c11Producers) write(t testing.TB, key string, w c11Write, seq int) int64 {
	t.Helper()
	opts := []sqlstreams.ProduceOption{sqlstreams.Key(key), sqlstreams.CompactionRank(w.rank)}
	var id int64
	var err error
	switch w.version {
	case 1:
		id, err = ps.p1.Produce(ctx(t), EventV1{Seq: seq, Total: int64(seq)}, opts...)
	case 2:
		id, err = ps.p2.Produce(ctx(t), EventV2{Seq: seq, Total: Money{Cents: int64(seq), Currency: "EUR"}}, opts...)
	default:
		t.Fatalf("c11: no producer for version %d", w.version)
	}
	if err != nil {
		t.Fatalf("produce key %q at v%d rank %d: %v", key, w.version, w.rank, err)
	}
	return id
}

func createCompacted(t testing.TB, c *sqlstreams.Client, stream string, partitions int) {
	t.Helper()
	if _, err := c.Stream[sqlstreams.RawPayload](stream).Create(ctx(t), &sqlstreams.StreamOptions{Compacted: true, Partitions: partitions}); err != nil {
		t.Fatalf("create compacted stream %q: %v", stream, err)
	}
}

func claimN[T sqlstreams.Versioned](t testing.TB, c *sqlstreams.Consumer[T], n int) []sqlstreams.Delivery[T] {
	t.Helper()
	ds, err := c.Claim(ctx(t), n)
	if err != nil {
		t.Fatalf("claim %d from group %q: %v", n, c.Group(), err)
	}
	return ds
}

// drainOneByOne claims one delivery at a time and acks it until a claim
// returns nothing.
func drainOneByOne[T sqlstreams.Versioned](t testing.TB, c *sqlstreams.Consumer[T]) []sqlstreams.Delivery[T] {
	t.Helper()
	var all []sqlstreams.Delivery[T]
	for {
		ds := claimN(t, c, 1)
		if len(ds) == 0 {
			return all
		}
		if err := c.Ack(ctx(t), ds...); err != nil {
			t.Fatalf("ack: %v", err)
		}
		all = append(all, ds...)
	}
}

// headsAt returns the number of compaction heads at version v (0 when the
// version is absent).
func headsAt(h sqlstreams.Health, v int) int64 {
	vh, _ := h.Version(v)
	return vh.Heads
}

func rowsAt(h sqlstreams.Health, v int) int64 {
	vh, _ := h.Version(v)
	return vh.Rows
}

func testHeadOrder(t *testing.T, c *sqlstreams.Client) {
	cases := []struct {
		name   string
		writes []c11Write // in arrival order, all for one key
		head   int        // index of the expected head in writes
	}{
		{"v2 rank -1 beats a later v1 rank 5", []c11Write{{2, -1}, {1, 5}}, 0},
		{"v2 rank -1 beats an earlier v1 rank 0", []c11Write{{1, 0}, {2, -1}}, 1},
		{"same version: an earlier higher rank beats a later lower rank", []c11Write{{1, 5}, {1, 2}}, 0},
		{"same version: a later higher rank wins", []c11Write{{2, -1}, {2, 0}}, 1},
		{"same version: rank 0 beats a later rank -1", []c11Write{{2, 0}, {2, -1}}, 0},
		{"equal version and rank: the later id wins", []c11Write{{1, 3}, {1, 3}}, 1},
		{"equal version and rank: the latest of three wins", []c11Write{{2, 0}, {2, 0}, {2, 0}}, 2},
		{"mixed history", []c11Write{{1, 9}, {2, -1}, {1, 10}, {2, -1}, {2, -2}, {1, 100}}, 3},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stream := fmt.Sprintf("c11-order-%d", i)
			createCompacted(t, c, stream, 1)
			ps := newC11Producers(t, c, stream)
			ids := make([]int64, len(tc.writes))
			for j, w := range tc.writes {
				ids[j] = ps.write(t, "acct-1", w, j+1)
			}
			// A second key proves heads are per key.
			otherID := ps.write(t, "acct-2", c11Write{1, -7}, 99)
			want := tc.writes[tc.head]
			wantID := ids[tc.head]

			hl := health(t, c, stream)
			wantHeads := map[int]int64{1: 1, 2: 0} // acct-2 at v1
			wantHeads[want.version]++
			for v, n := range wantHeads {
				if got := headsAt(hl, v); got != n {
					t.Errorf("health counts %d heads at v%d, want %d", got, v, n)
				}
			}

			// A RawPayload group reads every version yet only heads.
			raw := drain(t, consumer[sqlstreams.RawPayload](t, c, stream, "raw", nil))
			if !equalIDs(idsOf(raw), []int64{wantID, otherID}) {
				t.Fatalf("RawPayload group claimed %v, want the heads %v (acct-1) and %d (acct-2); writes %v got ids %v",
					idsOf(raw), wantID, otherID, tc.writes, ids)
			}
			for _, d := range raw {
				if d.ID == wantID && (d.SchemaVersion != want.version || d.CompactionRank != want.rank || d.Key != "acct-1") {
					t.Errorf("head delivery %d is v%d rank %d key %q, want v%d rank %d key acct-1",
						d.ID, d.SchemaVersion, d.CompactionRank, d.Key, want.version, want.rank)
				}
			}

			// Groups per version: only the group at the head's version gets acct-1.
			got1 := idsOf(drain(t, consumer[EventV1](t, c, stream, "v1", nil)))
			got2 := idsOf(drain(t, consumer[EventV2](t, c, stream, "v2", nil)))
			want1, want2 := []int64{otherID}, []int64(nil)
			if want.version == 1 {
				want1 = append(want1, wantID)
			} else {
				want2 = append(want2, wantID)
			}
			if !equalIDs(got1, want1) {
				t.Errorf("v1 group claimed %v, want %v", got1, want1)
			}
			if !equalIDs(got2, want2) {
				t.Errorf("v2 group claimed %v, want %v", got2, want2)
			}
		})
	}
}

// A row that was head when written but is superseded before the cursor
// reaches it is passed over; the cursor still moves past it.
func testSupersededPassedOver(t *testing.T, c *sqlstreams.Client) {
	const stream = "c11-passed"
	createCompacted(t, c, stream, 1)
	ps := newC11Producers(t, c, stream)
	g := consumer[EventV1](t, c, stream, "g", nil)

	first := ps.write(t, "k", c11Write{1, 0}, 1)
	if got := idsOf(drain(t, g)); !equalIDs(got, []int64{first}) {
		t.Fatalf("first claim got %v, want the head %d", got, first)
	}
	b := ps.write(t, "k", c11Write{1, 0}, 2)
	cc := ps.write(t, "k", c11Write{1, 0}, 3)
	other := ps.write(t, "j", c11Write{1, 0}, 4)
	if got := idsOf(drain(t, g)); !equalIDs(got, []int64{cc, other}) {
		t.Fatalf("claim after two more writes of k got %v, want only the head %d and key j's %d (row %d was superseded by then)", got, cc, other, b)
	}
	// A v2 write supersedes the v1 head before the v1 group reaches it.
	ps.write(t, "j", c11Write{1, 1}, 5)
	ps.write(t, "j", c11Write{2, -1}, 6)
	if got := idsOf(drain(t, g)); len(got) != 0 {
		t.Fatalf("v1 group claimed %v after a v2 write superseded key j; want nothing", got)
	}
	hl := health(t, c, stream)
	gh := groupAt(t, hl, 1, "g")
	if gh.Unread != 0 || gh.CursorDistance != 0 {
		t.Errorf("after passing superseded rows the group has unread %d and cursor distance %d, want 0 and 0", gh.Unread, gh.CursorDistance)
	}
}

// The exception claim hands out only heads: a delayed retry, an expired
// lease or a replayed dead delivery whose row was superseded meanwhile is
// not handed out again, and stops counting as unresolved.
func testSupersededExceptions(t *testing.T, c *sqlstreams.Client) {
	const stream = "c11-exceptions"
	createCompacted(t, c, stream, 1)
	ps := newC11Producers(t, c, stream)
	g := consumer[EventV1](t, c, stream, "g", fastRetry(sqlstreams.ConsumerOptions{LeaseDuration: settleLease}))

	// "still-head" comes last, so that the superseded exceptions come before
	// it in id order: a claim must look past them rather than come back
	// empty while a delivery is due.
	keys := []string{"delayed", "expired", "dead", "cross-version", "still-head"}
	first := map[string]int64{}
	for i, k := range keys {
		first[k] = ps.write(t, k, c11Write{1, 0}, i+1)
	}
	ds := claimN(t, g, 10)
	if len(ds) != len(keys) {
		t.Fatalf("claimed %d deliveries, want %d", len(ds), len(keys))
	}
	byKey := map[string]sqlstreams.Delivery[EventV1]{}
	for _, d := range ds {
		byKey[d.Key] = d
	}
	for _, k := range []string{"still-head", "delayed", "cross-version"} {
		if err := byKey[k].Retry(ctx(t), 0, errTest); err != nil {
			t.Fatalf("retry %s: %v", k, err)
		}
	}
	if err := byKey["dead"].Dead(ctx(t), errTest); err != nil {
		t.Fatalf("dead: %v", err)
	}
	// "expired" keeps its lease until it runs out.

	second := map[string]int64{}
	for i, k := range []string{"delayed", "expired", "dead"} {
		second[k] = ps.write(t, k, c11Write{1, 0}, 10+i)
	}
	crossV2 := ps.write(t, "cross-version", c11Write{2, -1}, 20)
	if n, err := g.Replay(ctx(t), first["dead"]); err != nil || n != 1 {
		t.Fatalf("replay the dead delivery: %d, %v; want 1", n, err)
	}
	time.Sleep(time.Until(byKey["expired"].LeaseExpires()) + 20*time.Millisecond)

	got := drainOneByOne(t, g)
	want := map[int64]int{first["still-head"]: 2, second["delayed"]: 1, second["expired"]: 1, second["dead"]: 1}
	if len(got) != len(want) {
		t.Errorf("after superseding writes the group got %v, want %v", idsOf(got), want)
	}
	for _, d := range got {
		attempt, ok := want[d.ID]
		switch {
		case !ok:
			t.Errorf("group was handed row %d (key %q, attempt %d), which is no longer a head", d.ID, d.Key, d.Attempt)
		case d.Attempt != attempt:
			t.Errorf("row %d (key %q) came at attempt %d, want %d", d.ID, d.Key, d.Attempt, attempt)
		}
	}
	gh := groupAt(t, health(t, c, stream), 1, "g")
	if gh.Unresolved != 0 || gh.Unread != 0 {
		t.Errorf("v1 group still has %d unresolved and %d unread after the claims (%+v)", gh.Unresolved, gh.Unread, gh)
	}
	if got := idsOf(drain(t, consumer[EventV2](t, c, stream, "g2", nil))); !equalIDs(got, []int64{crossV2}) {
		t.Errorf("v2 group got %v, want the v2 head %d", got, crossV2)
	}
}

// Client.Maintain compacts: superseded rows go, heads stay (also a head
// that is older than the row it beat, and a head that is leased).
func testCompactionRemoves(t *testing.T, c *sqlstreams.Client) {
	const stream = "c11-compact"
	createCompacted(t, c, stream, 2)
	ps := newC11Producers(t, c, stream)
	history := map[string][]c11Write{
		"k0": {{1, 0}, {1, 0}, {1, 0}},
		"k1": {{2, -1}, {1, 5}},
		"k2": {{1, 0}},
		"k3": {{1, 5}, {1, 1}},
		"k4": {{1, 0}, {2, -1}, {2, 0}},
	}
	heads := map[string]int{"k0": 2, "k1": 0, "k2": 0, "k3": 0, "k4": 2}
	var headIDs []int64
	total, seq := 0, 0
	wantRows := map[int]int64{}
	// Interleave keys so that heads and superseded rows alternate in the log.
	for round := 0; round < 3; round++ {
		for _, k := range []string{"k0", "k1", "k2", "k3", "k4"} {
			if round >= len(history[k]) {
				continue
			}
			seq++
			w := history[k][round]
			id := ps.write(t, k, w, seq)
			total++
			if heads[k] == round {
				headIDs = append(headIDs, id)
				wantRows[w.version]++
			}
		}
	}
	// A group holds a lease on a head while compaction runs.
	holder := consumer[EventV1](t, c, stream, "holder", nil)
	held := claimN(t, holder, 1)
	if len(held) != 1 {
		t.Fatalf("holder claimed %d deliveries, want 1", len(held))
	}

	before := health(t, c, stream)
	if got := rowsAt(before, 1) + rowsAt(before, 2); got != int64(total) {
		t.Fatalf("before compaction health counts %d rows, want %d", got, total)
	}
	rep, err := c.Maintain(ctx(t))
	if err != nil {
		t.Fatalf("Maintain: %v", err)
	}
	if want := int64(total - len(headIDs)); rep.Compacted != want {
		t.Errorf("Maintain compacted %d rows, want the %d superseded ones", rep.Compacted, want)
	}
	after := health(t, c, stream)
	for v, n := range wantRows {
		if got := rowsAt(after, v); got != n {
			t.Errorf("after compaction v%d has %d rows, want %d (its heads)", v, got, n)
		}
		if got := headsAt(after, v); got != n {
			t.Errorf("after compaction v%d has %d heads, want %d", v, got, n)
		}
	}
	if rep, err := c.Maintain(ctx(t)); err != nil || rep.Compacted != 0 {
		t.Errorf("second Maintain compacted %d (err %v), want 0", rep.Compacted, err)
	}
	if err := held[0].Ack(ctx(t)); err != nil {
		t.Errorf("ack of a head leased across compaction: %v", err)
	}
	if got := idsOf(drain(t, consumer[sqlstreams.RawPayload](t, c, stream, "all", nil))); !equalIDs(got, headIDs) {
		t.Errorf("after compaction a RawPayload group reads %v, want the heads %v", got, headIDs)
	}
}

// Every message on a compacted stream needs a key; nothing is written
// without one, in a batch either.
func testCompactedNeedsKey(t *testing.T, c *sqlstreams.Client) {
	const stream = "c11-keys"
	createCompacted(t, c, stream, 1)
	ps := newC11Producers(t, c, stream)
	raw := producer[sqlstreams.RawPayload](t, c, stream)
	if _, err := ps.p1.Produce(ctx(t), EventV1{Seq: 1}); !errors.Is(err, sqlstreams.ErrInvalidMessage) {
		t.Errorf("keyless produce on a compacted stream: %v, want ErrInvalidMessage", err)
	}
	if _, err := raw.Produce(ctx(t), sqlstreams.RawPayload{Version: 3, Data: []byte(`{}`)}, sqlstreams.CompactionRank(1)); !errors.Is(err, sqlstreams.ErrInvalidMessage) {
		t.Errorf("keyless RawPayload produce on a compacted stream: %v, want ErrInvalidMessage", err)
	}
	_, err := ps.p2.ProduceBatch(ctx(t),
		sqlstreams.NewMessage(EventV2{Seq: 2}, sqlstreams.Key("a")),
		sqlstreams.NewMessage(EventV2{Seq: 3}))
	if !errors.Is(err, sqlstreams.ErrInvalidMessage) {
		t.Errorf("batch with a keyless message on a compacted stream: %v, want ErrInvalidMessage", err)
	}
	hl := health(t, c, stream)
	if hl.HighWater != 0 || len(hl.Versions) != 0 {
		t.Errorf("refused produces wrote rows: high-water %d, versions %+v", hl.HighWater, hl.Versions)
	}
	// The same produce with a key succeeds.
	if _, err := ps.p1.Produce(ctx(t), EventV1{Seq: 1}, sqlstreams.Key("a")); err != nil {
		t.Errorf("keyed produce on a compacted stream: %v", err)
	}
}
