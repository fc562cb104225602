package schema_test

import (
	"fmt"
	"log"

	"github.com/sqlstreams/sqlstreams/core/schema"
)

// Address opts in to being shared: it is recorded once, as its own schema,
// and referenced by name from every message that contains it.
type Address struct {
	City string `json:"city"`
}

func (Address) SharedSchema() schema.SharedName {
	return schema.SharedName{Stream: "address", Version: 1}
}

type Customer struct {
	Name string  `json:"name"`
	Home Address `json:"home"`
}

func ExampleShared() {
	s, err := schema.For[Customer]()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(s.Canonical()))
	for _, ref := range s.Shared() {
		fmt.Println(ref.Name.Ref(), string(ref.Schema.Canonical()))
	}
	// Output:
	// {"$schema":"https://json-schema.org/draft/2020-12/schema","additionalProperties":true,"properties":{"home":{"$ref":"address-v1"},"name":{"type":"string"}},"required":["home","name"],"type":"object"}
	// address-v1 {"$schema":"https://json-schema.org/draft/2020-12/schema","additionalProperties":true,"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"}
}

// Bundle resolves references by name, so two revisions that refer to a
// shared schema compare as self-contained documents.
func ExampleBundle() {
	order, _ := schema.Parse([]byte(`{"type":"object","properties":{"total":{"$ref":"money.json"}}}`))
	before, _ := schema.Parse([]byte(`{"type":"object","properties":{"cents":{"type":"integer"}}}`))
	after, _ := schema.Parse([]byte(`{"type":"object","properties":{"cents":{"type":"string"}}}`))
	old, _ := schema.Bundle(order, map[string]*schema.Schema{"money.json": before})
	changed, _ := schema.Bundle(order, map[string]*schema.Schema{"money.json": after})
	for _, p := range schema.Check(schema.Backward, []*schema.Schema{old}, changed, schema.Strict).Problems {
		fmt.Println(p.Kind, p.Path)
	}
	// Output:
	// TYPE_CHANGED #/properties/total/properties/cents/type
}

// SharedName.Ref is the reference's name and the subject it is served as.
func ExampleSharedName_Ref() {
	fmt.Println(schema.SharedName{Stream: "money", Version: 2}.Ref())
	// Output: money-v2
}
