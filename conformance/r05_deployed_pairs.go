package conformance

import (
	"testing"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

func init() { register("R5_DeployedPairs", testDeployedPairs) }

// R5: the registry checks the reader/writer pairs that exist. A reader (a
// group's consumer type) is checked against every writer revision still in
// the retained log at its version, since rows carry their writer's
// revision; a new writer against every registered reader at its version.
// A writer revision whose rows retention removed no longer blocks. Pairs
// are checked unless the level is NONE or the mode IMPORT.
func testDeployedPairs(t *testing.T, h *harness) {
	c := h.client(t)

	// Reader against live writers. Order3AmountOpt passes the gate (the latest
	// revision, Order3NoTotal, has no total) but cannot read the rows that
	// Order3 wrote, whose total is an integer.
	const stream = "r5"
	createStream(t, c, stream, &sqlstreams.StreamOptions{Retention: sqlstreams.Retention{MaxRows: 2, Hard: true}})
	p1 := producer[Order3](t, c, stream)
	for i := range 3 {
		if _, err := p1.Produce(ctx(t), Order3{ID: "old", Total: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	p2 := producer[Order3NoTotal](t, c, stream)
	for range 2 {
		if _, err := p2.Produce(ctx(t), Order3NoTotal{ID: "new"}); err != nil {
			t.Fatal(err)
		}
	}
	err := regConsumer[Order3AmountOpt](t, c, stream, "amount")
	ie := incompatible(t, "reader Order3AmountOpt with Order3 rows in the log", err, schema.Backward, 3,
		wantProblem{"writer revision 1 still in the log", schema.SumTypeNarrowed, "#/properties/total"})
	for _, p := range ie.Problems {
		if p.Against != "writer revision 1 still in the log" {
			t.Errorf("problem against %q; only writer revision 1 is unreadable: %+v", p.Against, p)
		}
		if p.Direction != schema.NewReadsOld {
			t.Errorf("a reader's problem in direction %s, want %s", p.Direction, schema.NewReadsOld)
		}
	}
	if n := len(revisions(t, c, stream, 3)); n != 2 {
		t.Errorf("the refused reader left %d revisions, want 2", n)
	}
	if groupExists(t, c, stream, "amount") {
		t.Errorf("the refused reader created its group")
	}

	// Hard retention removes every Order3 row: writer revision 1 is gone from
	// the log and no longer blocks; the Order3NoTotal rows remain.
	if _, err := c.Maintain(ctx(t)); err != nil {
		t.Fatalf("Maintain: %v", err)
	}
	if vh, _ := health(t, c, stream).Version(3); vh.Rows != 2 {
		t.Fatalf("after retention, %d rows at v3, want the 2 Order3NoTotal rows", vh.Rows)
	}
	if err := regConsumer[Order3AmountOpt](t, c, stream, "amount"); err != nil {
		t.Fatalf("reader Order3AmountOpt after retention removed writer revision 1: %v", err)
	}
	if got := drain(t, consumer[Order3AmountOpt](t, c, stream, "amount", nil)); len(got) != 2 {
		t.Errorf("group amount read %d rows, want 2", len(got))
	}

	// Writer against registered readers. Order3NoSKU passes the gate (a
	// removed field) but the registered Order3 reader needs sku.
	const ws = "r5-writer"
	producer[Order3](t, c, ws)
	consumer[Order3](t, c, ws, "needs-sku", nil)
	err = regProducer[Order3NoSKU](t, c, ws)
	ie = incompatible(t, "writer Order3NoSKU with reader needs-sku registered", err, schema.Backward, 3,
		wantProblem{"the reader of group needs-sku (revision 1)", schema.RequiredAttributeAdded, "#/required/sku"})
	for _, p := range ie.Problems {
		if p.Direction != schema.OldReadsNew {
			t.Errorf("a writer's problem in direction %s, want %s", p.Direction, schema.OldReadsNew)
		}
	}
	if n := len(revisions(t, c, ws, 3)); n != 1 {
		t.Errorf("the refused writer left %d revisions, want 1", n)
	}
	// A writer every reader can read is accepted; once the reader has moved
	// to a type without sku, the writer is too.
	if err := regProducer[Order3Note](t, c, ws); err != nil {
		t.Errorf("writer Order3Note: %v", err)
	}
	if err := regConsumer[Order3NoSKU](t, c, ws, "needs-sku"); err != nil {
		t.Fatalf("reader needs-sku moving to Order3NoSKU: %v", err)
	}
	if err := regProducer[Order3NoSKU](t, c, ws); err != nil {
		t.Errorf("writer Order3NoSKU after its only reader moved to it: %v", err)
	}

	// Level NONE and mode IMPORT skip the pair check.
	for _, skip := range []struct {
		stream string
		set    func(stream string)
	}{
		{"r5-none", func(s string) { setLevel(t, c, s, schema.None) }},
		{"r5-import", func(s string) { setMode(t, c, s, sqlstreams.ModeImport) }},
	} {
		createStream(t, c, skip.stream, nil)
		skip.set(skip.stream)
		p := producer[Order3](t, c, skip.stream)
		if _, err := p.Produce(ctx(t), Order3{ID: "x", Total: 1}); err != nil {
			t.Fatal(err)
		}
		consumer[Order3](t, c, skip.stream, "needs-sku", nil)
		if err := regConsumer[Order3Amount](t, c, skip.stream, "amount"); err != nil {
			t.Errorf("%s: a reader that cannot read the log was refused: %v", skip.stream, err)
		}
		if err := regProducer[Order3NoSKU](t, c, skip.stream); err != nil {
			t.Errorf("%s: a writer a registered reader cannot read was refused: %v", skip.stream, err)
		}
	}
}
