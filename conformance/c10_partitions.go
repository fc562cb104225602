package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

func init() { register("C10_Partitions", testPartitions) }

// C10: a stream has P partitions, fixed at creation; a keyed message goes to
// PartitionForKey(key, P); consumers of a group claim different partitions
// concurrently; the main claim hands out a partition's rows in id order; an
// ordered consumer's failing row holds its partition until it resolves or
// goes dead while other partitions continue.
func testPartitions(t *testing.T, h *harness) {
	c := h.client(t)
	t.Run("Placement", func(t *testing.T) { testPartitionPlacement(t, c) })
	t.Run("ConcurrentClaims", func(t *testing.T) { testPartitionConcurrentClaims(t, h, c) })
	t.Run("OrderedHold", func(t *testing.T) { testPartitionOrderedHold(t, c) })
	t.Run("OrderedRun", func(t *testing.T) { testPartitionOrderedRun(t, c) })
	t.Run("NoStarvation", func(t *testing.T) { testPartitionNoStarvation(t, c) })
}

// keysFor returns one key per partition 0..parts-1 (under a prefix).
func keysFor(prefix string, parts int) []string {
	keys := make([]string, parts)
	found := 0
	for i := 0; found < parts; i++ {
		k := fmt.Sprintf("%s-%d", prefix, i)
		if p := sqlstreams.PartitionForKey(k, parts); keys[p] == "" {
			keys[p] = k
			found++
		}
	}
	return keys
}

func testPartitionPlacement(t *testing.T, c *sqlstreams.Client) {
	// The default is one partition.
	producer[EventV1](t, c, "c10-default")
	if info, err := c.Stream[sqlstreams.RawPayload]("c10-default").Get(ctx(t)); err != nil || info.Partitions != 1 {
		t.Errorf("a stream created by registration has %d partitions (err %v), want 1", info.Partitions, err)
	}

	const stream, parts = "c10-placement", 5
	if _, err := c.Stream[EventV1](stream).Create(ctx(t), &sqlstreams.StreamOptions{Partitions: parts}); err != nil {
		t.Fatalf("create: %v", err)
	}
	// Fixed at creation: creating again fails and changes nothing.
	if _, err := c.Stream[EventV1](stream).Create(ctx(t), &sqlstreams.StreamOptions{Partitions: 2}); !errors.Is(err, sqlstreams.ErrStreamExists) {
		t.Errorf("second Create: err %v, want ErrStreamExists", err)
	}
	if info, err := c.Stream[EventV1](stream).Get(ctx(t)); err != nil || info.Partitions != parts {
		t.Errorf("Get: %d partitions (err %v), want %d", info.Partitions, err, parts)
	}
	p := producer[EventV1](t, c, stream)
	if p.Stream().Partitions != parts {
		t.Errorf("producer sees %d partitions, want %d", p.Stream().Partitions, parts)
	}
	keyOf := map[int64]string{}
	var batch []sqlstreams.Message[EventV1]
	for i := range 40 {
		k := fmt.Sprintf("acct-%d", i%13)
		if i%2 == 0 {
			id, err := p.Produce(ctx(t), EventV1{Seq: i}, sqlstreams.Key(k))
			if err != nil {
				t.Fatal(err)
			}
			keyOf[id] = k
		} else {
			batch = append(batch, sqlstreams.NewMessage(EventV1{Seq: i}, sqlstreams.Key(k)))
		}
	}
	ids, err := p.ProduceBatch(ctx(t), batch...)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		keyOf[id] = fmt.Sprintf("acct-%d", (2*i+1)%13)
	}
	g := consumer[EventV1](t, c, stream, "g", nil)
	got := drain(t, g)
	if len(got) != len(keyOf) {
		t.Fatalf("drained %d rows, want %d", len(got), len(keyOf))
	}
	last := map[int]int64{}
	used := map[int]bool{}
	for _, d := range got {
		if d.Key != keyOf[d.ID] {
			t.Errorf("row %d has key %q, produced with %q", d.ID, d.Key, keyOf[d.ID])
		}
		if want := sqlstreams.PartitionForKey(d.Key, parts); d.Partition != want {
			t.Errorf("row %d with key %q is in partition %d, want PartitionForKey = %d", d.ID, d.Key, d.Partition, want)
		}
		if d.ID <= last[d.Partition] {
			t.Errorf("partition %d handed out row %d after row %d: not in id order", d.Partition, d.ID, last[d.Partition])
		}
		last[d.Partition] = d.ID
		used[d.Partition] = true
	}
	if len(used) < 3 {
		t.Errorf("13 keys landed in only %d of %d partitions", len(used), parts)
	}
	// The cursor is per partition: health spans all of them.
	if hg := groupAt(t, health(t, c, stream), 1, "g"); hg.CursorDistance != 0 || hg.Unread != 0 {
		t.Errorf("health after draining every partition: %+v", hg)
	}
}

