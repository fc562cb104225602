package ccompat_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
)

// ruleCase is one case of the format modules' rule tables: a writer, a
// reader and what judging the reader against the writer finds. The tables
// are the files contrib/avro's TestResolution and contrib/protobuf's
// TestRules read, so the wire replays exactly the cases the units prove.
type ruleCase struct {
	Name   string          `json:"name"`
	Writer json.RawMessage `json:"writer"`
	Reader json.RawMessage `json:"reader"`
	Want   []struct {
		Kind string `json:"kind"`
		Path string `json:"path"`
		// Compatible is only in the Protobuf table, which lists the
		// differences that break nothing too; Avro's lists problems.
		Compatible bool `json:"compatible"`
	} `json:"want"`
}

// text is the schema text of a side: Avro's tables hold JSON schemas as
// they are, Protobuf's hold .proto files as JSON strings.
func (c ruleCase) text(t *testing.T, side json.RawMessage, typ sr.SchemaType) string {
	if typ == sr.TypeAvro {
		return string(side)
	}
	var s string
	if err := json.Unmarshal(side, &s); err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	return s
}

func readRuleCases(t *testing.T, path string) []ruleCase {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cases []ruleCase
	if err := json.Unmarshal(raw, &cases); err != nil || len(cases) == 0 {
		t.Fatalf("%s: %d cases, %v", path, len(cases), err)
	}
	return cases
}

// TestRulesWire replays every case of contrib/avro's TestResolution and of
// contrib/protobuf's TestRules through the Confluent API with franz-go's
// client, on SQLite and PostgreSQL: the writer is registered under a
// subject of its own (BACKWARD, the default level, so the candidate reads
// the registered schema's data), and a verbose compatibility check of the
// reader answers the unit's verdict, one message per problem naming its
// kind and path, in the unit's order.
func TestRulesWire(t *testing.T) {
	t.Parallel()
	tables := []struct {
		typ   sr.SchemaType
		cases []ruleCase
	}{
		{sr.TypeAvro, readRuleCases(t, "../../../contrib/avro/testdata/resolution.json")},
		{sr.TypeProtobuf, readRuleCases(t, "../../../contrib/protobuf/testdata/rules.json")},
	}
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			cl := newSR(t, serve(t, b.open(t), nil).URL)
			for _, table := range tables {
				for i, c := range table.cases {
					t.Run(table.typ.String()+"/"+c.Name, func(t *testing.T) {
						subject := fmt.Sprintf("rules.%s.%d-value", strings.ToLower(table.typ.String()), i)
						replayRule(t, cl, subject, table.typ, c)
					})
				}
			}
		})
	}
}

func replayRule(t *testing.T, cl *sr.Client, subject string, typ sr.SchemaType, c ruleCase) {
	writer := sr.Schema{Schema: c.text(t, c.Writer, typ), Type: typ}
	reader := sr.Schema{Schema: c.text(t, c.Reader, typ), Type: typ}
	if _, err := cl.CreateSchema(ctx(t), subject, writer); err != nil {
		t.Fatalf("register the writer: %v", err)
	}
	var want []string
	for _, w := range c.Want {
		if typ == sr.TypeAvro || !w.Compatible {
			want = append(want, w.Kind+" at "+w.Path+": ")
		}
	}
	res, err := cl.CheckCompatibility(sr.WithParams(ctx(t), sr.Verbose), subject, -1, reader)
	if err != nil {
		t.Fatal(err)
	}
	if res.Is != (len(want) == 0) || len(res.Messages) != len(want) {
		t.Fatalf("compatible %v, messages %q; want %d problems %q", res.Is, res.Messages, len(want), want)
	}
	for i, m := range res.Messages {
		if !strings.HasPrefix(m, want[i]) {
			t.Errorf("message %d %q; want it to start %q", i, m, want[i])
		}
	}
}
