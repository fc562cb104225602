package schema

// Fuzz targets for the JSON Schema parser, the diff engine, Reflect and the
// offline check file (issue #25 §5); core/fuzz_test.go has the command line
// that fuzzes every target of the repository.

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// fuzzSchemas are seeds for the schema targets: Reflect output, every
// keyword family the diff engine knows, references, and broken documents.
var fuzzSchemas = []string{
	`true`, `false`, `{}`, `{"type":"string"}`, `{"type":["string","null"],"maxLength":3}`,
	`{"type":"object","properties":{"a":{"type":"integer","default":0},"b":{"$ref":"#/$defs/B"}},"required":["a"],"additionalProperties":false,"$defs":{"B":{"enum":[1,"x",null]}}}`,
	`{"$ref":"#"}`, `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`,
	`{"anyOf":[{"type":"string"},{"type":"number","minimum":1,"exclusiveMaximum":10.5}]}`,
	`{"oneOf":[{"required":["x"]},{"required":["y"]}],"allOf":[{"minProperties":1}]}`,
	`{"items":{"type":"integer","multipleOf":0.5},"minItems":1,"uniqueItems":true}`,
	`{"prefixItems":[true,false],"items":{"not":{"type":"null"}}}`,
	`{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"string"}],"additionalItems":false}`,
	`{"if":{"properties":{"k":{"const":"a"}}},"then":{"required":["a"]},"else":{"required":["b"]}}`,
	`{"dependencies":{"a":["b"],"c":{"required":["d"]}},"dependentRequired":{"x":["y"]},"patternProperties":{"^x":{}}}`,
	`{"$id":"https://e.x/s","$anchor":"top","properties":{"r":{"$ref":"https://e.x/s#top"}},"unevaluatedProperties":false}`,
	`{"type":"object","properties":{"a":{"title":"t","description":"d","examples":[{"x":1}]}}}`,
	`{"type":5}`, `{"a":1,"a":2}`, `{"$ref":"#/nowhere"}`, `[`, `{"x":"\ud800"}`, `{} {}`, ``, `1e999999`,
	`{"minimum":1e400,"maximum":-0.0}`, `{"allOf":[{"$ref":"#"}]}`, `{"properties":{"a":{"$ref":"#/properties/a"}}}`,
	`{"items":[{},{"type":"null"}],"additionalItems":false}`,
}

// levelsAndPolicies lists every level, the unset one included, under both
// policies.
func levelsAndPolicies() (levels []Level, policies []Policy) {
	return append([]Level{0}, Levels()...), []Policy{GoAware, Strict}
}

// FuzzParse checks that Parse never panics, refuses only with a located
// *ParseError, and that a schema it accepts round-trips (MarshalJSON,
// String and Canonical parse back to the same canonical form), diffs against
// itself with no difference and is compatible with itself at every level.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSchemas {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line < 1 || pe.Column < 1 || pe.Offset < 0 || pe.Offset > int64(len(data)) {
				t.Fatalf("Parse(%q) = %v; want a *ParseError within the input", data, err)
			}
			return
		}
		canon := s.Canonical()
		marshaled, err := s.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON of a parsed schema: %v", err)
		}
		for what, doc := range map[string][]byte{"MarshalJSON": marshaled, "String": []byte(s.String()), "Canonical": canon} {
			back, err := Parse(doc)
			if err != nil {
				t.Fatalf("%s of %q does not parse: %v\n%s", what, data, err, doc)
			}
			if got := back.Canonical(); string(got) != string(canon) {
				t.Fatalf("%s of %q changes the canonical form:\n%s\nbecame\n%s", what, data, canon, got)
			}
		}
		levels, policies := levelsAndPolicies()
		for _, p := range policies {
			if ds := Diff(s, s, p); len(ds) != 0 {
				t.Fatalf("Diff(s, s, %v) of %q = %v; want no difference", p, data, ds)
			}
			for _, l := range levels {
				if r := Check(l, []*Schema{s, s}, s, p); !r.Compatible() {
					t.Fatalf("%q is not compatible with itself: %v", data, r)
				}
			}
		}
	})
}

