package schema_test

import (
	"fmt"
	"log"

	"github.com/sqlstreams/sqlstreams/core/schema"
)

type Money struct {
	Cents    int64  `json:"cents"`
	Currency string `json:"currency" sqlstreams:"default=\"EUR\""`
}

type Order struct {
	ID    string `json:"id"`
	Total Money  `json:"total"`
	Note  string `json:"note,omitempty"`
}

func ExampleReflect() {
	s, err := schema.For[Order]()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s)
	// Output:
	// {
	//   "$defs": {
	//     "Money": {
	//       "additionalProperties": true,
	//       "properties": {
	//         "cents": {
	//           "type": "integer"
	//         },
	//         "currency": {
	//           "default": "EUR",
	//           "type": "string"
	//         }
	//       },
	//       "required": [
	//         "cents",
	//         "currency"
	//       ],
	//       "type": "object"
	//     }
	//   },
	//   "$schema": "https://json-schema.org/draft/2020-12/schema",
	//   "additionalProperties": true,
	//   "properties": {
	//     "id": {
	//       "type": "string"
	//     },
	//     "note": {
	//       "type": "string"
	//     },
	//     "total": {
	//       "$ref": "#/$defs/Money"
	//     }
	//   },
	//   "required": [
	//     "id",
	//     "total"
	//   ],
	//   "type": "object"
	// }
}

func ExampleDiff() {
	old, _ := schema.Parse([]byte(`{
		"type": "object",
		"properties": {"total": {"type": "integer"}, "sku": {"type": "string", "maxLength": 20}},
		"required": ["total"]
	}`))
	new, _ := schema.Parse([]byte(`{
		"type": "object",
		"properties": {"total": {"type": "number"}, "sku": {"type": "string", "maxLength": 10}},
		"required": ["total", "sku"]
	}`))
	for _, d := range schema.Diff(old, new, schema.Strict) {
		fmt.Println(d)
	}
	// Output:
	// incompatible MAX_LENGTH_DECREASED at #/properties/sku/maxLength: maxLength decreased from 20 to 10
	// compatible TYPE_EXTENDED at #/properties/total/type: type widened from integer to number
	// incompatible REQUIRED_ATTRIBUTE_ADDED at #/required/sku: property "sku" is now required without a default; old data may lack it
}

func ExampleCheck() {
	type OrderV1 struct {
		ID    string `json:"id"`
		Total int64  `json:"total"`
	}
	type OrderV2 struct {
		ID       string `json:"id"`
		Total    int64  `json:"total"`
		Currency string `json:"currency" sqlstreams:"default=\"EUR\""` // fine: has a default
		Coupon   string `json:"coupon,omitempty"`                      // fine: optional
		Email    string `json:"email"`                                 // break: v1 writers never send it
	}
	v1, _ := schema.For[OrderV1]()
	v2, _ := schema.For[OrderV2]()

	report := schema.Check(schema.Backward, []*schema.Schema{v1}, v2, schema.GoAware)
	fmt.Println(report.Compatible())
	for _, p := range report.Problems {
		fmt.Printf("%s at %s (revision %d, %s)\n", p.Kind, p.Path, p.Against, p.Direction)
	}
	// Output:
	// false
	// REQUIRED_ATTRIBUTE_ADDED at #/required/email (revision 0, new reader, old data)
}

func ExampleParseLevel() {
	l, err := schema.ParseLevel("full_transitive")
	fmt.Println(l, err)
	_, err = schema.ParseLevel("BACKWARDS")
	fmt.Println(err)
	// Output:
	// FULL_TRANSITIVE <nil>
	// schema: unknown compatibility level "BACKWARDS"; use one of NONE, BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL, FULL_TRANSITIVE
}
