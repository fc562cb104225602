package conformance

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

func init() {
	register("R3_VersionLevels", testVersionLevels)
	register("R4_VersionModes", testVersionModes)
	registerNeeding(needSQL|needMigrationsDown, "R3_VersionSettingsMigrationDown", testVersionSettingsDown)
}

// Documents for the version scope: docReq adds a required field to docA,
// which BACKWARD refuses and NONE lets through.
var (
	docA   = []byte(`{"type":"object","properties":{"a":{"type":"string"}}}`)
	docB   = []byte(`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}`)
	docReq = []byte(`{"type":"object","properties":{"a":{"type":"string"},"r":{"type":"string"}},"required":["r"]}`)
)

// wantSetting asserts the effective level (or mode) of a stream version
// and the scope it comes from.
func wantSetting[V comparable](t testing.TB, what string, got sqlstreams.Setting[V], err error, value V, scope string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if got.Value != value || got.Scope != scope {
		t.Errorf("%s = %v from %q, want %v from %q", what, got.Value, got.Scope, value, scope)
	}
}

// wantVersionLevel asserts the effective level of a stream version.
func wantVersionLevel(t testing.TB, reg *sqlstreams.Registry, stream string, version int, want schema.Level, scope string) {
	t.Helper()
	got, err := reg.VersionLevel(ctx(t), stream, version)
	wantSetting(t, fmt.Sprintf("VersionLevel(%s v%d)", stream, version), got, err, want, scope)
}

// R3: a stream version has a level of its own, set before or after its
// first revision. It judges that version's revisions only (registration,
// a producer's start-up registration and the dry run alike), never
// another version's; clearing it falls back to the stream's level, then
// the registry-wide one, then BACKWARD, and a permanent deletion of the
// whole version forgets it.
func testVersionLevels(t *testing.T, h *harness) {
	// Registry-wide settings apply to every stream of a namespace.
	c := (&harness{target: h.target}).client(t)
	reg := c.Registry()
	const stream = "r3-versions"
	level := func(version int, want schema.Level, scope string) {
		t.Helper()
		wantVersionLevel(t, reg, stream, version, want, scope)
	}
	for _, v := range []int{1, 2} {
		if _, err := reg.Register(ctx(t), stream, v, docA); err != nil {
			t.Fatal(err)
		}
	}
	if err := reg.SetVersionLevel(ctx(t), stream, 1, schema.None); err != nil {
		t.Fatalf("SetVersionLevel(v1, NONE): %v", err)
	}
	level(1, schema.None, "version")
	level(2, schema.Backward, "default")
	if got, err := reg.Level(ctx(t), stream); err != nil || got.Value != schema.Backward || got.Scope != "default" {
		t.Errorf("the stream's Level after a version's was set = %+v, %v; want BACKWARD from \"default\"", got, err)
	}

	// The dry run and the registration judge each version by its own level.
	if err := reg.Check(ctx(t), stream, 1, docReq); err != nil {
		t.Errorf("Check of a required field at v1 (NONE): %v", err)
	}
	if err := reg.Check(ctx(t), stream, 2, docReq); !errors.Is(err, sqlstreams.ErrIncompatibleSchema) {
		t.Errorf("Check of a required field at v2 (BACKWARD): %v; want ErrIncompatibleSchema", err)
	}
	if _, err := reg.Register(ctx(t), stream, 2, docReq); !errors.Is(err, sqlstreams.ErrIncompatibleSchema) {
		t.Errorf("a required field at v2 while v1 is NONE: %v; want ErrIncompatibleSchema", err)
	}
	if rv, err := reg.Register(ctx(t), stream, 1, docReq); err != nil || rv.Revision != 2 {
		t.Errorf("a required field at v1 (NONE): %+v, %v; want revision 2", rv, err)
	}

	// Set before the version's first revision, and only on it.
	if err := reg.SetVersionLevel(ctx(t), stream, 3, schema.None); err != nil {
		t.Fatalf("SetVersionLevel(v3) before its first revision: %v", err)
	}
	level(3, schema.None, "version")
	for i, doc := range [][]byte{docA, docReq} {
		if rv, err := reg.Register(ctx(t), stream, 3, doc); err != nil || rv.Revision != i+1 {
			t.Errorf("v3 revision %d under its own NONE: %+v, %v", i+1, rv, err)
		}
	}

	// A producer's start-up registration is judged by its version's level
	// (Order3 is version 3): another version's NONE does not let it through.
	const produced = "r3-versions-producer"
	if err := regProducer[Order3](t, c, produced); err != nil {
		t.Fatal(err)
	}
	if err := reg.SetVersionLevel(ctx(t), produced, 1, schema.None); err != nil {
		t.Fatal(err)
	}
	email := wantProblem{"revision 1", schema.RequiredAttributeAdded, "#/required/email"}
	incompatible(t, "Order3Email while only v1 is NONE", regProducer[Order3Email](t, c, produced), schema.Backward, 3, email)
	if err := reg.SetVersionLevel(ctx(t), produced, 3, schema.None); err != nil {
		t.Fatal(err)
	}
	if err := regProducer[Order3Email](t, c, produced); err != nil {
		t.Errorf("Order3Email with v3 NONE: %v", err)
	}

	versionLevelFallback(t, c, stream)
}

