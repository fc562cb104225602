package conformance

import (
	"fmt"
	"testing"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() { register("C6_StartPosition", testStartPosition) }

// C6: a new group starts at the beginning of the retained log (the default)
// or at its end; the start position applies when the group is created only.
func testStartPosition(t *testing.T, h *harness) {
	c := h.client(t)
	const stream = "c6"
	if _, err := c.Stream[EventV1](stream).Create(ctx(t), &sqlstreams.StreamOptions{Partitions: 3}); err != nil {
		t.Fatalf("create stream: %v", err)
	}
	p := producer[EventV1](t, c, stream)
	produceKeyed := func(n int) []int64 {
		var ids []int64
		for i := range n {
			ids = append(ids, produceV1(t, p, 1, sqlstreams.Key(fmt.Sprintf("k%d", i)))...)
		}
		return ids
	}
	old := produceKeyed(6)

	earliest := consumer[EventV1](t, c, stream, "earliest", nil)
	explicit := consumer[EventV1](t, c, stream, "explicit", &sqlstreams.ConsumerOptions{StartAt: sqlstreams.StartEarliest})
	latest := consumer[EventV1](t, c, stream, "latest", &sqlstreams.ConsumerOptions{StartAt: sqlstreams.StartLatest})
	if ds, err := latest.Claim(ctx(t), 10); err != nil || len(ds) != 0 {
		t.Errorf("a StartLatest group claimed %v (err %v) before any new row", idsOf(ds), err)
	}
	hl := health(t, c, stream)
	if g := groupAt(t, hl, 1, "latest"); g.Unread != 0 || g.CursorDistance != 0 {
		t.Errorf("health of a new StartLatest group: unread %d, cursor distance %d; want 0 and 0", g.Unread, g.CursorDistance)
	}
	if g := groupAt(t, hl, 1, "earliest"); g.Unread != int64(len(old)) {
		t.Errorf("health of a new StartEarliest group: unread %d, want %d", g.Unread, len(old))
	}

	fresh := produceKeyed(6)
	all := append(append([]int64{}, old...), fresh...)
	if got := drain(t, earliest); !equalIDs(idsOf(got), all) {
		t.Errorf("default (earliest) group got %v, want %v", idsOf(got), all)
	}
	if got := drain(t, explicit); !equalIDs(idsOf(got), all) {
		t.Errorf("StartEarliest group got %v, want %v", idsOf(got), all)
	}
	if got := drain(t, latest); !equalIDs(idsOf(got), fresh) {
		t.Errorf("StartLatest group got %v, want only the rows produced after it was created %v", idsOf(got), fresh)
	}

	// The start position is read when the group is created; registering an
	// existing group again keeps its cursors whatever StartAt says.
	rewound := consumer[EventV1](t, c, stream, "latest", &sqlstreams.ConsumerOptions{StartAt: sqlstreams.StartEarliest})
	if got := drain(t, rewound); len(got) != 0 {
		t.Errorf("re-registering a group with StartEarliest re-read %v", idsOf(got))
	}
	fresh2 := produceKeyed(3)
	forward := consumer[EventV1](t, c, stream, "earliest", &sqlstreams.ConsumerOptions{StartAt: sqlstreams.StartLatest})
	if got := drain(t, forward); !equalIDs(idsOf(got), fresh2) {
		t.Errorf("re-registering a group with StartLatest skipped rows: got %v, want %v", idsOf(got), fresh2)
	}

	// On an empty stream both start at the first row.
	const empty = "c6-empty"
	e1 := consumer[EventV1](t, c, empty, "earliest", nil)
	e2 := consumer[EventV1](t, c, empty, "latest", &sqlstreams.ConsumerOptions{StartAt: sqlstreams.StartLatest})
	ids := produceV1(t, producer[EventV1](t, c, empty), 2)
	for _, g := range []*sqlstreams.Consumer[EventV1]{e1, e2} {
		if got := drain(t, g); !equalIDs(idsOf(got), ids) {
			t.Errorf("group %s on a stream empty at creation got %v, want %v", g.Group(), idsOf(got), ids)
		}
	}

	// "The beginning of the retained log": rows retention has removed are
	// not waited for; a new earliest group starts at the first row kept.
	const retained = "c6-retained"
	if _, err := c.Stream[EventV1](retained).Create(ctx(t), &sqlstreams.StreamOptions{Retention: sqlstreams.Retention{MaxRows: 2, Hard: true}}); err != nil {
		t.Fatalf("create stream: %v", err)
	}
	rids := produceV1(t, producer[EventV1](t, c, retained), 5)
	if _, err := c.Maintain(ctx(t)); err != nil {
		t.Fatalf("maintain: %v", err)
	}
	if got := drain(t, consumer[EventV1](t, c, retained, "earliest", nil)); !equalIDs(idsOf(got), rids[3:]) {
		t.Errorf("a new group on a stream retained to 2 rows got %v, want %v", idsOf(got), rids[3:])
	}
}