// FuzzDiff checks the diff engine on two documents: it terminates, is
// deterministic, FULL finds exactly BACKWARD's and FORWARD's problems, and
// two schemas with the same fingerprint are compatible at every level.
func FuzzDiff(f *testing.F) {
	for i, a := range fuzzSchemas {
		f.Add([]byte(a), []byte(fuzzSchemas[(i+1)%len(fuzzSchemas)]))
		f.Add([]byte(a), []byte(a))
	}
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":"string"}}}`), []byte(`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["b"]}`))
	f.Add([]byte(`{"type":"integer","title":"x"}`), []byte(`{"type":["integer"],"description":"y"}`))
	f.Fuzz(func(t *testing.T, olddoc, newdoc []byte) {
		o, err := Parse(olddoc)
		if err != nil {
			return
		}
		n, err := Parse(newdoc)
		if err != nil {
			return
		}
		same := o.Fingerprint() == n.Fingerprint()
		levels, policies := levelsAndPolicies()
		for _, p := range policies {
			if a, b := Diff(o, n, p), Diff(o, n, p); !reflect.DeepEqual(a, b) {
				t.Fatalf("Diff(%s, %s, %v) is not deterministic:\n%v\n%v", olddoc, newdoc, p, a, b)
			}
			back := len(Check(Backward, []*Schema{o}, n, p).Problems)
			fwd := len(Check(Forward, []*Schema{o}, n, p).Problems)
			if full := len(Check(Full, []*Schema{o}, n, p).Problems); full != back+fwd {
				t.Fatalf("%s → %s under %v: FULL has %d problems, BACKWARD %d and FORWARD %d", olddoc, newdoc, p, full, back, fwd)
			}
			for _, l := range levels {
				r := Check(l, []*Schema{o, n}, n, p)
				if same && !r.Compatible() {
					t.Fatalf("%s and %s share a fingerprint but %v", olddoc, newdoc, r)
				}
				for _, pr := range r.Problems {
					if pr.Kind == "" || pr.Path == "" || !strings.HasPrefix(pr.Path, "#") {
						t.Fatalf("%s → %s: problem without a kind or a path: %+v", olddoc, newdoc, pr)
					}
				}
			}
		}
	})
}

// Named types that generated structs embed or hold.
type (
	FuzzedEmbed struct {
		A int    `json:"a"`
		B string `json:"b,omitempty"`
	}
	fuzzInner struct {
		C bool `json:"c"`
	}
	fuzzText struct{}
)

func (fuzzText) MarshalText() ([]byte, error) { return []byte("t"), nil }

// fuzzLeaves are the field types a generated struct draws from, those
// encoding/json cannot marshal included.
var fuzzLeaves = []reflect.Type{
	reflect.TypeFor[int](), reflect.TypeFor[string](), reflect.TypeFor[bool](), reflect.TypeFor[float64](),
	reflect.TypeFor[uint8](), reflect.TypeFor[[]byte](), reflect.TypeFor[time.Time](), reflect.TypeFor[json.Number](),
	reflect.TypeFor[any](), reflect.TypeFor[*int](), reflect.TypeFor[[]string](), reflect.TypeFor[map[string]int](),
	reflect.TypeFor[map[int]string](), reflect.TypeFor[chan int](), reflect.TypeFor[complex64](), reflect.TypeFor[[2]int](),
	reflect.TypeFor[json.RawMessage](), reflect.TypeFor[map[bool]int](), reflect.TypeFor[fuzzText](), reflect.TypeFor[FuzzedEmbed](),
	reflect.TypeFor[map[fuzzText]int](), reflect.TypeFor[*FuzzedEmbed](), reflect.TypeFor[int64](), reflect.TypeFor[func()](),
}

// structGen builds a struct type from fuzz bytes: each field takes a byte
// for its type and one for its name, and tags come from the '|'-separated
// tag list.
type structGen struct {
	shape []byte
	tags  []string
}

