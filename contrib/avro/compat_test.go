package avro_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	hamba "github.com/hamba/avro/v2"
	"github.com/sqlstreams/sqlstreams/contrib/avro"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

func parse(t testing.TB, text string) *avro.Document {
	t.Helper()
	d, err := avro.Parse([]byte(text))
	if err != nil {
		t.Fatalf("parse %s: %v", text, err)
	}
	return d
}

// record is a record schema named shop.orders.OrderPlaced with the given
// fields (JSON objects, comma-separated).
func record(fields string) string {
	return `{"type":"record","name":"OrderPlaced","namespace":"shop.orders","fields":[` + fields + `]}`
}

const (
	orderID    = `{"name":"orderId","type":"string"}`
	customerID = `{"name":"customerId","type":"string"}`
	total      = `{"name":"totalCents","type":"int"}`
	currency   = `{"name":"currency","type":"string","default":"EUR"}`
	channel    = `{"name":"channel","type":"string"}`
)

var (
	orderV1 = record(orderID + "," + customerID + "," + total)
	orderV2 = record(orderID + "," + customerID + "," + total + "," + currency)
	orderV3 = record(orderID + "," + customerID + "," + total + "," + currency + "," + channel)
)

type problem struct {
	kind schema.DiffKind
	path string
}

func problemsOf(ds []schema.Difference) []problem {
	out := []problem{}
	for _, d := range ds {
		if !d.Compatible {
			out = append(out, problem{d.Kind, d.Path})
		}
	}
	return out
}

