package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

func init() {
	register("R9_SchemaIDs", testSchemaIDs)
	register("R9_DocumentPolicy", testDocumentPolicy)
	register("R9_DenseSchemaIDs", testDenseSchemaIDs)
}

// R9: recording a known schema again, in any stream, uses up no global id,
// so the next new schema gets the next id the engine hands out, as
// Confluent's registry does (an insert that meets the stored fingerprint
// would burn a sequence or auto-increment value each time). The engine's
// step is measured first: a Galera-like server steps ids by more than one.
func testDenseSchemaIDs(t *testing.T, h *harness) {
	reg := h.client(t).Registry()
	doc := func(field string) []byte {
		return []byte(fmt.Sprintf(`{"type": "object", "properties": {%q: {"type": "string"}}}`, field))
	}
	first, err := reg.Register(ctx(t), "r9d-a", 1, doc("a"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := reg.Register(ctx(t), "r9d-b", 1, doc("b"))
	if err != nil {
		t.Fatal(err)
	}
	step := second.ID - first.ID
	if step <= 0 {
		t.Fatalf("ids %d then %d: a later schema got a lower id", first.ID, second.ID)
	}
	known := []struct {
		field   string
		version int
		id      int64
	}{{"a", 2, first.ID}, {"b", 3, second.ID}}
	for _, stream := range []string{"r9d-c", "r9d-d", "r9d-a", "r9d-b"} {
		for _, k := range known {
			again, err := reg.Register(ctx(t), stream, k.version, doc(k.field))
			if err != nil || again.ID != k.id {
				t.Fatalf("a known schema again in %s: id %d, %v; want id %d", stream, again.ID, err, k.id)
			}
		}
	}
	next, err := reg.Register(ctx(t), "r9d-e", 1, doc("e"))
	if err != nil {
		t.Fatal(err)
	}
	if next.ID != second.ID+step {
		t.Errorf("a new schema after known ones were recorded again: id %d, want %d (ids step by %d here)", next.ID, second.ID+step, step)
	}
}

// R9, the rules for documents: a document registered or checked by hand is
// judged GoAware unless the client says WithDocumentPolicy(schema.Strict),
// which applies Confluent's rules to documents only; schemas reflected from
// Go types stay GoAware on that client.
func testDocumentPolicy(t *testing.T, h *harness) {
	v1 := []byte(`{"type": "object", "properties": {"id": {"type": "string"}}}`)
	v2 := []byte(`{"type": "object", "properties": {"id": {"type": "string"}, "note": {"type": "string"}}}`)

	goAware := h.client(t).Registry()
	if _, err := goAware.Register(ctx(t), "r9p-default", 1, v1); err != nil {
		t.Fatal(err)
	}
	if rev, err := goAware.Register(ctx(t), "r9p-default", 1, v2); err != nil || rev.Revision != 2 {
		t.Errorf("default policy, an optional property added: %+v, %v; want revision 2", rev, err)
	}

	sc := h.client(t, sqlstreams.WithDocumentPolicy(schema.Strict))
	strict := sc.Registry()
	if _, err := strict.Register(ctx(t), "r9p-strict", 1, v1); err != nil {
		t.Fatal(err)
	}
	want := wantProblem{"revision 1", schema.OptionalPropertyAddedToOpenContentModel, "#/properties/note"}
	incompatible(t, "Strict: Check of an optional property added to an open model", strict.Check(ctx(t), "r9p-strict", 1, v2), schema.Backward, 1, want)
	incompatible(t, "Strict: CheckAgainst revision 1", strict.CheckAgainst(ctx(t), "r9p-strict", 1, 1, v2), schema.Backward, 1, want)
	_, err := strict.Register(ctx(t), "r9p-strict", 1, v2)
	incompatible(t, "Strict: Register of an optional property added to an open model", err, schema.Backward, 1, want)
	if n := len(revisions(t, sc, "r9p-strict", 1)); n != 1 {
		t.Errorf("a refused document left %d revisions, want 1", n)
	}
	// Go types on the same client keep the Go-aware rules.
	producer[Order3](t, sc, "r9p-go")
	producer[Order3Note](t, sc, "r9p-go")
	if n := len(revisions(t, sc, "r9p-go", 3)); n != 2 {
		t.Errorf("Go types on a Strict client: %d revisions, want 2 (Go types are judged GoAware)", n)
	}
}

// R9: every distinct schema has one global id, assigned in the database
// the first time any stream records it, shared by every stream that
// records the same schema and stable across client restarts. A
// document registered by hand passes the same gate as a producer
// registration; IMPORT mode takes explicit ids and revisions.
func testSchemaIDs(t *testing.T, h *harness) {
	c := h.client(t)
	reg := c.Registry()

	producer[Order3](t, c, "r9-a")
	producer[Order3](t, c, "r9-b")
	producer[Order3Note](t, c, "r9-a")
	a, b := revisions(t, c, "r9-a", 3), revisions(t, c, "r9-b", 3)
	if len(a) != 2 || len(b) != 1 || a[0].ID <= 0 || a[1].ID <= 0 {
		t.Fatalf("revisions: %+v / %+v; want two on r9-a and one on r9-b, each with an id", a, b)
	}
	if a[0].ID != b[0].ID {
		t.Errorf("one schema in two streams: ids %d and %d, want one id", a[0].ID, b[0].ID)
	}
	if a[1].ID == a[0].ID {
		t.Errorf("two schemas share id %d", a[0].ID)
	}

	doc, err := reg.SchemaByID(ctx(t), a[0].ID)
	if err != nil || !bytes.Equal(doc.Schema.Canonical(), a[0].Schema.Canonical()) || doc.Fingerprint != a[0].Fingerprint || doc.ID != a[0].ID {
		t.Errorf("SchemaByID(%d): %+v, %v; want revision 1's canonical text and fingerprint", a[0].ID, doc, err)
	}
	if _, err := reg.SchemaByID(ctx(t), a[1].ID+1000); !errors.Is(err, sqlstreams.ErrSchemaNotFound) {
		t.Errorf("SchemaByID of an unknown id: %v, want ErrSchemaNotFound", err)
	}
	usages, err := reg.SchemaUsages(ctx(t), a[0].ID)
	want := []sqlstreams.SchemaUsage{{Stream: "r9-a", Version: 3, Revision: 1}, {Stream: "r9-b", Version: 3, Revision: 1}}
	if err != nil || !slices.Equal(usages, want) {
		t.Errorf("SchemaUsages(%d): %+v, %v; want %+v", a[0].ID, usages, err, want)
	}

	// A new client sees the same ids; the next new schema gets a new one.
	c2 := h.client(t)
	if again := revisions(t, c2, "r9-a", 3); again[0].ID != a[0].ID || again[1].ID != a[1].ID {
		t.Errorf("ids after reopening: %d, %d; want %d, %d", again[0].ID, again[1].ID, a[0].ID, a[1].ID)
	}
	producer[Order3Channel](t, c2, "r9-b")
	if got := revisions(t, c2, "r9-b", 3)[1].ID; got == a[0].ID || got == a[1].ID {
		t.Errorf("a new schema got id %d, which another schema has", got)
	}

	// A document registered by hand: the same text as Order3 gets its id
	// and creates the stream as a producer would.
	rev, err := reg.Register(ctx(t), "r9-c", 3, docOf[Order3](t))
	if err != nil || rev.ID != a[0].ID || rev.Revision != 1 || rev.Version != 3 {
		t.Fatalf("Register(Order3's document) on a new stream: %+v, %v; want revision 1 with id %d", rev, err, a[0].ID)
	}
	if again, err := reg.Register(ctx(t), "r9-c", 3, docOf[Order3Same](t)); err != nil || again.Revision != 1 || again.ID != a[0].ID {
		t.Errorf("Register of the same schema again: %+v, %v; want revision 1, nothing new", again, err)
	}
	subjects, err := reg.Subjects(ctx(t))
	wantSubjects := []sqlstreams.Subject{{Stream: "r9-a", Version: 3}, {Stream: "r9-b", Version: 3}, {Stream: "r9-c", Version: 3}}
	if err != nil || !slices.Equal(subjects, wantSubjects) {
		t.Errorf("Subjects: %+v, %v; want %+v", subjects, err, wantSubjects)
	}

	// The gate: what a producer's registration is refused for, a document
	// is refused for with the same problems; and a registered reader counts.
	goErr := regProducer[Order3Email](t, c, "r9-a")
	docErr := func() error { _, err := reg.Register(ctx(t), "r9-a", 3, docOf[Order3Email](t)); return err }()
	incompatible(t, "Order3Email's document", docErr, schema.Backward, 3,
		wantProblem{"revision 2", schema.RequiredAttributeAdded, "#/required/email"})
	if g, d := problemKeys(goErr), problemKeys(docErr); len(g) == 0 || !slices.Equal(g, d) {
		t.Errorf("problems differ:\n producer: %q\n document: %q", g, d)
	}
	consumer[Order3](t, c, "r9-d", "needs-sku", nil)
	_, err = reg.Register(ctx(t), "r9-d", 3, docOf[Order3NoSKU](t))
	incompatible(t, "a document without sku under a reader that needs it", err, schema.Backward, 3,
		wantProblem{"the reader of group needs-sku (revision 1)", schema.RequiredAttributeAdded, "#/required/sku"})
	if n := len(revisions(t, c, "r9-d", 3)); n != 1 {
		t.Errorf("a refused document left %d revisions, want 1", n)
	}
	if _, err := reg.Register(ctx(t), "r9-d", 3, []byte(`{"type": "object",`)); !errors.Is(err, sqlstreams.ErrInvalidOption) {
		t.Errorf("a malformed document: %v, want ErrInvalidOption", err)
	}

	// CheckAgainst one revision, or every one.
	if err := reg.CheckAgainst(ctx(t), "r9-a", 3, 1, docOf[Order3Note](t)); err != nil {
		t.Errorf("Order3Note against revision 1: %v", err)
	}
	incompatible(t, "Order3Email against revision 1", reg.CheckAgainst(ctx(t), "r9-a", 3, 1, docOf[Order3Email](t)), schema.Backward, 3,
		wantProblem{"revision 1", schema.RequiredAttributeAdded, "#/required/email"})
	incompatible(t, "Order3Email against every revision", reg.CheckAgainst(ctx(t), "r9-a", 3, 0, docOf[Order3Email](t)), schema.Backward, 3,
		wantProblem{"revision 1", schema.RequiredAttributeAdded, "#/required/email"},
		wantProblem{"revision 2", schema.RequiredAttributeAdded, "#/required/email"})

	if err := reg.CheckAgainst(ctx(t), "r9-a", 3, 7, docOf[Order3](t)); !errors.Is(err, sqlstreams.ErrRevisionNotFound) {
		t.Errorf("CheckAgainst a missing revision: %v, want ErrRevisionNotFound", err)
	}

	// IMPORT: explicit ids and revisions, refused outside it.
	explicit := sqlstreams.SchemaRegistration{Stream: "r9-e", Version: 1, Schema: []byte(`{"type":"object","properties":{"n":{"type":"integer"}}}`), ID: 90000, Revision: 4}
	if _, err := reg.RegisterSchema(ctx(t), explicit); !errors.Is(err, sqlstreams.ErrInvalidOption) {
		t.Errorf("an explicit id in READWRITE: %v, want ErrInvalidOption", err)
	}
	createStream(t, c, "r9-e", nil)
	setMode(t, c, "r9-e", sqlstreams.ModeImport)
	imported, err := reg.RegisterSchema(ctx(t), explicit)
	if err != nil || imported.ID != 90000 || imported.Revision != 4 {
		t.Fatalf("IMPORT with id 90000, revision 4: %+v, %v", imported, err)
	}
	if d, err := reg.SchemaByID(ctx(t), 90000); err != nil || d.Fingerprint != imported.Fingerprint {
		t.Errorf("SchemaByID(90000) after the import: %+v, %v", d, err)
	}
	taken := explicit
	taken.Schema, taken.Revision = []byte(`{"type":"object"}`), 0
	if _, err := reg.RegisterSchema(ctx(t), taken); !errors.Is(err, sqlstreams.ErrInvalidOption) {
		t.Errorf("IMPORT of another schema with id 90000: %v, want ErrInvalidOption", err)
	}
	setMode(t, c, "r9-e", sqlstreams.ModeReadWrite)
	// Ids handed out after an explicit one do not collide with it.
	next, err := reg.Register(ctx(t), "r9-e", 1, []byte(`{"type":"object","properties":{"n":{"type":"integer"},"m":{"type":"string"}}}`))
	if err != nil || next.ID <= 90000 || next.Revision != 5 {
		t.Errorf("the next schema after the import: %+v, %v; want an id above 90000 and revision 5", next, err)
	}

	// Streams recording one new schema at once meet on its fingerprint: one
	// id for all, no failure.
	concurrent := []byte(`{"type":"object","properties":{"concurrent":{"type":"boolean"}}}`)
	ids := make([]int64, 6)
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			rv, err := reg.Register(ctx(t), fmt.Sprintf("r9-race-%d", i), 1, concurrent)
			ids[i], errs[i] = rv.ID, err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil || slices.Contains(ids, 0) || len(slices.Compact(slices.Clone(ids))) != 1 {
		t.Errorf("concurrent registrations of one new schema: ids %v, errors %v; want one id", ids, err)
	}

	// A store without SQL has no migration to undo; a NoMigrationsDown
	// target does not take its migrations down.
	if h.target.has(needSQL | needMigrationsDown) {
		backfillSchemaIDs(t, h)
	}
	c3 := h.client(t)
	a3, b3 := revisions(t, c3, "r9-a", 3), revisions(t, c3, "r9-b", 3)
	if a3[0].ID <= 0 || a3[0].ID != b3[0].ID || a3[1].ID <= a3[0].ID || b3[1].ID <= a3[1].ID {
		t.Errorf("ids after the backfill: r9-a %d, %d; r9-b %d, %d; want Order3's shared and ids in the order first recorded",
			a3[0].ID, a3[1].ID, b3[0].ID, b3[1].ID)
	}
	if d, err := c3.Registry().SchemaByID(ctx(t), a3[1].ID); err != nil || d.Fingerprint != a3[1].Fingerprint {
		t.Errorf("SchemaByID after the backfill: %+v, %v", d, err)
	}
}

// backfillSchemaIDs takes migration 0005 down and up again: revisions
// recorded before it get ids in the order they were first recorded, one per
// fingerprint.
func backfillSchemaIDs(t *testing.T, h *harness) {
	t.Helper()
	drv, err := h.target.Open(h.ns(t))
	if err != nil {
		t.Fatal(err)
	}
	defer drv.Close()
	m := sqlstreams.NewMigrator(drv)
	// Later migrations go down first, newest first, and come back after it.
	down, err := m.Migrate(ctx(t), sqlstreams.MigrateOptions{Down: true, TargetVersion: 4})
	if err != nil || len(down) == 0 || down[len(down)-1].Version != 5 {
		t.Fatalf("0005 down: %+v, %v", down, err)
	}
	if up, err := m.Migrate(ctx(t), sqlstreams.MigrateOptions{}); err != nil || len(up) != len(down) || up[0].Version != 5 {
		t.Fatalf("0005 up again: %+v, %v", up, err)
	}
}
