package conformance

import (
	"errors"
	"strings"
	"testing"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

func init() { register("R4_Modes", testModes) }

// R4: READWRITE (default), READONLY (no new revisions, versions or level
// changes; registrations whose schema is already recorded still succeed)
// and IMPORT (records revisions without the gate or pair checks), set
// registry-wide and per stream, the stream's own mode winning. A READONLY
// refusal names the mode and where it was set, and writes nothing.
func testModes(t *testing.T, h *harness) {
	c := h.client(t)
	t.Run("Stream", func(t *testing.T) { testModeStream(t, c) })
	t.Run("Import", func(t *testing.T) { testModeImport(t, c) })
	// Registry-wide settings apply to every stream of a namespace.
	t.Run("RegistryWide", func(t *testing.T) { testModeRegistryWide(t, (&harness{target: h.target}).client(t)) })
}

func wantMode(t testing.TB, c *sqlstreams.Client, stream string, mode sqlstreams.Mode, scope string) {
	t.Helper()
	got, err := c.Registry().Mode(ctx(t), stream)
	if err != nil {
		t.Fatalf("Mode(%q): %v", stream, err)
	}
	if got.Value != mode || got.Scope != scope {
		t.Errorf("Mode(%q) = %s from %q, want %s from %q", stream, got.Value, got.Scope, mode, scope)
	}
}

// readOnly asserts a READONLY refusal that says where the mode was set.
func readOnly(t testing.TB, what string, err error, where string) {
	t.Helper()
	if !errors.Is(err, sqlstreams.ErrReadOnly) {
		t.Fatalf("%s: err %v, want ErrReadOnly", what, err)
	}
	if errors.Is(err, sqlstreams.ErrIncompatibleSchema) {
		t.Errorf("%s: a READONLY refusal also matches ErrIncompatibleSchema: %v", what, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "READONLY") || !strings.Contains(msg, where) {
		t.Errorf("%s: message does not name the mode READONLY and where it was set (%s): %v", what, where, err)
	}
}

func testModeStream(t *testing.T, c *sqlstreams.Client) {
	reg := c.Registry()
	const stream, other = "r4", "r4-other"
	wantMode(t, c, sqlstreams.RegistryWide, sqlstreams.ModeReadWrite, "default")
	p := producer[Order3](t, c, stream)
	consumer[Order3](t, c, stream, "g1", nil)
	producer[Order3](t, c, other)
	wantMode(t, c, stream, sqlstreams.ModeReadWrite, "default")

	setMode(t, c, stream, sqlstreams.ModeReadOnly)
	wantMode(t, c, stream, sqlstreams.ModeReadOnly, "stream")
	wantMode(t, c, other, sqlstreams.ModeReadWrite, "default")
	where := `on stream "r4"`

	// No new revision, from either side, and no new version.
	readOnly(t, "producer of Order3Note", regProducer[Order3Note](t, c, stream), where)
	readOnly(t, "consumer of Order3Note", regConsumer[Order3Note](t, c, stream, "g2"), where)
	if groupExists(t, c, stream, "g2") {
		t.Errorf("a READONLY refusal created group g2")
	}
	readOnly(t, "producer of Order4 (a new version)", regProducer[Order4](t, c, stream), where)
	// No level change either.
	readOnly(t, "SetLevel", reg.SetLevel(ctx(t), stream, schema.Full), where)
	readOnly(t, "ClearLevel", reg.ClearLevel(ctx(t), stream), where)
	if l, err := reg.Level(ctx(t), stream); err != nil || l.Value != schema.Backward || l.Scope != "default" {
		t.Errorf("after refused level changes, Level = %+v (err %v), want BACKWARD from \"default\"", l, err)
	}
	if revs := revisions(t, c, stream, 0); len(revs) != 1 {
		t.Errorf("READONLY refusals left %d revisions, want 1: %+v", len(revs), revs)
	}

	// What is already recorded still registers, and produces.
	if err := regProducer[Order3](t, c, stream); err != nil {
		t.Errorf("producer of the recorded Order3 under READONLY: %v", err)
	}
	if err := regConsumer[Order3](t, c, stream, "g1"); err != nil {
		t.Errorf("consumer g1 of the recorded Order3 under READONLY: %v", err)
	}
	if err := regConsumer[Order3Same](t, c, stream, "g3"); err != nil {
		t.Errorf("new group of a recorded shape (Order3Same) under READONLY: %v", err)
	}
	if _, err := p.Produce(ctx(t), Order3{ID: "o-1"}); err != nil {
		t.Errorf("produce under READONLY: %v", err)
	}
	// Other streams are not affected.
	if err := regProducer[Order3Note](t, c, other); err != nil {
		t.Errorf("Order3Note on a READWRITE stream next to a READONLY one: %v", err)
	}

	// Clearing the mode reopens the stream.
	if err := reg.ClearMode(ctx(t), stream); err != nil {
		t.Fatalf("ClearMode: %v", err)
	}
	wantMode(t, c, stream, sqlstreams.ModeReadWrite, "default")
	if err := regProducer[Order3Note](t, c, stream); err != nil {
		t.Errorf("Order3Note after ClearMode: %v", err)
	}

	// Mode names parse in any case; unknown ones are refused.
	if m, err := sqlstreams.ParseMode(" readonly "); err != nil || m != sqlstreams.ModeReadOnly {
		t.Errorf("ParseMode(\" readonly \") = %q, %v", m, err)
	}
	if _, err := sqlstreams.ParseMode("WRITEONLY"); !errors.Is(err, sqlstreams.ErrInvalidOption) {
		t.Errorf("ParseMode(WRITEONLY): err %v, want ErrInvalidOption", err)
	}
	if err := reg.SetMode(ctx(t), stream, sqlstreams.Mode("WRITEONLY")); !errors.Is(err, sqlstreams.ErrInvalidOption) {
		t.Errorf("SetMode(WRITEONLY): err %v, want ErrInvalidOption", err)
	}
}

func testModeImport(t *testing.T, c *sqlstreams.Client) {
	const stream = "r4-import"
	producer[Order3](t, c, stream)
	consumer[Order3](t, c, stream, "reader", nil)
	setMode(t, c, stream, sqlstreams.ModeImport)
	wantMode(t, c, stream, sqlstreams.ModeImport, "stream")

	// IMPORT records without the gate and without the pair check: Order3Broken
	// breaks BACKWARD and the registered Order3 reader.
	if err := regProducer[Order3Broken](t, c, stream); err != nil {
		t.Fatalf("Order3Broken under IMPORT: %v", err)
	}
	revs := revisions(t, c, stream, 3)
	if len(revs) != 2 || revs[1].Fingerprint != fingerprintOf[Order3Broken](t) {
		t.Fatalf("after an IMPORT registration, revisions %+v, want Order3Broken as revision 2", revs)
	}

	// Back in READWRITE, the imported revision is history like any other:
	// the gate compares with it as the latest revision.
	setMode(t, c, stream, sqlstreams.ModeReadWrite)
	wantMode(t, c, stream, sqlstreams.ModeReadWrite, "stream")
	incompatible(t, "Order3Email after the import", regProducer[Order3Email](t, c, stream), schema.Backward, 3,
		wantProblem{"revision 2", schema.TypeChanged, "#/properties/total/type"})
	if n := len(revisions(t, c, stream, 3)); n != 2 {
		t.Errorf("%d revisions after a refusal, want 2", n)
	}
}

func testModeRegistryWide(t *testing.T, c *sqlstreams.Client) {
	reg := c.Registry()
	producer[Order3](t, c, "r4-a")
	producer[Order3](t, c, "r4-b")

	setMode(t, c, sqlstreams.RegistryWide, sqlstreams.ModeReadOnly)
	wantMode(t, c, sqlstreams.RegistryWide, sqlstreams.ModeReadOnly, "registry")
	wantMode(t, c, "r4-a", sqlstreams.ModeReadOnly, "registry")
	where := "registry-wide"

	readOnly(t, "Order3Note on r4-a", regProducer[Order3Note](t, c, "r4-a"), where)
	// A new stream would record a new schema: refused, and the stream that
	// the registration would have created does not exist afterwards.
	readOnly(t, "producer on a new stream", regProducer[Order3](t, c, "r4-new"), where)
	readOnly(t, "consumer on a new stream", regConsumer[Order3](t, c, "r4-new", "g"), where)
	if _, err := c.Stream[sqlstreams.RawPayload]("r4-new").Get(ctx(t)); !errors.Is(err, sqlstreams.ErrStreamNotFound) {
		t.Errorf("a READONLY refusal left the stream it created: Get err %v, want ErrStreamNotFound", err)
	}
	readOnly(t, "registry-wide SetLevel", reg.SetLevel(ctx(t), sqlstreams.RegistryWide, schema.None), where)
	readOnly(t, "SetLevel on a stream under registry-wide READONLY", reg.SetLevel(ctx(t), "r4-a", schema.None), where)
	if err := regProducer[Order3](t, c, "r4-a"); err != nil {
		t.Errorf("the recorded Order3 under registry-wide READONLY: %v", err)
	}

	// The stream's own mode wins over the registry-wide one.
	setMode(t, c, "r4-b", sqlstreams.ModeReadWrite)
	wantMode(t, c, "r4-b", sqlstreams.ModeReadWrite, "stream")
	if err := regProducer[Order3Note](t, c, "r4-b"); err != nil {
		t.Errorf("Order3Note on a READWRITE stream under registry-wide READONLY: %v", err)
	}
	if err := reg.SetLevel(ctx(t), "r4-b", schema.None); err != nil {
		t.Errorf("SetLevel on a READWRITE stream under registry-wide READONLY: %v", err)
	}

	// Clearing the registry-wide mode reopens the rest.
	if err := reg.ClearMode(ctx(t), sqlstreams.RegistryWide); err != nil {
		t.Fatalf("ClearMode(registry-wide): %v", err)
	}
	wantMode(t, c, "r4-a", sqlstreams.ModeReadWrite, "default")
	if err := regProducer[Order3Note](t, c, "r4-a"); err != nil {
		t.Errorf("Order3Note after clearing registry-wide READONLY: %v", err)
	}
	if err := regProducer[Order3](t, c, "r4-new"); err != nil {
		t.Errorf("a new stream after clearing registry-wide READONLY: %v", err)
	}
}
