package schema

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// Revisions of one event type, as a team would evolve it. Each case below
// reflects two of them and checks the verdict.
type (
	orderV1 struct {
		ID    string  `json:"id"`
		Total float64 `json:"total"`
		Qty   int     `json:"qty"`
	}
	orderAddOptional struct {
		ID    string  `json:"id"`
		Total float64 `json:"total"`
		Qty   int     `json:"qty"`
		Note  string  `json:"note,omitempty"`
	}
	orderAddRequired struct {
		ID    string  `json:"id"`
		Total float64 `json:"total"`
		Qty   int     `json:"qty"`
		Email string  `json:"email"`
	}
	orderAddRequiredDefault struct {
		ID       string  `json:"id"`
		Total    float64 `json:"total"`
		Qty      int     `json:"qty"`
		Currency string  `json:"currency" sqlstreams:"default=\"EUR\""`
	}
	orderRemoved struct {
		ID    string  `json:"id"`
		Total float64 `json:"total"`
	}
	orderQtyObject struct {
		ID    string  `json:"id"`
		Total float64 `json:"total"`
		Qty   struct {
			N int `json:"n"`
		} `json:"qty"`
	}
	orderQtyFloat struct {
		ID    string  `json:"id"`
		Total float64 `json:"total"`
		Qty   float64 `json:"qty"`
	}
	orderTotalInt struct {
		ID    string `json:"id"`
		Total int    `json:"total"`
		Qty   int    `json:"qty"`
	}
	orderQtyInt16 struct {
		ID    string  `json:"id"`
		Total float64 `json:"total"`
		Qty   int16   `json:"qty"`
	}
	orderQtyPtr struct {
		ID    string  `json:"id"`
		Total float64 `json:"total"`
		Qty   *int    `json:"qty"`
	}
	orderIDTime struct {
		ID    time.Time `json:"id"`
		Total float64   `json:"total"`
		Qty   int       `json:"qty"`
	}
	orderQtyOptional struct {
		ID    string  `json:"id"`
		Total float64 `json:"total"`
		Qty   int     `json:"qty,omitempty"`
	}
	lineV1 struct {
		SKU string `json:"sku"`
	}
	lineV2 struct {
		SKU   string `json:"sku"`
		Price int    `json:"price"`
	}
	lineRenamedType struct {
		SKU string `json:"sku"`
	}
	basketV1 struct {
		Lines []lineV1         `json:"lines"`
		Tags  map[string]int   `json:"tags"`
		Next  *basketV1        `json:"next,omitempty"`
		Meta  map[string]any   `json:"meta"`
		Attrs map[string]int64 `json:"attrs"`
	}
	basketV2 struct {
		Lines []lineV2         `json:"lines"`
		Tags  map[string]int   `json:"tags"`
		Next  *basketV2        `json:"next,omitempty"`
		Meta  map[string]any   `json:"meta"`
		Attrs map[string]int64 `json:"attrs"`
	}
	basketRenamed struct {
		Lines []lineRenamedType `json:"lines"`
		Tags  map[string]int    `json:"tags"`
		Next  *basketRenamed    `json:"next,omitempty"`
		Meta  map[string]any    `json:"meta"`
		Attrs map[string]int64  `json:"attrs"`
	}
	basketMapNarrowed struct {
		Lines []lineV1           `json:"lines"`
		Tags  map[string]int     `json:"tags"`
		Next  *basketMapNarrowed `json:"next,omitempty"`
		Meta  map[string]string  `json:"meta"`
		Attrs map[string]int64   `json:"attrs"`
	}
)

