package avro_test

import (
	"encoding/json"
	"os"
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

// resolutionCase is one case of testdata/resolution.json: a reader and a
// writer (Avro schemas, as JSON) and the problems the reader meets, none
// when it resolves the writer. The cases live in a file so that the
// Confluent wire tests (.tests/drivers/ccompat) replay the same ones
// through the API.
type resolutionCase struct {
	Name   string          `json:"name"`
	Reader json.RawMessage `json:"reader"`
	Writer json.RawMessage `json:"writer"`
	Want   []struct {
		Kind schema.DiffKind `json:"kind"`
		Path string          `json:"path"`
	} `json:"want"`
}

func resolutionCases(t *testing.T) []resolutionCase {
	raw, err := os.ReadFile("testdata/resolution.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []resolutionCase
	if err := json.Unmarshal(raw, &cases); err != nil || len(cases) == 0 {
		t.Fatalf("testdata/resolution.json: %d cases, %v", len(cases), err)
	}
	return cases
}

// TestResolution: each rule of Avro's schema resolution, reader against
// writer, with the kind and the path of what breaks; and hamba/avro's own
// resolver agrees on every verdict.
func TestResolution(t *testing.T) {
	for _, c := range resolutionCases(t) {
		tc := struct {
			name           string
			reader, writer string
			want           []problem
		}{name: c.Name, reader: string(c.Reader), writer: string(c.Writer)}
		for _, p := range c.Want {
			tc.want = append(tc.want, problem{p.Kind, p.Path})
		}
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
