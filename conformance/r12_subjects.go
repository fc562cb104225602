package conformance

import (
	"errors"
	"slices"
	"testing"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

func init() {
	register("R12_FreeSubjects", testFreeSubjects)
	register("R12_SubjectSettings", testSubjectSettings)
	register("R12_SubjectDeletes", testSubjectDeletes)
}

// linesUnder is a LINES document to register under a free subject.
func linesUnder(subject, doc string) sqlstreams.SubjectRegistration {
	return sqlstreams.SubjectRegistration{Subject: subject, Type: linesType, Schema: []byte(doc)}
}

func subjectVersionNumbers(t testing.TB, reg *sqlstreams.Registry, subject string, deleted bool) []int {
	t.Helper()
	vs, err := reg.SubjectVersions(ctx(t), subject, deleted)
	if errors.Is(err, sqlstreams.ErrSubjectNotFound) {
		return nil
	}
	if err != nil {
		t.Fatalf("SubjectVersions(%q): %v", subject, err)
	}
	var out []int
	for _, v := range vs {
		out = append(out, v.Version)
	}
	return out
}

// R12: a free subject has versions 1..n of its own, each a global schema
// id shared with every stream and subject recording the same schema; the
// same document again is the version that has it; a new version is judged
// against the subject's live versions at its level (the latest, or all of
// them at a transitive level), by its format's rules.
func testFreeSubjects(t *testing.T, h *harness) {
	c := h.client(t, sqlstreams.WithFormats(linesFormat{}))
	reg := c.Registry()
	v1, err := reg.RegisterSubject(ctx(t), linesUnder("orders-value", "id\ntotal"))
	if err != nil {
		t.Fatal(err)
	}
	if v1.Version != 1 || v1.ID == 0 || v1.Type != linesType || string(v1.Text) != "id\ntotal" {
		t.Errorf("first version: %+v; want version 1 with an id, LINES, the text as registered", v1)
	}
	again, err := reg.RegisterSubject(ctx(t), linesUnder("orders-value", "total\nid\n"))
	if err != nil || again.Version != 1 || again.ID != v1.ID {
		t.Errorf("the same document in other words: %+v, %v; want version 1, id %d", again, err, v1.ID)
	}
	onStream, err := reg.RegisterSchema(ctx(t), sqlstreams.SchemaRegistration{Stream: "r12-orders", Version: 1, Type: linesType, Schema: []byte("id\ntotal")})
	if err != nil || onStream.ID != v1.ID {
		t.Errorf("the same schema on a stream: %+v, %v; want id %d", onStream, err, v1.ID)
	}
	other, err := reg.RegisterSubject(ctx(t), linesUnder("shop.orders.OrderPlaced", "id\ntotal"))
	if err != nil || other.Version != 1 || other.ID != v1.ID {
		t.Errorf("the same schema under another subject: %+v, %v; want version 1, id %d", other, err, v1.ID)
	}
	// BACKWARD (the default): the new version reads the latest's data.
	_, err = reg.RegisterSubject(ctx(t), linesUnder("orders-value", "id\nnote\ntotal"))
	subjectIncompatible(t, "a reader needing a field the latest lacks", err, schema.Backward, wantProblem{"version 1", linesFieldMissing, "/1"})
	if err := reg.CheckSubject(ctx(t), linesUnder("orders-value", "id\nnote\ntotal")); !errors.Is(err, sqlstreams.ErrIncompatibleSchema) {
		t.Errorf("CheckSubject of the refused document: %v; want ErrIncompatibleSchema", err)
	}
	v2, err := reg.RegisterSubject(ctx(t), linesUnder("orders-value", "id"))
	if err != nil || v2.Version != 2 || v2.ID == v1.ID {
		t.Errorf("a compatible second version: %+v, %v; want version 2 with a new id", v2, err)
	}
	if got := subjectVersionNumbers(t, reg, "orders-value", false); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("versions: %v, want [1 2] (a refusal writes nothing)", got)
	}
	names, err := reg.FreeSubjects(ctx(t), false)
	if err != nil || !slices.Equal(names, []string{"orders-value", "shop.orders.OrderPlaced"}) {
		t.Errorf("FreeSubjects = %v, %v", names, err)
	}
	usages, err := reg.SubjectUsages(ctx(t), v1.ID)
	if err != nil || len(usages) != 2 || usages[0].Subject != "orders-value" || usages[1].Subject != "shop.orders.OrderPlaced" {
		t.Errorf("SubjectUsages(%d) = %+v, %v; want orders-value 1 and shop.orders.OrderPlaced 1", v1.ID, usages, err)
	}
	if _, err := reg.RegisterSubject(ctx(t), linesUnder("", "id")); !errors.Is(err, sqlstreams.ErrInvalidName) {
		t.Errorf("an empty subject: %v; want ErrInvalidName", err)
	}
	t.Run("Transitive", func(t *testing.T) { testSubjectTransitive(t, reg) })
	t.Run("References", func(t *testing.T) { testLinesReferences(t, reg) })
	t.Run("TypeChanged", func(t *testing.T) {
		_, err := reg.RegisterSubject(ctx(t), sqlstreams.SubjectRegistration{Subject: "orders-value", Schema: []byte(`{"type":"object"}`)})
		subjectIncompatible(t, "a JSON document after LINES versions", err, schema.Backward, wantProblem{"version 2", schema.SchemaTypeChanged, "#"})
	})
}