func TestGoAwarePolicy(t *testing.T) {
	tests := []struct {
		name          string
		old, new      reflect.Type
		backward      bool       // new reader, old data
		forward       bool       // old reader, new data
		kinds         []DiffKind // must appear among the backward problems
		strictBackOK  bool       // Strict's backward verdict, where it differs
		strictDiffers bool
	}{
		{name: "identical", old: typeOf[orderV1](), new: typeOf[orderV1](), backward: true, forward: true},
		{name: "add optional field", old: typeOf[orderV1](), new: typeOf[orderAddOptional](), backward: true, forward: true,
			strictDiffers: true, strictBackOK: false},
		{name: "add required field without default", old: typeOf[orderV1](), new: typeOf[orderAddRequired](), backward: false, forward: true,
			kinds: []DiffKind{RequiredAttributeAdded}},
		{name: "add required field with default", old: typeOf[orderV1](), new: typeOf[orderAddRequiredDefault](), backward: true, forward: true,
			strictDiffers: true, strictBackOK: false}, // Strict: REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL
		{name: "remove required field", old: typeOf[orderV1](), new: typeOf[orderRemoved](), backward: true, forward: false},
		{name: "remove optional field", old: typeOf[orderQtyOptional](), new: typeOf[orderRemoved](), backward: true, forward: true},
		{name: "optional becomes required", old: typeOf[orderQtyOptional](), new: typeOf[orderV1](), backward: false, forward: true,
			kinds: []DiffKind{RequiredAttributeAdded}},
		{name: "integer to object", old: typeOf[orderV1](), new: typeOf[orderQtyObject](), backward: false, forward: false,
			kinds: []DiffKind{TypeChanged}},
		{name: "integer widened to float64", old: typeOf[orderV1](), new: typeOf[orderQtyFloat](), backward: true, forward: false},
		{name: "float64 narrowed to int", old: typeOf[orderV1](), new: typeOf[orderTotalInt](), backward: false, forward: true,
			kinds: []DiffKind{TypeNarrowed}},
		{name: "int narrowed to int16", old: typeOf[orderV1](), new: typeOf[orderQtyInt16](), backward: false, forward: true,
			kinds: []DiffKind{MinimumAdded, MaximumAdded}},
		{name: "value becomes pointer", old: typeOf[orderV1](), new: typeOf[orderQtyPtr](), backward: true, forward: false},
		{name: "string becomes time.Time", old: typeOf[orderV1](), new: typeOf[orderIDTime](), backward: false, forward: true,
			kinds: []DiffKind{FormatAdded}},
		{name: "nested struct gains a required field", old: typeOf[basketV1](), new: typeOf[basketV2](), backward: false, forward: true,
			kinds: []DiffKind{RequiredAttributeAdded}},
		{name: "nested type renamed, same shape", old: typeOf[basketV1](), new: typeOf[basketRenamed](), backward: true, forward: true},
		{name: "map value type narrowed", old: typeOf[basketV1](), new: typeOf[basketMapNarrowed](), backward: false, forward: true,
			kinds: []DiffKind{AdditionalPropertiesNarrowed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, new := mustReflect(t, tt.old), mustReflect(t, tt.new)
			back := Check(Backward, []*Schema{old}, new, GoAware)
			if back.Compatible() != tt.backward {
				t.Errorf("BACKWARD compatible = %v, want %v\n%s", back.Compatible(), tt.backward, back)
			}
			fwd := Check(Forward, []*Schema{old}, new, GoAware)
			if fwd.Compatible() != tt.forward {
				t.Errorf("FORWARD compatible = %v, want %v\n%s", fwd.Compatible(), tt.forward, fwd)
			}
			if full := Check(Full, []*Schema{old}, new, GoAware); full.Compatible() != (tt.backward && tt.forward) {
				t.Errorf("FULL compatible = %v\n%s", full.Compatible(), full)
			}
			for _, k := range tt.kinds {
				if !slices.ContainsFunc(back.Problems, func(p Problem) bool { return p.Kind == k }) {
					t.Errorf("backward problems lack %s:\n%s", k, back)
				}
			}
			strict := Check(Backward, []*Schema{old}, new, Strict).Compatible()
			want := tt.backward
			if tt.strictDiffers {
				want = tt.strictBackOK
			}
			if strict != want {
				t.Errorf("Strict BACKWARD compatible = %v, want %v", strict, want)
			}
		})
	}
}

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

