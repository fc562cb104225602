package schema

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		line, col int
		pointer   string
		want      string
	}{
		{"empty", ``, 1, 1, "", "empty input"},
		{"whitespace only", "  \n ", 1, 1, "", "empty input"},
		{"syntax", "{\n  \"type\": \"string\",\n  \"minLength\": 1,,\n}", 3, 18, "", "unexpected character ','; expected a quoted object key"},
		{"truncated", `{"type": "obj`, 1, 14, "", "unexpected end"},
		{"trailing data", `{"type":"string"} {}`, 1, 19, "", "after the end of the schema"},
		{"trailing garbage", "true\nx", 2, 1, "", "unexpected character 'x' after the end"},
		{"bad literal", `{"a":tru}`, 1, 9, "", `expected "true"`},
		{"bad number", `{"minimum":1.}`, 1, 14, "", "digit after '.'"},
		{"bad escape", `{"a\q":1}`, 1, 5, "", "invalid escape"},
		{"control character", "{\"a\tb\":1}", 1, 4, "", "control character"},
		{"missing colon", `{"a" 1}`, 1, 6, "", "expected ':'"},
		{"root is a number", `42`, 1, 1, "", "must be a JSON object or a boolean"},
		{"root is null", ` null`, 1, 2, "", "must be a JSON object or a boolean"},
		{"duplicate key", "{\"type\":\"string\",\n \"type\":\"number\"}", 2, 2, "/type", `duplicate key "type"`},
		{"type is a number", `{"properties":{"a":{"type":5}}}`, 1, 28, "/properties/a/type", `"type" must be a type name`},
		{"unknown type name", `{"type":["string","text"]}`, 1, 19, "/type/1", `unknown type "text"`},
		{"subschema not an object", `{"items":{"not":"x"}}`, 1, 17, "/items/not", "must be a JSON object or a boolean"},
		{"properties not an object", `{"properties":[]}`, 1, 15, "/properties", `"properties" must be an object`},
		{"required not strings", `{"required":["a",1]}`, 1, 13, "/required", "array of property names"},
		{"negative minLength", `{"minLength":-1}`, 1, 14, "/minLength", "non-negative integer"},
		{"multipleOf zero", `{"multipleOf":0}`, 1, 15, "/multipleOf", "greater than 0"},
		{"empty anyOf", `{"anyOf":[]}`, 1, 10, "/anyOf", "non-empty array"},
		{"dangling ref", "{\"properties\":{\"a\":{\"$ref\":\"#/$defs/Missing\"}}}", 1, 28, "/properties/a/$ref", "does not resolve"},
		{"dangling anchor", `{"$ref":"#nowhere"}`, 1, 9, "/$ref", "does not resolve"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse([]byte(tt.in))
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want an error", tt.in, s)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T %v is not a *ParseError", err, err)
			}
			if pe.Line != tt.line || pe.Column != tt.col || pe.Pointer != tt.pointer {
				t.Errorf("position = line %d col %d pointer %q, want line %d col %d pointer %q (%v)",
					pe.Line, pe.Column, pe.Pointer, tt.line, tt.col, tt.pointer, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if !strings.Contains(err.Error(), "line ") {
				t.Errorf("error %q does not give a position", err)
			}
		})
	}
}

func TestParseAccepts(t *testing.T) {
	for _, in := range []string{
		`true`, `false`, `{}`, ` {"type":"string"} `,
		`{"$schema":"http://json-schema.org/draft-04/schema#","minimum":1,"exclusiveMinimum":true}`,
		`{"x-vendor":{"anything":[1,2,{"type":5}]}}`, // unknown keywords are kept, not validated
		`{"$ref":"https://example.com/remote.json"}`, // remote references are opaque
		`{"$id":"https://example.com/s.json","$defs":{"a":{}},"$ref":"https://example.com/s.json#/$defs/a"}`,
		`{"definitions":{"A":{"$id":"#A"}},"$ref":"#A"}`,
		`{"$defs":{"A":{"$anchor":"anchorA"}},"$ref":"#anchorA"}`,
		`{"$defs":{"a/b":{}},"$ref":"#/$defs/a~1b"}`,
		`{"$defs":{"a b":{}},"$ref":"#/$defs/a%20b"}`,
	} {
		s, err := Parse([]byte(in))
		if err != nil {
			t.Errorf("Parse(%s): %v", in, err)
			continue
		}
		// Round trip: MarshalJSON output parses to the same canonical form.
		b, err := s.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(b)
		if err != nil {
			t.Errorf("Parse(MarshalJSON(%s)): %v", in, err)
			continue
		}
		if string(back.Canonical()) != string(s.Canonical()) {
			t.Errorf("round trip changed %s into %s", s.Canonical(), back.Canonical())
		}
	}
}

