package conformance

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() { register("C12_Bridge", testBridge) }

// C12: a group bound to the old type re-produces each head as the new type
// at CompactionRank(-1). The copy beats the old-version head it was made
// from and loses to any rank-0 write of the new version for the same key, in
// either arrival order; a crash mid-drain loses nothing and leaves no wrong
// head.
func testBridge(t *testing.T, h *harness) {
	c := h.client(t) // creates the namespace under the parent test
	t.Run("CopyOrder", func(t *testing.T) { testBridgeOrder(t, c) })
	t.Run("CrashMidDrain", func(t *testing.T) { testBridgeCrash(t, h) })
}

// bridgeValue is what the bridge makes of a v1 value.
func bridgeValue(v EventV1) EventV2 {
	return EventV2{Seq: v.Seq, Total: Money{Cents: v.Total, Currency: "EUR"}}
}

// bridgeCopy re-produces a v1 delivery as V2 at rank -1 under the same key.
func bridgeCopy(t testing.TB, p2 *sqlstreams.Producer[EventV2], d sqlstreams.Delivery[EventV1]) int64 {
	t.Helper()
	id, err := p2.Produce(ctx(t), bridgeValue(d.Value), sqlstreams.Key(d.Key), sqlstreams.CompactionRank(-1))
	if err != nil {
		t.Fatalf("bridge copy of row %d (key %q): %v", d.ID, d.Key, err)
	}
	return id
}

// bridgeHead is the expected head of a key after the bridge.
type bridgeHead struct {
	id    int64
	rank  int64
	value EventV2
}

// checkBridgeHeads reads the stream's heads twice: through a RawPayload
// group, which reads every version (so a v1 head would show), and through
// Health. Each key must have exactly the expected head and no v1 head may
// remain.
func checkBridgeHeads(t *testing.T, c *sqlstreams.Client, stream, group string, want map[string]bridgeHead) {
	t.Helper()
	got := drain(t, consumer[sqlstreams.RawPayload](t, c, stream, group, nil))
	seen := map[string]bool{}
	for _, d := range got {
		w, ok := want[d.Key]
		if !ok {
			t.Errorf("unexpected head for key %q: row %d", d.Key, d.ID)
			continue
		}
		if seen[d.Key] {
			t.Errorf("key %q has more than one claimable row (row %d again)", d.Key, d.ID)
		}
		seen[d.Key] = true
		var v EventV2
		if err := json.Unmarshal(d.Value.Data, &v); err != nil {
			t.Errorf("head %d of key %q: payload %s: %v", d.ID, d.Key, d.Value.Data, err)
		}
		if d.ID != w.id || d.SchemaVersion != 2 || d.CompactionRank != w.rank || v != w.value {
			t.Errorf("head of key %q is row %d v%d rank %d %+v; want row %d v2 rank %d %+v",
				d.Key, d.ID, d.SchemaVersion, d.CompactionRank, v, w.id, w.rank, w.value)
		}
	}
	for k := range want {
		if !seen[k] {
			t.Errorf("key %q has no claimable head: lost", k)
		}
	}
	hl := health(t, c, stream)
	if n := headsAt(hl, 1); n != 0 {
		t.Errorf("health counts %d v1 heads after the bridge, want 0", n)
	}
	if n := headsAt(hl, 2); n != int64(len(want)) {
		t.Errorf("health counts %d v2 heads, want %d", n, len(want))
	}
}

func testBridgeOrder(t *testing.T, c *sqlstreams.Client) {
	const stream = "c12-order"
	createCompacted(t, c, stream, 1)
	p1 := producer[EventV1](t, c, stream)
	p2 := producer[EventV2](t, c, stream)
	bridge := consumer[EventV1](t, c, stream, "bridge", fastRetry(sqlstreams.ConsumerOptions{}))
	readers := consumer[EventV2](t, c, stream, "readers-v2", nil)

	keys := []string{"plain", "live-before", "live-after"}
	for i, k := range keys {
		if _, err := p1.Produce(ctx(t), EventV1{Seq: i + 1, Total: int64(100 * (i + 1))}, sqlstreams.Key(k)); err != nil {
			t.Fatal(err)
		}
	}
	ds := claimN(t, bridge, 10)
	if len(ds) != len(keys) {
		t.Fatalf("bridge claimed %d v1 heads, want %d", len(ds), len(keys))
	}
	live := func(k string, seq int) bridgeHead {
		v := EventV2{Seq: seq, Total: Money{Cents: 999, Currency: "USD"}}
		id, err := p2.Produce(ctx(t), v, sqlstreams.Key(k)) // a live write: rank 0
		if err != nil {
			t.Fatal(err)
		}
		return bridgeHead{id: id, rank: 0, value: v}
	}
	want := map[string]bridgeHead{}
	// The live write lands after the bridge claimed the v1 head but before
	// its copy: the later copy must still lose.
	want["live-before"] = live("live-before", 1000)
	for _, d := range ds {
		id := bridgeCopy(t, p2, d)
		if d.Key == "plain" {
			want["plain"] = bridgeHead{id: id, rank: -1, value: bridgeValue(d.Value)}
		}
	}
	// The live write lands after the copy: it wins too.
	want["live-after"] = live("live-after", 2000)
	if err := bridge.Ack(ctx(t), ds...); err != nil {
		t.Fatalf("bridge ack: %v", err)
	}
	checkBridgeHeads(t, c, stream, "heads", want)

	// A v2 group reading after the bridge gets each key's head once, and
	// never the copies that lost.
	got := drain(t, readers)
	if len(got) != len(want) {
		t.Errorf("v2 group got %d rows %v, want the %d heads", len(got), idsOf(got), len(want))
	}
	for _, d := range got {
		if w := want[d.Key]; d.ID != w.id || d.Value != w.value {
			t.Errorf("v2 group got row %d %+v for key %q, want head %d %+v", d.ID, d.Value, d.Key, w.id, w.value)
		}
	}
	// The bridge is drained and no v1 head is left, so v1 is retirable
	// although its rows remain in the log.
	vh, ok := health(t, c, stream).Version(1)
	if !ok || vh.Rows != int64(len(keys)) || !vh.Retirable {
		t.Errorf("v1 after the bridge: present %v, %d rows, retirable %v (%s); want %d rows, retirable",
			ok, vh.Rows, vh.Retirable, vh.Verdict(), len(keys))
	}
}