func testPartitionConcurrentClaims(t *testing.T, h *harness, c *sqlstreams.Client) {
	const stream, parts = "c10-concurrent", 4
	if _, err := c.Stream[EventV1](stream).Create(ctx(t), &sqlstreams.StreamOptions{Partitions: parts}); err != nil {
		t.Fatalf("create: %v", err)
	}
	keys := keysFor("k", parts)
	p := producer[EventV1](t, c, stream)
	perPart := map[int][]int64{}
	for range 3 {
		for part, k := range keys {
			perPart[part] = append(perPart[part], produceV1(t, p, 1, sqlstreams.Key(k))...)
		}
	}

	// Ordered group, members on two clients: a partition with a pending
	// delivery is unavailable to every other member, so each claim of one
	// takes the head of a different partition.
	c2 := h.client(t)
	opts := &sqlstreams.ConsumerOptions{Ordered: true, LeaseDuration: 10 * time.Second}
	members := []*sqlstreams.Consumer[EventV1]{
		consumer[EventV1](t, c, stream, "ordered", opts),
		consumer[EventV1](t, c2, stream, "ordered", opts),
	}
	var held []sqlstreams.Delivery[EventV1]
	for i := range parts {
		ds, err := members[i%2].Claim(ctx(t), 1)
		if err != nil || len(ds) != 1 {
			t.Fatalf("claim %d: %v (err %v), want one delivery", i, idsOf(ds), err)
		}
		held = append(held, ds[0])
	}
	seen := map[int]bool{}
	for _, d := range held {
		if seen[d.Partition] {
			t.Errorf("two members hold partition %d at once: %v", d.Partition, idsOf(held))
		}
		seen[d.Partition] = true
		if d.ID != perPart[d.Partition][0] {
			t.Errorf("partition %d handed out row %d first, want %d", d.Partition, d.ID, perPart[d.Partition][0])
		}
	}
	for _, m := range members {
		if ds, err := m.Claim(ctx(t), 10); err != nil || len(ds) != 0 {
			t.Errorf("with every partition held, a member claimed %v (err %v)", idsOf(ds), err)
		}
	}
	// Acking a partition's row frees that partition only, for its next row.
	if err := held[0].Ack(ctx(t)); err != nil {
		t.Fatal(err)
	}
	ds, err := members[1].Claim(ctx(t), 10)
	if err != nil || len(ds) == 0 {
		t.Fatalf("after the ack: %v (err %v)", idsOf(ds), err)
	}
	if want := perPart[held[0].Partition][1:]; !slices.Equal(idsOf(ds), want) {
		t.Errorf("after acking partition %d's head the other member claimed %v, want that partition's next rows in order %v", held[0].Partition, idsOf(ds), want)
	}
	for _, d := range append(held[1:], ds...) {
		if err := d.Ack(ctx(t)); err != nil {
			t.Fatal(err)
		}
	}

	// Unordered group: members claiming at once share the rows, each row
	// to one member, each member's rows in id order per partition.
	var all []int64
	for _, ids := range perPart {
		all = append(all, ids...)
	}
	un := []*sqlstreams.Consumer[EventV1]{
		consumer[EventV1](t, c, stream, "unordered", nil),
		consumer[EventV1](t, c2, stream, "unordered", nil),
		consumer[EventV1](t, c2, stream, "unordered", nil),
	}
	var mu sync.Mutex
	var got []int64
	var wg sync.WaitGroup
	for _, m := range un {
		wg.Go(func() {
			for {
				ds, err := m.Claim(context.Background(), 2)
				if err != nil {
					t.Errorf("concurrent claim: %v", err)
					return
				}
				if len(ds) == 0 {
					return
				}
				last := map[int]int64{}
				for _, d := range ds {
					if d.ID <= last[d.Partition] {
						t.Errorf("one claim handed out partition %d's rows out of order: %v", d.Partition, idsOf(ds))
					}
					last[d.Partition] = d.ID
				}
				mu.Lock()
				got = append(got, idsOf(ds)...)
				mu.Unlock()
				if err := m.Ack(context.Background(), ds...); err != nil {
					t.Errorf("ack: %v", err)
				}
			}
		})
	}
	wg.Wait()
	if !equalIDs(got, all) {
		t.Errorf("concurrent members got %v between them, want each of %v once", sortedIDs(got), sortedIDs(all))
	}
}