// versionLevelFallback: clearing a version's level falls back to the
// stream's, then the registry-wide one, then BACKWARD; a permanent
// deletion of the whole version forgets it. Versions 1 and 3 of stream
// have revisions and a level of their own (NONE).
func versionLevelFallback(t *testing.T, c *sqlstreams.Client, stream string) {
	reg := c.Registry()
	level := func(version int, want schema.Level, scope string) {
		t.Helper()
		wantVersionLevel(t, reg, stream, version, want, scope)
	}
	setLevel(t, c, stream, schema.Forward)
	level(1, schema.None, "version")
	level(2, schema.Forward, "stream")
	if err := reg.ClearVersionLevel(ctx(t), stream, 1); err != nil {
		t.Fatalf("ClearVersionLevel(v1): %v", err)
	}
	level(1, schema.Forward, "stream")
	if err := reg.ClearLevel(ctx(t), stream); err != nil {
		t.Fatal(err)
	}
	setLevel(t, c, sqlstreams.RegistryWide, schema.Full)
	level(1, schema.Full, "registry")
	if err := reg.ClearLevel(ctx(t), sqlstreams.RegistryWide); err != nil {
		t.Fatal(err)
	}
	level(1, schema.Backward, "default")
	level(3, schema.None, "version")

	// Deleting one revision, or soft-deleting the whole version, keeps its
	// level; a permanent deletion of the whole version forgets it, as one
	// of a free subject does.
	for _, doc := range [][]byte{docA, docB} {
		if _, err := reg.Register(ctx(t), stream, 4, doc); err != nil {
			t.Fatal(err)
		}
	}
	if err := reg.SetVersionLevel(ctx(t), stream, 4, schema.Forward); err != nil {
		t.Fatal(err)
	}
	for _, permanent := range []bool{false, true} {
		if _, err := reg.DeleteRevision(ctx(t), stream, 4, 2, permanent); err != nil {
			t.Fatalf("DeleteRevision(v4 r2, permanent %v): %v", permanent, err)
		}
	}
	if _, err := reg.DeleteRevisions(ctx(t), stream, 4, false); err != nil {
		t.Fatal(err)
	}
	level(4, schema.Forward, "version")
	if _, err := reg.DeleteRevisions(ctx(t), stream, 4, true); err != nil {
		t.Fatal(err)
	}
	level(4, schema.Backward, "default")
	level(3, schema.None, "version")

	// Versions start at 1; the registry-wide scope has none.
	if err := reg.SetVersionLevel(ctx(t), stream, 0, schema.None); !errors.Is(err, sqlstreams.ErrInvalidOption) {
		t.Errorf("SetVersionLevel(v0): %v; want ErrInvalidOption", err)
	}
	if err := reg.SetVersionLevel(ctx(t), sqlstreams.RegistryWide, 1, schema.None); !errors.Is(err, sqlstreams.ErrInvalidOption) {
		t.Errorf("SetVersionLevel(registry-wide, v1): %v; want ErrInvalidOption", err)
	}
	if err := reg.SetVersionLevel(ctx(t), "r3-versions-missing", 1, schema.None); !errors.Is(err, sqlstreams.ErrStreamNotFound) {
		t.Errorf("SetVersionLevel on a missing stream: %v; want ErrStreamNotFound", err)
	}
}