// The bridge claims a batch, copies half, and its process dies before any
// ack. Live v2 writes arrive meanwhile. A new process finishes the drain
// after the leases expire: every key ends with the right v2 head.
func testBridgeCrash(t *testing.T, h *harness) {
	const stream = "c12-crash"
	const n = 10
	opts := fastRetry(sqlstreams.ConsumerOptions{LeaseDuration: 600 * time.Millisecond})
	key := func(i int) string { return fmt.Sprintf("acct-%d", i) }
	want := map[string]bridgeHead{}

	// Process A.
	a := h.client(t)
	createCompacted(t, a, stream, 2)
	p1 := producer[EventV1](t, a, stream)
	p2a := producer[EventV2](t, a, stream)
	values := map[string]EventV1{}
	for i := range n {
		v := EventV1{Seq: i, Total: int64(100 * i)}
		values[key(i)] = v
		if _, err := p1.Produce(ctx(t), v, sqlstreams.Key(key(i))); err != nil {
			t.Fatal(err)
		}
	}
	bridgeA := consumer[EventV1](t, a, stream, "bridge", opts)
	batch := claimN(t, bridgeA, n)
	if len(batch) != n {
		t.Fatalf("bridge claimed %d, want %d", len(batch), n)
	}
	var leaseEnd time.Time
	copied := map[string]bool{}
	for _, d := range batch {
		if d.LeaseExpires().After(leaseEnd) {
			leaseEnd = d.LeaseExpires()
		}
		if d.Value.Seq < n/2 {
			id := bridgeCopy(t, p2a, d)
			copied[d.Key] = true
			want[d.Key] = bridgeHead{id: id, rank: -1, value: bridgeValue(d.Value)}
		}
	}
	liveWrite := func(p *sqlstreams.Producer[EventV2], i int) {
		v := EventV2{Seq: 1000 + i, Total: Money{Cents: 7, Currency: "USD"}}
		id, err := p.Produce(ctx(t), v, sqlstreams.Key(key(i)))
		if err != nil {
			t.Fatal(err)
		}
		want[key(i)] = bridgeHead{id: id, rank: 0, value: v}
	}
	liveWrite(p2a, 1) // a copied key gets a live write
	// Crash: no ack, no release.
	if err := a.Close(); err != nil {
		t.Fatalf("close process A: %v", err)
	}

	// Process B.
	b := h.client(t)
	p2b := producer[EventV2](t, b, stream)
	liveWrite(p2b, 7) // an uncopied key gets a live write while the bridge is down
	time.Sleep(time.Until(leaseEnd) + 50*time.Millisecond)
	bridgeB := consumer[EventV1](t, b, stream, "bridge", opts)
	redelivered := map[string]int{}
	for {
		ds := claimN(t, bridgeB, 3)
		if len(ds) == 0 {
			break
		}
		for _, d := range ds {
			redelivered[d.Key] = d.Attempt
			id := bridgeCopy(t, p2b, d)
			if _, live := want[d.Key]; !live {
				want[d.Key] = bridgeHead{id: id, rank: -1, value: bridgeValue(values[d.Key])}
			}
		}
		if err := bridgeB.Ack(ctx(t), ds...); err != nil {
			t.Fatalf("bridge ack after restart: %v", err)
		}
	}
	// Only the keys whose v1 row is still head come back: not the copied
	// ones, not the one a live write superseded.
	for i := range n {
		k := key(i)
		attempt, again := redelivered[k]
		switch {
		case i < n/2 || i == 7:
			if again {
				t.Errorf("key %q came back to the bridge (attempt %d) though its v1 row was superseded", k, attempt)
			}
		case !again:
			t.Errorf("key %q was claimed but never copied, and the restarted bridge did not get it back", k)
		case attempt != 2:
			t.Errorf("key %q came back at attempt %d, want 2", k, attempt)
		}
	}
	if len(want) != n {
		t.Fatalf("expected heads for %d keys, want %d: %v", len(want), n, want)
	}
	checkBridgeHeads(t, b, stream, "heads", want)
	hl := health(t, b, stream)
	vh, _ := hl.Version(1)
	gh := groupAt(t, hl, 1, "bridge")
	if gh.Unread != 0 || gh.Unresolved != 0 || !vh.Retirable {
		t.Errorf("after the drain the bridge has %d unread, %d unresolved; v1 verdict %q; want 0, 0, retirable",
			gh.Unread, gh.Unresolved, vh.Verdict())
	}
}