func testPartitionOrderedHold(t *testing.T, c *sqlstreams.Client) {
	const stream, parts = "c10-hold", 3
	if _, err := c.Stream[EventV1](stream).Create(ctx(t), &sqlstreams.StreamOptions{Partitions: parts}); err != nil {
		t.Fatalf("create: %v", err)
	}
	keys := keysFor("h", parts)
	kx, ky := keys[0], keys[1]
	p := producer[EventV1](t, c, stream)
	g := consumer[EventV1](t, c, stream, "ordered", fastRetry(sqlstreams.ConsumerOptions{Ordered: true, MaxAttempts: 2}))
	x := produceV1(t, p, 3, sqlstreams.Key(kx))

	claim := func(what string) []sqlstreams.Delivery[EventV1] {
		t.Helper()
		ds, err := g.Claim(ctx(t), 10)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return ds
	}
	// Take partition X's first row and fail it.
	first, err := g.Claim(ctx(t), 1)
	if err != nil || len(first) != 1 || first[0].ID != x[0] {
		t.Fatalf("first claim: %v (err %v), want %d", idsOf(first), err, x[0])
	}
	const delay = 300 * time.Millisecond
	failedAt := time.Now()
	if err := first[0].Retry(ctx(t), delay, errTest); err != nil {
		t.Fatal(err)
	}
	// Other partitions continue; X's later rows are not handed out. A claim
	// that returned after the retry fell due (a slow machine) may also hold
	// the retry, as it may; never a row behind it.
	y := produceV1(t, p, 2, sqlstreams.Key(ky))
	var retry []sqlstreams.Delivery[EventV1]
	ds := claim("claim while X is held")
	dueBefore := time.Now().Before(failedAt.Add(delay - time.Millisecond))
	var ys []sqlstreams.Delivery[EventV1]
	for _, d := range ds {
		switch {
		case slices.Contains(y, d.ID):
			ys = append(ys, d)
		case d.ID == x[0] && !dueBefore:
			retry = append(retry, d)
		default:
			t.Fatalf("while partition X waits on a retry, claimed %v; want only partition Y's rows %v (and the retry of %d once due)", idsOf(ds), y, x[0])
		}
	}
	if !slices.Equal(idsOf(ys), y) {
		t.Fatalf("while partition X waits on a retry, claimed %v; want partition Y's rows %v", idsOf(ds), y)
	}
	if err := g.Ack(ctx(t), ys...); err != nil {
		t.Fatal(err)
	}
	// When due, only the failing row comes back, and the rows behind it
	// still wait while it is leased again.
	if len(retry) == 0 {
		eventually(t, 30*time.Second, "the retry", func() bool {
			retry = claim("claim the retry")
			// Returning before the due time proves an early claim; starting
			// before it does not (the claim decides later).
			if len(retry) > 0 && time.Now().Before(failedAt.Add(delay-time.Millisecond)) {
				t.Fatalf("before the retry of %d was due, claimed %v", x[0], idsOf(retry))
			}
			return len(retry) > 0
		})
	}
	if len(retry) != 1 || retry[0].ID != x[0] || retry[0].Attempt != 2 {
		t.Fatalf("claimed %v, want only row %d at attempt 2", idsOf(retry), x[0])
	}
	if ds := claim("claim while the retry is leased"); len(ds) != 0 {
		t.Fatalf("while row %d's retry is leased, claimed %v", x[0], idsOf(ds))
	}
	// Its last attempt fails: dead releases the partition, in order.
	if err := retry[0].Retry(ctx(t), 0, errTest); err != nil {
		t.Fatal(err)
	}
	if dl := deadLetter(t, g, x[0]); dl.Attempt != 2 {
		t.Errorf("row %d dead at attempt %d", x[0], dl.Attempt)
	}
	ds = claim("claim after death")
	if !slices.Equal(idsOf(ds), x[1:]) {
		t.Fatalf("after row %d went dead, claimed %v; want the rest of its partition in order %v", x[0], idsOf(ds), x[1:])
	}
	// A failing row that then resolves also holds, then releases.
	if err := ds[0].Retry(ctx(t), 0, errTest); err != nil {
		t.Fatal(err)
	}
	// ds[1] is still leased from the same claim: ack it out of turn, as a
	// pull consumer may; it is resolved and must not come back.
	if err := ds[1].Ack(ctx(t)); err != nil {
		t.Fatal(err)
	}
	x4 := produceV1(t, p, 1, sqlstreams.Key(kx))
	var again []sqlstreams.Delivery[EventV1]
	eventually(t, 30*time.Second, "the retry", func() bool {
		again = claim("claim the retry")
		return len(again) > 0
	})
	if len(again) != 1 || again[0].ID != x[1] {
		t.Fatalf("claimed %v, want only the retried row %d (row %d waits behind it)", idsOf(again), x[1], x4[0])
	}
	if err := again[0].Ack(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if ds := claim("claim after the retry resolved"); !slices.Equal(idsOf(ds), x4) {
		t.Fatalf("after the retried row resolved, claimed %v; want %v", idsOf(ds), x4)
	} else if err := g.Ack(ctx(t), ds...); err != nil {
		t.Fatal(err)
	}
}

func testPartitionOrderedRun(t *testing.T, c *sqlstreams.Client) {
	const stream, parts = "c10-run", 2
	if _, err := c.Stream[EventV1](stream).Create(ctx(t), &sqlstreams.StreamOptions{Partitions: parts}); err != nil {
		t.Fatalf("create: %v", err)
	}
	keys := keysFor("r", parts)
	p := producer[EventV1](t, c, stream)
	// Interleave partitions X and Y.
	var x, y []int64
	for range 4 {
		x = append(x, produceV1(t, p, 1, sqlstreams.Key(keys[0]))...)
		y = append(y, produceV1(t, p, 1, sqlstreams.Key(keys[1]))...)
	}
	// Long enough that partition Y's four rows finish within X's two
	// backoffs even on a loaded machine.
	const backoff = time.Second
	g := consumer[EventV1](t, c, stream, "ordered", fastRetry(sqlstreams.ConsumerOptions{Ordered: true, Concurrency: 4, BatchSize: 4,
		Backoff: func(int) time.Duration { return backoff }}))
	var rec recorder
	var mu sync.Mutex
	var order []call // successful handles in completion order
	stop := runFor(t, g, func(_ context.Context, d sqlstreams.Delivery[EventV1]) error {
		rec.add(d)
		if d.ID == x[1] && d.Attempt < 3 {
			return errTest // resolves on the third attempt
		}
		mu.Lock()
		order = append(order, call{id: d.ID, attempt: d.Attempt, at: time.Now()})
		mu.Unlock()
		return nil
	})
	eventually(t, 30*time.Second, "every row to be handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) == len(x)+len(y)
	})
	stop()

	mu.Lock()
	defer mu.Unlock()
	var gotX, gotY []int64
	var xResolved, lastY time.Time
	for _, cl := range order {
		switch {
		case slices.Contains(x, cl.id):
			gotX = append(gotX, cl.id)
			if cl.id == x[1] {
				xResolved = cl.at
			}
		default:
			gotY = append(gotY, cl.id)
			lastY = cl.at
		}
	}
	if !slices.Equal(gotX, x) || !slices.Equal(gotY, y) {
		t.Errorf("ordered Run resolved partition X as %v (want %v) and Y as %v (want %v)", gotX, x, gotY, y)
	}
	// Nothing behind the failing row was handled before it resolved.
	for _, id := range x[2:] {
		for _, cl := range rec.of(id) {
			if cl.at.Before(xResolved) {
				t.Errorf("row %d was handled at %v, before row %d ahead of it in its partition resolved at %v", id, cl.at, x[1], xResolved)
			}
		}
	}
	if calls := rec.of(x[1]); len(calls) != 3 {
		t.Errorf("failing row handled %d times, want 3", len(calls))
	}
	// Partition Y did not wait for X's retries (two backoffs).
	if !lastY.Before(xResolved) {
		t.Errorf("partition Y finished at %v, after partition X's failing row resolved at %v: a failing row held another partition", lastY, xResolved)
	}
}