// R4: a stream version has a mode of its own: READONLY on it refuses its
// new revisions and level changes and leaves other versions open, IMPORT
// on it takes explicit revision numbers there only (and needs force once
// the version has revisions), and clearing it falls back to the stream's.
func testVersionModes(t *testing.T, h *harness) {
	c := h.client(t)
	reg := c.Registry()
	const stream = "r4-versions"
	mode := func(version int, want sqlstreams.Mode, scope string) {
		t.Helper()
		got, err := reg.VersionMode(ctx(t), stream, version)
		wantSetting(t, fmt.Sprintf("VersionMode(v%d)", version), got, err, want, scope)
	}
	for _, v := range []int{1, 2} {
		if _, err := reg.Register(ctx(t), stream, v, docA); err != nil {
			t.Fatal(err)
		}
	}
	if err := reg.SetVersionMode(ctx(t), stream, 1, sqlstreams.ModeReadOnly, false); err != nil {
		t.Fatalf("SetVersionMode(v1, READONLY): %v", err)
	}
	mode(1, sqlstreams.ModeReadOnly, "version")
	mode(2, sqlstreams.ModeReadWrite, "default")
	where := `on stream "r4-versions" version 1`
	_, err := reg.Register(ctx(t), stream, 1, docB)
	readOnly(t, "a new revision of v1", err, where)
	readOnly(t, "the dry run at v1", reg.Check(ctx(t), stream, 1, docB), where)
	readOnly(t, "SetVersionLevel(v1)", reg.SetVersionLevel(ctx(t), stream, 1, schema.None), where)
	if _, err := reg.Register(ctx(t), stream, 1, docA); err != nil {
		t.Errorf("v1's recorded document under READONLY: %v", err)
	}
	if rv, err := reg.Register(ctx(t), stream, 2, docB); err != nil || rv.Revision != 2 {
		t.Errorf("a new revision of v2 next to a READONLY v1: %+v, %v", rv, err)
	}
	if err := reg.SetVersionLevel(ctx(t), stream, 2, schema.None); err != nil {
		t.Errorf("SetVersionLevel(v2) next to a READONLY v1: %v", err)
	}
	if got := revisionNumbers(t, reg, stream, 1, true); !slices.Equal(got, []int{1}) {
		t.Errorf("v1 revisions after READONLY refusals: %v; want [1]", got)
	}

	// The version's own mode wins over the stream's, and clearing it
	// falls back to the stream's.
	setMode(t, c, stream, sqlstreams.ModeReadOnly)
	if err := reg.SetVersionMode(ctx(t), stream, 2, sqlstreams.ModeReadWrite, false); err != nil {
		t.Fatal(err)
	}
	mode(2, sqlstreams.ModeReadWrite, "version")
	if rv, err := reg.Register(ctx(t), stream, 2, docReq); err != nil || rv.Revision != 3 {
		t.Errorf("v2 READWRITE in a READONLY stream: %+v, %v", rv, err)
	}
	if err := reg.ClearVersionMode(ctx(t), stream, 1); err != nil {
		t.Fatal(err)
	}
	mode(1, sqlstreams.ModeReadOnly, "stream")
	_, err = reg.Register(ctx(t), stream, 1, docB)
	readOnly(t, "v1 after its own mode is cleared", err, `on stream "r4-versions"`)
	if err := reg.ClearMode(ctx(t), stream); err != nil {
		t.Fatal(err)
	}
	mode(1, sqlstreams.ModeReadWrite, "default")

	// IMPORT per version: explicit revision numbers there only, and force
	// where the version has revisions.
	if err := reg.SetVersionMode(ctx(t), stream, 1, sqlstreams.ModeImport, false); !errors.Is(err, sqlstreams.ErrNotEmpty) {
		t.Errorf("IMPORT on v1 with revisions, no force: %v; want ErrNotEmpty", err)
	}
	mode(1, sqlstreams.ModeReadWrite, "default")
	if err := reg.SetVersionMode(ctx(t), stream, 3, sqlstreams.ModeImport, false); err != nil {
		t.Fatalf("IMPORT on v3 before its first revision: %v", err)
	}
	if rv, err := reg.RegisterSchema(ctx(t), sqlstreams.SchemaRegistration{Stream: stream, Version: 3, Schema: docA, Revision: 5}); err != nil || rv.Revision != 5 {
		t.Errorf("an explicit revision 5 at v3 (IMPORT): %+v, %v", rv, err)
	}
	if _, err := reg.RegisterSchema(ctx(t), sqlstreams.SchemaRegistration{Stream: stream, Version: 1, Schema: docReq, Revision: 7}); !errors.Is(err, sqlstreams.ErrInvalidOption) {
		t.Errorf("an explicit revision at v1 (READWRITE) next to an IMPORT v3: %v; want ErrInvalidOption", err)
	}
	if err := reg.SetVersionMode(ctx(t), stream, 1, sqlstreams.ModeImport, true); err != nil {
		t.Errorf("IMPORT on v1 with force: %v", err)
	}
	mode(1, sqlstreams.ModeImport, "version")
}

