package conformance

import (
	"testing"

	"github.com/sqlstreams/sqlstreams/core/schema"
)

func init() { register("R2_Gate", testGate) }

// R2: a new revision at an existing version is checked against the
// stream's level (BACKWARD by default). An incompatible one fails with
// ErrIncompatibleSchema listing every problem (kind, JSON path, words), the
// level, the revision compared and the advice to bump SchemaVersion(), and
// nothing is written: no revision, no reader, no group, no row. Compatible
// edits are accepted, and a tagged default is what readers then see for
// rows written without the field.
func testGate(t *testing.T, h *harness) {
	c := h.client(t)
	const stream = "r2"
	p3 := producer[Order3](t, c, stream)
	if _, err := p3.Produce(ctx(t), Order3{ID: "o-1", Total: 100, SKU: "sku-1"}); err != nil {
		t.Fatalf("produce Order3: %v", err)
	}
	reader := consumer[Order3](t, c, stream, "reader", nil)

	// A required field without a default, as a producer and as a consumer.
	emailProblem := wantProblem{"revision 1", schema.RequiredAttributeAdded, "#/required/email"}
	_, err := c.Stream[Order3Email](stream).Producer().Register(ctx(t), nil)
	ie := incompatible(t, "producer of Order3Email", err, schema.Backward, 3, emailProblem)
	if ie.Stream != stream || ie.Type == "" {
		t.Errorf("error names stream %q and type %q, want %q and the Go type", ie.Stream, ie.Type, stream)
	}
	if len(ie.Problems) != 1 {
		t.Errorf("adding one required field gave %d problems, want 1: %+v", len(ie.Problems), ie.Problems)
	}
	_, err = c.Stream[Order3Email](stream).Consumer("email-reader").Register(ctx(t), nil)
	incompatible(t, "consumer of Order3Email", err, schema.Backward, 3, emailProblem)
	if groupExists(t, c, stream, "email-reader") {
		t.Errorf("a refused consumer registration created its group")
	}

	// int -> object: every problem is listed, from two edits at once.
	_, err = c.Stream[Order3Broken](stream).Producer().Register(ctx(t), nil)
	incompatible(t, "producer of Order3Broken", err, schema.Backward, 3,
		wantProblem{"revision 1", schema.TypeChanged, "#/properties/total/type"},
		emailProblem)
	_, err = c.Stream[Order3Amount](stream).Consumer("amount-reader").Register(ctx(t), nil)
	incompatible(t, "consumer of Order3Amount", err, schema.Backward, 3,
		wantProblem{"revision 1", schema.TypeChanged, "#/properties/total/type"})

	// Nothing was written by any refusal.
	if revs := revisions(t, c, stream, 0); len(revs) != 1 {
		t.Fatalf("refused registrations left %d revisions, want 1: %+v", len(revs), revs)
	}
	readers, err := c.Registry().Readers(ctx(t), stream)
	if err != nil {
		t.Fatalf("Readers: %v", err)
	}
	if len(readers) != 1 || readers[0].Group != "reader" {
		t.Errorf("readers after refusals %+v, want only group reader", readers)
	}
	if groupExists(t, c, stream, "amount-reader") {
		t.Errorf("a refused consumer registration created its group")
	}
	if vh, _ := health(t, c, stream).Version(3); vh.Rows != 1 {
		t.Errorf("health counts %d rows at v3, want the 1 produced", vh.Rows)
	}

	// Compatible edits are accepted as new revisions: an optional field, a
	// required field with a default, a removed field (Go readers skip what
	// they do not declare).
	if err := regProducer[Order3Note](t, c, stream); err != nil {
		t.Fatalf("adding an optional field was refused: %v", err)
	}
	if err := regProducer[Order3Channel](t, c, stream); err != nil {
		t.Fatalf("adding a required field with a default was refused: %v", err)
	}
	if err := regConsumer[Order3NoSKU](t, c, stream, "nosku"); err != nil {
		t.Fatalf("removing a field was refused under BACKWARD: %v", err)
	}
	if revs := revisions(t, c, stream, 3); len(revs) != 4 {
		t.Errorf("after three compatible edits, %d revisions at v3, want 4", len(revs))
	}
	// The gate compares with the latest revision: the latest is Order3NoSKU
	// now, so the error names revision 4.
	_, err = c.Stream[Order3Broken](stream).Producer().Register(ctx(t), nil)
	incompatible(t, "Order3Broken against the latest revision", err, schema.Backward, 3,
		wantProblem{"revision 4", schema.TypeChanged, "#/properties/total/type"},
		wantProblem{"revision 4", schema.RequiredAttributeAdded, "#/required/email"})

	// The version is the boundary: the same int -> object edit as a new
	// version is not compared with version 3 at all.
	if err := regProducer[Order4](t, c, stream); err != nil {
		t.Fatalf("a new version was checked against another version: %v", err)
	}

	// The default is what a reader sees for rows written without the field;
	// rows that carry it keep their value.
	withChannel := producer[Order3Channel](t, c, stream)
	idApp, err := withChannel.Produce(ctx(t), Order3Channel{ID: "o-2", Total: 200, SKU: "sku-2", Channel: "app"})
	if err != nil {
		t.Fatalf("produce Order3Channel: %v", err)
	}
	got := drain(t, consumer[Order3Channel](t, c, stream, "channel-reader", nil))
	if len(got) != 2 {
		t.Fatalf("channel-reader got %d rows, want 2", len(got))
	}
	for _, d := range got {
		want := "web"
		if d.ID == idApp {
			want = "app"
		}
		if d.Value.Channel != want {
			t.Errorf("row %d read with channel %q, want %q (the tagged default for rows written without it)", d.ID, d.Value.Channel, want)
		}
	}
	if d := drain(t, reader); len(d) != 2 {
		t.Errorf("the Order3 reader got %d rows, want 2", len(d))
	}
}
