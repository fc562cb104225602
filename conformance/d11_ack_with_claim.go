package conformance

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

func init() { register("D11_AckWithClaim", testAckWithClaim) }

// D11: a claim that carries acks (ClaimParams.Acks, Consumer.AckAndClaim)
// resolves them in its own transaction before it reads, each on its own as
// Ack does (C20), and only when the claim commits: a failed claim records
// none of them. Acked rows never come back, an ordered partition they free
// is claimable by that very claim, and consumers doing it concurrently
// resolve every row once.
func testAckWithClaim(t *testing.T, h *harness) {
	t.Run("Backlog", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		// Batch by batch through a backlog on two partitions: each call
		// acks the last batch and leases the next, and the last one, with
		// nothing left, still records its acks.
		const stream, n, batch = "d11-backlog", 45, 10
		c := h.client(t)
		if _, err := c.Stream[EventV1](stream).Create(ctx(t), &sqlstreams.StreamOptions{Partitions: 2}); err != nil {
			t.Fatal(err)
		}
		p := producer[EventV1](t, c, stream)
		var ids []int64
		for i := range n {
			got, err := p.Produce(ctx(t), EventV1{Seq: i}, sqlstreams.Key(fmt.Sprintf("k%d", i)))
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, got)
		}
		cons := consumer[EventV1](t, c, stream, "g", &sqlstreams.ConsumerOptions{LeaseDuration: time.Hour})
		seen := map[int64]int{}
		ds, err := cons.Claim(ctx(t), batch)
		if err != nil || len(ds) == 0 {
			t.Fatalf("first claim: %v, %v", idsOf(ds), err)
		}
		var acked []sqlstreams.Delivery[EventV1]
		for round := 0; len(ds) > 0; round++ {
			if round > n {
				t.Fatalf("still claiming after %d rounds", round)
			}
			for _, d := range ds {
				seen[d.ID]++
			}
			next, err := cons.AckAndClaim(ctx(t), batch, ds...)
			if err != nil {
				t.Fatalf("round %d: AckAndClaim: %v", round, err)
			}
			acked = append(acked, ds...)
			g := groupAt(t, health(t, c, stream), 1, "g")
			if g.Leased != int64(len(next)) || g.Unresolved != int64(len(next)) {
				t.Fatalf("round %d: %d leased, %d unresolved; want only the %d just claimed (the acked ones resolved)", round, g.Leased, g.Unresolved, len(next))
			}
			ds = next
		}
		for _, id := range ids {
			if seen[id] != 1 {
				t.Errorf("row %d claimed %d times, want once", id, seen[id])
			}
		}
		g := groupAt(t, health(t, c, stream), 1, "g")
		if g.Unread != 0 || g.Unresolved != 0 {
			t.Errorf("after the backlog: %d unread, %d unresolved; want none", g.Unread, g.Unresolved)
		}
		if err := cons.Ack(ctx(t), acked[0]); !errors.Is(err, sqlstreams.ErrAlreadySettled) {
			t.Errorf("acking a delivery AckAndClaim acked: %v; want ErrAlreadySettled", err)
		}
		if _, err := cons.AckAndClaim(ctx(t), 0); !errors.Is(err, sqlstreams.ErrInvalidOption) {
			t.Errorf("AckAndClaim(0): %v; want ErrInvalidOption", err)
		}
	})

	t.Run("LostAndAlreadySettled", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		// Of the acks a claim carries, one lease was taken over by another
		// member and one delivery was acked already: the claim still takes
		// the new rows, the other acks are recorded, and the error names
		// exactly those two.
		const stream = "d11-lost"
		ca, cb := h.client(t), h.client(t)
		p := producer[EventV1](t, ca, stream)
		ids := produceV1(t, p, 5)
		a := consumer[EventV1](t, ca, stream, "g", &sqlstreams.ConsumerOptions{LeaseDuration: time.Hour})
		b := consumer[EventV1](t, cb, stream, "g", &sqlstreams.ConsumerOptions{LeaseDuration: time.Hour})
		first, rest, taken := takeOver(t, a, b, ids)
		if err := rest[0].Ack(ctx(t)); err != nil {
			t.Fatal(err)
		}
		more := produceV1(t, p, 3)
		next, err := a.AckAndClaim(ctx(t), 10, append(first, rest...)...)
		var se *sqlstreams.SettleError
		if !errors.Is(err, sqlstreams.ErrLeaseLost) || !errors.Is(err, sqlstreams.ErrAlreadySettled) || !errors.As(err, &se) ||
			!equalIDs(se.Lost, []int64{ids[0]}) || !equalIDs(se.AlreadySettled, []int64{rest[0].ID}) {
			t.Fatalf("AckAndClaim: %v; want a *SettleError naming %d lost and %d already settled", err, ids[0], rest[0].ID)
		}
		if !equalIDs(idsOf(next), more) {
			t.Fatalf("AckAndClaim claimed %v along with the error; want the new rows %v", idsOf(next), more)
		}
		if g := groupAt(t, health(t, ca, stream), 1, "g"); g.Leased != 4 || g.Unresolved != 4 || g.Unread != 0 {
			t.Errorf("after AckAndClaim: %d leased, %d unresolved, %d unread; want B's lease and the 3 new ones", g.Leased, g.Unresolved, g.Unread)
		}
		if err := taken[0].Ack(ctx(t)); err != nil {
			t.Errorf("B's ack of the delivery it holds: %v", err)
		}
		if err := a.Ack(ctx(t), next...); err != nil {
			t.Errorf("acking the new rows: %v", err)
		}
	})

	t.Run("RecordedBeforeAFailedClaim", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		// The claim that carries the acks records them but returns only an
		// undecodable row (dead-lettered), so AckAndClaim claims again, and
		// that claim fails. The acks were recorded: the call says so (no
		// error but the *SettleError naming the one lease another member
		// took over), and acking them again finds them settled.
		const stream = "d11-recorded"
		ca, f := h.faultyClient(t)
		cb := h.client(t)
		p := producer[EventV1](t, cb, stream)
		ids := produceV1(t, p, 3)
		a := consumer[EventV1](t, ca, stream, "g", &sqlstreams.ConsumerOptions{LeaseDuration: time.Hour})
		b := consumer[EventV1](t, cb, stream, "g", &sqlstreams.ConsumerOptions{LeaseDuration: time.Hour})
		first, rest, taken := takeOver(t, a, b, ids)
		bad, err := producer[sqlstreams.RawPayload](t, cb, stream).Produce(ctx(t), sqlstreams.RawPayload{Version: 1, Data: []byte(`{"seq":"not a number"}`)})
		if err != nil {
			t.Fatal(err)
		}
		f.set(func(f *faultDriver) { f.failPlainClaims = 1 })
		next, err := a.AckAndClaim(ctx(t), 1, append(first, rest...)...)
		var se *sqlstreams.SettleError
		if !errors.As(err, &se) || !equalIDs(se.Lost, []int64{ids[0]}) || len(se.AlreadySettled) != 0 || len(next) != 0 {
			t.Fatalf("AckAndClaim whose acks were recorded before a claim failed: %v, %v; want no deliveries and a *SettleError naming only %d lost",
				idsOf(next), err, ids[0])
		}
		for _, d := range rest {
			if err := d.Ack(ctx(t)); !errors.Is(err, sqlstreams.ErrAlreadySettled) {
				t.Errorf("acking %d again: %v; want ErrAlreadySettled (AckAndClaim recorded it)", d.ID, err)
			}
		}
		hl := groupAt(t, health(t, cb, stream), 1, "g")
		if hl.Leased != 1 || hl.Dead != 1 || hl.Unread != 0 {
			t.Errorf("after AckAndClaim: %+v; want B's lease, the undecodable row %d dead, the acks recorded", hl, bad)
		}
		if err := taken[0].Ack(ctx(t)); err != nil {
			t.Errorf("B's ack of the delivery it holds: %v", err)
		}
	})

	t.Run("OrderedPartitionFreed", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		// An ordered group's partition is held while it has leased rows:
		// the acks a claim carries free it for that same claim.
		const stream = "d11-ordered"
		c := h.client(t)
		p := producer[EventV1](t, c, stream)
		ids := produceV1(t, p, 3)
		cons := consumer[EventV1](t, c, stream, "g", &sqlstreams.ConsumerOptions{Ordered: true, LeaseDuration: time.Hour})
		ds, err := cons.Claim(ctx(t), 10)
		if err != nil || len(ds) == 0 || ds[0].ID != ids[0] {
			t.Fatalf("first claim: %v, %v; want rows from %d on", idsOf(ds), err, ids[0])
		}
		ids = append(ids, produceV1(t, p, 3)...)
		if held, err := cons.Claim(ctx(t), 10); err != nil || len(held) != 0 {
			t.Fatalf("a claim while the partition is held: %v, %v; want nothing", idsOf(held), err)
		}
		next, err := cons.AckAndClaim(ctx(t), 10, ds...)
		if err != nil {
			t.Fatalf("AckAndClaim: %v", err)
		}
		want := ids[len(ds):]
		if !slices.Equal(idsOf(next), want[:min(len(want), len(next))]) || len(next) == 0 {
			t.Fatalf("AckAndClaim claimed %v; want the rows after the acked ones, in order: %v", idsOf(next), want)
		}
	})

	t.Run("FailedClaimRecordsNoAck", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		// A claim that fails (here: the member is bound to another
		// version) records none of its acks: neither right after a claim
		// that took its limit (a busy group) nor after one that failed.
		f := newDriverFixture(t, h)
		f.append(1, 20)
		leases := f.claimLeases(5)
		for round := range 2 {
			now := time.Now().UTC()
			_, err := f.drv.Claim(ctx(t), driver.ClaimParams{Stream: f.stream, Group: "g", Member: driver.Member{SchemaVersion: 2},
				Decodes: []int{2}, Limit: 5, Token: fmt.Sprintf("bad-%d", round), Holder: "fixture", Now: now, LeaseUntil: now.Add(time.Hour), Acks: leases})
			if !errors.Is(err, driver.ErrGroupVersion) {
				t.Fatalf("round %d: a claim by a member of another version: %v; want ErrGroupVersion", round, err)
			}
			if ex := f.exceptions(); ex[driver.StateLeased] != 5 {
				t.Fatalf("round %d: after the failed claim: %v; want its 5 acks unrecorded, the rows still leased", round, ex)
			}
		}
		got, err := f.drv.Ack(ctx(t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Leases: leases, Now: time.Now().UTC()})
		if err != nil || len(got.Lost) != 0 {
			t.Fatalf("acking after the failed claims: lost %v, %v; want every lease still held", got.Lost, err)
		}
	})

	t.Run("DriverLostAcks", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		// At the driver: the acks of a whole claim, one of which was acked
		// on its own since and one named with a wrong token. The claim
		// reports exactly those two lost, resolves the rest and leases new
		// rows, all in one call.
		f := newDriverFixture(t, h)
		f.append(1, 10)
		leases := f.claimLeases(5)
		if got, err := f.drv.Ack(ctx(t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Leases: leases[1:2], Now: time.Now().UTC()}); err != nil || len(got.Lost) != 0 {
			t.Fatalf("acking one member: lost %v, %v", got.Lost, err)
		}
		acks := slices.Clone(leases)
		acks[3].Token = "wrong"
		now := time.Now().UTC()
		claimed, err := f.drv.Claim(ctx(t), driver.ClaimParams{Stream: f.stream, Group: "g", Member: driver.Member{SchemaVersion: 1},
			Decodes: []int{1}, Limit: 10, Token: "next", Holder: "fixture", Now: now, LeaseUntil: now.Add(time.Hour), Acks: acks})
		if err != nil {
			t.Fatal(err)
		}
		if !equalIDs(claimed.Lost, []int64{leases[1].ID, leases[3].ID}) {
			t.Errorf("the claim's lost acks: %v; want %d (acked already) and %d (wrong token)", claimed.Lost, leases[1].ID, leases[3].ID)
		}
		if len(claimed.Deliveries) != 5 {
			t.Errorf("the claim leased %d rows, want the 5 left", len(claimed.Deliveries))
		}
		if ex := f.exceptions(); ex[driver.StateLeased] != 6 || len(ex) != 1 {
			t.Errorf("after the claim: %v; want the wrongly named lease and the 5 new ones leased", ex)
		}
	})

	t.Run("Concurrent", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		// Four members on two clients each go through the stream with
		// AckAndClaim: every row is claimed once (leases hold for the whole
		// test), and no call fails.
		const stream, n, batch = "d11-concurrent", 400, 20
		ca, cb := h.client(t), h.client(t)
		if _, err := ca.Stream[EventV1](stream).Create(ctx(t), &sqlstreams.StreamOptions{Partitions: 4}); err != nil {
			t.Fatal(err)
		}
		p := producer[EventV1](t, ca, stream)
		var msgs []sqlstreams.Message[EventV1]
		for i := range n {
			msgs = append(msgs, sqlstreams.NewMessage(EventV1{Seq: i}, sqlstreams.Key(fmt.Sprintf("k%d", i))))
		}
		ids, err := p.ProduceBatch(ctx(t), msgs...)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		seen := map[int64]int{}
		var handled atomic.Int64
		deadline := time.Now().Add(time.Minute)
		var wg sync.WaitGroup
		for w := range 4 {
			c := ca
			if w%2 == 1 {
				c = cb
			}
			cons := consumer[EventV1](t, c, stream, "g", &sqlstreams.ConsumerOptions{LeaseDuration: time.Hour})
			wg.Go(func() {
				var ds []sqlstreams.Delivery[EventV1]
				for handled.Load() < n && time.Now().Before(deadline) {
					next, err := cons.AckAndClaim(ctx(t), batch, ds...)
					if err != nil {
						t.Errorf("member %d: AckAndClaim: %v", w, err)
						return
					}
					mu.Lock()
					for _, d := range next {
						seen[d.ID]++
					}
					mu.Unlock()
					handled.Add(int64(len(next)))
					ds = next
					if len(next) == 0 {
						time.Sleep(5 * time.Millisecond)
					}
				}
				if err := cons.Ack(ctx(t), ds...); err != nil {
					t.Errorf("member %d: last ack: %v", w, err)
				}
			})
		}
		wg.Wait()
		for _, id := range ids {
			if seen[id] != 1 {
				t.Errorf("row %d claimed %d times, want once", id, seen[id])
			}
		}
		if g := groupAt(t, health(t, ca, stream), 1, "g"); g.Unread != 0 || g.Unresolved != 0 {
			t.Errorf("after the members: %d unread, %d unresolved; want none", g.Unread, g.Unresolved)
		}
	})

	t.Run("RunAcksWithItsClaims", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		// Run hands the acks of a batch to its next claim when it is waiting
		// to claim; the first such claims fail before they reach the
		// database. Their acks go back to the completer, which writes them:
		// every row runs once and nothing comes back after the leases run
		// out.
		const stream, n = "d11-run", 300
		c, f := h.faultyClient(t)
		produceBatches(t, producer[EventV1](t, c, stream), n)
		f.set(func(f *faultDriver) { f.failAckClaims = 3 })
		cons := consumer[EventV1](t, c, stream, "g", &sqlstreams.ConsumerOptions{Concurrency: 5, BatchSize: 10,
			LeaseDuration: 2 * time.Second, PollInterval: 10 * time.Millisecond})
		runEachOnce(t, c, cons, stream, n, 2*time.Second)
		f.mu.Lock()
		t.Logf("%d claims, %d of them carrying acks", f.claims, f.ackClaims)
		f.mu.Unlock()
	})

	t.Run("HeartbeatDuringHandOff", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		// Handed-off acks stay extendable while their claim runs; when the
		// claim records them first, the heartbeat's extension finds them
		// gone. That is no lost lease: an operator must be able to trust
		// the warning (issue 25 §4). The heartbeat comes every third of the
		// lease: a lease of 3 s lapses only when it is 2 s late, which a
		// loaded machine rarely is (at 1.5 s, 1 s late was enough).
		const stream, n, lease = "d11-heartbeat", 60, 3 * time.Second
		logs := &logCount{}
		c, f := h.faultyClient(t, sqlstreams.WithLogger(slog.New(logs)))
		produceBatches(t, producer[EventV1](t, c, stream), n)
		f.set(func(f *faultDriver) { f.extendDuringAckClaim = true })
		cons := consumer[EventV1](t, c, stream, "g", &sqlstreams.ConsumerOptions{Concurrency: 5, BatchSize: 10,
			LeaseDuration: lease, PollInterval: 10 * time.Millisecond})
		runEachOnce(t, c, cons, stream, n, lease)
		f.mu.Lock()
		raced := f.raced
		f.mu.Unlock()
		if !raced {
			t.Fatal("no extension named the acks of a claim carrying them; the scenario did not happen")
		}
		if k := logs.count("leases lost"); k > 0 {
			t.Errorf("%d warnings of lost leases; every lease was held or recorded", k)
		}
	})
}