// R3: going down the migration that added settings per stream version
// drops the versions' own settings and keeps the streams' and the
// registry-wide ones; up again, versions have none until set.
func testVersionSettingsDown(t *testing.T, h *harness) {
	ns := h.target.NewNamespace(t) // never pooled: migrations go down here
	open := opener(t, h, ns)
	reg := open().Registry()
	const stream = "r3-versions-down"
	if _, err := reg.Register(ctx(t), stream, 1, docA); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{reg.SetLevel(ctx(t), stream, schema.Full), reg.SetMode(ctx(t), stream, sqlstreams.ModeImport),
		reg.SetLevel(ctx(t), sqlstreams.RegistryWide, schema.Forward), reg.SetVersionLevel(ctx(t), stream, 1, schema.None),
		reg.SetVersionMode(ctx(t), stream, 1, sqlstreams.ModeReadOnly, false)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	downAndUp(t, h, ns, "version_settings")
	reg = open(sqlstreams.WithoutMigrate()).Registry()
	l, err := reg.VersionLevel(ctx(t), stream, 1)
	wantSetting(t, "VersionLevel(v1) after down and up", l, err, schema.Full, "stream")
	md, err := reg.VersionMode(ctx(t), stream, 1)
	wantSetting(t, "VersionMode(v1) after down and up", md, err, sqlstreams.ModeImport, "stream")
	l, err = reg.Level(ctx(t), sqlstreams.RegistryWide)
	wantSetting(t, "registry-wide Level after down and up", l, err, schema.Forward, "registry")
	if err := reg.SetVersionLevel(ctx(t), stream, 1, schema.None); err != nil {
		t.Errorf("SetVersionLevel after down and up: %v", err)
	}
	l, err = reg.VersionLevel(ctx(t), stream, 1)
	wantSetting(t, "VersionLevel(v1) set again", l, err, schema.None, "version")
}