func TestGoAwareClosedReader(t *testing.T) {
	// A hand-written closed reader: encoding/json still ignores members it
	// does not declare, so removing one is fine under GoAware only.
	old := mustParse(t, `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"additionalProperties":false}`)
	new := mustParse(t, `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`)
	if !Check(Backward, []*Schema{old}, new, GoAware).Compatible() {
		t.Error("GoAware: removing a property from a closed reader should be compatible")
	}
	r := Check(Backward, []*Schema{old}, new, Strict)
	if r.Compatible() || r.Problems[0].Kind != PropertyRemovedFromClosedContentModel {
		t.Errorf("Strict: want PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL, got %s", r)
	}
}

// TestGoAwareKinds pins the kinds GoAware reports for added fields and for
// hand-written schemas, where they differ from Strict's.
func TestGoAwareKinds(t *testing.T) {
	type orderPtrTotal struct {
		ID    string   `json:"id"`
		Total *lineV1  `json:"total,omitempty"`
		Qty   int      `json:"qty"`
		Tags  []string `json:"tags,omitempty"`
	}
	tests := []struct {
		name       string
		old, new   *Schema
		kind       DiffKind
		compatible bool
		absent     []DiffKind // kinds that must not be reported
	}{
		{name: "optional field added", old: mustReflect(t, typeOf[orderV1]()), new: mustReflect(t, typeOf[orderAddOptional]()),
			kind: OptionalPropertyAddedToOpenContentModel, compatible: true, absent: []DiffKind{PropertyAddedToOpenContentModel}},
		{name: "required field with default added", old: mustReflect(t, typeOf[orderV1]()), new: mustReflect(t, typeOf[orderAddRequiredDefault]()),
			kind: RequiredPropertyWithDefaultAddedToOpenContentModel, compatible: true, absent: []DiffKind{RequiredAttributeWithDefaultAdded, PropertyAddedToOpenContentModel}},
		{name: "required field without default added", old: mustReflect(t, typeOf[orderV1]()), new: mustReflect(t, typeOf[orderAddRequired]()),
			kind: RequiredAttributeAdded, compatible: false, absent: []DiffKind{RequiredPropertyAddedToOpenContentModel, PropertyAddedToOpenContentModel}},
		{name: "integer becomes an optional struct pointer", old: mustReflect(t, typeOf[orderV1]()), new: mustReflect(t, typeOf[orderPtrTotal]()),
			kind: SumTypeNarrowed, compatible: false, absent: []DiffKind{CombinedTypeSubschemasChanged}},
		{name: "property removed under unevaluatedProperties false",
			old:  mustParse(t, `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"unevaluatedProperties":false}`),
			new:  mustParse(t, `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"a":{"type":"string"}},"unevaluatedProperties":false}`),
			kind: PropertyRemovedFromClosedContentModel, compatible: true},
		{name: "closed with unevaluatedProperties",
			old:  mustParse(t, `{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object","properties":{"a":{"type":"string"}}}`),
			new:  mustParse(t, `{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object","properties":{"a":{"type":"string"}},"unevaluatedProperties":false}`),
			kind: UnevaluatedPropertiesRemoved, compatible: true},
		{name: "anyOf to a oneOf that only widens",
			old:  mustParse(t, `{"anyOf":[{"type":"string"}]}`),
			new:  mustParse(t, `{"oneOf":[{"type":"string"},{"type":"integer"}]}`),
			kind: CombinedTypeExtended, compatible: true},
		{name: "not excludes less",
			old:  mustParse(t, `{"not":{"type":["string","integer"]}}`),
			new:  mustParse(t, `{"not":{"type":"string"}}`),
			kind: NotTypeNarrowed, compatible: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := Diff(tt.old, tt.new, GoAware)
			i := slices.IndexFunc(ds, func(d Difference) bool { return d.Kind == tt.kind })
			if i < 0 {
				t.Fatalf("no %s among %v", tt.kind, ds)
			}
			if ds[i].Compatible != tt.compatible {
				t.Errorf("%s: compatible = %v, want %v", ds[i], ds[i].Compatible, tt.compatible)
			}
			for _, k := range tt.absent {
				if slices.ContainsFunc(ds, func(d Difference) bool { return d.Kind == k }) {
					t.Errorf("%s reported: %v", k, ds)
				}
			}
		})
	}
}