func (g *structGen) next() byte {
	if len(g.shape) == 0 {
		return 0
	}
	b := g.shape[0]
	g.shape = g.shape[1:]
	return b
}

func (g *structGen) tag() reflect.StructTag {
	if len(g.tags) == 0 {
		return ""
	}
	t := g.tags[0]
	g.tags = g.tags[1:]
	return reflect.StructTag(t)
}

// typ returns a leaf, a nested struct, or a slice, map or pointer of one.
func (g *structGen) typ(depth int) reflect.Type {
	b := g.next()
	if depth < 3 {
		switch b % 32 {
		case 24:
			return g.structType(depth + 1)
		case 25:
			return reflect.SliceOf(g.typ(depth + 1))
		case 26:
			return reflect.MapOf(reflect.TypeFor[string](), g.typ(depth+1))
		case 27:
			return reflect.PointerTo(g.typ(depth + 1))
		}
	}
	return fuzzLeaves[int(b)%len(fuzzLeaves)]
}

func (g *structGen) structType(depth int) reflect.Type {
	n := int(g.next() % 6)
	var fields []reflect.StructField
	used := map[string]bool{}
	for i := range n {
		kind := g.next()
		sf := reflect.StructField{Name: "F" + string(rune('A'+i)), Tag: g.tag()}
		switch kind % 8 {
		case 0: // embedded exported struct
			sf.Name, sf.Type, sf.Anonymous = "FuzzedEmbed", reflect.TypeFor[FuzzedEmbed](), true
		case 1: // embedded unexported struct: its fields are still promoted
			sf.Name, sf.Type, sf.Anonymous, sf.PkgPath = "fuzzInner", reflect.TypeFor[fuzzInner](), true, "schema"
		case 2: // unexported, so skipped
			sf.Name, sf.PkgPath, sf.Type = "f"+string(rune('a'+i)), "schema", g.typ(depth)
		default:
			sf.Type = g.typ(depth)
		}
		if used[sf.Name] {
			continue
		}
		used[sf.Name] = true
		fields = append(fields, sf)
	}
	return reflect.StructOf(fields)
}

// FuzzReflect drives Reflect with struct types generated by reflect.StructOf
// from fuzz bytes and tags. Reflect either refuses with an error that says
// "schema:", or its schema parses back with the same fingerprint, is
// compatible with itself, requires only members encoding/json writes for the
// zero value and declares every member it writes.
func FuzzReflect(f *testing.F) {
	f.Add([]byte{3, 3, 1, 3, 2, 3, 3}, `json:"x"|json:"y,omitempty"|`)
	f.Add([]byte{5, 0, 1, 3, 24, 2, 3, 6, 3, 25, 1}, `||json:"-"|json:",string"`)
	f.Add([]byte{2, 3, 13, 3, 14}, `json:"c"|json:"d"`)
	f.Add([]byte{4, 3, 0, 3, 1, 3, 3, 3, 7}, `sqlstreams:"default=0"|sqlstreams:"default=\"x\""|sqlstreams:"default={"|sqlstreams:"default=1.5"`)
	f.Add([]byte{3, 3, 26, 27, 24, 2, 3, 1, 3, 4}, `json:"a"|json:"a"|json:"b,string"`)
	f.Add([]byte{2, 0, 0, 1, 1}, `json:"same"|json:"same"`)
	f.Add([]byte{3, 3, 20, 3, 18, 3, 22}, `json:"m,omitempty"|json:"t,omitzero"|json:"e"`)
	f.Fuzz(func(t *testing.T, shape []byte, tags string) {
		typ, ok := generated(shape, tags)
		if !ok {
			return
		}
		s, err := Reflect(typ)
		if err != nil {
			if !strings.Contains(err.Error(), "schema") {
				t.Fatalf("Reflect(%v) = %v; want an error that names the package", typ, err)
			}
			return
		}
		back, err := Parse([]byte(s.String()))
		if err != nil {
			t.Fatalf("Reflect(%v) wrote a schema Parse refuses: %v\n%s", typ, err, s)
		}
		if back.Fingerprint() != s.Fingerprint() {
			t.Fatalf("Reflect(%v): the schema changes through Parse", typ)
		}
		if r := Check(Full, []*Schema{s}, back, GoAware); !r.Compatible() {
			t.Fatalf("Reflect(%v) is not compatible with itself: %v", typ, r)
		}
		checkZeroValue(t, typ, s)
	})
}

