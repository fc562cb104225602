package protobuf_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/sqlstreams/sqlstreams/contrib/protobuf"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// TestParseRefuses: what protoc would refuse is an error, never a panic;
// an import other than a well-known type is ErrImportNotAvailable.
func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		is         error
	}{
		{"empty", "", nil},
		{"blank", " \n", nil},
		{"not proto", `{"type":"record"}`, nil},
		{"unknown syntax", `syntax = "proto4"; message M {}`, nil},
		{"unknown type", `syntax = "proto3"; message M { Missing m = 1; }`, nil},
		{"number used twice", `syntax = "proto3"; message M { int32 a = 1; int32 b = 1; }`, nil},
		{"reserved number used", `syntax = "proto3"; message M { reserved 1; int32 a = 1; }`, nil},
		{"proto3 enum not starting at zero", `syntax = "proto3"; enum E { A = 1; }`, nil},
		{"import of another schema", `syntax = "proto3"; import "shop/common.proto"; message M {}`, protobuf.ErrImportNotAvailable},
		{"import of a missing well-known file", `syntax = "proto3"; import "google/protobuf/nope.proto"; message M {}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := protobuf.Parse([]byte(tc.text))
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want an error", tc.text, d.MessageNames())
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("Parse(%q) = %v, want errors.Is %v", tc.text, err, tc.is)
			}
		})
	}
}

// TestWellKnownTypes: every well-known type imports without registering.
func TestWellKnownTypes(t *testing.T) {
	d := parse(t, `syntax = "proto3";
package shop.orders;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/any.proto";
import "google/protobuf/struct.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/empty.proto";
import "google/protobuf/field_mask.proto";
message OrderPlaced {
  google.protobuf.Timestamp at = 1;
  google.protobuf.Duration ttl = 2;
  google.protobuf.Any extra = 3;
  google.protobuf.Struct attrs = 4;
  google.protobuf.StringValue note = 5;
  google.protobuf.FieldMask mask = 6;
}`)
	if got := d.MessageNames(); len(got) != 1 || got[0] != "shop.orders.OrderPlaced" || d.Package() != "shop.orders" {
		t.Fatalf("messages %v, package %q", got, d.Package())
	}
}

// TestCanonical: files protoc compiles to the same descriptor share a
// canonical form; anything that changes how data is read makes another.
func TestCanonical(t *testing.T) {
	base := "syntax = \"proto3\";\npackage p;\nmessage M { int32 a = 1; string b = 2; }\n"
	for _, tc := range []struct {
		name, other string
		same        bool
	}{
		{"comments and spacing", "// orders\nsyntax = \"proto3\";\n\npackage p;\n/* M */ message M {\n  int32 a = 1; // a\n  string b = 2;\n}\n", true},
		{"field order", "syntax = \"proto3\";\npackage p;\nmessage M { string b = 2; int32 a = 1; }\n", true},
		{"a number", "syntax = \"proto3\";\npackage p;\nmessage M { int32 a = 3; string b = 2; }\n", false},
		{"a type", "syntax = \"proto3\";\npackage p;\nmessage M { int64 a = 1; string b = 2; }\n", false},
		{"a label", "syntax = \"proto3\";\npackage p;\nmessage M { repeated int32 a = 1; string b = 2; }\n", false},
		{"a name", "syntax = \"proto3\";\npackage p;\nmessage M { int32 x = 1; string b = 2; }\n", false},
		{"the package", "syntax = \"proto3\";\npackage q;\nmessage M { int32 a = 1; string b = 2; }\n", false},
		{"an option", "syntax = \"proto3\";\npackage p;\nmessage M { int32 a = 1 [deprecated = true]; string b = 2; }\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := parse(t, base), parse(t, tc.other)
			if got := bytes.Equal(a.Canonical(), b.Canonical()); got != tc.same {
				t.Fatalf("same canonical form %v, want %v", got, tc.same)
			}
			if got := schema.Fingerprint(a) == schema.Fingerprint(b); got != tc.same {
				t.Fatalf("same fingerprint %v, want %v", got, tc.same)
			}
		})
	}
}

// TestFormat: the format parses through the schema.Format seam, and a
// PROTOBUF reader refuses a document of another type.
func TestFormat(t *testing.T) {
	f := protobuf.Format()
	if f.Type() != schema.TypeProtobuf {
		t.Fatalf("type %s", f.Type())
	}
	d, err := f.Parse([]byte("syntax = \"proto3\"; message M {}"))
	if err != nil {
		t.Fatal(err)
	}
	ds := d.ReadsFrom(schema.Opaque(schema.TypeAvro, []byte(`"string"`)))
	if len(ds) != 1 || ds[0].Kind != schema.SchemaTypeChanged || ds[0].Compatible {
		t.Fatalf("differences %v, want one SCHEMA_TYPE_CHANGED", ds)
	}
}