// testSubjectTransitive: a version that reads the latest's data but not
// the first's passes BACKWARD and fails BACKWARD_TRANSITIVE.
func testSubjectTransitive(t *testing.T, reg *sqlstreams.Registry) {
	const subject = "r12-transitive"
	if _, err := reg.RegisterSubject(ctx(t), linesUnder(subject, "a")); err != nil {
		t.Fatal(err)
	}
	if err := reg.SetSubjectLevel(ctx(t), subject, schema.None); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.RegisterSubject(ctx(t), linesUnder(subject, "a\nb")); err != nil {
		t.Fatal(err)
	}
	if err := reg.SetSubjectLevel(ctx(t), subject, schema.BackwardTransitive); err != nil {
		t.Fatal(err)
	}
	_, err := reg.RegisterSubject(ctx(t), linesUnder(subject, "b"))
	subjectIncompatible(t, "BACKWARD_TRANSITIVE against version 1", err, schema.BackwardTransitive, wantProblem{"version 1", linesFieldMissing, "/0"})
	if err := reg.CheckSubject(ctx(t), linesUnder(subject, "b"), 2); err != nil {
		t.Errorf("CheckSubject against version 2 only: %v; want compatible", err)
	}
	if err := reg.SetSubjectLevel(ctx(t), subject, schema.Backward); err != nil {
		t.Fatal(err)
	}
	if v, err := reg.RegisterSubject(ctx(t), linesUnder(subject, "b")); err != nil || v.Version != 3 {
		t.Errorf("under BACKWARD: %+v, %v; want version 3", v, err)
	}
}

func subjectIncompatible(t testing.TB, what string, err error, level schema.Level, want ...wantProblem) {
	t.Helper()
	var ie *sqlstreams.IncompatibleSchemaError
	if !errors.As(err, &ie) {
		t.Fatalf("%s: %v; want an *IncompatibleSchemaError", what, err)
	}
	if ie.Level != level || ie.Subject == "" {
		t.Errorf("%s: level %s, subject %q; want level %s and the subject", what, ie.Level, ie.Subject, level)
	}
	for _, w := range want {
		if !slices.ContainsFunc(ie.Problems, func(p sqlstreams.SchemaProblem) bool {
			return p.Against == w.against && p.Kind == w.kind && p.Path == w.path
		}) {
			t.Errorf("%s: problems %+v lack %+v", what, ie.Problems, w)
		}
	}
}

