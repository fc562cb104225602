package protobuf_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/contrib/protobuf"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

func parse(t testing.TB, text string) *protobuf.Document {
	t.Helper()
	d, err := protobuf.Parse([]byte(text))
	if err != nil {
		t.Fatalf("parse %s: %v", text, err)
	}
	return d
}

// file is a proto3 file of package shop.orders with the given body.
func file(body string) string {
	return "syntax = \"proto3\";\npackage shop.orders;\n" + body
}

// order is message OrderPlaced with the given fields.
func order(fields string) string {
	return file("message OrderPlaced {\n" + fields + "\n}\n")
}

type found struct {
	kind       schema.DiffKind
	path       string
	compatible bool
}

func differences(ds []schema.Difference) []found {
	out := []found{}
	for _, d := range ds {
		out = append(out, found{d.Kind, d.Path, d.Compatible})
	}
	return out
}

const (
	orderID  = "string order_id = 1;"
	customer = "string customer_id = 2;"
	total    = "int64 total_cents = 3;"
)

var base = order(orderID + customer + total)

// TestRules: each of Confluent's Protobuf rules, writer against reader,
// with the kind, the path and the verdict of every difference.
func TestRules(t *testing.T) {
	for _, tc := range []struct {
		name           string
		writer, reader string
		want           []found
	}{
		{"same file", base, base, nil},
		{"comments, spacing and field order", base, order("// the total\n  int64   total_cents = 3;\n" + customer + orderID), nil},
		{"field added", base, order(orderID + customer + total + "string channel = 4;"),
			[]found{{protobuf.FieldAdded, "#/OrderPlaced/4", true}}},
		{"field removed", base, order(orderID + customer),
			[]found{{protobuf.FieldRemoved, "#/OrderPlaced/3", true}}},
		{"field renamed", base, order(orderID + customer + "int64 amount = 3;"),
			[]found{{protobuf.FieldNameChanged, "#/OrderPlaced/3", true}}},
		{"int64 to int32: one varint group", base, order(orderID + customer + "int32 total_cents = 3;"), nil},
		{"int64 to bool: one varint group", base, order(orderID + customer + "bool total_cents = 3;"), nil},
		{"enum read as int32", file("enum S { A = 0; }\nmessage OrderPlaced { S s = 1; }"), file("enum S { A = 0; }\nmessage OrderPlaced { int32 s = 1; }"), nil},
		{"sint32 to sint64", order("sint32 n = 1;"), order("sint64 n = 1;"), nil},
		{"fixed32 to sfixed32", order("fixed32 n = 1;"), order("sfixed32 n = 1;"), nil},
		{"fixed64 to sfixed64", order("fixed64 n = 1;"), order("sfixed64 n = 1;"), nil},
		{"string to bytes", order("string n = 1;"), order("bytes n = 1;"), nil},
		{"int64 to sint64", order("int64 n = 1;"), order("sint64 n = 1;"),
			[]found{{protobuf.FieldScalarKindChanged, "#/OrderPlaced/1", false}}},
		{"int64 to string", base, order(orderID + customer + "string total_cents = 3;"),
			[]found{{protobuf.FieldScalarKindChanged, "#/OrderPlaced/3", false}}},
		{"fixed32 to fixed64", order("fixed32 n = 1;"), order("fixed64 n = 1;"),
			[]found{{protobuf.FieldScalarKindChanged, "#/OrderPlaced/1", false}}},
		{"float to double", order("float n = 1;"), order("double n = 1;"),
			[]found{{protobuf.FieldScalarKindChanged, "#/OrderPlaced/1", false}}},
		{"scalar to message", file("message M {}\nmessage OrderPlaced { string m = 1; }"), file("message M {}\nmessage OrderPlaced { M m = 1; }"),
			[]found{{protobuf.FieldKindChanged, "#/OrderPlaced/1", false}}},
		{"message to map", file("message M {}\nmessage OrderPlaced { M m = 1; }"), file("message M {}\nmessage OrderPlaced { map<string, M> m = 1; }"),
			[]found{{protobuf.FieldKindChanged, "#/OrderPlaced/1", false}}},
		{"map value kind", order("map<string, int64> m = 1;"), order("map<string, string> m = 1;"),
			[]found{{protobuf.FieldScalarKindChanged, "#/OrderPlaced/1", false}}},
		{"message type changed", file("message A {}\nmessage B {}\nmessage OrderPlaced { A m = 1; }"), file("message A {}\nmessage B {}\nmessage OrderPlaced { B m = 1; }"),
			[]found{{protobuf.FieldNamedTypeChanged, "#/OrderPlaced/1", false}}},
		{"well-known type kept", "syntax = \"proto3\";\nimport \"google/protobuf/timestamp.proto\";\nmessage M { google.protobuf.Timestamp at = 1; }",
			"syntax = \"proto3\";\nimport \"google/protobuf/timestamp.proto\";\nmessage M { .google.protobuf.Timestamp at = 1; }", nil},
		{"int64 made repeated", order("int64 n = 1;"), order("repeated int64 n = 1;"),
			[]found{{protobuf.FieldNumericLabelChanged, "#/OrderPlaced/1", false}}},
		{"string made repeated", order("string n = 1;"), order("repeated string n = 1;"),
			[]found{{protobuf.FieldStringOrBytesLabel, "#/OrderPlaced/1", true}}},
		{"optional is singular", order("int64 n = 1;"), order("optional int64 n = 1;"), nil},
		{"message removed", file("message OrderPlaced {}\nmessage Refund {}"), file("message OrderPlaced {}"),
			[]found{{protobuf.MessageRemoved, "#/Refund", false}}},
		{"message added", file("message OrderPlaced {}"), file("message OrderPlaced {}\nmessage Refund {}"),
			[]found{{protobuf.MessageAdded, "#/Refund", true}}},
		{"nested message removed", file("message OrderPlaced { message Line {} }"), file("message OrderPlaced {}"),
			[]found{{protobuf.MessageRemoved, "#/OrderPlaced/Line", false}}},
		{"nested field changed", file("message OrderPlaced { message Line { int64 q = 1; } }"), file("message OrderPlaced { message Line { string q = 1; } }"),
			[]found{{protobuf.FieldScalarKindChanged, "#/OrderPlaced/Line/1", false}}},
		{"package changed", base, strings.Replace(base, "shop.orders", "shop.sales", 1),
			[]found{{protobuf.PackageChanged, "#/", false}}},
		{"enum value removed", file("enum S { A = 0; B = 1; }"), file("enum S { A = 0; }"),
			[]found{{protobuf.EnumConstRemoved, "#/S/1", true}}},
		{"enum value added", file("enum S { A = 0; }"), file("enum S { A = 0; B = 1; }"),
			[]found{{protobuf.EnumConstAdded, "#/S/1", true}}},
		{"enum value renamed", file("enum S { A = 0; B = 1; }"), file("enum S { A = 0; C = 1; }"),
			[]found{{protobuf.EnumConstChanged, "#/S/1", true}}},
		{"enum removed", file("enum S { A = 0; }"), file(""),
			[]found{{protobuf.EnumRemoved, "#/S", true}}},
		{"oneof member removed", order("oneof pay { string card = 1; string iban = 2; }"), order("oneof pay { string card = 1; }"),
			[]found{{protobuf.OneofFieldRemoved, "#/OrderPlaced/pay/2", false}}},
		{"oneof member added", order("oneof pay { string card = 1; }"), order("oneof pay { string card = 1; string iban = 2; }"),
			[]found{{protobuf.OneofFieldAdded, "#/OrderPlaced/pay/2", true}}},
		{"oneof removed with its members", order("int64 n = 3; oneof pay { string card = 1; string iban = 2; }"), order("int64 n = 3;"),
			[]found{{protobuf.OneofRemoved, "#/OrderPlaced/pay", true}}},
		{"one field moved into a new oneof", order("string card = 1;"), order("oneof pay { string card = 1; string iban = 2; }"),
			[]found{{protobuf.OneofAdded, "#/OrderPlaced/pay", true}, {protobuf.OneofFieldAdded, "#/OrderPlaced/pay/2", true}}},
		{"two fields moved into a oneof", order("string card = 1; string iban = 2;"), order("oneof pay { string card = 1; string iban = 2; }"),
			[]found{{protobuf.MultipleFieldsMovedToOneof, "#/OrderPlaced/pay", false}, {protobuf.OneofAdded, "#/OrderPlaced/pay", true}}},
		{"field moved into an existing oneof", order("string iban = 2; oneof pay { string card = 1; }"), order("oneof pay { string card = 1; string iban = 2; }"),
			[]found{{protobuf.FieldMovedToExistingOneof, "#/OrderPlaced/pay", false}}},
		{"field moved out of a oneof", order("oneof pay { string card = 1; string iban = 2; }"), order("string card = 1; oneof pay { string iban = 2; }"),
			[]found{{protobuf.OneofFieldMovedToTopLevel, "#/OrderPlaced/1", true}}},
		{"oneof member's kind changed", order("oneof pay { string card = 1; }"), order("oneof pay { int64 card = 1; }"),
			[]found{{protobuf.FieldScalarKindChanged, "#/OrderPlaced/pay/1", false}}},
		{"required field added", "syntax = \"proto2\";\nmessage M { optional int32 a = 1; }", "syntax = \"proto2\";\nmessage M { optional int32 a = 1; required int32 b = 2; }",
			[]found{{protobuf.RequiredFieldAdded, "#/M/2", false}}},
		{"required field removed", "syntax = \"proto2\";\nmessage M { optional int32 a = 1; required int32 b = 2; }", "syntax = \"proto2\";\nmessage M { optional int32 a = 1; }",
			[]found{{protobuf.RequiredFieldRemoved, "#/M/2", false}}},
		{"required made optional", "syntax = \"proto2\";\nmessage M { required int32 a = 1; }", "syntax = \"proto2\";\nmessage M { optional int32 a = 1; }",
			[]found{{protobuf.FieldNumericLabelChanged, "#/M/1", false}}},
		{"reserved number reused", order("reserved 4; reserved \"channel\";" + orderID), order(orderID + "int64 channel_id = 4;"),
			[]found{{protobuf.FieldAdded, "#/OrderPlaced/4", true}, {protobuf.ReservedFieldReused, "#/OrderPlaced/4", true}}},
		{"reserved name reused", order("reserved \"channel\";" + orderID), order(orderID + "int64 channel = 5;"),
			[]found{{protobuf.FieldAdded, "#/OrderPlaced/5", true}, {protobuf.ReservedFieldReused, "#/OrderPlaced/5", true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := differences(parse(t, tc.reader).ReadsFrom(parse(t, tc.writer)))
			want := tc.want
			if want == nil {
				want = []found{}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("differences\n got %v\nwant %v", got, want)
			}
		})
	}
}

// TestMessagesSayWhatToDo: a removal that reserves nothing advises to
// reserve, one that does says so; a kind change names both types.
func TestMessagesSayWhatToDo(t *testing.T) {
	for _, tc := range []struct{ name, writer, reader, want string }{
		{"unreserved removal", base, order(orderID + customer), `reserve 3 and "total_cents"`},
		{"reserved removal", base, order(orderID + customer + "reserved 3; reserved \"total_cents\";"), "its number and name are reserved"},
		{"scalar kind", base, order(orderID + customer + "string total_cents = 3;"), "is a string in the reader and a int64 in the writer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := parse(t, tc.reader).ReadsFrom(parse(t, tc.writer))
			if len(ds) != 1 || !strings.Contains(ds[0].Message, tc.want) {
				t.Fatalf("differences %v, want one saying %q", ds, tc.want)
			}
		})
	}
}

