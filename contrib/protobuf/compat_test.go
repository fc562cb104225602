package protobuf_test

import (
	"encoding/json"
	"os"
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

// ruleCase is one case of testdata/rules.json: a writer and a reader
// (.proto files) and every difference found between them, with its verdict.
// The cases live in a file so that the Confluent wire tests
// (.tests/drivers/ccompat) replay the same ones through the API.
type ruleCase struct {
	Name   string `json:"name"`
	Writer string `json:"writer"`
	Reader string `json:"reader"`
	Want   []struct {
		Kind       schema.DiffKind `json:"kind"`
		Path       string          `json:"path"`
		Compatible bool            `json:"compatible"`
	} `json:"want"`
}

func ruleCases(t *testing.T) []ruleCase {
	raw, err := os.ReadFile("testdata/rules.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []ruleCase
	if err := json.Unmarshal(raw, &cases); err != nil || len(cases) == 0 {
		t.Fatalf("testdata/rules.json: %d cases, %v", len(cases), err)
	}
	return cases
}

// TestRules: each of Confluent's Protobuf rules, writer against reader,
// with the kind, the path and the verdict of every difference.
func TestRules(t *testing.T) {
	for _, c := range ruleCases(t) {
		tc := struct {
			name           string
			writer, reader string
			want           []found
		}{name: c.Name, writer: c.Writer, reader: c.Reader}
		for _, f := range c.Want {
			tc.want = append(tc.want, found{f.Kind, f.Path, f.Compatible})
		}
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
