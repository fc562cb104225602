package conformance

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

func init() { register("R3_Levels", testLevels) }

// R3: NONE, BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL
// and FULL_TRANSITIVE with Confluent's meanings (named for the new schema:
// BACKWARD = the new reader reads old data; plain levels compare with the
// latest revision, transitive ones with all). Registry-wide default
// BACKWARD, a per-stream override, "unset" distinct from set, and deleting
// an override falls back.
func testLevels(t *testing.T, h *harness) {
	c := h.client(t)
	t.Run("Meanings", func(t *testing.T) { testLevelMeanings(t, c) })
	// Registry-wide settings apply to every stream of a namespace.
	t.Run("Scopes", func(t *testing.T) { testLevelScopes(t, &harness{target: h.target}) })
}

// levelCase registers history under NONE, sets level, then registers the
// candidate. want is nil when the candidate must be accepted.
type levelCase struct {
	name      string
	history   []func(testing.TB, *sqlstreams.Client, string) error
	candidate func(testing.TB, *sqlstreams.Client, string) error
	want      map[schema.Level][]wantProblem // levels absent here must accept
}

func testLevelMeanings(t *testing.T, c *sqlstreams.Client) {
	base := []func(testing.TB, *sqlstreams.Client, string) error{regProducer[Order3]}
	email := wantProblem{"revision 1", schema.RequiredAttributeAdded, "#/required/email"}
	noSKU := wantProblem{"revision 1", schema.RequiredAttributeAdded, "#/required/sku"}
	typeChanged := wantProblem{"revision 1", schema.TypeChanged, "#/properties/total/type"}
	// Against [Order3, Order3NoTotal], an optional object Total is fine next
	// to the latest revision but breaks the integer Total of revision 1.
	sumNarrowed := wantProblem{"revision 1", schema.SumTypeNarrowed, "#/properties/total"}
	totalRequired := wantProblem{"revision 1", schema.RequiredAttributeAdded, "#/required/total"}
	cases := []levelCase{
		{"AddRequired", base, regProducer[Order3Email], map[schema.Level][]wantProblem{
			schema.Backward: {email}, schema.BackwardTransitive: {email}, schema.Full: {email}, schema.FullTransitive: {email}}},
		{"RemoveRequired", base, regProducer[Order3NoSKU], map[schema.Level][]wantProblem{
			schema.Forward: {noSKU}, schema.ForwardTransitive: {noSKU}, schema.Full: {noSKU}, schema.FullTransitive: {noSKU}}},
		{"AddOptional", base, regProducer[Order3Note], nil},
		{"ChangeType", base, regProducer[Order3Amount], map[schema.Level][]wantProblem{
			schema.Backward: {typeChanged}, schema.BackwardTransitive: {typeChanged}, schema.Forward: {typeChanged},
			schema.ForwardTransitive: {typeChanged}, schema.Full: {typeChanged}, schema.FullTransitive: {typeChanged}}},
		{"Transitive", append(base, regProducer[Order3NoTotal]), regProducer[Order3AmountOpt], map[schema.Level][]wantProblem{
			schema.BackwardTransitive: {sumNarrowed}, schema.ForwardTransitive: {totalRequired},
			schema.FullTransitive: {sumNarrowed, totalRequired}}},
	}
	for _, tc := range cases {
		for _, level := range schema.Levels() {
			stream := strings.ToLower(fmt.Sprintf("r3-%s-%s", tc.name, level))
			createStream(t, c, stream, nil)
			setLevel(t, c, stream, schema.None)
			for i, reg := range tc.history {
				if err := reg(t, c, stream); err != nil {
					t.Fatalf("%s: history #%d under NONE: %v", stream, i+1, err)
				}
			}
			setLevel(t, c, stream, level)
			err := tc.candidate(t, c, stream)
			what := fmt.Sprintf("%s at %s", tc.name, level)
			want, refuse := tc.want[level]
			revs := revisions(t, c, stream, 3)
			if !refuse {
				if err != nil {
					t.Errorf("%s: refused, want accepted: %v", what, err)
				} else if len(revs) != len(tc.history)+1 {
					t.Errorf("%s: accepted but %d revisions recorded, want %d", what, len(revs), len(tc.history)+1)
				}
				continue
			}
			ie := incompatible(t, what, err, level, 3, want...)
			for _, p := range ie.Problems {
				if p.Against != "revision 1" && tc.name == "Transitive" {
					t.Errorf("%s: problem against %s; the latest revision is compatible: %+v", what, p.Against, p)
				}
				if (p.Direction == schema.NewReadsOld && !strings.HasPrefix(level.String(), "BACKWARD") && !strings.HasPrefix(level.String(), "FULL")) ||
					(p.Direction == schema.OldReadsNew && !strings.HasPrefix(level.String(), "FORWARD") && !strings.HasPrefix(level.String(), "FULL")) {
					t.Errorf("%s: problem in direction %s, which the level does not check: %+v", what, p.Direction, p)
				}
			}
			if len(revs) != len(tc.history) {
				t.Errorf("%s: refused but %d revisions recorded, want %d", what, len(revs), len(tc.history))
			}
		}
	}
}

