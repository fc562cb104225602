package conformance

import (
	"errors"
	"slices"
	"testing"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() { register("C3_DeleteGroup", testDeleteGroup) }

// C3 (retiring a group): DeleteGroup removes the group with its cursors,
// unresolved and dead deliveries and its reader schema; the name is then free
// for a new group at another version, and a reader it had registered no
// longer holds back writers (R5).
func testDeleteGroup(t *testing.T, h *harness) {
	c := h.client(t)
	p1 := producer[EventV1](t, c, "c3-delete")
	produceV1(t, p1, 3)
	old := consumer[EventV1](t, c, "c3-delete", "g", fastRetry(sqlstreams.ConsumerOptions{}))
	ds, err := old.Claim(ctx(t), 2)
	if err != nil || len(ds) != 2 {
		t.Fatalf("claim: %d, %v", len(ds), err)
	}
	if err := ds[0].Dead(ctx(t), errTest); err != nil {
		t.Fatal(err)
	}
	// A writer whose rows the v1 reader could not read is refused, among
	// other reasons, because of that reader.
	if !readerBlocks(t, c, "g") {
		t.Fatal("a retyped v1 writer is not refused for the reader of group g")
	}

	if err := c.Stream[EventV1]("c3-delete").DeleteGroup(ctx(t), "g"); err != nil {
		t.Fatalf("DeleteGroup: %v", err)
	}
	if vh, ok := health(t, c, "c3-delete").Version(1); ok {
		for _, g := range vh.Groups {
			if g.Group == "g" {
				t.Errorf("health still lists the deleted group: %+v", g)
			}
		}
	}
	readers, err := c.Registry().Readers(ctx(t), "c3-delete")
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(readers, func(r sqlstreams.Reader) bool { return r.Group == "g" }) {
		t.Errorf("the deleted group's reader is still registered: %+v", readers)
	}
	if err := old.Ack(ctx(t), ds[1]); !errors.Is(err, sqlstreams.ErrLeaseLost) {
		t.Errorf("ack of a delivery of the deleted group: err %v, want ErrLeaseLost", err)
	}
	if dead, err := old.DeadLetters(ctx(t), 0, 10); err != nil || len(dead) != 0 {
		t.Errorf("the deleted group's dead letters: %v, %v; want none", dead, err)
	}

	// The name is free: a new group of that name at v2 starts from scratch.
	ids2 := produceV2(t, producer[EventV2](t, c, "c3-delete"), 2)
	fresh := consumer[EventV2](t, c, "c3-delete", "g", nil)
	if got := drain(t, fresh); !equalIDs(idsOf(got), ids2) {
		t.Errorf("the new group g at v2 got %v, want %v", idsOf(got), ids2)
	}
	if readerBlocks(t, c, "g") {
		t.Error("the deleted group's reader still holds back writers")
	}

	if err := c.Stream[EventV1]("c3-delete").DeleteGroup(ctx(t), "missing"); !errors.Is(err, sqlstreams.ErrGroupNotFound) {
		t.Errorf("DeleteGroup of a missing group: err %v, want ErrGroupNotFound", err)
	}
	if err := c.Stream[EventV1]("c3-delete").DeleteGroup(ctx(t), "bad name"); !errors.Is(err, sqlstreams.ErrInvalidName) {
		t.Errorf("DeleteGroup with a bad name: err %v, want ErrInvalidName", err)
	}
}

// readerBlocks reports whether registering eventV1Retyped as a writer is
// refused with a problem against the reader of group.
func readerBlocks(t *testing.T, c *sqlstreams.Client, group string) bool {
	t.Helper()
	_, err := c.Stream[eventV1Retyped]("c3-delete").Producer().Register(ctx(t), nil)
	var ie *sqlstreams.IncompatibleSchemaError
	if !errors.As(err, &ie) {
		t.Fatalf("a retyped v1 writer: err %v, want ErrIncompatibleSchema (the level refuses it in any case)", err)
	}
	return slices.ContainsFunc(ie.Problems, func(p sqlstreams.SchemaProblem) bool {
		return p.Against == "the reader of group "+group+" (revision 1)"
	})
}

// eventV1Retyped is EventV1 edited in place: Seq became a string.
type eventV1Retyped struct {
	Seq   string `json:"seq"`
	Total int64  `json:"total"`
}

func (eventV1Retyped) SchemaVersion() int { return 1 }
