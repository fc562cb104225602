package conformance

import (
	"context"
	"errors"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() { register("C7_Leases", testLeases) }

// C7: a delivery leased to one consumer is not handed to another consumer of
// the group until the lease expires; an expired lease is claimed again with
// attempt+1; an outcome from a holder whose lease was lost is refused with
// ErrLeaseLost and changes nothing; a holder may extend its lease.
func testLeases(t *testing.T, h *harness) {
	const (
		stream = "c7"
		group  = "workers"
		// Long enough that only a defect lapses a lease a test holds:
		// a claim on a loaded machine can take a second or more.
		lease = 5 * time.Second
	)
	// Two processes' worth of clients on one namespace, one member each.
	ca, cb := h.client(t), h.client(t)
	opts := &sqlstreams.ConsumerOptions{LeaseDuration: lease}
	a := consumer[EventV1](t, ca, stream, group, opts)
	b := consumer[EventV1](t, cb, stream, group, opts)
	p := producer[EventV1](t, ca, stream)

	t.Run("Expiry", func(t *testing.T) {
		ids := produceV1(t, p, 2)
		claimedAt := time.Now()
		got, err := a.Claim(ctx(t), 1)
		if err != nil || len(got) != 1 || got[0].ID != ids[0] || got[0].Attempt != 1 {
			t.Fatalf("A claimed %v (err %v), want row %d at attempt 1", idsOf(got), err, ids[0])
		}
		da := got[0]
		if exp := da.LeaseExpires(); exp.Before(claimedAt.Add(lease-50*time.Millisecond)) || exp.After(time.Now().Add(lease+50*time.Millisecond)) {
			t.Errorf("lease expires at %v, want about %v after the claim at %v", exp, lease, claimedAt)
		}

		// While A holds its lease, B gets the other row and never A's.
		var gotOther bool
		var db sqlstreams.Delivery[EventV1]
		// B claims until A's lease is about to end, and at least until it
		// got the other row (bounded: a B that never gets it is a defect).
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) &&
			(!gotOther || db.ID == 0 && time.Now().Before(da.LeaseExpires().Add(-150*time.Millisecond))); {
			ds, err := b.Claim(ctx(t), 10)
			// A claim decides at some instant before it returns: one that
			// returned before the lease's end handed the row out early; one
			// that returned later (a slow claim) may have decided after it.
			returned := time.Now()
			if err != nil {
				t.Fatalf("B claim: %v", err)
			}
			for _, d := range ds {
				switch {
				case d.ID == da.ID && returned.Before(da.LeaseExpires().Add(-time.Millisecond)):
					t.Fatalf("B was handed row %d by a claim that returned at %v, while A's lease ran to %v", d.ID, returned, da.LeaseExpires())
				case d.ID == da.ID:
					db = d // handed out after the lease ended, as it may be
				case d.ID == ids[1]:
					gotOther = true
					if err := d.Ack(ctx(t)); err != nil {
						t.Fatalf("B ack row %d: %v", d.ID, err)
					}
				default:
					t.Fatalf("B claimed unexpected row %d", d.ID)
				}
			}
			time.Sleep(30 * time.Millisecond)
		}
		if !gotOther {
			t.Errorf("B never got row %d, which nobody held", ids[1])
		}

		// After expiry B takes it, at attempt 2.
		eventually(t, 30*time.Second, "B to claim the expired delivery", func() bool {
			if db.ID != 0 {
				return true // a slow claim above already took it after expiry
			}
			ds, err := b.Claim(ctx(t), 10)
			if err != nil {
				t.Fatalf("B claim: %v", err)
			}
			if len(ds) == 0 {
				return false
			}
			if len(ds) != 1 || ds[0].ID != da.ID {
				t.Fatalf("B claimed rows %v, want only the expired row %d", idsOf(ds), da.ID)
			}
			db = ds[0]
			return true
		})
		if time.Now().Before(da.LeaseExpires()) {
			t.Errorf("B claimed row %d before A's lease expired at %v", db.ID, da.LeaseExpires())
		}
		if db.Attempt != 2 {
			t.Errorf("expired delivery came back at attempt %d, want 2", db.Attempt)
		}
		if !db.LeaseExpires().After(da.LeaseExpires()) {
			t.Errorf("B's lease (%v) does not end after A's (%v)", db.LeaseExpires(), da.LeaseExpires())
		}

		// A lost its lease: every outcome it tries is refused and changes nothing.
		for name, outcome := range map[string]func() error{
			"Ack":       func() error { return da.Ack(ctx(t)) },
			"Retry":     func() error { return da.Retry(ctx(t), 0, errTest) },
			"Dead":      func() error { return da.Dead(ctx(t), errTest) },
			"Extend":    func() error { return da.Extend(ctx(t), time.Minute) },
			"batch Ack": func() error { return a.Ack(ctx(t), da) },
		} {
			if err := outcome(); !errors.Is(err, sqlstreams.ErrLeaseLost) {
				t.Errorf("A's %s after losing the lease: err %v, want ErrLeaseLost", name, err)
			}
		}
		g := groupAt(t, health(t, ca, stream), 1, group)
		if g.Leased != 1 || g.Delayed != 0 || g.Dead != 0 {
			t.Errorf("after A's refused outcomes: leased %d, delayed %d, dead %d; want the delivery still leased to B only", g.Leased, g.Delayed, g.Dead)
		}
		if dead, err := a.DeadLetters(ctx(t), 0, 10); err != nil || len(dead) != 0 {
			t.Errorf("A's refused Dead left dead letters %v (err %v)", dead, err)
		}
		// B's lease is intact, also after A's Extend attempt: A claims nothing.
		if ds, err := a.Claim(ctx(t), 10); err != nil || len(ds) != 0 {
			t.Errorf("A claimed %v (err %v) while B holds the lease", idsOf(ds), err)
		}
		if err := db.Ack(ctx(t)); err != nil {
			t.Fatalf("B's ack: %v", err)
		}
		time.Sleep(lease + 100*time.Millisecond)
		for _, cons := range []*sqlstreams.Consumer[EventV1]{a, b} {
			if ds, err := cons.Claim(ctx(t), 10); err != nil || len(ds) != 0 {
				t.Errorf("claim after B's ack returned %v (err %v)", idsOf(ds), err)
			}
		}
		if g := groupAt(t, health(t, ca, stream), 1, group); g.Unresolved != 0 {
			t.Errorf("after B's ack: %d unresolved, want 0", g.Unresolved)
		}
	})

	t.Run("Extend", func(t *testing.T) {
		ids := produceV1(t, p, 1)
		got, err := a.Claim(ctx(t), 1)
		if err != nil || len(got) != 1 || got[0].ID != ids[0] {
			t.Fatalf("A claimed %v (err %v), want row %d", idsOf(got), err, ids[0])
		}
		da := got[0]
		original := da.LeaseExpires()
		if err := da.Extend(ctx(t), 3*lease); err != nil {
			t.Fatalf("extend: %v", err)
		}
		if !da.LeaseExpires().After(original.Add(lease)) {
			t.Errorf("after Extend(%v) the lease expires at %v, original %v", 3*lease, da.LeaseExpires(), original)
		}
		// Past the original expiry B still does not get it (a claim that
		// returned after the extended lease's end may: it decided then).
		for time.Now().Before(original.Add(time.Second)) {
			ds, err := b.Claim(ctx(t), 10)
			returned := time.Now()
			if err != nil || (len(ds) != 0 && returned.Before(da.LeaseExpires())) {
				t.Fatalf("B claimed %v (err %v) at %v; A extended its lease from %v to %v", idsOf(ds), err, returned, original, da.LeaseExpires())
			}
			if len(ds) != 0 {
				// That claim ran past the extended lease's end (a machine under
				// heavy load), and took the row after it, as it may.
				t.Logf("B's claim returned at %v, after the extended lease ended at %v, with the row", returned, da.LeaseExpires())
				if err := b.Ack(ctx(t), ds...); err != nil {
					t.Fatalf("B's ack: %v", err)
				}
				return
			}
			time.Sleep(30 * time.Millisecond)
		}
		if err := da.Ack(ctx(t)); err != nil {
			t.Fatalf("A's ack after extending: %v", err)
		}
		if ds, err := b.Claim(ctx(t), 10); err != nil || len(ds) != 0 {
			t.Errorf("B claimed %v (err %v) after A's ack", idsOf(ds), err)
		}
	})

	t.Run("RunExtends", func(t *testing.T) {
		// Run keeps the lease of a handler that outlives LeaseDuration, by
		// its heartbeat every third of the lease. A lease of its own, longer
		// than the others: the heartbeat has two thirds of it to be late
		// by before the lease lapses.
		const runLease = 6 * time.Second
		const stream = "c7-run"
		ra := consumer[EventV1](t, ca, stream, group, &sqlstreams.ConsumerOptions{LeaseDuration: runLease})
		rb := consumer[EventV1](t, cb, stream, group, &sqlstreams.ConsumerOptions{LeaseDuration: runLease})
		ids := produceV1(t, producer[EventV1](t, ca, stream), 1)
		release := make(chan struct{})
		started := make(chan sqlstreams.Delivery[EventV1], 4)
		stop := runFor(t, ra, func(_ context.Context, d sqlstreams.Delivery[EventV1]) error {
			started <- d
			<-release
			return nil
		})
		held := <-started
		if held.Attempt != 1 {
			t.Errorf("Run's handler got attempt %d, want 1", held.Attempt)
		}
		initial := held.LeaseExpires()
		var taken []sqlstreams.Delivery[EventV1]
		lapsed := false
		// B claims until a second past the lease's first expiry: the
		// handler still holding it then proves an extension.
		for deadline := initial.Add(time.Second); time.Now().Before(deadline) && !lapsed; time.Sleep(30 * time.Millisecond) {
			ds, err := rb.Claim(ctx(t), 10)
			if err != nil {
				t.Fatalf("B claim: %v", err)
			}
			// A claim decides before it returns, and A's lease as Run knows
			// it (held.LeaseExpires, moved by each extension that succeeded)
			// never runs past the one stored: a claim that returned before it
			// took a row whose lease held.
			returned, until := time.Now(), held.LeaseExpires()
			if len(ds) > 0 && returned.Before(until) {
				t.Fatalf("B claimed %v at %v while A's handler was running and Run had extended its lease to %v", idsOf(ds), returned, until)
			}
			taken = append(taken, ds...)
			lapsed = !returned.Before(until)
		}
		if until := held.LeaseExpires(); !until.After(initial) {
			t.Fatalf("Run never extended the lease of a running handler (it still ends at %v)", until)
		}
		if lapsed {
			// Run's heartbeat came later than two thirds of a lease (a
			// machine under heavy load) after it had extended the lease at
			// least once: the lease lapsed, and B, or A's own Run, may take
			// the row again, as C7 allows. Resolve it and check nothing else.
			t.Logf("Run's heartbeat was late: the lease lapsed at %v", held.LeaseExpires())
			if err := rb.Ack(ctx(t), taken...); err != nil {
				t.Fatalf("B's ack: %v", err)
			}
			close(release)
			stop()
			drain(t, rb)
			if g := groupAt(t, health(t, ca, stream), 1, group); g.Unresolved != 0 {
				t.Errorf("after the handler returned and B drained the group: %d unresolved, want 0", g.Unresolved)
			}
			return
		}
		close(release)
		stop()
		select {
		case d := <-started:
			t.Errorf("row %d handled again (attempt %d)", ids[0], d.Attempt)
		default:
		}
		if g := groupAt(t, health(t, ca, stream), 1, group); g.Unresolved != 0 {
			t.Errorf("after the handler returned: %d unresolved, want 0", g.Unresolved)
		}
	})
}
