package conformance

import (
	"errors"
	"strings"
	"testing"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() { register("C3_GroupIdentity", testGroupIdentity) }

// C3: a group is (stream, name) bound to one schema version. Registering it
// with another version fails with ErrGroupVersion and suggests a new group
// name; groups at different versions live side by side on one stream.
func testGroupIdentity(t *testing.T, h *harness) {
	c := h.client(t)
	p1 := producer[EventV1](t, c, "c3")
	p2 := producer[EventV2](t, c, "c3")
	var v1IDs, v2IDs []int64
	for range 3 {
		v1IDs = append(v1IDs, produceV1(t, p1, 1)...)
		v2IDs = append(v2IDs, produceV2(t, p2, 1)...)
	}

	old := consumer[EventV1](t, c, "c3", "fraud-scoring", nil)

	// The same group at another version is refused, with advice.
	_, err := c.Stream[EventV2]("c3").Consumer("fraud-scoring").Register(ctx(t), nil)
	if !errors.Is(err, sqlstreams.ErrGroupVersion) {
		t.Fatalf("registering group fraud-scoring (v1) with EventV2: err %v, want ErrGroupVersion", err)
	}
	if !strings.Contains(err.Error(), `"fraud-scoring-v2"`) {
		t.Errorf("ErrGroupVersion message does not suggest a new group name such as \"fraud-scoring-v2\": %v", err)
	}
	// A RawPayload group reads every version, which is another binding too.
	if _, err := c.Stream[sqlstreams.RawPayload]("c3").Consumer("fraud-scoring").Register(ctx(t), nil); !errors.Is(err, sqlstreams.ErrGroupVersion) {
		t.Errorf("registering group fraud-scoring (v1) as RawPayload: err %v, want ErrGroupVersion", err)
	}
	consumer[sqlstreams.RawPayload](t, c, "c3", "audit", nil)
	if _, err := c.Stream[EventV1]("c3").Consumer("audit").Register(ctx(t), nil); !errors.Is(err, sqlstreams.ErrGroupVersion) {
		t.Errorf("registering RawPayload group audit with EventV1: err %v, want ErrGroupVersion", err)
	}
	// Nor does a refused registration change the group: a second client on
	// the namespace still finds it at v1, and bindings given with a refused
	// registration are not stored (else the v1 group would now pass over
	// every row).
	c2 := h.client(t)
	if _, err := c2.Stream[EventV2]("c3").Consumer("fraud-scoring").Register(ctx(t),
		&sqlstreams.ConsumerOptions{Bindings: []string{"nothing.#"}}); !errors.Is(err, sqlstreams.ErrGroupVersion) {
		t.Errorf("second client registering fraud-scoring with EventV2: err %v, want ErrGroupVersion", err)
	}
	if g := groupAt(t, health(t, c, "c3"), 1, "fraud-scoring"); g.Unread != int64(len(v1IDs)) {
		t.Errorf("after a refused registration with other bindings, health counts %d unread for the v1 group, want %d: the refused registration changed the group's bindings",
			g.Unread, len(v1IDs))
	}

	// The rolling deploy: a new group at v2 beside the old one at v1.
	next := consumer[EventV2](t, c, "c3", "fraud-scoring-v2", nil)
	got1 := drain(t, old)
	got2 := drain(t, next)
	if !equalIDs(idsOf(got1), v1IDs) {
		t.Errorf("v1 group drained %v, want the v1 rows %v", idsOf(got1), v1IDs)
	}
	if !equalIDs(idsOf(got2), v2IDs) {
		t.Errorf("v2 group drained %v, want the v2 rows %v", idsOf(got2), v2IDs)
	}
	hl := health(t, c, "c3")
	if g := groupAt(t, hl, 1, "fraud-scoring"); g.Unread != 0 || g.Unresolved != 0 {
		t.Errorf("health of fraud-scoring at v1 after draining: %+v", g)
	}
	if g := groupAt(t, hl, 2, "fraud-scoring-v2"); g.Unread != 0 || g.Unresolved != 0 {
		t.Errorf("health of fraud-scoring-v2 at v2 after draining: %+v", g)
	}

	// Registering again at the same version joins the group: its cursor is
	// kept (nothing is read twice), and new rows reach whichever member claims.
	again := consumer[EventV1](t, c2, "c3", "fraud-scoring", nil)
	if ds := drain(t, again); len(ds) != 0 {
		t.Errorf("re-registered v1 group re-read %v; its cursor should have been kept", idsOf(ds))
	}
	more1 := produceV1(t, p1, 2)
	more2 := produceV2(t, p2, 2)
	if got := drain(t, again); !equalIDs(idsOf(got), more1) {
		t.Errorf("re-registered v1 group got %v, want %v", idsOf(got), more1)
	}
	if got := drain(t, old); len(got) != 0 {
		t.Errorf("the first member of the v1 group got %v after the second member resolved them", idsOf(got))
	}
	if got := drain(t, next); !equalIDs(idsOf(got), more2) {
		t.Errorf("v2 group got %v, want %v", idsOf(got), more2)
	}

	// A group is (stream, name): the same name on another stream is another
	// group, free to be at another version.
	pOther := producer[EventV2](t, c, "c3-other")
	otherIDs := produceV2(t, pOther, 2)
	other := consumer[EventV2](t, c, "c3-other", "fraud-scoring", nil)
	if got := drain(t, other); !equalIDs(idsOf(got), otherIDs) {
		t.Errorf("fraud-scoring on c3-other got %v, want %v", idsOf(got), otherIDs)
	}
}
