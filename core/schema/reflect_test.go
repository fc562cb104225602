package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// compactJSON re-encodes JSON text with sorted keys so expectations can be
// written by hand in any order.
func compactJSON(t *testing.T, text string) string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("bad expectation %s: %v", text, err)
	}
	b, err := marshalSorted(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustReflect(t *testing.T, typ reflect.Type) *Schema {
	t.Helper()
	s, err := Reflect(typ)
	if err != nil {
		t.Fatalf("Reflect(%v): %v", typ, err)
	}
	return s
}

func rootMap(s *Schema) map[string]any { return s.root.(map[string]any) }

type textOnly struct{ v string }

func (t textOnly) MarshalText() ([]byte, error) { return []byte(t.v), nil }

type ptrText struct{ v string }

func (t *ptrText) MarshalText() ([]byte, error) { return []byte(t.v), nil }

type customJSON struct{ A int }

func (customJSON) MarshalJSON() ([]byte, error) { return []byte(`[1,2]`), nil }

type status string

func TestReflectKinds(t *testing.T) {
	tests := []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeFor[bool](), `{"type":"boolean"}`},
		{reflect.TypeFor[int](), `{"type":"integer"}`},
		{reflect.TypeFor[int64](), `{"type":"integer"}`},
		{reflect.TypeFor[int8](), `{"type":"integer","minimum":-128,"maximum":127}`},
		{reflect.TypeFor[int16](), `{"type":"integer","minimum":-32768,"maximum":32767}`},
		{reflect.TypeFor[int32](), `{"type":"integer","minimum":-2147483648,"maximum":2147483647}`},
		{reflect.TypeFor[uint](), `{"type":"integer","minimum":0}`},
		{reflect.TypeFor[uint8](), `{"type":"integer","minimum":0,"maximum":255}`},
		{reflect.TypeFor[uint32](), `{"type":"integer","minimum":0,"maximum":4294967295}`},
		{reflect.TypeFor[uint64](), `{"type":"integer","minimum":0}`},
		{reflect.TypeFor[float32](), `{"type":"number"}`},
		{reflect.TypeFor[float64](), `{"type":"number"}`},
		{reflect.TypeFor[string](), `{"type":"string"}`},
		{reflect.TypeFor[status](), `{"type":"string"}`},
		{reflect.TypeFor[time.Duration](), `{"type":"integer"}`},
		{reflect.TypeFor[time.Time](), `{"type":"string","format":"date-time"}`},
		{reflect.TypeFor[json.Number](), `{"type":"number"}`},
		{reflect.TypeFor[json.RawMessage](), `{}`},
		{reflect.TypeFor[any](), `{}`},
		{reflect.TypeFor[fmt.Stringer](), `{}`},
		{reflect.TypeFor[customJSON](), `{}`},
		{reflect.TypeFor[textOnly](), `{"type":"string"}`},
		{reflect.TypeFor[ptrText](), `{"type":"string"}`},
		{reflect.TypeFor[net.IP](), `{"type":"string"}`},
		{reflect.TypeFor[[]byte](), `{"type":["string","null"],"contentEncoding":"base64"}`},
		{reflect.TypeFor[[2]byte](), `{"type":"array","items":{"type":"integer","minimum":0,"maximum":255},"minItems":2,"maxItems":2}`},
		{reflect.TypeFor[[]string](), `{"type":["array","null"],"items":{"type":"string"}}`},
		{reflect.TypeFor[[]*int](), `{"type":["array","null"],"items":{"type":["integer","null"]}}`},
		{reflect.TypeFor[map[string]float64](), `{"type":["object","null"],"additionalProperties":{"type":"number"}}`},
		{reflect.TypeFor[map[int64]bool](), `{"type":["object","null"],"additionalProperties":{"type":"boolean"},"propertyNames":{"pattern":"^-?[0-9]+$"}}`},
		{reflect.TypeFor[map[uint]bool](), `{"type":["object","null"],"additionalProperties":{"type":"boolean"},"propertyNames":{"pattern":"^[0-9]+$"}}`},
		{reflect.TypeFor[map[textOnly]int](), `{"type":["object","null"],"additionalProperties":{"type":"integer"}}`},
		{reflect.TypeFor[*int](), `{"type":"integer"}`}, // the root pointer is dereferenced
		{reflect.TypeFor[**string](), `{"type":"string"}`},
	}
	for _, tt := range tests {
		t.Run(tt.typ.String(), func(t *testing.T) {
			m := rootMap(mustReflect(t, tt.typ))
			if m["$schema"] != Draft {
				t.Errorf("$schema = %v, want %s", m["$schema"], Draft)
			}
			got, _ := marshalSorted(without(m, "$schema"))
			if want := compactJSON(t, tt.want); string(got) != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

type Inner struct {
	A int    `json:"a"`
	B string `json:"b,omitempty"`
}

type inner2 struct {
	C int `json:"c"`
	A int // "A", distinct from Inner's "a"
}

type conflictA struct{ Same, OnlyA int }
type conflictB struct{ Same, OnlyB int }
type conflictC struct {
	Same int `json:"Same"`
}

type MyInt int

type Tagged struct {
	X int `json:"x"`
}

type deepA struct{ Deep int }
type deepB struct{ deepA }

type fieldRules struct {
	Plain      string
	Named      string          `json:"named"`
	Omit       string          `json:"omit,omitempty"`
	Zero       time.Time       `json:"zero,omitzero"`
	Skipped    string          `json:"-"`
	Dash       string          `json:"-,"`        //lint:ignore SA5008 the name "-" spelled as encoding/json documents it
	BadTag     string          `json:"bad name!"` // unusual but valid tag name
	Quoted     int64           `json:"quoted,string"`
	QuotedBool bool            `json:"qb,string"`
	QuotedPtr  *int            `json:"qp,string"`
	QuotedStr  []int           `json:"qs,string"` //lint:ignore SA5008 ,string does not apply to slices: the test shows reflection agrees
	Ptr        *Tagged         `json:"ptr"`
	Opt        *float64        `json:"opt,omitempty"`
	unexported int             //lint:ignore U1000 must be skipped by reflection
	Inner                      // promoted: a, b
	inner2                     // unexported embedded struct: c and A promoted
	*Tagged    `json:"tagged"` // embedded with a tag name: an ordinary member
	deepB                      // Deep promoted from two levels down
	Deep2      int             `json:"Deep"` // shallower: wins over deepB.deepA.Deep
}

func TestReflectFieldRules(t *testing.T) {
	s := mustReflect(t, reflect.TypeFor[fieldRules]())
	m := rootMap(s)
	props := m["properties"].(map[string]any)
	var names []string
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	want := []string{"-", "A", "Deep", "Plain", "a", "b", "bad name!", "c", "named", "omit", "opt", "ptr", "qb", "qp", "qs", "quoted", "tagged", "zero"}
	if !slices.Equal(names, want) {
		t.Errorf("properties = %v\nwant         %v", names, want)
	}
	wantReq := []any{"-", "A", "Deep", "Plain", "a", "bad name!", "c", "named", "ptr", "qb", "qp", "qs", "quoted", "tagged"}
	if !reflect.DeepEqual(m["required"], wantReq) {
		t.Errorf("required = %v\nwant       %v", m["required"], wantReq)
	}
	if m["additionalProperties"] != true {
		t.Errorf("additionalProperties = %v, want true (encoding/json ignores unknown members)", m["additionalProperties"])
	}
	checks := map[string]string{
		"quoted": `{"type":"string","pattern":"^-?[0-9]+$"}`,
		"qb":     `{"type":"string","enum":["false","true"]}`,
		"qp":     `{"type":["string","null"],"pattern":"^-?[0-9]+$"}`,
		"qs":     `{"type":["array","null"],"items":{"type":"integer"}}`,
		"ptr":    `{"anyOf":[{"$ref":"#/$defs/Tagged"},{"type":"null"}]}`,
		"tagged": `{"anyOf":[{"$ref":"#/$defs/Tagged"},{"type":"null"}]}`,
		"opt":    `{"type":["number","null"]}`,
		"zero":   `{"type":"string","format":"date-time"}`,
		"Deep":   `{"type":"integer"}`,
	}
	for name, w := range checks {
		got, _ := marshalSorted(props[name])
		if want := compactJSON(t, w); string(got) != want {
			t.Errorf("%s: got %s, want %s", name, got, want)
		}
	}
}

// TestReflectMatchesEncodingJSON cross-checks the reflected member names
// against what encoding/json really writes: marshalling a zero value writes
// exactly the required members, and a filled value only declared ones.
func TestReflectMatchesEncodingJSON(t *testing.T) {
	values := []any{
		fieldRules{Inner: Inner{B: "x"}, Omit: "y", Opt: new(float64), Tagged: &Tagged{}, Zero: time.Unix(1, 0)},
		struct {
			Inner
			inner2
		}{},
		struct {
			Tagged
			X string `json:"x"` // shallower: wins
		}{},
		struct {
			conflictA // Same conflicts with conflictB.Same: both vanish
			conflictB
		}{},
		struct {
			conflictA
			conflictC // tagged Same wins over conflictA's
		}{},
		struct {
			*Inner // nil: its members are omitted, so not required
			MyInt  // embedded non-struct: a member named MyInt
			Tagged `json:"t,omitempty"`
		}{},
		struct{ *Inner }{Inner: &Inner{B: "x"}},
	}
	for _, v := range values {
		typ := reflect.TypeOf(v)
		m := rootMap(mustReflect(t, typ))
		props := m["properties"].(map[string]any)
		req := stringSet(m["required"])

		zero, err := json.Marshal(reflect.Zero(typ).Interface())
		if err != nil {
			t.Fatal(err)
		}
		var zm map[string]any
		_ = json.Unmarshal(zero, &zm)
		if !reflect.DeepEqual(keysOf(zm), keysOfBool(req)) {
			t.Errorf("%v: zero value writes %v, but required is %v", typ, keysOf(zm), keysOfBool(req))
		}
		full, _ := json.Marshal(v)
		var fm map[string]any
		_ = json.Unmarshal(full, &fm)
		for k := range fm {
			if _, ok := props[k]; !ok {
				t.Errorf("%v: encoding/json writes %q, which the schema does not declare", typ, k)
			}
		}
	}
}

func keysOf(m map[string]any) []string {
	out := []string{}
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func keysOfBool(m map[string]bool) []string {
	out := []string{}
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

type Address struct {
	Street string `json:"street"`
}

type Customer struct {
	Home Address  `json:"home"`
	Work *Address `json:"work"`
}

type TreeNode struct {
	Name     string      `json:"name"`
	Children []*TreeNode `json:"children,omitempty"`
	Owner    *Customer   `json:"owner,omitempty"`
}

type Forest struct {
	Trees []TreeNode `json:"trees"`
}

type Nested map[string]Nested

func TestReflectDefsAndRecursion(t *testing.T) {
	t.Run("nested named types become $defs", func(t *testing.T) {
		m := rootMap(mustReflect(t, reflect.TypeFor[Customer]()))
		defs := m["$defs"].(map[string]any)
		if _, ok := defs["Address"]; !ok || len(defs) != 1 {
			t.Fatalf("$defs = %v, want exactly Address", keysOf(defs))
		}
		home, _ := marshalSorted(m["properties"].(map[string]any)["home"])
		if string(home) != `{"$ref":"#/$defs/Address"}` {
			t.Errorf("home = %s", home)
		}
	})
	t.Run("root recursion refers to #", func(t *testing.T) {
		s := mustReflect(t, reflect.TypeFor[TreeNode]())
		b, _ := s.MarshalJSON()
		if !bytes.Contains(b, []byte(`{"$ref":"#"}`)) {
			t.Errorf("no self reference in %s", b)
		}
		if _, err := Parse(b); err != nil {
			t.Errorf("reflected schema does not parse back: %v", err)
		}
	})
	t.Run("nested recursion goes through $defs", func(t *testing.T) {
		s := mustReflect(t, reflect.TypeFor[Forest]())
		defs := rootMap(s)["$defs"].(map[string]any)
		if got := keysOf(defs); !slices.Equal(got, []string{"Address", "Customer", "TreeNode"}) {
			t.Errorf("$defs = %v", got)
		}
		if ds := Diff(s, s, GoAware); len(ds) != 0 {
			t.Errorf("a recursive schema differs from itself: %v", ds)
		}
	})
	t.Run("recursive named map", func(t *testing.T) {
		s := mustReflect(t, reflect.TypeFor[Nested]())
		b, _ := s.MarshalJSON()
		want := compactJSON(t, `{"$schema":"`+Draft+`","$ref":"#/$defs/Nested","$defs":{"Nested":{"type":["object","null"],"additionalProperties":{"$ref":"#/$defs/Nested"}}}}`)
		if string(b) != want {
			t.Errorf("got  %s\nwant %s", b, want)
		}
	})
}

func TestReflectNameClash(t *testing.T) {
	type Item struct{ A int }
	first := reflect.TypeFor[Item]()
	second := func() reflect.Type {
		type Item struct{ B string }
		return reflect.TypeFor[Item]()
	}()
	typ := reflect.StructOf([]reflect.StructField{
		{Name: "X", Type: first, Tag: `json:"x"`},
		{Name: "Y", Type: second, Tag: `json:"y"`},
	})
	defs := rootMap(mustReflect(t, typ))["$defs"].(map[string]any)
	if got := keysOf(defs); !slices.Equal(got, []string{"Item", "schema_Item"}) {
		t.Errorf("$defs = %v, want distinct names for the two Item types", got)
	}
}

type withDefaults struct {
	Currency string            `json:"currency" sqlstreams:"default=\"EUR\""`
	Retries  int               `json:"retries" sqlstreams:"key,default=3"`
	Limits   map[string]int    `json:"limits" sqlstreams:"default={\"a\":1,\"b\":2}"`
	Home     Address           `json:"home" sqlstreams:"default={\"street\":\"\"}"`
	Any      any               `json:"any" sqlstreams:"default=null"`
	Labels   map[string]string `json:"labels,omitempty"`
}

func TestReflectDefaults(t *testing.T) {
	props := rootMap(mustReflect(t, reflect.TypeFor[withDefaults]()))["properties"].(map[string]any)
	want := map[string]string{
		"currency": `"EUR"`,
		"retries":  `3`,
		"limits":   `{"a":1,"b":2}`,
		"home":     `{"street":""}`,
		"any":      `null`,
	}
	for name, w := range want {
		d, ok := props[name].(map[string]any)["default"]
		if !ok {
			t.Errorf("%s: no default", name)
			continue
		}
		got, _ := marshalSorted(d)
		if string(got) != w {
			t.Errorf("%s: default %s, want %s", name, got, w)
		}
	}
	if _, ok := props["labels"].(map[string]any)["default"]; ok {
		t.Error("labels has a default it was not given")
	}
	if ref := props["home"].(map[string]any)["$ref"]; ref != "#/$defs/Address" {
		t.Errorf("home lost its $ref next to the default: %v", props["home"])
	}
}

func TestReflectErrors(t *testing.T) {
	tests := []struct {
		typ  reflect.Type
		want []string
	}{
		{reflect.TypeFor[struct {
			C chan int `json:"c"`
		}](), []string{".C", "chan int", `json:"-"`}},
		{reflect.TypeFor[struct{ F func() }](), []string{".F", "func()"}},
		{reflect.TypeFor[struct{ Z complex128 }](), []string{".Z", "complex128"}},
		{reflect.TypeFor[struct{ M map[float64]int }](), []string{".M", "map key type float64"}},
		{reflect.TypeFor[struct {
			N int `sqlstreams:"default=abc"`
		}](), []string{".N", "default must be JSON"}},
		{reflect.TypeFor[struct {
			N int `sqlstreams:"default=\"seven\""`
		}](), []string{".N", "does not decode into int"}},
		{reflect.TypeFor[struct {
			Q string `json:"a\"b"` //lint:ignore SA5008 a quote in a name is refused, which the test checks
		}](), []string{"Q", "quote, apostrophe or backslash", "rename"}},
		{reflect.TypeFor[struct {
			Q string `json:"y'0"` //lint:ignore SA5008 an apostrophe in a name is refused, which the test checks
		}](), []string{"Q", "quote, apostrophe or backslash", "rename"}},
		{reflect.StructOf([]reflect.StructField{{Name: "S", Type: reflect.TypeFor[int](), Tag: `json:"€"`}}), []string{"S", "symbol", "rename"}},
		{reflect.StructOf([]reflect.StructField{{Name: "U", Type: reflect.TypeFor[int](), Tag: "json:\"\xba\""}}), []string{"U", "UTF-8", "rename"}},
		{reflect.StructOf([]reflect.StructField{{Name: "C", Type: reflect.TypeFor[int](), Tag: "json:\"a\tb\""}}), []string{"C", "control", "rename"}},
		{reflect.StructOf([]reflect.StructField{{Name: "O", Type: reflect.TypeFor[string](), Tag: `json:"o,omitzero "`}}), []string{"O", `"omitzero "`, `write "omitzero"`}},
		{reflect.TypeFor[struct {
			O int `json:"o,string-x"` //lint:ignore SA5008 an unknown option is refused, which the test checks
		}](), []string{"O", `"string-x"`, `write "string"`}},
		{nil, []string{"reflect.TypeFor"}},
	}
	for _, tt := range tests {
		_, err := Reflect(tt.typ)
		if err == nil {
			t.Errorf("Reflect(%v): no error", tt.typ)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Reflect(%v) error %q does not mention %q", tt.typ, err, w)
			}
		}
	}
	// A func field tagged out is fine, as with encoding/json.
	if _, err := For[struct {
		F func() `json:"-"`
		A int
	}](); err != nil {
		t.Errorf("skipped func field: %v", err)
	}
}

func TestReflectDeterministic(t *testing.T) {
	first := mustReflect(t, reflect.TypeFor[fieldRules]())
	b0, _ := first.MarshalJSON()
	for range 20 {
		s := mustReflect(t, reflect.TypeFor[fieldRules]())
		b, _ := s.MarshalJSON()
		if !bytes.Equal(b, b0) {
			t.Fatalf("Reflect output changed between runs:\n%s\n%s", b0, b)
		}
		if s.Fingerprint() != first.Fingerprint() {
			t.Fatal("fingerprint changed between runs")
		}
	}
	// The generic form agrees with Reflect.
	g, err := For[fieldRules]()
	if err != nil {
		t.Fatal(err)
	}
	if g.Fingerprint() != first.Fingerprint() {
		t.Error("For and Reflect disagree")
	}
	// Marshalled output parses back to the same fingerprint.
	p, err := Parse(b0)
	if err != nil {
		t.Fatal(err)
	}
	if p.Fingerprint() != first.Fingerprint() {
		t.Error("fingerprint changed through MarshalJSON/Parse")
	}
}
