package conformance

import (
	"errors"
	"slices"
	"testing"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

func init() { register("R8_Corpus", testCorpus) }

// R8: the diff engine agrees with the Apicurio corpus; core/schema's corpus
// test proves that on the engine itself. Here, corpus-like pairs (a stored
// revision, an updated hand-written document) go through the registry's dry
// run, which must reach the verdict and problems of schema.Check under the
// Go-aware policy: the registry uses the same engine, not a second one.
func testCorpus(t *testing.T, h *harness) {
	c := h.client(t)
	original, err := schema.For[Order3]()
	if err != nil {
		t.Fatal(err)
	}
	updated := []struct {
		name string
		doc  string
		ok   map[schema.Level]bool // the verdict expected per level
	}{
		{"max length added", `{"type": "object", "additionalProperties": true, "required": ["id", "sku", "total"],
			"properties": {"id": {"type": "string"}, "sku": {"type": "string", "maxLength": 10}, "total": {"type": "integer"}}}`,
			map[schema.Level]bool{schema.Backward: false, schema.Forward: true}},
		{"integer widened to number", `{"type": "object", "additionalProperties": true, "required": ["id", "sku", "total"],
			"properties": {"id": {"type": "string"}, "sku": {"type": "string"}, "total": {"type": "number"}}}`,
			map[schema.Level]bool{schema.Backward: true, schema.Forward: false}},
		{"pattern added", `{"type": "object", "required": ["id", "sku", "total"],
			"properties": {"id": {"type": "string", "pattern": "^o-"}, "sku": {"type": "string"}, "total": {"type": "integer"}}}`,
			map[schema.Level]bool{schema.Backward: false, schema.Forward: true}},
	}
	for _, level := range []schema.Level{schema.Backward, schema.Forward} {
		stream := "r8-" + map[schema.Level]string{schema.Backward: "backward", schema.Forward: "forward"}[level]
		producer[Order3](t, c, stream)
		setLevel(t, c, stream, level)
		for _, u := range updated {
			doc, err := schema.Parse([]byte(u.doc))
			if err != nil {
				t.Fatalf("%s: %v", u.name, err)
			}
			report := schema.Check(level, []*schema.Schema{original}, doc, schema.GoAware)
			if report.Compatible() != u.ok[level] {
				t.Fatalf("%s at %s: the engine says compatible=%v, the case expects %v: %s", u.name, level, report.Compatible(), u.ok[level], report)
			}
			err = c.Registry().Check(ctx(t), stream, 3, []byte(u.doc))
			if report.Compatible() {
				if err != nil {
					t.Errorf("%s at %s: the engine accepts, the registry refuses: %v", u.name, level, err)
				}
				continue
			}
			var ie *sqlstreams.IncompatibleSchemaError
			if !errors.As(err, &ie) {
				t.Errorf("%s at %s: the engine refuses, the registry says %v", u.name, level, err)
				continue
			}
			var want, got []string
			for _, p := range report.Problems {
				want = append(want, "revision 1 "+string(p.Kind)+" "+p.Path+" "+p.Direction.String())
			}
			for _, p := range ie.Problems {
				got = append(got, p.Against+" "+string(p.Kind)+" "+p.Path+" "+p.Direction.String())
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s at %s: registry problems %q, engine problems %q", u.name, level, got, want)
			}
		}
	}
}
