package conformance

import (
	"errors"
	"slices"
	"strings"
	"testing"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

func init() {
	register("R13_RevisionDeletes", testRevisionDeletes)
	register("R13_RevisionsInUse", testRevisionsInUse)
	registerNeeding(needSQL|needMigrationsDown, "R13_MigrationDown", testRevisionDeletesDown)
}

// revisionNumbers lists the revision numbers of a stream version, the
// soft-deleted ones too with deleted.
func revisionNumbers(t testing.TB, reg *sqlstreams.Registry, stream string, version int, deleted bool) []int {
	t.Helper()
	list := reg.Revisions
	if deleted {
		list = reg.RevisionsWithDeleted
	}
	revs, err := list(ctx(t), stream, version)
	if err != nil {
		t.Fatalf("revisions of %s v%d: %v", stream, version, err)
	}
	var out []int
	for _, rv := range revs {
		if rv.Deleted && !deleted {
			t.Errorf("%s v%d r%d: a soft-deleted revision listed by Revisions", stream, version, rv.Revision)
		}
		out = append(out, rv.Revision)
	}
	return out
}

// R13: a stream version's revisions that nothing needs are deleted as
// Confluent deletes a subject's versions: soft (hidden, "latest" rolls
// back, the number never given again), then permanently; a revision
// another revision references is refused with ErrReferenced.
func testRevisionDeletes(t *testing.T, h *harness) {
	c := h.client(t)
	reg := c.Registry()
	const stream = "r13-docs"
	docA := []byte(`{"type":"object","properties":{"a":{"type":"string"}}}`)
	docB := []byte(`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}`)
	var idB int64
	for _, doc := range [][]byte{docA, docB} {
		rv, err := reg.Register(ctx(t), stream, 1, doc)
		if err != nil {
			t.Fatal(err)
		}
		idB = rv.ID
	}
	// usagesOfB asserts where docB's id is used, the soft-deleted
	// revisions too with deleted.
	usagesOfB := func(what string, deleted bool, want ...sqlstreams.SchemaUsage) {
		t.Helper()
		list := reg.SchemaUsages
		if deleted {
			list = reg.SchemaUsagesWithDeleted
		}
		if got, err := list(ctx(t), idB); err != nil || !slices.Equal(got, append([]sqlstreams.SchemaUsage{}, want...)) {
			t.Errorf("%s: usages of docB's id (deleted %v) = %+v, %v; want %+v", what, deleted, got, err, want)
		}
	}
	if _, err := reg.DeleteRevision(ctx(t), stream, 1, 2, true); !errors.Is(err, sqlstreams.ErrNotSoftDeleted) {
		t.Errorf("a permanent deletion first: %v; want ErrNotSoftDeleted", err)
	}
	if n, err := reg.DeleteRevision(ctx(t), stream, 1, 2, false); err != nil || n != 2 {
		t.Fatalf("soft-delete revision 2: %d, %v", n, err)
	}
	if got := revisionNumbers(t, reg, stream, 1, false); !slices.Equal(got, []int{1}) {
		t.Errorf("live revisions after deleting 2: %v; want [1] (latest rolled back)", got)
	}
	if revs, err := reg.RevisionsWithDeleted(ctx(t), stream, 1); err != nil || len(revs) != 2 || revs[0].Deleted || !revs[1].Deleted {
		t.Errorf("revisions with the deleted: %+v, %v; want 1 live and 2 soft-deleted", revs, err)
	}
	usagesOfB("after its soft deletion", false)
	usagesOfB("after its soft deletion", true, sqlstreams.SchemaUsage{Stream: stream, Version: 1, Revision: 2, Deleted: true})
	if _, err := reg.DeleteRevision(ctx(t), stream, 1, 2, false); !errors.Is(err, sqlstreams.ErrRevisionNotFound) {
		t.Errorf("soft-deleting a soft-deleted revision: %v; want ErrRevisionNotFound", err)
	}
	if _, err := reg.DeleteRevision(ctx(t), stream, 1, 7, false); !errors.Is(err, sqlstreams.ErrRevisionNotFound) {
		t.Errorf("deleting a revision never recorded: %v; want ErrRevisionNotFound", err)
	}
	// The same text again is a new revision: a soft-deleted one is no
	// match, and its number is not given again.
	if rv, err := reg.Register(ctx(t), stream, 1, docB); err != nil || rv.Revision != 3 {
		t.Errorf("docB after its soft deletion: %+v, %v; want revision 3", rv, err)
	}
	if _, err := reg.DeleteRevision(ctx(t), stream, 1, 3, false); err != nil {
		t.Fatal(err)
	}
	if n, err := reg.DeleteRevision(ctx(t), stream, 1, 2, true); err != nil || n != 2 {
		t.Errorf("permanently delete revision 2: %d, %v", n, err)
	}
	if got := revisionNumbers(t, reg, stream, 1, true); !slices.Equal(got, []int{1, 3}) {
		t.Errorf("revisions after the permanent deletion of 2: %v; want [1 3]", got)
	}
	usagesOfB("revision 2 permanently deleted, 3 soft-deleted", true, sqlstreams.SchemaUsage{Stream: stream, Version: 1, Revision: 3, Deleted: true})
	if got, err := reg.DeleteRevisions(ctx(t), stream, 1, false); err != nil || !slices.Equal(got, []int{1}) {
		t.Errorf("soft-delete the version: %v, %v; want [1] (3 is soft-deleted already)", got, err)
	}
	if got := revisionNumbers(t, reg, stream, 1, false); len(got) != 0 {
		t.Errorf("live revisions of a soft-deleted version: %v", got)
	}
	if _, err := reg.DeleteRevisions(ctx(t), stream, 1, false); !errors.Is(err, sqlstreams.ErrRevisionNotFound) {
		t.Errorf("soft-deleting it again: %v; want ErrRevisionNotFound", err)
	}
	if got, err := reg.DeleteRevisions(ctx(t), stream, 1, true); err != nil || !slices.Equal(got, []int{1, 3}) {
		t.Errorf("permanently delete the version: %v, %v; want [1 3]", got, err)
	}
	if got := revisionNumbers(t, reg, stream, 1, true); len(got) != 0 {
		t.Errorf("revisions after the permanent deletion: %v", got)
	}
	t.Run("Referenced", func(t *testing.T) { testRevisionReferenced(t, reg) })
}

// testRevisionReferenced: a revision another revision references cannot
// be deleted, softly or not, until the referencing one is gone.
func testRevisionReferenced(t *testing.T, reg *sqlstreams.Registry) {
	money := []byte(`{"type":"object","properties":{"cents":{"type":"integer"}},"required":["cents"]}`)
	if _, err := reg.Register(ctx(t), "r13-money", 1, money); err != nil {
		t.Fatal(err)
	}
	invoice := []byte(`{"type":"object","properties":{"total":{"$ref":"money.json"}}}`)
	if _, err := reg.RegisterSchema(ctx(t), sqlstreams.SchemaRegistration{Stream: "r13-invoices", Version: 1, Schema: invoice,
		References: []sqlstreams.Reference{{Name: "money.json", Stream: "r13-money", Version: 1}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.DeleteRevision(ctx(t), "r13-money", 1, 1, false); !errors.Is(err, sqlstreams.ErrReferenced) {
		t.Errorf("deleting a referenced revision: %v; want ErrReferenced", err)
	}
	if _, err := reg.DeleteRevisions(ctx(t), "r13-invoices", 1, false); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.DeleteRevision(ctx(t), "r13-money", 1, 1, false); !errors.Is(err, sqlstreams.ErrReferenced) {
		t.Errorf("deleting a revision a soft-deleted one references: %v; want ErrReferenced", err)
	}
	if _, err := reg.DeleteRevisions(ctx(t), "r13-invoices", 1, true); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.DeleteRevision(ctx(t), "r13-money", 1, 1, false); err != nil {
		t.Errorf("deleting it once the referencing revision is gone: %v", err)
	}
}

// R13: a revision rows of the log were written with, or a group's reader
// is registered at, is refused with ErrSchemaInUse, and nothing of the
// version is deleted.
func testRevisionsInUse(t *testing.T, h *harness) {
	c := h.client(t)
	reg := c.Registry()
	const stream = "r13-orders"
	if _, err := producer[Order3](t, c, stream).Produce(ctx(t), Order3{ID: "o-1", Total: 100, SKU: "sku-1"}); err != nil {
		t.Fatalf("produce Order3: %v", err)
	}
	if err := regConsumer[Order3Note](t, c, stream, "notes"); err != nil {
		t.Fatal(err)
	}
	if got := revisionNumbers(t, reg, stream, 3, false); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("revisions of Order3 and Order3Note: %v; want [1 2]", got)
	}
	if _, err := reg.DeleteRevision(ctx(t), stream, 3, 1, false); !errors.Is(err, sqlstreams.ErrSchemaInUse) {
		t.Errorf("deleting the revision a row was written with: %v; want ErrSchemaInUse", err)
	}
	_, err := reg.DeleteRevision(ctx(t), stream, 3, 2, false)
	if !errors.Is(err, sqlstreams.ErrSchemaInUse) {
		t.Errorf("deleting the revision group notes reads with: %v; want ErrSchemaInUse", err)
	} else if want := `group "notes"`; !strings.Contains(err.Error(), want) {
		t.Errorf("the refusal %q does not name %s", err, want)
	}
	if _, err := reg.DeleteRevisions(ctx(t), stream, 3, false); !errors.Is(err, sqlstreams.ErrSchemaInUse) {
		t.Errorf("deleting the version: %v; want ErrSchemaInUse", err)
	}
	if got := revisionNumbers(t, reg, stream, 3, false); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("revisions after refused deletions: %v; want [1 2]", got)
	}
}

// R13: going down the migration that added soft deletions removes the
// soft-deleted revisions (the code before it would read them as live) and
// keeps the live ones; up again, the freed number is given again.
func testRevisionDeletesDown(t *testing.T, h *harness) {
	ns := h.target.NewNamespace(t) // never pooled: migrations go down here
	open := opener(t, h, ns)
	reg := open().Registry()
	const stream = "r13-down"
	for _, doc := range [][]byte{docA, docB} {
		if _, err := reg.Register(ctx(t), stream, 1, doc); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := reg.DeleteRevision(ctx(t), stream, 1, 2, false); err != nil {
		t.Fatal(err)
	}
	downAndUp(t, h, ns, "revision_deletes")
	reg = open(sqlstreams.WithoutMigrate()).Registry()
	if got := revisionNumbers(t, reg, stream, 1, true); !slices.Equal(got, []int{1}) {
		t.Errorf("revisions after down and up: %v; want [1] (the soft-deleted one gone)", got)
	}
	if rv, err := reg.Register(ctx(t), stream, 1, docB); err != nil || rv.Revision != 2 {
		t.Errorf("docB after down and up: %+v, %v; want revision 2 recorded anew", rv, err)
	}
}

// opener opens clients on namespace ns, with options.
func opener(t *testing.T, h *harness, ns string) func(...sqlstreams.ClientOption) *sqlstreams.Client {
	return func(opts ...sqlstreams.ClientOption) *sqlstreams.Client {
		d, err := h.target.Open(ns)
		if err != nil {
			t.Fatal(err)
		}
		return h.clientOn(t, d, opts...)
	}
}

// downAndUp migrates namespace ns down to just before the migration whose
// name contains name, then up again.
func downAndUp(t *testing.T, h *harness, ns, name string) {
	t.Helper()
	d, err := h.target.Open(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	m := sqlstreams.NewMigrator(d)
	all, err := m.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(all, func(mg driver.Migration) bool { return strings.Contains(mg.Name, name) })
	if i < 1 {
		t.Fatalf("no %s migration after the first among %d", name, len(all))
	}
	if _, err := m.Migrate(ctx(t), sqlstreams.MigrateOptions{Down: true, TargetVersion: all[i-1].Version}); err != nil {
		t.Fatalf("down to %d: %v", all[i-1].Version, err)
	}
	if _, err := m.Migrate(ctx(t), sqlstreams.MigrateOptions{}); err != nil {
		t.Fatalf("up again: %v", err)
	}
}
