package conformance

import (
	"context"
	"errors"
	"slices"
	"testing"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() { register("C19_SharedGroupConfig", testSharedGroupConfig) }

// C19: a claim filters with the group's stored configuration (version,
// bindings, converters) as of that claim, never with a member's stale copy.
// A member started before a re-registration that widened the bindings or
// added a converter never moves the cursor past rows the group now reads; a
// member whose group was deleted or re-created at another version stops
// with ErrGroupNotFound / ErrGroupVersion and moves no cursor. Joining an
// existing group with nil options keeps its configuration.
func testSharedGroupConfig(t *testing.T, h *harness) {
	t.Run("WidenedBindings", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		// Pod A joined with eu.#; pod B, the new deploy, registers eu.# and
		// us.#. A claims first: it must claim with the group's bindings.
		const stream, group = "c19-bind", "fraud"
		ca, cb := h.client(t), h.client(t)
		a := consumer[EventV1](t, ca, stream, group, &sqlstreams.ConsumerOptions{Bindings: []string{"eu.#"}})
		consumer[EventV1](t, cb, stream, group, &sqlstreams.ConsumerOptions{Bindings: []string{"eu.#", "us.#"}})
		p := producer[EventV1](t, ca, stream)
		want := map[int64]string{}
		for i, rk := range []string{"eu.web", "us.web", "ap.web", "us.app", "eu.app", "us"} {
			id, err := p.Produce(ctx(t), EventV1{Seq: i}, sqlstreams.RoutingKey(rk))
			if err != nil {
				t.Fatal(err)
			}
			if rk != "ap.web" {
				want[id] = rk
			}
		}
		got := drain(t, a)
		if ids := idsOf(got); !equalIDs(ids, keysOf(want)) {
			t.Fatalf("the old member claimed %v; want every eu and us row %v, which the group reads since B widened it", ids, sortedIDs(keysOf(want)))
		}
		g := groupAt(t, health(t, ca, stream), 1, group)
		if g.Unread != 0 || g.Unresolved != 0 {
			t.Errorf("after draining: unread %d, unresolved %d; want 0 and 0", g.Unread, g.Unresolved)
		}
		// A restart of the old deploy joins with eu.# again: it must not
		// narrow the group.
		a2 := consumer[EventV1](t, h.client(t), stream, group, &sqlstreams.ConsumerOptions{Bindings: []string{"eu.#"}})
		id, err := p.Produce(ctx(t), EventV1{Seq: 99}, sqlstreams.RoutingKey("us.late"))
		if err != nil {
			t.Fatal(err)
		}
		if got := drain(t, a2); !equalIDs(idsOf(got), []int64{id}) {
			t.Errorf("after an old member re-registered with eu.#, a us row was claimed as %v; want [%d]: a joining registration must not narrow the group", idsOf(got), id)
		}
	})

	t.Run("AddedConverter", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		// A reads v2; B, the new deploy, adds a converter from v1. A must not
		// step over the v1 rows the group now reads: they are left for B.
		const stream, group = "c19-conv", "scoring"
		ca, cb := h.client(t), h.client(t)
		a := consumer[EventV2](t, ca, stream, group, nil)
		b := consumer[EventV2](t, cb, stream, group, &sqlstreams.ConsumerOptions{
			Converters: []sqlstreams.Converter{sqlstreams.ConvertFrom(func(_ context.Context, v EventV1) (EventV2, error) {
				return EventV2{Seq: v.Seq, Total: Money{Cents: v.Total, Currency: "EUR"}}, nil
			})}})
		p1, p2 := producer[EventV1](t, ca, stream), producer[EventV2](t, ca, stream)
		var v1, v2 []int64
		for range 4 {
			v1 = append(v1, produceV1(t, p1, 1)...)
			v2 = append(v2, produceV2(t, p2, 1)...)
		}
		gotA := drain(t, a)
		if !equalIDs(idsOf(gotA), v2) {
			t.Fatalf("the member without the converter claimed %v; want only the v2 rows %v", idsOf(gotA), v2)
		}
		g := groupAt(t, health(t, ca, stream), 1, group)
		if g.Unread+g.Delayed != int64(len(v1)) {
			t.Errorf("after A's claims, v1 under the group: %d unread, %d delayed; want all %d v1 rows still to do", g.Unread, g.Delayed, len(v1))
		}
		gotB := drain(t, b)
		if !equalIDs(idsOf(gotB), v1) {
			t.Fatalf("the member with the converter claimed %v; want the v1 rows %v", idsOf(gotB), v1)
		}
		for _, d := range gotB {
			if d.Attempt != 1 || d.Value.Total.Currency != "EUR" {
				t.Errorf("converted row %d: attempt %d, value %+v; want attempt 1 and a converted value", d.ID, d.Attempt, d.Value)
			}
		}
		hl := health(t, ca, stream)
		for _, v := range []int{1, 2} {
			if g := groupAt(t, hl, v, group); g.Unread != 0 || g.Unresolved != 0 {
				t.Errorf("v%d after both drained: unread %d, unresolved %d; want 0 and 0", v, g.Unread, g.Unresolved)
			}
		}
	})

	t.Run("AddedConverterOrdered", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		// In an ordered group, the member without the converter stops at the
		// first v1 row: the partition waits for a member that can read it.
		const stream, group = "c19-conv-ordered", "ledger"
		ca, cb := h.client(t), h.client(t)
		a := consumer[EventV2](t, ca, stream, group, &sqlstreams.ConsumerOptions{Ordered: true})
		b := consumer[EventV2](t, cb, stream, group, &sqlstreams.ConsumerOptions{Ordered: true,
			Converters: []sqlstreams.Converter{sqlstreams.ConvertFrom(func(_ context.Context, v EventV1) (EventV2, error) {
				return EventV2{Seq: v.Seq}, nil
			})}})
		p1, p2 := producer[EventV1](t, ca, stream), producer[EventV2](t, ca, stream)
		first := produceV2(t, p2, 2)
		old := produceV1(t, p1, 1)
		last := produceV2(t, p2, 2)
		got := drain(t, a)
		if !equalIDs(idsOf(got), first) {
			t.Fatalf("ordered member without the converter claimed %v; want only %v, the rows before the first v1 row", idsOf(got), first)
		}
		var order []int64
		for _, cons := range []*sqlstreams.Consumer[EventV2]{b, a, b, a, b} {
			order = append(order, idsOf(drain(t, cons))...)
		}
		if want := append(slices.Clone(old), last...); !slices.Equal(order, want) {
			t.Errorf("the rest came as %v; want %v in id order", order, want)
		}
	})

	t.Run("Recreated", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		// A member whose group is deleted stops with ErrGroupNotFound; once
		// the group is re-created at another version, with ErrGroupVersion.
		// Neither claim moves the new group's cursors.
		const stream, group = "c19-recreate", "g"
		c := h.client(t)
		old := consumer[EventV1](t, c, stream, group, nil)
		p1, p2 := producer[EventV1](t, c, stream), producer[EventV2](t, c, stream)
		produceV1(t, p1, 2)
		v2 := produceV2(t, p2, 3)
		if err := c.Stream[EventV1](stream).DeleteGroup(ctx(t), group); err != nil {
			t.Fatal(err)
		}
		if ds, err := old.Claim(ctx(t), 10); !errors.Is(err, sqlstreams.ErrGroupNotFound) {
			t.Fatalf("claim after the group was deleted: %v, %v; want ErrGroupNotFound", idsOf(ds), err)
		}
		fresh := consumer[EventV2](t, h.client(t), stream, group, nil)
		if ds, err := old.Claim(ctx(t), 10); !errors.Is(err, sqlstreams.ErrGroupVersion) {
			t.Fatalf("claim after the group was re-created at v2: %v, %v; want ErrGroupVersion", idsOf(ds), err)
		}
		stop := make(chan error, 1)
		go func() {
			stop <- old.Run(ctx(t), func(context.Context, sqlstreams.Delivery[EventV1]) error { return nil })
		}()
		if err := <-stop; !errors.Is(err, sqlstreams.ErrGroupVersion) {
			t.Errorf("Run of the old member returned %v; want ErrGroupVersion", err)
		}
		if g := groupAt(t, health(t, c, stream), 2, group); g.Unread != int64(len(v2)) {
			t.Errorf("the re-created group has %d unread; want all %d v2 rows: the old member moved its cursor", g.Unread, len(v2))
		}
		if got := drain(t, fresh); !equalIDs(idsOf(got), v2) {
			t.Errorf("the re-created group got %v; want %v", idsOf(got), v2)
		}
	})

	t.Run("JoinAsItIs", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		// Register(ctx, nil) on an existing group joins it as it is;
		// Replace narrows it explicitly.
		const stream, group = "c19-join", "g"
		c := h.client(t)
		consumer[EventV1](t, c, stream, group, &sqlstreams.ConsumerOptions{Bindings: []string{"eu.#"}})
		joined := consumer[EventV1](t, h.client(t), stream, group, nil)
		p := producer[EventV1](t, c, stream)
		ids := map[string]int64{}
		for _, rk := range []string{"eu.web", "us.web"} {
			id, err := p.Produce(ctx(t), EventV1{}, sqlstreams.RoutingKey(rk))
			if err != nil {
				t.Fatal(err)
			}
			ids[rk] = id
		}
		if got := drain(t, joined); !equalIDs(idsOf(got), []int64{ids["eu.web"]}) {
			t.Fatalf("a member joined with nil options claimed %v; want only the eu row %d: nil options must keep the group's bindings", idsOf(got), ids["eu.web"])
		}
		narrowed := consumer[EventV1](t, c, stream, group, &sqlstreams.ConsumerOptions{Bindings: []string{"ap.#"}, Replace: true})
		apID, err := p.Produce(ctx(t), EventV1{}, sqlstreams.RoutingKey("ap.web"))
		if err != nil {
			t.Fatal(err)
		}
		euID, err := p.Produce(ctx(t), EventV1{}, sqlstreams.RoutingKey("eu.web"))
		if err != nil {
			t.Fatal(err)
		}
		if got := drain(t, narrowed); !equalIDs(idsOf(got), []int64{apID}) {
			t.Errorf("after Replace with ap.#: claimed %v; want only %d (eu row %d is no longer read)", idsOf(got), apID, euID)
		}
		if g := groupAt(t, health(t, c, stream), 1, group); g.Unread != 0 {
			t.Errorf("after Replace: %d unread; want 0", g.Unread)
		}
	})
}

func keysOf[K comparable, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