// TestResolution: each rule of Avro's schema resolution, reader against
// writer, with the kind and the path of what breaks; and hamba/avro's own
// resolver agrees on every verdict.
func TestResolution(t *testing.T) {
	enum := func(symbols, extra string) string {
		return `{"type":"enum","name":"Status","symbols":[` + symbols + `]` + extra + `}`
	}
	fixed := func(name string, size int, extra string) string {
		return fmt.Sprintf(`{"type":"fixed","name":%q,"size":%d%s}`, name, size, extra)
	}
	for _, tc := range []struct {
		name           string
		reader, writer string
		want           []problem
	}{
		{"same record", orderV1, orderV1, nil},
		{"reader field with a default", orderV2, orderV1, nil},
		{"reader field without a default", orderV3, orderV2, []problem{{avro.ReaderFieldMissingDefaultValue, "/fields/4"}}},
		{"writer field the reader lacks is skipped", orderV1, orderV3, nil},
		{"field found by the reader's alias", record(`{"name":"id","aliases":["orderId"],"type":"string"}`), orderV1, nil},
		{"field renamed without an alias", record(`{"name":"id","type":"string"}`), orderV1, []problem{{avro.ReaderFieldMissingDefaultValue, "/fields/0"}}},
		{"int promotes to long", record(`{"name":"n","type":"long"}`), record(`{"name":"n","type":"int"}`), nil},
		{"int promotes to double", record(`{"name":"n","type":"double"}`), record(`{"name":"n","type":"int"}`), nil},
		{"long does not narrow to int", record(`{"name":"n","type":"int"}`), record(`{"name":"n","type":"long"}`), []problem{{avro.TypeMismatch, "/fields/0/type"}}},
		{"string reads bytes", record(`{"name":"n","type":"string"}`), record(`{"name":"n","type":"bytes"}`), nil},
		{"string does not read int", record(`{"name":"n","type":"string"}`), record(`{"name":"n","type":"int"}`), []problem{{avro.TypeMismatch, "/fields/0/type"}}},
		{"record renamed", `{"type":"record","name":"OrderCancelled","namespace":"shop.orders","fields":[]}`, orderV1, []problem{{avro.NameMismatch, "/name"}}},
		{"record renamed with an alias", `{"type":"record","name":"Order","namespace":"shop.orders","aliases":["OrderPlaced"],"fields":[]}`, orderV1, nil},
		{"same name in another namespace", `{"type":"record","name":"OrderPlaced","namespace":"billing","fields":[]}`, orderV1, nil},
		{"enum symbol added to the reader", enum(`"A","B","C"`, ""), enum(`"A","B"`, ""), nil},
		{"enum symbols the reader lacks", enum(`"A"`, ""), enum(`"A","B","C"`, ""), []problem{{avro.MissingEnumSymbols, "/symbols"}}},
		{"enum symbols the reader lacks, with a default", enum(`"A","UNKNOWN"`, `,"default":"UNKNOWN"`), enum(`"A","B"`, ""), nil},
		{"fixed resized", fixed("Hash", 16, ""), fixed("Hash", 32, ""), []problem{{avro.FixedSizeMismatch, "/size"}}},
		{"fixed renamed", fixed("Digest", 16, ""), fixed("Hash", 16, ""), []problem{{avro.NameMismatch, "/name"}}},
		{"array items promote", `{"type":"array","items":"long"}`, `{"type":"array","items":"int"}`, nil},
		{"array items mismatch", `{"type":"array","items":"int"}`, `{"type":"array","items":"string"}`, []problem{{avro.TypeMismatch, "/items"}}},
		{"map values mismatch", `{"type":"map","values":"boolean"}`, `{"type":"map","values":"int"}`, []problem{{avro.TypeMismatch, "/values"}}},
		{"nullable reader reads its type", `["null","string"]`, `"string"`, nil},
		{"reader union lacks the writer's type", `["null","string"]`, `"int"`, []problem{{avro.MissingUnionBranch, "/"}}},
		{"writer union the reader covers", `["null","string","long"]`, `["string","null"]`, nil},
		{"writer union with a branch the reader lacks", `["null","string"]`, `["null","string","int"]`, []problem{{avro.MissingUnionBranch, "/"}}},
		{"writer union read by a plain type", `"string"`, `["null","string"]`, []problem{{avro.TypeMismatch, "/"}}},
		{"union branch promotes", `["null","double"]`, `"int"`, nil},
		{"field inside a union branch", `["null",` + orderV3 + `]`, `["null",` + orderV2 + `]`, []problem{{avro.ReaderFieldMissingDefaultValue, "/1/fields/4"}}},
		{"array of records", `{"type":"array","items":` + orderV3 + `}`, `{"type":"array","items":` + orderV1 + `}`,
			[]problem{{avro.ReaderFieldMissingDefaultValue, "/items/fields/4"}}},
		{"primitive to record", orderV1, `"string"`, []problem{{avro.TypeMismatch, "/"}}},
		{"recursive record", `{"type":"record","name":"Node","fields":[{"name":"next","type":["null","Node"]},{"name":"v","type":"long"}]}`,
			`{"type":"record","name":"Node","fields":[{"name":"next","type":["null","Node"]},{"name":"v","type":"int"}]}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, w := parse(t, tc.reader), parse(t, tc.writer)
			diffs := r.ReadsFrom(w)
			got := problemsOf(diffs)
			want := tc.want
			if want == nil {
				want = []problem{}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("reader %s, writer %s:\n got  %v\n want %v\n%v", tc.reader, tc.writer, got, want, diffs)
			}
			for _, d := range diffs {
				if d.Message == "" {
					t.Errorf("%s at %s has no words", d.Kind, d.Path)
				}
			}
			// hamba/avro's resolver decodes what the rules allow and
			// refuses what they refuse.
			herr := hamba.NewSchemaCompatibility().Compatible(r.Schema(), w.Schema())
			if (herr == nil) != (len(got) == 0) {
				t.Errorf("hamba/avro says %v; the rules found %v", herr, got)
			}
		})
	}
}

// TestMessagesNameTheField: the words of a missing default name the field
// by its full name, as the Avro how-to's 409 expects.
func TestMessagesNameTheField(t *testing.T) {
	ds := parse(t, orderV3).ReadsFrom(parse(t, orderV2))
	if len(ds) != 1 || !strings.Contains(ds[0].Message, "shop.orders.OrderPlaced.channel") {
		t.Fatalf("problems %v; want one naming shop.orders.OrderPlaced.channel", ds)
	}
}

// TestLevels: the Avro how-to's story under each level: a field added with
// a default, then one without; a field removed; and the transitive case,
// where the latest schema hides a break against an earlier one.
func TestLevels(t *testing.T) {
	v1, v2, v3 := parse(t, orderV1), parse(t, orderV2), parse(t, orderV3)
	removed := parse(t, record(orderID+","+customerID))
	// b has a default in v2 and loses it in v3: v3 reads v2's data (which
	// has b) but not v1's (which has not).
	t1 := parse(t, record(orderID))
	t2 := parse(t, record(orderID+`,{"name":"b","type":"int","default":0}`))
	t3 := parse(t, record(orderID+`,{"name":"b","type":"int"}`))
	for _, tc := range []struct {
		name      string
		existing  []schema.Document
		candidate schema.Document
		level     schema.Level
		want      []problem
	}{
		{"default added under BACKWARD", []schema.Document{v1}, v2, schema.Backward, nil},
		{"default added under FULL", []schema.Document{v1}, v2, schema.Full, nil},
		{"no default under BACKWARD", []schema.Document{v1, v2}, v3, schema.Backward, []problem{{avro.ReaderFieldMissingDefaultValue, "/fields/4"}}},
		{"no default under FORWARD", []schema.Document{v1, v2}, v3, schema.Forward, nil},
		{"removal under BACKWARD", []schema.Document{v1}, removed, schema.Backward, nil},
		{"removal under FORWARD", []schema.Document{v1}, removed, schema.Forward, []problem{{avro.ReaderFieldMissingDefaultValue, "/fields/2"}}},
		{"removal under FULL", []schema.Document{v1}, removed, schema.Full, []problem{{avro.ReaderFieldMissingDefaultValue, "/fields/2"}}},
		{"removal under NONE", []schema.Document{v1}, removed, schema.None, nil},
		{"latest only under BACKWARD", []schema.Document{t1, t2}, t3, schema.Backward, nil},
		{"every earlier under BACKWARD_TRANSITIVE", []schema.Document{t1, t2}, t3, schema.BackwardTransitive, []problem{{avro.ReaderFieldMissingDefaultValue, "/fields/1"}}},
		{"every earlier under FULL_TRANSITIVE", []schema.Document{t1, t2}, t3, schema.FullTransitive, []problem{{avro.ReaderFieldMissingDefaultValue, "/fields/1"}}},
		{"FORWARD_TRANSITIVE", []schema.Document{v1, v2}, removed, schema.ForwardTransitive,
			[]problem{{avro.ReaderFieldMissingDefaultValue, "/fields/2"}, {avro.ReaderFieldMissingDefaultValue, "/fields/2"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []problem
			for _, p := range schema.Judge(tc.level, tc.existing, tc.candidate).Problems {
				got = append(got, problem{p.Kind, p.Path})
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
