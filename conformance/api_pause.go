package conformance

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

func init() { register("API_Pause", testPause) }

// pausedClaims counts the claims that found the group paused.
type pausedClaims struct {
	sqlstreams.MiddlewareDefaults
	mu     sync.Mutex
	paused int
}

func (p *pausedClaims) Claimed(_ context.Context, e sqlstreams.ClaimEvent) {
	if errors.Is(e.Err, sqlstreams.ErrGroupPaused) {
		p.mu.Lock()
		p.paused++
		p.mu.Unlock()
	}
}

func (p *pausedClaims) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused
}

// Pause and Resume: once Pause returns, no member of the group in any
// client claims (Claim and AckAndClaim return nothing, with the acks they
// carry recorded; Run handles nothing) while its leased deliveries still
// settle; Describe and Groups show when it was paused; Resume lets every
// member go on. Other groups of the stream are not touched. A driver
// without driver.GroupPauser refuses with ErrUnsupported.
func testPause(t *testing.T, h *harness) {
	const stream = "pause"
	ca, cb := h.client(t), h.client(t)
	admin := ca.Stream[EventV1](stream).Group("g")
	a := consumer[EventV1](t, ca, stream, "g", &sqlstreams.ConsumerOptions{LeaseDuration: time.Hour})
	other := consumer[EventV1](t, ca, stream, "other", &sqlstreams.ConsumerOptions{LeaseDuration: time.Hour})
	if _, ok := ca.Driver().(driver.GroupPauser); !ok {
		if err := admin.Pause(ctx(t)); !errors.Is(err, sqlstreams.ErrUnsupported) {
			t.Fatalf("Pause on a driver without GroupPauser: %v; want ErrUnsupported", err)
		}
		return
	}
	hook := &pausedClaims{}
	b := consumer[EventV1](t, cb, stream, "g", &sqlstreams.ConsumerOptions{LeaseDuration: time.Hour, PollInterval: 20 * time.Millisecond,
		Middleware: []sqlstreams.Middleware{hook}})
	ids := produceV1(t, producer[EventV1](t, ca, stream), 6)

	held, err := a.Claim(ctx(t), 2)
	if err != nil || len(held) != 2 {
		t.Fatalf("claim before the pause: %v (err %v)", idsOf(held), err)
	}
	if err := admin.Pause(ctx(t)); err != nil {
		t.Fatal(err)
	}
	d, err := admin.Describe(ctx(t))
	if err != nil || d.PausedAt.IsZero() {
		t.Fatalf("Describe after Pause: paused at %v (err %v); want the pause time", d.PausedAt, err)
	}
	first := d.PausedAt
	if err := admin.Pause(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if gs, err := ca.Stream[EventV1](stream).Groups(ctx(t)); err != nil || len(gs) != 2 || !gs[0].PausedAt.Equal(first) || !gs[1].PausedAt.IsZero() {
		t.Fatalf("Groups after pausing g twice: %+v (err %v); want g paused at its first pause time, other running", gs, err)
	}

	// No member claims, in this client or another; acks still record.
	for name, claim := range map[string]func() ([]sqlstreams.Delivery[EventV1], error){
		"Claim":       func() ([]sqlstreams.Delivery[EventV1], error) { return a.Claim(ctx(t), 10) },
		"other Claim": func() ([]sqlstreams.Delivery[EventV1], error) { return b.Claim(ctx(t), 10) },
		"AckAndClaim": func() ([]sqlstreams.Delivery[EventV1], error) { return a.AckAndClaim(ctx(t), 10, held[0]) },
	} {
		if ds, err := claim(); err != nil || len(ds) != 0 {
			t.Errorf("%s of a paused group: %v (err %v); want nothing", name, idsOf(ds), err)
		}
	}
	if err := held[1].Ack(ctx(t)); err != nil {
		t.Errorf("ack of a delivery leased before the pause: %v", err)
	}
	if g := groupAt(t, health(t, ca, stream), 1, "g"); g.Unread != int64(len(ids)-2) || g.Leased != 0 || g.Unresolved != 0 {
		t.Errorf("paused group: %d unread, %d leased, %d unresolved; want the 2 acked resolved and the rest unread", g.Unread, g.Leased, g.Unresolved)
	}
	if ds, err := other.Claim(ctx(t), 10); err != nil || len(ds) != len(ids) {
		t.Errorf("another group of the stream claimed %v (err %v); want all %d rows", idsOf(ds), err, len(ids))
	}

	// Run in the other client handles nothing while paused (its claims
	// find the group paused), and everything once resumed.
	var rec recorder
	before := hook.count()
	stop := runFor(t, b, func(_ context.Context, d sqlstreams.Delivery[EventV1]) error {
		rec.add(d)
		return nil
	})
	defer stop()
	eventually(t, 30*time.Second, "Run to find the group paused", func() bool { return hook.count() > before })
	if n := rec.count(); n != 0 {
		t.Fatalf("Run handled %d deliveries of a paused group", n)
	}
	if err := admin.Resume(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if d, err := admin.Describe(ctx(t)); err != nil || !d.PausedAt.IsZero() {
		t.Errorf("Describe after Resume: paused at %v (err %v); want zero", d.PausedAt, err)
	}
	eventually(t, 30*time.Second, "Run to handle the rest after Resume", func() bool { return rec.count() == len(ids)-2 })

	if err := ca.Stream[EventV1](stream).Group("nope").Pause(ctx(t)); !errors.Is(err, sqlstreams.ErrGroupNotFound) {
		t.Errorf("Pause of a group that does not exist: %v; want ErrGroupNotFound", err)
	}
}
