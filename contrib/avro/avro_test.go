package avro_test

import (
	"bytes"
	"testing"

	"github.com/sqlstreams/sqlstreams/contrib/avro"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// TestParseRefuses: what is not an Avro schema is an error, never a panic.
func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ name, text string }{
		{"empty", ""},
		{"blank", " \n"},
		{"not JSON", `{"type":`},
		{"trailing data", `"string" "int"`},
		{"unknown type", `{"type":"nope"}`},
		{"unknown name", `"shop.Missing"`},
		{"record without a name", `{"type":"record","fields":[]}`},
		{"record without fields", `{"type":"record","name":"A"}`},
		{"default of the wrong type", `{"type":"record","name":"A","fields":[{"name":"n","type":"int","default":"x"}]}`},
		{"enum default not a symbol", `{"type":"enum","name":"E","symbols":["A"],"default":"B"}`},
		{"fixed without a size", `{"type":"fixed","name":"F"}`},
		{"name defined twice", `{"type":"record","name":"A","fields":[{"name":"x","type":{"type":"record","name":"A","fields":[]}}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d, err := avro.Parse([]byte(tc.text)); err == nil {
				t.Fatalf("Parse(%q) = %s, want an error", tc.text, d.Canonical())
			}
		})
	}
}

// TestNamesStayInTheirDocument: a name one document defines is unknown to
// the next (each parse has its own cache).
func TestNamesStayInTheirDocument(t *testing.T) {
	parse(t, `{"type":"record","name":"shop.Leak","fields":[]}`)
	if _, err := avro.Parse([]byte(`"shop.Leak"`)); err == nil {
		t.Fatal("a name from another document resolved")
	}
}

// TestCanonical: documents that read and write alike share a canonical
// form (and so a registry revision); a default, an alias or a logical type
// makes another.
func TestCanonical(t *testing.T) {
	base := `{"type":"record","name":"A","namespace":"n","fields":[{"name":"x","type":"int"}]}`
	for _, tc := range []struct {
		name  string
		other string
		same  bool
	}{
		{"spacing and key order", "{ \"fields\": [ {\"type\": \"int\", \"name\": \"x\"} ], \"name\": \"A\", \"namespace\": \"n\", \"type\": \"record\" }", true},
		{"full name instead of namespace", `{"type":"record","name":"n.A","fields":[{"name":"x","type":"int"}]}`, true},
		{"doc", `{"type":"record","name":"A","namespace":"n","doc":"an A","fields":[{"name":"x","type":"int","doc":"the x"}]}`, true},
		{"order and custom properties", `{"type":"record","name":"A","namespace":"n","owner":"me","fields":[{"name":"x","type":"int","order":"descending"}]}`, true},
		{"primitive spelled as an object", `{"type":"record","name":"A","namespace":"n","fields":[{"name":"x","type":{"type":"int"}}]}`, true},
		{"a default", `{"type":"record","name":"A","namespace":"n","fields":[{"name":"x","type":"int","default":0}]}`, false},
		{"a field alias", `{"type":"record","name":"A","namespace":"n","fields":[{"name":"x","type":"int","aliases":["y"]}]}`, false},
		{"a record alias", `{"type":"record","name":"A","namespace":"n","aliases":["B"],"fields":[{"name":"x","type":"int"}]}`, false},
		{"a logical type", `{"type":"record","name":"A","namespace":"n","fields":[{"name":"x","type":{"type":"int","logicalType":"date"}}]}`, false},
		{"another type", `{"type":"record","name":"A","namespace":"n","fields":[{"name":"x","type":"long"}]}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := parse(t, base), parse(t, tc.other)
			if got := bytes.Equal(a.Canonical(), b.Canonical()); got != tc.same {
				t.Errorf("same canonical form: %v, want %v\n%s\n%s", got, tc.same, a.Canonical(), b.Canonical())
			}
			if tc.same && schema.Fingerprint(a) != schema.Fingerprint(b) {
				t.Error("equal canonical forms, different fingerprints")
			}
		})
	}
}

// TestParsingCanonicalForm is Avro's own form: named types in full once,
// then by name; defaults, docs and aliases gone.
func TestParsingCanonicalForm(t *testing.T) {
	d := parse(t, `{"type":"record","name":"Node","namespace":"list","doc":"x","fields":[{"name":"v","type":"int","default":1},{"name":"next","type":["null","Node"]}]}`)
	want := `{"name":"list.Node","type":"record","fields":[{"name":"v","type":"int"},{"name":"next","type":["null","list.Node"]}]}`
	if got := string(d.ParsingCanonicalForm()); got != want {
		t.Errorf("PCF\n got  %s\n want %s", got, want)
	}
	wantExt := `{"name":"list.Node","type":"record","fields":[{"name":"v","type":"int","default":1},{"name":"next","type":["null","list.Node"]}]}`
	if got := string(d.Canonical()); got != wantExt {
		t.Errorf("canonical\n got  %s\n want %s", got, wantExt)
	}
	if d.FullName() != "list.Node" || d.Type() != schema.TypeAvro || avro.Format().Type() != schema.TypeAvro {
		t.Errorf("FullName %q, Type %q", d.FullName(), d.Type())
	}
}

// FuzzParse: any input parses or fails with an error; what parses has a
// canonical form that parses to the same canonical form.
func FuzzParse(f *testing.F) {
	for _, s := range []string{orderV1, orderV3, `"string"`, `["null","int"]`, `{"type":"map","values":{"type":"array","items":"bytes"}}`,
		`{"type":"enum","name":"E","symbols":["A","B"],"default":"A"}`, `{"type":"fixed","name":"F","size":4,"logicalType":"decimal","precision":4}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		d, err := avro.Parse(text)
		if err != nil {
			return
		}
		again, err := avro.Parse(d.Canonical())
		if err != nil {
			t.Fatalf("the canonical form %s of %q does not parse: %v", d.Canonical(), text, err)
		}
		if !bytes.Equal(again.Canonical(), d.Canonical()) {
			t.Fatalf("canonical form not stable:\n%s\n%s", d.Canonical(), again.Canonical())
		}
		_ = d.ReadsFrom(again)
	})
}