// R12: a free subject's level and mode are its own, can be set before its
// first version, never apply to another subject, and fall back to the
// registry-wide ones; IMPORT on a subject with versions needs force.
func testSubjectSettings(t *testing.T, h *harness) {
	c := h.client(t, sqlstreams.WithFormats(linesFormat{}))
	reg := c.Registry()
	if err := reg.SetSubjectLevel(ctx(t), "invoices-value", schema.Forward); err != nil {
		t.Fatalf("a level before the first version: %v", err)
	}
	for _, tc := range []struct {
		subject string
		level   schema.Level
		scope   string
	}{{"invoices-value", schema.Forward, "subject"}, {"invoices-key", schema.Backward, "default"}} {
		got, err := reg.SubjectLevel(ctx(t), tc.subject)
		if err != nil || got.Value != tc.level || got.Scope != tc.scope {
			t.Errorf("SubjectLevel(%s) = %+v, %v; want %s set at %s", tc.subject, got, err, tc.level, tc.scope)
		}
	}
	if _, err := reg.RegisterSubject(ctx(t), linesUnder("invoices-value", "id")); err != nil {
		t.Fatal(err)
	}
	// FORWARD: the latest must read the new version's data.
	_, err := reg.RegisterSubject(ctx(t), linesUnder("invoices-value", "total"))
	subjectIncompatible(t, "under the subject's FORWARD", err, schema.Forward, wantProblem{"version 1", linesFieldMissing, "/0"})
	if err := reg.SetLevel(ctx(t), sqlstreams.RegistryWide, schema.None); err != nil {
		t.Fatal(err)
	}
	if got, _ := reg.SubjectLevel(ctx(t), "invoices-key"); got.Value != schema.None || got.Scope != "registry" {
		t.Errorf("an unset subject after a registry-wide NONE: %+v; want NONE from the registry", got)
	}
	if err := reg.ClearSubjectLevel(ctx(t), "invoices-value"); err != nil {
		t.Fatal(err)
	}
	if v, err := reg.RegisterSubject(ctx(t), linesUnder("invoices-value", "total")); err != nil || v.Version != 2 {
		t.Errorf("after clearing the subject's level (registry NONE): %+v, %v; want version 2", v, err)
	}

	if err := reg.SetSubjectMode(ctx(t), "frozen-value", sqlstreams.ModeReadOnly, false); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.RegisterSubject(ctx(t), linesUnder("frozen-value", "id")); !errors.Is(err, sqlstreams.ErrReadOnly) {
		t.Errorf("registering under a READONLY subject: %v; want ErrReadOnly", err)
	}
	if _, err := reg.RegisterSubject(ctx(t), linesUnder("thawed-value", "id")); err != nil {
		t.Errorf("another subject next to a READONLY one: %v", err)
	}
	if err := reg.SetSubjectMode(ctx(t), "thawed-value", sqlstreams.ModeImport, false); !errors.Is(err, sqlstreams.ErrNotEmpty) {
		t.Errorf("IMPORT on a subject with versions, without force: %v; want ErrNotEmpty", err)
	}
	if err := reg.SetSubjectMode(ctx(t), "thawed-value", sqlstreams.ModeImport, true); err != nil {
		t.Fatal(err)
	}
	imported, err := reg.RegisterSubject(ctx(t), sqlstreams.SubjectRegistration{Subject: "thawed-value", Type: linesType, Schema: []byte("zz"), ID: 9000, Version: 7})
	if err != nil || imported.ID != 9000 || imported.Version != 7 {
		t.Errorf("an import with an explicit id and version: %+v, %v; want id 9000, version 7", imported, err)
	}
	if mode, err := reg.SubjectMode(ctx(t), "other-value"); err != nil || mode.Value != sqlstreams.ModeReadWrite || mode.Scope != "default" {
		t.Errorf("SubjectMode of an unset subject: %+v, %v; want READWRITE by default", mode, err)
	}
}

