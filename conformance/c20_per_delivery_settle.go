package conformance

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() { register("C20_PerDeliverySettle", testPerDeliverySettle) }

// C20: ack, retry, dead, release and lease extension apply to each delivery
// on its own: a lost or already-settled delivery in a batch never changes
// another delivery's outcome or lets its lease lapse, and the error names
// exactly the deliveries that were not settled. No delivery is processed
// twice while its lease holds; a claim that returns an error has leased
// nothing, and a delivery never handed to the application is never buried
// for lack of attempts.
func testPerDeliverySettle(t *testing.T, h *harness) {
	t.Run("BatchAckWithCompactedRow", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		// One delivery of a claimed batch is compacted away: acking the batch
		// resolves the others and names that one.
		const stream = "c20-compacted-ack"
		c := h.client(t)
		if _, err := c.Stream[EventV1](stream).Create(ctx(t), &sqlstreams.StreamOptions{Compacted: true}); err != nil {
			t.Fatal(err)
		}
		p := producer[EventV1](t, c, stream)
		cons := consumer[EventV1](t, c, stream, "g", &sqlstreams.ConsumerOptions{LeaseDuration: time.Hour})
		for i := range 15 {
			if _, err := p.Produce(ctx(t), EventV1{Seq: i}, sqlstreams.Key(fmt.Sprintf("k%d", i))); err != nil {
				t.Fatal(err)
			}
		}
		ds, err := cons.Claim(ctx(t), 15)
		if err != nil || len(ds) != 15 {
			t.Fatalf("claim: %d deliveries, %v; want 15", len(ds), err)
		}
		gone := ds[3]
		if _, err := p.Produce(ctx(t), EventV1{Seq: 100}, sqlstreams.Key(gone.Key)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Maintain(ctx(t)); err != nil {
			t.Fatal(err)
		}
		err = cons.Ack(ctx(t), ds...)
		var se *sqlstreams.SettleError
		if !errors.Is(err, sqlstreams.ErrLeaseLost) || !errors.As(err, &se) || !equalIDs(se.Lost, []int64{gone.ID}) || len(se.AlreadySettled) != 0 {
			t.Fatalf("acking the batch: %v; want a *SettleError matching ErrLeaseLost that names only row %d", err, gone.ID)
		}
		g := groupAt(t, health(t, c, stream), 1, "g")
		if g.Unresolved != 0 || g.Unread != 1 {
			t.Errorf("after the batch ack: %d unresolved, %d unread; want 0 unresolved and only the new head unread", g.Unresolved, g.Unread)
		}
	})

	t.Run("BatchAckWithTakenLease", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		// One delivery's lease expired and another member took it: acking a
		// batch that includes it resolves the others and leaves it with the
		// new holder. Every lease is long until both claims are made, so
		// that a slow claim cannot find the first one expired; then the
		// first is cut short.
		const stream = "c20-taken-ack"
		ca, cb := h.client(t), h.client(t)
		p := producer[EventV1](t, ca, stream)
		ids := produceV1(t, p, 15)
		long := consumer[EventV1](t, ca, stream, "g", &sqlstreams.ConsumerOptions{LeaseDuration: time.Hour})
		b := consumer[EventV1](t, cb, stream, "g", &sqlstreams.ConsumerOptions{LeaseDuration: time.Hour})
		first, rest, taken := takeOver(t, long, b, ids)
		err := long.Ack(ctx(t), append(first, rest...)...)
		var se *sqlstreams.SettleError
		if !errors.As(err, &se) || !equalIDs(se.Lost, []int64{ids[0]}) {
			t.Fatalf("acking the batch: %v; want a *SettleError naming only row %d as lost", err, ids[0])
		}
		if g := groupAt(t, health(t, ca, stream), 1, "g"); g.Leased != 1 || g.Delayed+g.Dead != 0 {
			t.Errorf("after the batch ack: %d leased, %d delayed, %d dead; want only B's lease left", g.Leased, g.Delayed, g.Dead)
		}
		if err := taken[0].Ack(ctx(t)); err != nil {
			t.Errorf("B's ack of the delivery it holds: %v", err)
		}
	})

	t.Run("AckWithAlreadySettled", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		// Ack(d1, d2) with d2 already acked records d1 and names d2.
		const stream = "c20-already"
		c := h.client(t)
		p := producer[EventV1](t, c, stream)
		produceV1(t, p, 2)
		cons := consumer[EventV1](t, c, stream, "g", &sqlstreams.ConsumerOptions{LeaseDuration: settleLease})
		ds, err := cons.Claim(ctx(t), 2)
		if err != nil || len(ds) != 2 {
			t.Fatalf("claim: %v, %v", idsOf(ds), err)
		}
		d1, d2 := ds[0], ds[1]
		if err := d2.Ack(ctx(t)); err != nil {
			t.Fatal(err)
		}
		err = cons.Ack(ctx(t), d1, d2)
		var se *sqlstreams.SettleError
		if !errors.Is(err, sqlstreams.ErrAlreadySettled) || !errors.As(err, &se) || !equalIDs(se.AlreadySettled, []int64{d2.ID}) || len(se.Lost) != 0 {
			t.Fatalf("Ack(d1, d2) with d2 acked: %v; want ErrAlreadySettled naming only %d", err, d2.ID)
		}
		if err := d1.Ack(ctx(t)); !errors.Is(err, sqlstreams.ErrAlreadySettled) {
			t.Errorf("acking d1 again: %v; want ErrAlreadySettled, since the batch recorded it", err)
		}
		pastLeases(d1) // d1 must not come back
		if again, err := cons.Claim(ctx(t), 10); err != nil || len(again) != 0 {
			t.Errorf("after the lease: claimed %v, %v; want nothing, d1 was acked", idsOf(again), err)
		}
	})

	t.Run("HeartbeatWithCompactedRows", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		// Run holds a batch longer than its lease; some of the rows are
		// compacted away meanwhile. The heartbeat must keep extending the
		// others, so that a second member never processes them.
		const stream, n = "c20-heartbeat", 24
		ca, cb := h.client(t), h.client(t)
		if _, err := ca.Stream[EventV1](stream).Create(ctx(t), &sqlstreams.StreamOptions{Compacted: true}); err != nil {
			t.Fatal(err)
		}
		p := producer[EventV1](t, ca, stream)
		for i := range n {
			if _, err := p.Produce(ctx(t), EventV1{Seq: i}, sqlstreams.Key(fmt.Sprintf("k%d", i))); err != nil {
				t.Fatal(err)
			}
		}
		opts := sqlstreams.ConsumerOptions{Concurrency: 1, BatchSize: n, LeaseDuration: 3 * time.Second, PollInterval: 20 * time.Millisecond}
		a := consumer[EventV1](t, ca, stream, "g", &opts)
		b := consumer[EventV1](t, cb, stream, "g", &opts)
		rec := newHandled()
		started := make(chan struct{})
		var once sync.Once
		stopA := runFor(t, a, func(ctx context.Context, d sqlstreams.Delivery[EventV1]) error {
			once.Do(func() { close(started) })
			rec.add("a", d)
			time.Sleep(250 * time.Millisecond)
			return nil
		})
		<-started
		// Supersede three rows A holds but has not handled yet.
		for _, i := range []int{n - 1, n - 2, n - 3} {
			if _, err := p.Produce(ctx(t), EventV1{Seq: 1000 + i}, sqlstreams.Key(fmt.Sprintf("k%d", i))); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := ca.Maintain(ctx(t)); err != nil {
			t.Fatal(err)
		}
		stopB := runFor(t, b, func(ctx context.Context, d sqlstreams.Delivery[EventV1]) error {
			rec.add("b", d)
			return nil
		})
		eventually(t, time.Minute, "every head to be handled", func() bool {
			g := groupAt(t, health(t, ca, stream), 1, "g")
			return g.Unread == 0 && g.Unresolved == 0 && rec.count() >= n-3+3
		})
		stopA()
		stopB()
		rec.checkOnce(t)
	})

	t.Run("PlainRaceLargeBatch", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		// Two members with large batches: acks landing between heartbeats
		// must never make other leases lapse.
		const stream, n = "c20-race", 600
		ca, cb := h.client(t), h.client(t)
		produceBatches(t, producer[EventV1](t, ca, stream), n)
		opts := sqlstreams.ConsumerOptions{Concurrency: 4, BatchSize: 200, LeaseDuration: 2 * time.Second, PollInterval: 10 * time.Millisecond}
		rec := newHandled()
		var stops []func()
		for i, cl := range []*sqlstreams.Client{ca, cb} {
			cons := consumer[EventV1](t, cl, stream, "g", &opts)
			name := fmt.Sprintf("m%d", i)
			stops = append(stops, runFor(t, cons, func(ctx context.Context, d sqlstreams.Delivery[EventV1]) error {
				rec.add(name, d)
				time.Sleep(time.Duration(rand.IntN(4)) * time.Millisecond)
				return nil
			}))
		}
		eventually(t, 2*time.Minute, "every row to be handled", func() bool {
			g := groupAt(t, health(t, ca, stream), 1, "g")
			return g.Unread == 0 && g.Unresolved == 0
		})
		for _, stop := range stops {
			stop()
		}
		if rec.count() != n {
			t.Errorf("%d handler calls for %d rows", rec.count(), n)
		}
		rec.checkOnce(t)
	})

	t.Run("StopGivesBackEverything", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		// Stopping Run at any moment leaves nothing leased to nobody: what it
		// had not started is given back without using an attempt, so with
		// MaxAttempts 1 nothing goes dead that never ran.
		const stream, n = "c20-stop", 400
		c := h.client(t)
		produceBatches(t, producer[EventV1](t, c, stream), n)
		opts := sqlstreams.ConsumerOptions{Concurrency: 2, BatchSize: 40, MaxAttempts: 1, LeaseDuration: time.Hour, PollInterval: 10 * time.Millisecond}
		cons := consumer[EventV1](t, c, stream, "g", &opts)
		rec := newHandled()
		for round := 0; round < 25; round++ {
			rctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- cons.Run(rctx, func(ctx context.Context, d sqlstreams.Delivery[EventV1]) error {
					rec.add("run", d)
					return nil
				})
			}()
			time.Sleep(time.Duration(rand.IntN(15)) * time.Millisecond)
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("round %d: Run returned %v", round, err)
			}
			if g := groupAt(t, health(t, c, stream), 1, "g"); g.Leased != 0 || g.Dead != 0 {
				t.Fatalf("round %d: after Run returned, %d leased and %d dead; want 0 and 0 (nothing leased to nobody, nothing buried unrun)", round, g.Leased, g.Dead)
			}
		}
		for _, d := range drain(t, cons) {
			rec.add("drain", d)
		}
		if g := groupAt(t, health(t, c, stream), 1, "g"); g.Unread != 0 || g.Unresolved != 0 {
			t.Errorf("after draining: %d unread, %d unresolved", g.Unread, g.Unresolved)
		}
		if rec.count() != n {
			t.Errorf("%d rows handled, want %d", rec.count(), n)
		}
		rec.checkOnce(t)
	})

	t.Run("ClaimContextEnds", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		// A pull Claim whose context ends at any moment either returns what
		// it leased or leases nothing; with MaxAttempts 1 nothing goes dead.
		const stream, n = "c20-claim-ctx", 300
		c := h.client(t)
		p := producer[EventV1](t, c, stream)
		ids := produceBatches(t, p, n)
		cons := consumer[EventV1](t, c, stream, "g", &sqlstreams.ConsumerOptions{MaxAttempts: 1, LeaseDuration: time.Hour})
		got := map[int64]int{}
		for i := 0; len(got) < n && i < 2000; i++ {
			cctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(3000))*time.Microsecond)
			ds, err := cons.Claim(cctx, 7)
			cancel()
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("claim %d: %v; want success or the context's error", i, err)
			}
			for _, d := range ds {
				got[d.ID]++
				if d.Attempt != 1 {
					t.Errorf("row %d handed out at attempt %d", d.ID, d.Attempt)
				}
			}
			if err := cons.Ack(ctx(t), ds...); err != nil {
				t.Fatal(err)
			}
			if g := groupAt(t, health(t, c, stream), 1, "g"); g.Leased != 0 || g.Dead != 0 {
				t.Fatalf("after claim %d (err %v): %d leased, %d dead; want 0 and 0", i, err, g.Leased, g.Dead)
			}
		}
		for _, d := range drain(t, cons) {
			got[d.ID]++
		}
		for _, id := range ids {
			if got[id] != 1 {
				t.Errorf("row %d delivered %d times, want once", id, got[id])
			}
		}
	})

	t.Run("AckRetriedAfterOutage", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		// Run writes acks again after a transient failure instead of letting
		// the leases lapse: successful deliveries never run twice.
		const stream, n = "c20-ack-retry", 30
		c, f := h.faultyClient(t)
		p := producer[EventV1](t, c, stream)
		produceBatches(t, p, n)
		cons := consumer[EventV1](t, c, stream, "g", &sqlstreams.ConsumerOptions{Concurrency: 2, BatchSize: 10, LeaseDuration: 2 * time.Second,
			PollInterval: 10 * time.Millisecond})
		f.set(func(f *faultDriver) { f.failAcks = 3 })
		runEachOnce(t, c, cons, stream, n, 2*time.Second)
	})

	t.Run("DeadLetterFailureKeepsOthers", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		// Recording the death of an undecodable row fails: the rows of the
		// same claim that decoded are still handed out.
		const stream = "c20-decode"
		c, f := h.faultyClient(t)
		good := producer[EventV1](t, c, stream)
		raw := producer[sqlstreams.RawPayload](t, c, stream)
		first := produceV1(t, good, 1)
		if _, err := raw.Produce(ctx(t), sqlstreams.RawPayload{Version: 1, Data: []byte(`{"seq":"not a number"}`)}); err != nil {
			t.Fatal(err)
		}
		last := produceV1(t, good, 1)
		cons := consumer[EventV1](t, c, stream, "g", &sqlstreams.ConsumerOptions{LeaseDuration: time.Hour})
		f.set(func(f *faultDriver) { f.failFails = 1 })
		ds, err := cons.Claim(ctx(t), 10)
		if err != nil {
			t.Fatalf("claim: %v", err)
		}
		if want := append(first, last...); !equalIDs(idsOf(ds), want) {
			t.Errorf("claim returned %v; want the rows that decoded, %v", idsOf(ds), want)
		}
	})
}