func TestBooleanSchemas(t *testing.T) {
	yes, no := mustParse(t, `true`), mustParse(t, `false`)
	if b, _ := yes.MarshalJSON(); string(b) != "true" {
		t.Errorf("true marshals as %s", b)
	}
	if b, _ := no.MarshalJSON(); string(b) != "false" {
		t.Errorf("false marshals as %s", b)
	}
	if !Check(Full, []*Schema{yes}, mustParse(t, `{}`), Strict).Compatible() {
		t.Error("true and {} should be equivalent")
	}
	if !Check(Backward, []*Schema{no}, yes, Strict).Compatible() {
		t.Error("false → true should be backward compatible")
	}
	if Check(Backward, []*Schema{yes}, no, Strict).Compatible() {
		t.Error("true → false should not be backward compatible")
	}
	var nilSchema *Schema
	if b, _ := nilSchema.MarshalJSON(); string(b) != "true" {
		t.Errorf("nil *Schema marshals as %s, want true", b)
	}
}

func mustParse(t *testing.T, s string) *Schema {
	t.Helper()
	p, err := Parse([]byte(s))
	if err != nil {
		t.Fatalf("Parse(%s): %v", s, err)
	}
	return p
}

func TestFingerprint(t *testing.T) {
	base := `{"type":"object","properties":{"a":{"type":"integer","minimum":10}},"required":["a","b"]}`
	same := []string{
		// key order and whitespace
		"{\n  \"required\": [\"a\", \"b\"],\n  \"properties\": {\"a\": {\"minimum\": 10, \"type\": \"integer\"}},\n  \"type\": \"object\"\n}",
		// annotations, anywhere
		`{"title":"T","description":"d","$comment":"c","examples":[1],"type":"object","properties":{"a":{"type":"integer","minimum":10,"description":"x"}},"required":["a","b"]}`,
		// required order and duplicates
		`{"type":"object","properties":{"a":{"type":"integer","minimum":10}},"required":["b","a","a"]}`,
		// number spelling
		`{"type":"object","properties":{"a":{"type":"integer","minimum":10.0}},"required":["a","b"]}`,
		`{"type":"object","properties":{"a":{"type":"integer","minimum":1e1}},"required":["a","b"]}`,
	}
	different := []string{
		`{"type":"object","properties":{"a":{"type":"integer","minimum":11}},"required":["a","b"]}`,
		`{"type":"object","properties":{"a":{"type":"integer","minimum":10}},"required":["a"]}`,
		`{"type":"object","properties":{"a":{"type":"integer","minimum":10,"default":1}},"required":["a","b"]}`,
		// a property named "title" is data, not an annotation
		`{"type":"object","properties":{"a":{"type":"integer","minimum":10},"title":{}},"required":["a","b"]}`,
	}
	want := mustParse(t, base).Fingerprint()
	if len(want) != 64 {
		t.Fatalf("fingerprint %q is not hex SHA-256", want)
	}
	for _, s := range same {
		if got := mustParse(t, s).Fingerprint(); got != want {
			t.Errorf("fingerprint differs for equivalent schema %s\ncanonical %s\nwant      %s", s, mustParse(t, s).Canonical(), mustParse(t, base).Canonical())
		}
	}
	for _, s := range different {
		if got := mustParse(t, s).Fingerprint(); got == want {
			t.Errorf("fingerprint equal for different schema %s", s)
		}
	}
	// Enum members and defaults are values: keys named like annotations
	// inside them are kept, and enum order does not matter.
	e1 := mustParse(t, `{"enum":[{"title":"x"},2,"b"]}`)
	e2 := mustParse(t, `{"enum":["b",2.0,{"title":"x"}]}`)
	if e1.Fingerprint() != e2.Fingerprint() {
		t.Errorf("enum order/spelling changed the fingerprint: %s vs %s", e1.Canonical(), e2.Canonical())
	}
	if !strings.Contains(string(e1.Canonical()), `"title":"x"`) {
		t.Errorf("annotation-like key inside an enum value was dropped: %s", e1.Canonical())
	}
}

func TestUnmarshalJSON(t *testing.T) {
	var rec struct {
		Version int     `json:"version"`
		Schema  *Schema `json:"schema"`
	}
	if err := json.Unmarshal([]byte(`{"version":2,"schema":{"type":"string"}}`), &rec); err != nil {
		t.Fatal(err)
	}
	if b, _ := rec.Schema.MarshalJSON(); string(b) != `{"type":"string"}` {
		t.Errorf("got %s", b)
	}
	if err := json.Unmarshal([]byte(`{"schema":{"type":7}}`), &rec); err == nil {
		t.Error("an invalid embedded schema was accepted")
	}
	out, err := json.Marshal(rec)
	if err != nil || !strings.Contains(string(out), `"schema":{"type":"string"}`) {
		t.Errorf("Marshal = %s, %v", out, err)
	}
}

// TestParseNeverPanics feeds every prefix of every corpus document to
// Parse; FuzzParse (fuzz_test.go) explores further with `go test -fuzz`.
func TestParseNeverPanics(t *testing.T) {
	data, err := os.ReadFile(corpusFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range loadCorpus(t) {
		for _, doc := range []json.RawMessage{c.Original, c.Updated} {
			for i := range len(doc) {
				_, _ = Parse(doc[:i])
			}
		}
	}
	_, _ = Parse(data[:len(data)/2])
}