// R12: deletes. A soft deletion hides a version (or every version of a
// subject) from listings, lookups and the level's checks, so "latest"
// rolls back; a permanent one removes soft-deleted versions only; a
// version another subject's version references is not deleted.
func testSubjectDeletes(t *testing.T, h *harness) {
	c := h.client(t, sqlstreams.WithFormats(linesFormat{}))
	reg := c.Registry()
	const subject = "r12-deletes"
	for _, doc := range []string{"a\nb", "a"} {
		if _, err := reg.RegisterSubject(ctx(t), linesUnder(subject, doc)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := reg.DeleteSubjectVersion(ctx(t), subject, 2, true); !errors.Is(err, sqlstreams.ErrNotSoftDeleted) {
		t.Errorf("a permanent deletion first: %v; want ErrNotSoftDeleted", err)
	}
	if n, err := reg.DeleteSubjectVersion(ctx(t), subject, 2, false); err != nil || n != 2 {
		t.Fatalf("soft-delete version 2: %d, %v", n, err)
	}
	if got := subjectVersionNumbers(t, reg, subject, false); !slices.Equal(got, []int{1}) {
		t.Errorf("live versions after deleting 2: %v; want [1] (latest rolled back)", got)
	}
	if got := subjectVersionNumbers(t, reg, subject, true); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("versions with the deleted: %v; want [1 2]", got)
	}
	// The level now judges against version 1: "a\nb" again is compatible.
	if err := reg.CheckSubject(ctx(t), linesUnder(subject, "b\na")); err != nil {
		t.Errorf("check against the rolled-back latest: %v", err)
	}
	if _, err := reg.DeleteSubjectVersion(ctx(t), subject, 2, false); !errors.Is(err, sqlstreams.ErrSubjectVersionNotFound) {
		t.Errorf("soft-deleting a soft-deleted version: %v; want ErrSubjectVersionNotFound", err)
	}
	if n, err := reg.DeleteSubjectVersion(ctx(t), subject, 2, true); err != nil || n != 2 {
		t.Errorf("permanently delete version 2: %d, %v", n, err)
	}
	if v, err := reg.RegisterSubject(ctx(t), linesUnder(subject, "a")); err != nil || v.Version != 2 {
		t.Errorf("registering after the permanent deletion: %+v, %v; want version 2 again", v, err)
	}
	if got, err := reg.DeleteSubject(ctx(t), subject, false); err != nil || !slices.Equal(got, []int{1, 2}) {
		t.Errorf("soft-delete the subject: %v, %v; want [1 2]", got, err)
	}
	if names, _ := reg.FreeSubjects(ctx(t), false); slices.Contains(names, subject) {
		t.Errorf("a soft-deleted subject is listed: %v", names)
	}
	if names, _ := reg.FreeSubjects(ctx(t), true); !slices.Contains(names, subject) {
		t.Errorf("a soft-deleted subject is not listed with deleted: %v", names)
	}
	if _, err := reg.SubjectVersions(ctx(t), subject, false); !errors.Is(err, sqlstreams.ErrSubjectNotFound) {
		t.Errorf("versions of a soft-deleted subject: %v; want ErrSubjectNotFound", err)
	}
	if got, err := reg.DeleteSubject(ctx(t), subject, true); err != nil || !slices.Equal(got, []int{1, 2}) {
		t.Errorf("permanently delete the subject: %v, %v; want [1 2]", got, err)
	}
	if _, err := reg.DeleteSubject(ctx(t), subject, false); !errors.Is(err, sqlstreams.ErrSubjectNotFound) {
		t.Errorf("deleting a subject that is gone: %v; want ErrSubjectNotFound", err)
	}
	t.Run("Referenced", func(t *testing.T) { testSubjectReferenced(t, reg) })
}

// testSubjectReferenced: a JSON Schema under one subject refers to a
// version of another; that version cannot be deleted while referenced.
// testLinesReferences: references work for any format that resolves them
// (schema.ReferenceParser; Avro and Protobuf in contrib, a made-up one
// here), not JSON Schema only: a document needs its reference to parse,
// is judged with the referenced fields in, and the same text bound to
// another version is another schema with another id.
func testLinesReferences(t *testing.T, reg *sqlstreams.Registry) {
	if _, err := reg.RegisterSubject(ctx(t), linesUnder("r12-lines-base", "a\nb")); err != nil {
		t.Fatal(err)
	}
	user := func(version int) sqlstreams.SubjectRegistration {
		r := linesUnder("r12-lines-user", "@base\nc")
		r.References = []sqlstreams.SubjectReference{{Name: "base", Subject: "r12-lines-base", Version: version}}
		return r
	}
	if _, err := reg.RegisterSubject(ctx(t), linesUnder("r12-lines-user", "@base\nc")); !errors.Is(err, sqlstreams.ErrInvalidOption) {
		t.Errorf("a LINES document without the reference it uses: %v; want ErrInvalidOption", err)
	}
	u1, err := reg.RegisterSubject(ctx(t), user(1))
	if err != nil || len(u1.References) != 1 {
		t.Fatalf("a LINES document with its reference: %+v, %v", u1, err)
	}
	if err := reg.SetSubjectLevel(ctx(t), "r12-lines-base", schema.None); err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{"a", "a\nz"} {
		if _, err := reg.RegisterSubject(ctx(t), linesUnder("r12-lines-base", doc)); err != nil {
			t.Fatal(err)
		}
	}
	// Bound to base version 2 (fields a, c): it reads version 1's data.
	u2, err := reg.RegisterSubject(ctx(t), user(2))
	if err != nil || u2.Version != 2 || u2.ID == u1.ID {
		t.Errorf("the same text bound to base version 2: %+v, %v; want version 2 with a new id", u2, err)
	}
	// Bound to base version 3 (fields a, c, z): it needs z, which version 2 lacks.
	_, err = reg.RegisterSubject(ctx(t), user(3))
	subjectIncompatible(t, "a reference bound to a version with a field the latest lacks", err, schema.Backward, wantProblem{"version 2", linesFieldMissing, "/2"})
}

func testSubjectReferenced(t *testing.T, reg *sqlstreams.Registry) {
	money, err := reg.RegisterSubject(ctx(t), sqlstreams.SubjectRegistration{Subject: "r12-money",
		Schema: []byte(`{"type":"object","properties":{"cents":{"type":"integer"}},"required":["cents"]}`)})
	if err != nil {
		t.Fatal(err)
	}
	order := sqlstreams.SubjectRegistration{Subject: "r12-order", Schema: []byte(`{"type":"object","properties":{"total":{"$ref":"money"}},"required":["total"]}`),
		References: []sqlstreams.SubjectReference{{Name: "money", Subject: "r12-money", Version: money.Version}}}
	o, err := reg.RegisterSubject(ctx(t), order)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.References) != 1 || o.References[0] != (sqlstreams.SubjectReference{Name: "money", Subject: "r12-money", Version: 1}) {
		t.Errorf("references read back: %+v", o.References)
	}
	// A schema id's usages name its references too (what /schemas/ids/{id} answers).
	if usages, err := reg.SubjectUsages(ctx(t), o.ID); err != nil || len(usages) != 1 || !slices.Equal(usages[0].References, o.References) {
		t.Errorf("SubjectUsages(%d) = %+v, %v; want r12-order 1 with its reference", o.ID, usages, err)
	}
	if again, err := reg.RegisterSubject(ctx(t), order); err != nil || again.Version != 1 || again.ID != o.ID {
		t.Errorf("the same document with the same reference: %+v, %v; want version 1", again, err)
	}
	if _, err := reg.DeleteSubjectVersion(ctx(t), "r12-money", 1, false); !errors.Is(err, sqlstreams.ErrReferenced) {
		t.Errorf("deleting a referenced version: %v; want ErrReferenced", err)
	}
	if _, err := reg.DeleteSubject(ctx(t), "r12-order", false); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.DeleteSubject(ctx(t), "r12-order", true); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.DeleteSubjectVersion(ctx(t), "r12-money", 1, false); err != nil {
		t.Errorf("deleting it once the referencing subject is gone: %v", err)
	}
}
