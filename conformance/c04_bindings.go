package conformance

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() { register("C4_Bindings", testBindings) }

// C4: routing keys are dot-separated words; a binding's '*' is exactly one
// word and '#' zero or more (RabbitMQ topic semantics); no bindings means
// every key; a row matching no binding is passed over and the cursor moves
// past it.
func testBindings(t *testing.T, h *harness) {
	c := h.client(t)
	t.Run("Matching", func(t *testing.T) { testBindingMatching(t, c) })
	t.Run("CursorPassesOver", func(t *testing.T) { testBindingCursor(t, c) })
	t.Run("Invalid", func(t *testing.T) { testBindingInvalid(t, c) })
}

func testBindingMatching(t *testing.T, c *sqlstreams.Client) {
	keys := []string{"", "orders", "orders.eu", "orders.eu.web", "orders.us", "payments.eu", "eu", "eu.web", "a.b.c.d", "ordersx.eu"}
	cases := []struct {
		bindings []string
		want     []string
	}{
		{nil, keys},
		{[]string{"#"}, keys},
		{[]string{"orders"}, []string{"orders"}},
		{[]string{"*"}, []string{"orders", "eu"}},
		{[]string{"orders.*"}, []string{"orders.eu", "orders.us"}},
		{[]string{"orders.#"}, []string{"orders", "orders.eu", "orders.eu.web", "orders.us"}},
		{[]string{"*.eu"}, []string{"orders.eu", "payments.eu", "ordersx.eu"}},
		{[]string{"#.web"}, []string{"orders.eu.web", "eu.web"}},
		{[]string{"orders.*.web"}, []string{"orders.eu.web"}},
		{[]string{"orders.#.web"}, []string{"orders.eu.web"}},
		{[]string{"#.eu.#"}, []string{"orders.eu", "orders.eu.web", "payments.eu", "eu", "eu.web", "ordersx.eu"}},
		{[]string{"*.*.#"}, []string{"orders.eu", "orders.eu.web", "orders.us", "payments.eu", "eu.web", "a.b.c.d", "ordersx.eu"}},
		{[]string{"a.#.d"}, []string{"a.b.c.d"}},
		{[]string{"a.*.d"}, nil},
		{[]string{"eu.#", "payments.*"}, []string{"eu", "eu.web", "payments.eu"}},
		{[]string{"nothing.here"}, nil},
	}
	const stream = "c4-match"
	groups := make([]*sqlstreams.Consumer[EventV1], len(cases))
	for i, tc := range cases {
		groups[i] = consumer[EventV1](t, c, stream, fmt.Sprintf("g%d", i), &sqlstreams.ConsumerOptions{Bindings: tc.bindings})
	}
	p := producer[EventV1](t, c, stream)
	keyOf := map[int64]string{}
	for range 2 { // twice, so each group must also find rows after ones it skipped
		for _, k := range keys {
			for _, id := range produceV1(t, p, 1, sqlstreams.RoutingKey(k)) {
				keyOf[id] = k
			}
		}
	}
	for i, tc := range cases {
		var got []string
		for _, d := range drain(t, groups[i]) {
			if d.RoutingKey != keyOf[d.ID] {
				t.Errorf("bindings %q: row %d came with routing key %q, produced with %q", tc.bindings, d.ID, d.RoutingKey, keyOf[d.ID])
			}
			got = append(got, d.RoutingKey)
		}
		var want []string
		for _, k := range tc.want {
			want = append(want, k, k)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("bindings %q received keys %q, want %q", tc.bindings, got, want)
		}
	}
	hl := health(t, c, stream)
	for i, tc := range cases {
		if g := groupAt(t, hl, 1, fmt.Sprintf("g%d", i)); g.Unread != 0 || g.CursorDistance != 0 || g.Unresolved != 0 {
			t.Errorf("bindings %q after draining: unread %d, cursor distance %d, unresolved %d; want all 0", tc.bindings, g.Unread, g.CursorDistance, g.Unresolved)
		}
	}
}

