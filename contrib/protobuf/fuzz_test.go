package protobuf_test

import (
	"testing"

	"github.com/sqlstreams/sqlstreams/contrib/protobuf"
)

// FuzzParse: Parse never panics, and whatever it accepts has a canonical
// form and reads itself without a problem.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		base,
		"syntax = \"proto2\";\nmessage M { required int32 a = 1; optional group G = 2 { optional int32 b = 3; } }",
		"syntax = \"proto3\";\nimport \"google/protobuf/timestamp.proto\";\nmessage M { map<string, google.protobuf.Timestamp> at = 1; oneof o { string s = 2; } }",
		"edition = \"2023\";\nmessage M { int32 a = 1; }",
		"syntax = \"proto3\"; enum E { A = 0; } message M { reserved 2 to 5; E e = 1; }",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		d, err := protobuf.Parse(text)
		if err != nil {
			return
		}
		if len(d.Canonical()) == 0 && len(d.MessageNames()) > 0 {
			t.Fatal("no canonical form")
		}
		for _, p := range d.ReadsFrom(d) {
			if !p.Compatible {
				t.Fatalf("a file cannot read itself: %v", p)
			}
		}
	})
}