func TestDiffPathsAndMessages(t *testing.T) {
	old := mustParse(t, `{"type":"object","properties":{"total":{"type":"integer"},"name":{"type":"string","maxLength":10}},"required":["total"]}`)
	new := mustParse(t, `{"type":"object","properties":{"total":{"type":"object"},"name":{"type":"string","maxLength":5}},"required":["total","name"]}`)
	got := map[string]Difference{}
	for _, d := range Diff(old, new, Strict) {
		got[d.Path] = d
	}
	want := map[string]DiffKind{
		"#/properties/total/type":     TypeChanged,
		"#/properties/name/maxLength": MaxLengthDecreased,
		"#/required/name":             RequiredAttributeAdded,
	}
	for path, kind := range want {
		d, ok := got[path]
		if !ok || d.Kind != kind || d.Compatible || d.Message == "" {
			t.Errorf("at %s: got %+v, want incompatible %s with a message", path, d, kind)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d differences, want %d: %v", len(got), len(want), got)
	}
	if !strings.Contains(got["#/properties/total/type"].Message, "integer") {
		t.Errorf("message does not name the old type: %q", got["#/properties/total/type"].Message)
	}
}

func TestDiffDeterministic(t *testing.T) {
	old := mustReflect(t, typeOf[basketV1]())
	new := mustReflect(t, typeOf[basketMapNarrowed]())
	first := Diff(old, new, GoAware)
	for range 20 {
		if got := Diff(old, new, GoAware); !reflect.DeepEqual(got, first) {
			t.Fatalf("Diff output changed between runs:\n%v\n%v", first, got)
		}
	}
}

func TestDiffTerminates(t *testing.T) {
	// Self-referential documents must compare without looping.
	docs := []string{
		`{"$ref":"#"}`,
		`{"allOf":[{"$ref":"#"},{"$ref":"#"}],"anyOf":[{"type":"string"},{"$ref":"#"}]}`,
		`{"properties":{"a":{"$ref":"#"}},"additionalProperties":{"$ref":"#"},"items":{"$ref":"#"}}`,
		`{"$defs":{"A":{"$ref":"#/$defs/B"},"B":{"$ref":"#/$defs/A"}},"$ref":"#/$defs/A"}`,
		`{"not":{"$ref":"#"},"if":{"$ref":"#"},"then":{"$ref":"#"}}`,
	}
	for _, a := range docs {
		for _, b := range docs {
			done := make(chan struct{})
			go func() {
				defer close(done)
				Diff(mustParse(t, a), mustParse(t, b), Strict)
				Diff(mustParse(t, a), mustParse(t, b), GoAware)
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("Diff(%s, %s) did not finish", a, b)
			}
		}
	}
}

func TestRecursiveChangeIsFound(t *testing.T) {
	old := mustParse(t, `{"$defs":{"P":{"type":"object","properties":{"name":{"type":"string"},"kids":{"type":"array","items":{"$ref":"#/$defs/P"}}}}},"$ref":"#/$defs/P"}`)
	new := mustParse(t, `{"$defs":{"P":{"type":"object","properties":{"name":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/P"}}}}},"$ref":"#/$defs/P"}`)
	r := Check(Backward, []*Schema{old}, new, Strict)
	if r.Compatible() || r.Problems[0].Path != "#/properties/name/type" {
		t.Errorf("want a TYPE_CHANGED at #/properties/name/type, got %s", r)
	}
}

func TestCheckLevels(t *testing.T) {
	v0 := mustParse(t, `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`)
	v1 := mustParse(t, `{"type":"object","properties":{"a":{"type":"string"}}}`)                                                     // drops required: backward only
	v2 := mustParse(t, `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer","default":0}},"required":["b"]}`) // adds b with a default

	existing := []*Schema{v0, v1}
	tests := []struct {
		level      Level
		candidate  *Schema
		compatible bool
		compared   []int
		dirs       []Direction
	}{
		{None, v0, true, []int{}, nil},
		{Backward, v2, true, []int{1}, nil},
		{BackwardTransitive, v2, true, []int{0, 1}, nil},
		{Forward, v2, true, []int{1}, nil},
		{ForwardTransitive, v2, false, []int{0, 1}, []Direction{OldReadsNew}}, // v0 readers require a
		{Forward, v1, true, []int{1}, nil},
		{ForwardTransitive, v1, false, []int{0, 1}, []Direction{OldReadsNew}},
		{Full, v0, false, []int{1}, []Direction{NewReadsOld}},
		{FullTransitive, v0, false, []int{0, 1}, []Direction{NewReadsOld}},
		{Level(0), v0, false, []int{1}, []Direction{NewReadsOld}}, // unset means BACKWARD
	}
	for _, tt := range tests {
		r := Check(tt.level, existing, tt.candidate, GoAware)
		if r.Compatible() != tt.compatible || !slices.Equal(r.Compared, tt.compared) {
			t.Errorf("%s: compatible=%v compared=%v, want %v %v\n%s", tt.level, r.Compatible(), r.Compared, tt.compatible, tt.compared, r)
		}
		for _, p := range r.Problems {
			if !slices.Contains(tt.dirs, p.Direction) {
				t.Errorf("%s: unexpected direction %s in %s", tt.level, p.Direction, p)
			}
		}
	}
	// Problems name the revision they came from.
	r := Check(ForwardTransitive, existing, v1, GoAware)
	if len(r.Problems) == 0 || r.Problems[0].Against != 0 {
		t.Errorf("problem should be against revision 0: %s", r)
	}
	if r.Level != ForwardTransitive || r.Policy != GoAware || !strings.Contains(r.String(), "revision 0") {
		t.Errorf("report does not describe itself: %s", r)
	}
	if Check(Level(0), nil, v0, GoAware).Level != Backward {
		t.Error("unset level should report BACKWARD")
	}
	if !Check(FullTransitive, nil, v0, Strict).Compatible() {
		t.Error("the first revision is always compatible")
	}
}

func TestParseLevel(t *testing.T) {
	for _, l := range Levels() {
		for _, s := range []string{l.String(), strings.ToLower(l.String()), " " + l.String() + "\n"} {
			got, err := ParseLevel(s)
			if err != nil || got != l {
				t.Errorf("ParseLevel(%q) = %v, %v", s, got, err)
			}
		}
		text, err := l.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back Level
		if err := back.UnmarshalText(text); err != nil || back != l {
			t.Errorf("text round trip of %s gave %s, %v", l, back, err)
		}
	}
	_, err := ParseLevel("BACKWARDS")
	if err == nil {
		t.Fatal("ParseLevel accepted an unknown name")
	}
	for _, name := range []string{"BACKWARDS", "NONE", "BACKWARD_TRANSITIVE", "FULL_TRANSITIVE"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not mention %s", err, name)
		}
	}
	if _, err := Level(0).MarshalText(); err == nil {
		t.Error("the unset level marshalled")
	}
	if Level(0).String() != "UNSET" || Level(99).String() != "Level(99)" {
		t.Errorf("String of invalid levels: %s %s", Level(0), Level(99))
	}
}