func testLevelScopes(t *testing.T, h *harness) {
	c := h.client(t)
	reg := c.Registry()
	wantLevel := func(stream string, level schema.Level, scope string) {
		t.Helper()
		got, err := reg.Level(ctx(t), stream)
		if err != nil {
			t.Fatalf("Level(%q): %v", stream, err)
		}
		if got.Value != level || got.Scope != scope {
			t.Errorf("Level(%q) = %s from %q, want %s from %q", stream, got.Value, got.Scope, level, scope)
		}
	}
	for _, s := range []string{"r3-a", "r3-b"} {
		if err := regProducer[Order3](t, c, s); err != nil {
			t.Fatalf("register Order3 on %s: %v", s, err)
		}
	}
	// Unset everywhere: the default BACKWARD, which refuses a required field.
	wantLevel(sqlstreams.RegistryWide, schema.Backward, "default")
	wantLevel("r3-a", schema.Backward, "default")
	incompatible(t, "Order3Email under the default level", regProducer[Order3Email](t, c, "r3-a"), schema.Backward, 3,
		wantProblem{"revision 1", schema.RequiredAttributeAdded, "#/required/email"})

	// Set registry-wide to the same value: set is distinct from unset.
	setLevel(t, c, sqlstreams.RegistryWide, schema.Backward)
	wantLevel(sqlstreams.RegistryWide, schema.Backward, "registry")
	wantLevel("r3-a", schema.Backward, "registry")

	// Registry-wide FORWARD applies to streams without their own level.
	setLevel(t, c, sqlstreams.RegistryWide, schema.Forward)
	wantLevel("r3-a", schema.Forward, "registry")
	// A stream's own level wins, also when it equals the default.
	setLevel(t, c, "r3-a", schema.Backward)
	wantLevel("r3-a", schema.Backward, "stream")
	wantLevel("r3-b", schema.Forward, "registry")
	incompatible(t, "Order3Email on a stream set to BACKWARD", regProducer[Order3Email](t, c, "r3-a"), schema.Backward, 3,
		wantProblem{"revision 1", schema.RequiredAttributeAdded, "#/required/email"})
	incompatible(t, "Order3NoSKU on a stream under registry-wide FORWARD", regProducer[Order3NoSKU](t, c, "r3-b"), schema.Forward, 3,
		wantProblem{"revision 1", schema.RequiredAttributeAdded, "#/required/sku"})
	if err := regProducer[Order3NoSKU](t, c, "r3-a"); err != nil {
		t.Errorf("Order3NoSKU on a stream set to BACKWARD: %v", err)
	}

	// The settings are stored: another client on the namespace sees them.
	if got, err := h.client(t).Registry().Level(ctx(t), "r3-a"); err != nil || got.Value != schema.Backward || got.Scope != "stream" {
		t.Errorf("a second client reads r3-a's level as %+v (err %v), want BACKWARD from \"stream\"", got, err)
	}

	// Deleting the stream's level falls back to the registry-wide one;
	// deleting that falls back to the default.
	if err := reg.ClearLevel(ctx(t), "r3-a"); err != nil {
		t.Fatalf("ClearLevel(r3-a): %v", err)
	}
	wantLevel("r3-a", schema.Forward, "registry")
	if err := regProducer[Order3Email](t, c, "r3-b"); err != nil {
		t.Errorf("Order3Email under registry-wide FORWARD: %v", err)
	}
	if err := reg.ClearLevel(ctx(t), sqlstreams.RegistryWide); err != nil {
		t.Fatalf("ClearLevel(registry-wide): %v", err)
	}
	wantLevel(sqlstreams.RegistryWide, schema.Backward, "default")
	wantLevel("r3-b", schema.Backward, "default")
	// r3-b's latest revision is Order3Email now; Order3NoSKU drops email and
	// sku, which BACKWARD accepts.
	if err := regProducer[Order3NoSKU](t, c, "r3-b"); err != nil {
		t.Errorf("Order3NoSKU under the default BACKWARD: %v", err)
	}

	// NONE accepts anything, per stream.
	setLevel(t, c, "r3-b", schema.None)
	wantLevel("r3-b", schema.None, "stream")
	if err := regProducer[Order3Amount](t, c, "r3-b"); err != nil {
		t.Errorf("Order3Amount under NONE: %v", err)
	}

	// Invalid levels and unknown streams are refused.
	for _, l := range []schema.Level{0, schema.Level(99)} {
		if err := reg.SetLevel(ctx(t), "r3-a", l); !errors.Is(err, sqlstreams.ErrInvalidOption) {
			t.Errorf("SetLevel(%s): err %v, want ErrInvalidOption", l, err)
		}
	}
	if _, err := reg.Level(ctx(t), "r3-missing"); !errors.Is(err, sqlstreams.ErrStreamNotFound) {
		t.Errorf("Level of a missing stream: err %v, want ErrStreamNotFound", err)
	}
	if err := reg.SetLevel(ctx(t), "r3-missing", schema.Full); !errors.Is(err, sqlstreams.ErrStreamNotFound) {
		t.Errorf("SetLevel on a missing stream: err %v, want ErrStreamNotFound", err)
	}
}