// testPartitionNoStarvation: a member whose every claim fills its limit
// from one partition (a backlog that never runs dry while it claims) still
// reaches the others. Engines may start a member's claims where its last
// claim's rows were, which saves a round trip, but only a few claims in a
// row (driver.StickyClaims); from then on a claim starts at a drawn
// partition, here one of two, so the lone row in the other partition comes
// out long before the backlog is drained (the chance that it does not is
// about 2^-20).
func testPartitionNoStarvation(t *testing.T, c *sqlstreams.Client) {
	const stream, parts, backlog = "c10-starve", 2, 20 * (driver.StickyClaims + 1)
	if _, err := c.Stream[EventV1](stream).Create(ctx(t), &sqlstreams.StreamOptions{Partitions: parts}); err != nil {
		t.Fatalf("create: %v", err)
	}
	keys := keysFor("s", parts)
	p := producer[EventV1](t, c, stream)
	msgs := make([]sqlstreams.Message[EventV1], backlog)
	for i := range msgs {
		msgs[i] = sqlstreams.NewMessage(EventV1{Seq: i + 1}, sqlstreams.Key(keys[0]))
	}
	if _, err := p.ProduceBatch(ctx(t), msgs...); err != nil {
		t.Fatal(err)
	}
	lone := produceV1(t, p, 1, sqlstreams.Key(keys[1]))[0]
	cons := consumer[EventV1](t, c, stream, "g", &sqlstreams.ConsumerOptions{LeaseDuration: time.Minute})
	for i := range backlog {
		ds, err := cons.Claim(ctx(t), 1)
		if err != nil || len(ds) != 1 {
			t.Fatalf("claim %d: %d deliveries, %v", i+1, len(ds), err)
		}
		if ds[0].ID == lone {
			return
		}
		if err := cons.Ack(ctx(t), ds...); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("partition 1's row was not claimed in %d claims while partition 0 had rows left: one partition starved the other", backlog)
}
