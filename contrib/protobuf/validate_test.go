package protobuf_test

import (
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/contrib/protobuf"
)

// TestValidate: a message in protobuf's JSON mapping validates against the
// file's first message; unknown fields, wrong kinds and missing required
// fields are violations that name the field.
func TestValidate(t *testing.T) {
	t.Parallel()
	doc, err := protobuf.Parse([]byte(`syntax = "proto2";
message Order { required string id = 1; optional int64 qty = 2; }
message Other { optional string x = 1; }`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, payload, want string // want: a word of the violation; empty when valid
	}{
		{"valid", `{"id":"a","qty":"3"}`, ""},
		{"valid without optional", `{"id":"a"}`, ""},
		{"unknown field", `{"id":"a","sku":"x"}`, "sku"},
		{"wrong kind", `{"id":"a","qty":"many"}`, "qty"},
		{"missing required", `{"qty":1}`, "id"},
		{"not JSON", `{`, "Order"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := doc.Validate([]byte(tc.payload))
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("Validate: %v, want none", got)
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[0].Message, tc.want) {
				t.Fatalf("Validate: %v, want one naming %q", got, tc.want)
			}
		})
	}
}