// generated builds the struct type, or reports false for the shapes
// StructOf itself refuses (a limit of the generator, not of Reflect).
func generated(shape []byte, tags string) (typ reflect.Type, ok bool) {
	defer func() {
		if recover() != nil {
			typ, ok = nil, false
		}
	}()
	g := &structGen{shape: shape, tags: strings.Split(tags, "|")}
	return g.structType(0), true
}

// checkZeroValue compares the root object of s with what encoding/json
// writes for the zero value of typ: every required member is written and
// every written member is declared.
func checkZeroValue(t *testing.T, typ reflect.Type, s *Schema) {
	out, err := json.Marshal(reflect.New(typ).Interface())
	if err != nil {
		return // a field's own marshaling fails; nothing to compare
	}
	var written map[string]any
	if err := json.Unmarshal(out, &written); err != nil {
		t.Fatalf("zero %v marshals to %s, not an object", typ, out)
	}
	root, _ := s.root.(map[string]any)
	if ref, ok := root["$ref"].(string); ok {
		target, _ := s.resolve(ref)
		root, _ = target.(map[string]any)
	}
	props, _ := root["properties"].(map[string]any)
	required, _ := root["required"].([]any)
	for _, r := range required {
		if _, ok := written[r.(string)]; !ok {
			t.Fatalf("Reflect(%v) requires %q but the zero value %s has no such member", typ, r, out)
		}
	}
	if root["additionalProperties"] == true {
		return
	}
	for name := range written {
		if _, ok := props[name]; !ok {
			t.Fatalf("the zero %v writes %q (%s) but the schema does not declare it:\n%s", typ, name, out, s)
		}
	}
}

// fuzzFileType is the candidate type of FuzzCheckFile.
type fuzzFileType struct {
	OrderID string            `json:"order_id"`
	Cents   int64             `json:"cents"`
	Note    string            `json:"note,omitempty"`
	Tags    map[string]string `json:"tags,omitempty"`
}

// FuzzCheckFile checks the offline check on arbitrary file contents: it
// refuses only with a *ParseError naming the file, applies the level asked
// for, and agrees with Check on the parsed file.
func FuzzCheckFile(f *testing.F) {
	own, err := For[fuzzFileType]()
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(own.String()+"\n"), uint8(Full))
	f.Add([]byte(`{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`), uint8(Backward))
	f.Add([]byte(`{"type":"object","properties":{"cents":{"type":"string"}}}`), uint8(FullTransitive))
	f.Add([]byte(`{"type":"object"`), uint8(0))
	f.Add([]byte(`false`), uint8(200))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, level uint8) {
		path := filepath.Join(dir, "committed.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		l := Level(level % 10)
		rep, err := CheckFile[fuzzFileType](path, l)
		committed, perr := Parse(data)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || perr == nil || !strings.Contains(err.Error(), path) {
				t.Fatalf("CheckFile on %q = %v; want the file's *ParseError naming the file", data, err)
			}
			return
		}
		if perr != nil {
			t.Fatalf("CheckFile accepted %q, which Parse refuses: %v", data, perr)
		}
		if rep.Level != l.effective() || rep.Policy != GoAware {
			t.Fatalf("CheckFile at %v reports level %v, policy %v", l, rep.Level, rep.Policy)
		}
		want := Check(l, []*Schema{committed}, own, GoAware)
		if !slices.Equal(rep.Compared, want.Compared) || !reflect.DeepEqual(rep.Problems, want.Problems) {
			t.Fatalf("CheckFile on %q disagrees with Check:\n%v\n%v", data, rep, want)
		}
	})
}