func testBindingCursor(t *testing.T, c *sqlstreams.Client) {
	const stream = "c4-cursor"
	g := consumer[EventV1](t, c, stream, "eu-only", &sqlstreams.ConsumerOptions{Bindings: []string{"eu.#"}})
	p := producer[EventV1](t, c, stream)
	skipped := produceV1(t, p, 5, sqlstreams.RoutingKey("us.web"))

	before := groupAt(t, health(t, c, stream), 1, "eu-only")
	if before.Unread != 0 {
		t.Errorf("health counts %d unread for a group whose bindings match none of the rows", before.Unread)
	}
	// The distance is the high-water id minus the cursor (C13), not a row
	// count: ids need not be dense (a Galera cluster steps them).
	if want := skipped[len(skipped)-1]; before.CursorDistance != want {
		t.Errorf("cursor distance before any claim is %d, want %d, the newest id (the raw distance spans unmatched rows)", before.CursorDistance, want)
	}
	ds, err := g.Claim(ctx(t), 10)
	if err != nil || len(ds) != 0 {
		t.Fatalf("claim over unmatched rows: %v (err %v), want nothing", idsOf(ds), err)
	}
	after := groupAt(t, health(t, c, stream), 1, "eu-only")
	if after.CursorDistance != 0 || after.Unread != 0 || after.Unresolved != 0 {
		t.Errorf("after a claim over unmatched rows: cursor distance %d, unread %d, unresolved %d; the cursor should have moved past them",
			after.CursorDistance, after.Unread, after.Unresolved)
	}

	passed := skipped[len(skipped)-1] // the cursor, past the skipped rows
	// Rows that match after the skipped ones are delivered, and only they.
	wanted := produceV1(t, p, 1, sqlstreams.RoutingKey("eu.web"))
	skipped = append(skipped, produceV1(t, p, 2, sqlstreams.RoutingKey("useu"))...)
	wanted = append(wanted, produceV1(t, p, 1, sqlstreams.RoutingKey("eu"))...)
	mid := groupAt(t, health(t, c, stream), 1, "eu-only")
	if want := wanted[len(wanted)-1] - passed; mid.Unread != 2 || mid.CursorDistance != want {
		t.Errorf("health with 2 matching of 4 new rows: unread %d, cursor distance %d; want 2 and %d (newest id %d minus cursor %d)",
			mid.Unread, mid.CursorDistance, want, wanted[len(wanted)-1], passed)
	}
	if got := drain(t, g); !equalIDs(idsOf(got), wanted) {
		t.Errorf("eu.# group got %v, want %v", idsOf(got), wanted)
	}
	end := groupAt(t, health(t, c, stream), 1, "eu-only")
	if end.CursorDistance != 0 || end.Unread != 0 {
		t.Errorf("after draining: cursor distance %d, unread %d; want 0 and 0", end.CursorDistance, end.Unread)
	}
	// A group without bindings on the same stream gets every row.
	all := consumer[EventV1](t, c, stream, "everything", nil)
	if got := drain(t, all); !equalIDs(idsOf(got), append(append([]int64{}, skipped...), wanted...)) {
		t.Errorf("group without bindings got %v, want all of %v and %v", idsOf(got), skipped, wanted)
	}
}

func testBindingInvalid(t *testing.T, c *sqlstreams.Client) {
	const stream = "c4-invalid"
	for _, b := range []string{"", ".", "orders.", ".orders", "orders..eu", "orders.e*", "orders.#x", "*x", "eu web", "x'; DROP TABLE stream_config; --", "eu.\u00e9", "eu.\x00", "eu/web"} {
		_, err := c.Stream[EventV1](stream).Consumer("bad").Register(ctx(t), &sqlstreams.ConsumerOptions{Bindings: []string{"eu.#", b}})
		if !errors.Is(err, sqlstreams.ErrInvalidName) {
			t.Errorf("Register with binding %q: err %v, want ErrInvalidName", b, err)
		}
	}
	p := producer[EventV1](t, c, stream)
	for _, k := range []string{".", "orders.", ".orders", "orders..eu", "orders.*", "orders.#", "#", "*", "eu web", "x'; DROP TABLE stream_config; --", "eu.\u00e9", "eu\n", string(make([]byte, 300))} {
		if _, err := p.Produce(ctx(t), EventV1{Seq: 1}, sqlstreams.RoutingKey(k)); !errors.Is(err, sqlstreams.ErrInvalidName) {
			t.Errorf("Produce with routing key %q: err %v, want ErrInvalidName", k, err)
		}
		if _, err := p.ProduceBatch(ctx(t), sqlstreams.NewMessage(EventV1{Seq: 1}), sqlstreams.NewMessage(EventV1{Seq: 2}, sqlstreams.RoutingKey(k))); !errors.Is(err, sqlstreams.ErrInvalidName) {
			t.Errorf("ProduceBatch with routing key %q: err %v, want ErrInvalidName", k, err)
		}
	}
	if hl := health(t, c, stream); hl.HighWater != 0 || len(hl.Versions) != 0 {
		t.Errorf("refused produces wrote rows: high water %d, versions %+v", hl.HighWater, hl.Versions)
	}
	// Valid words use letters, digits, '_' and '-'.
	if _, err := p.Produce(ctx(t), EventV1{Seq: 1}, sqlstreams.RoutingKey("Orders-EU_1.web-2")); err != nil {
		t.Errorf("Produce with routing key Orders-EU_1.web-2: %v", err)
	}
	g := consumer[EventV1](t, c, stream, "ok", &sqlstreams.ConsumerOptions{Bindings: []string{"Orders-EU_1.*", "#.#", "*.#.*"}})
	if got := drain(t, g); len(got) != 1 {
		t.Errorf("group with valid bindings got %d rows, want 1", len(got))
	}
}
