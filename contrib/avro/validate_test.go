package avro_test

import (
	"testing"

	"github.com/sqlstreams/sqlstreams/contrib/avro"
)

// TestValidate: a plain-JSON message validates against an Avro record;
// each value that does not fit is a violation at its JSON Pointer.
func TestValidate(t *testing.T) {
	t.Parallel()
	doc, err := avro.Parse([]byte(`{"type":"record","name":"Order","fields":[
		{"name":"id","type":"string"},
		{"name":"qty","type":"int","default":1},
		{"name":"note","type":["null","string"]},
		{"name":"lines","type":{"type":"array","items":{"type":"enum","name":"Kind","symbols":["A","B"]}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, payload string
		want          []string // violation paths; none when valid
	}{
		{"valid", `{"id":"a","qty":2,"note":null,"lines":["A"]}`, nil},
		{"default fills qty", `{"id":"a","note":"x","lines":[]}`, nil},
		{"missing without default", `{"qty":2,"note":null,"lines":[]}`, []string{"/id"}},
		{"wrong primitive", `{"id":1,"note":null,"lines":[]}`, []string{"/id"}},
		{"int out of range", `{"id":"a","qty":3000000000,"note":null,"lines":[]}`, []string{"/qty"}},
		{"union branch", `{"id":"a","note":3,"lines":[]}`, []string{"/note"}},
		{"enum symbol in an array", `{"id":"a","note":null,"lines":["A","C"]}`, []string{"/lines/1"}},
		{"unknown field", `{"id":"a","note":null,"lines":[],"sku":"x"}`, []string{"/sku"}},
		{"not an object", `[1]`, []string{""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := doc.Validate([]byte(tc.payload))
			if len(got) != len(tc.want) {
				t.Fatalf("Validate: %v, want paths %v", got, tc.want)
			}
			for i := range got {
				if got[i].Path != tc.want[i] {
					t.Fatalf("Validate: %v, want paths %v", got, tc.want)
				}
			}
		})
	}
}