// TestLevels: the seven levels through schema.Judge on an evolution that
// adds a field, removes one, re-adds its number with another type, and
// adds a message.
func TestLevels(t *testing.T) {
	v1 := parse(t, order(orderID+customer+total+"string channel = 4;"))
	v2 := parse(t, order(orderID+customer+total))                                 // channel removed
	v3 := parse(t, order(orderID+customer+total+"int64 channel = 4;"))            // 4 back as an int64
	v2m := parse(t, file("message OrderPlaced {"+orderID+"}\nmessage Refund {}")) // a message added
	type verdict struct {
		level schema.Level
		ok    bool
	}
	for _, tc := range []struct {
		name      string
		existing  []schema.Document
		candidate schema.Document
		want      []verdict
	}{
		{"field removed passes every level", []schema.Document{v1}, v2,
			[]verdict{{schema.Backward, true}, {schema.Forward, true}, {schema.Full, true}, {schema.BackwardTransitive, true}, {schema.ForwardTransitive, true}, {schema.FullTransitive, true}, {schema.None, true}}},
		{"number reused with another type: only the transitive levels see v1", []schema.Document{v1, v2}, v3,
			[]verdict{{schema.Backward, true}, {schema.Forward, true}, {schema.Full, true}, {schema.BackwardTransitive, false}, {schema.ForwardTransitive, false}, {schema.FullTransitive, false}, {schema.None, true}}},
		{"message added passes BACKWARD, fails FORWARD", []schema.Document{parse(t, file("message OrderPlaced {"+orderID+"}"))}, v2m,
			[]verdict{{schema.Backward, true}, {schema.Forward, false}, {schema.Full, false}, {schema.None, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, w := range tc.want {
				r := schema.Judge(w.level, tc.existing, tc.candidate)
				if r.Compatible() != w.ok {
					t.Errorf("%s: compatible %v, want %v: %s", w.level, r.Compatible(), w.ok, r)
				}
			}
		})
	}
	r := schema.Judge(schema.BackwardTransitive, []schema.Document{v1, v2}, v3)
	if len(r.Problems) != 1 || r.Problems[0].Kind != protobuf.FieldScalarKindChanged || r.Problems[0].Path != "#/OrderPlaced/4" {
		t.Fatalf("BACKWARD_TRANSITIVE problems %v, want FIELD_SCALAR_KIND_CHANGED at #/OrderPlaced/4", r.Problems)
	}
}
