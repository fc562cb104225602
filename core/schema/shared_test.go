package schema_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/core/schema"
)

type sharedTag struct {
	Label string `json:"label"`
}

func (sharedTag) SharedSchema() schema.SharedName {
	return schema.SharedName{Stream: "tags", Version: 3}
}

// sharedWithNested is shared and contains another shared type.
type sharedWithNested struct {
	Tag sharedTag `json:"tag"`
}

func (*sharedWithNested) SharedSchema() schema.SharedName {
	return schema.SharedName{Stream: "nested", Version: 1}
}

type holder struct {
	Tag    sharedTag         `json:"tag"`
	Maybe  *sharedTag        `json:"maybe"`
	Many   []sharedTag       `json:"many"`
	Nested *sharedWithNested `json:"nested,omitempty"`
	Plain  plainStruct       `json:"plain"`
}

type plainStruct struct {
	N int `json:"n"`
}

type badShared struct{}

func (badShared) SharedSchema() schema.SharedName { return schema.SharedName{Stream: "", Version: 0} }

type holdsBad struct {
	B badShared `json:"b"`
}

func TestSharedReflection(t *testing.T) {
	t.Parallel()
	s, err := schema.For[holder]()
	if err != nil {
		t.Fatal(err)
	}
	text := string(s.Canonical())
	for _, want := range []string{
		`"tag":{"$ref":"tags-v3"}`,
		`"maybe":{"anyOf":[{"$ref":"tags-v3"},{"type":"null"}]}`,
		`"items":{"$ref":"tags-v3"}`,
		`"nested":{"anyOf":[{"$ref":"nested-v1"},{"type":"null"}]}`,
		`"$defs":{"plainStruct":`, // not shared: the default, a $defs entry
	} {
		if !strings.Contains(text, want) {
			t.Errorf("schema lacks %s:\n%s", want, text)
		}
	}
	if strings.Contains(text, `"label"`) {
		t.Errorf("the shared type is copied into the holder's schema:\n%s", text)
	}
	var names []string
	for _, sh := range s.Shared() {
		names = append(names, sh.Name.Ref())
	}
	if !reflect.DeepEqual(names, []string{"tags-v3", "nested-v1"}) {
		t.Errorf("Shared(): %v; want each shared type once, in the order met", names)
	}
	nested := s.Shared()[1].Schema
	if got := nested.Shared(); len(got) != 1 || got[0].Name.Ref() != "tags-v3" || !strings.Contains(string(nested.Canonical()), `"$ref":"tags-v3"`) {
		t.Errorf("the nested shared type's own schema: %s, shared %v", nested.Canonical(), got)
	}
	// The shared type reflected on its own is a plain schema.
	own, err := schema.For[sharedTag]()
	if err != nil || len(own.Shared()) != 0 || !strings.Contains(string(own.Canonical()), `"label":{"type":"string"}`) {
		t.Errorf("For[sharedTag]: %s, %v", own.Canonical(), err)
	}
	if _, err := schema.For[holdsBad](); err == nil || !strings.Contains(err.Error(), "SharedSchema returns") {
		t.Errorf("a shared type without a stream name: %v; want a clear refusal", err)
	}
}

func TestBundle(t *testing.T) {
	t.Parallel()
	parse := func(s string) *schema.Schema {
		t.Helper()
		x, err := schema.Parse([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	money := parse(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"cents":{"$ref":"#/$defs/Cents"},"cur":{"$ref":"currency.json"}},"$defs":{"Cents":{"type":"integer"}}}`)
	currency := parse(`{"type":"string","enum":["EUR","USD"]}`)
	order := parse(`{"type":"object","properties":{"total":{"$ref":"money.json"},"self":{"$ref":"#"}},"$defs":{"Local":{"type":"string"}}}`)

	b, err := schema.Bundle(order, map[string]*schema.Schema{"money.json": money, "currency.json": currency})
	if err != nil {
		t.Fatal(err)
	}
	text := string(b.Canonical())
	for _, want := range []string{
		`"total":{"$ref":"#/$defs/ref:money.json"}`,
		`"cents":{"$ref":"#/$defs/ref:money.json/$defs/Cents"}`, // the referenced document's own pointers
		`"cur":{"$ref":"#/$defs/ref:currency.json"}`,            // its references, flat
		`"self":{"$ref":"#"}`,                                   // the root's own pointers stay
		`"Local":{"type":"string"}`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("bundle lacks %s:\n%s", want, text)
		}
	}
	if strings.Contains(text, `"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"cents"`) {
		t.Errorf("the embedded document kept its $schema:\n%s", text)
	}
	if again, _ := schema.Parse(b.Canonical()); again == nil {
		t.Errorf("the bundle does not parse as a self-contained document:\n%s", text)
	}
	if !strings.Contains(string(order.Canonical()), `"$ref":"money.json"`) {
		t.Errorf("Bundle changed its input: %s", order.Canonical())
	}
	// Changes inside the referenced document show through the reference.
	moneyText := parse(`{"type":"object","properties":{"cents":{"type":"string"},"cur":{"$ref":"currency.json"}}}`)
	b2, err := schema.Bundle(order, map[string]*schema.Schema{"money.json": moneyText, "currency.json": currency})
	if err != nil {
		t.Fatal(err)
	}
	r := schema.Check(schema.Backward, []*schema.Schema{b}, b2, schema.Strict)
	found := false
	for _, p := range r.Problems {
		found = found || p.Kind == schema.TypeChanged && p.Path == "#/properties/total/properties/cents/type"
	}
	if !found {
		t.Errorf("integer → string cents through the reference: %s", r)
	}
	// A name colliding with the document's own $defs is refused.
	clash := parse(`{"$defs":{"ref:money.json":{}},"$ref":"money.json"}`)
	if _, err := schema.Bundle(clash, map[string]*schema.Schema{"money.json": money}); err == nil {
		t.Error("Bundle over a colliding $defs entry: no error")
	}
	// Without references the schema is returned as it is.
	if same, err := schema.Bundle(order, nil); err != nil || same != order {
		t.Errorf("Bundle without references: %v, %v", same, err)
	}
}