// takeOver has a claim the row ids[0] alone and the other ids in a second
// claim, both with the long leases a's options give, then cuts the first
// lease short and lets b take that row over at attempt 2. It returns a's two
// claims and b's. The leases are long until both claims are made, so that a
// slow claim cannot find the first one expired.
func takeOver(t *testing.T, a, b *sqlstreams.Consumer[EventV1], ids []int64) (first, rest, taken []sqlstreams.Delivery[EventV1]) {
	t.Helper()
	first, err := a.Claim(ctx(t), 1)
	if err != nil || len(first) != 1 || first[0].ID != ids[0] {
		t.Fatalf("first claim: %v, %v; want row %d", idsOf(first), err, ids[0])
	}
	rest, err = a.Claim(ctx(t), len(ids)-1)
	if err != nil || len(rest) != len(ids)-1 {
		t.Fatalf("second claim: %v, %v; want %d rows", idsOf(rest), err, len(ids)-1)
	}
	if err := first[0].Extend(ctx(t), time.Millisecond); err != nil {
		t.Fatalf("cutting the first lease short: %v", err)
	}
	eventually(t, 30*time.Second, "B to take the expired delivery", func() bool {
		var err error
		if taken, err = b.Claim(ctx(t), len(ids)); err != nil {
			t.Fatal(err)
		}
		return len(taken) > 0
	})
	if len(taken) != 1 || taken[0].ID != ids[0] || taken[0].Attempt != 2 {
		t.Fatalf("B took %v; want only row %d at attempt 2", idsOf(taken), ids[0])
	}
	return first, rest, taken
}

// produceBatches appends n V1 events in batches of 100 and returns the ids.
func produceBatches(t testing.TB, p *sqlstreams.Producer[EventV1], n int) []int64 {
	t.Helper()
	var ids []int64
	for start := 0; start < n; start += 100 {
		var msgs []sqlstreams.Message[EventV1]
		for i := start; i < min(start+100, n); i++ {
			msgs = append(msgs, sqlstreams.NewMessage(EventV1{Seq: i}))
		}
		got, err := p.ProduceBatch(ctx(t), msgs...)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, got...)
	}
	return ids
}

// handled records handler calls from any number of members.
type handled struct {
	mu    sync.Mutex
	calls map[int64][]string // id -> "member@attempt"
	n     int
}

func newHandled() *handled { return &handled{calls: map[int64][]string{}} }

func (h *handled) add(member string, d sqlstreams.Delivery[EventV1]) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls[d.ID] = append(h.calls[d.ID], fmt.Sprintf("%s@%d", member, d.Attempt))
	h.n++
}

func (h *handled) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// checkOnce fails for every row handled more than once or at an attempt
// other than 1: with leases that hold, neither may happen.
func (h *handled) checkOnce(t testing.TB) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	twice := 0
	for id, calls := range h.calls {
		if len(calls) > 1 || calls[0][len(calls[0])-2:] != "@1" {
			twice++
			if twice <= 10 {
				t.Errorf("row %d handled as %v; want once, at attempt 1", id, calls)
			}
		}
	}
	if twice > 10 {
		t.Errorf("%d rows in all handled more than once or after a lapsed lease", twice)
	}
}

// runEachOnce runs cons on stream (group "g") until every row is resolved,
// past lease so that anything whose ack was lost would come back, then
// checks that each of its n rows ran exactly once.
func runEachOnce(t *testing.T, c *sqlstreams.Client, cons *sqlstreams.Consumer[EventV1], stream string, n int, lease time.Duration) {
	t.Helper()
	rec := newHandled()
	stop := runFor(t, cons, func(ctx context.Context, d sqlstreams.Delivery[EventV1]) error {
		rec.add("run", d)
		return nil
	})
	eventually(t, time.Minute, "every row to be resolved", func() bool {
		g := groupAt(t, health(t, c, stream), 1, "g")
		return g.Unread == 0 && g.Unresolved == 0
	})
	time.Sleep(lease + lease/4) // past any lease: nothing may come back
	stop()
	if rec.count() != n {
		t.Errorf("%d handler calls for %d rows", rec.count(), n)
	}
	rec.checkOnce(t)
}
