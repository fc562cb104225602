package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

func init() { register("R11_Formats", testFormats) }

// linesType is the type of linesFormat, a schema language made up for this
// test so that the suite proves the storage of document types without a
// parser (a driver module running it links none): a document is a list of
// field names, one a line; a reader reads a writer's data when the writer
// has every field the reader lists. A line "@name" takes in the fields of
// the document a reference of that name binds (schema.ReferenceParser).
const linesType schema.Type = "LINES"

type linesFormat struct{}

func (linesFormat) Type() schema.Type { return linesType }

func (f linesFormat) Parse(text []byte) (schema.Document, error) { return f.ParseReferences(text, nil) }

func (linesFormat) ParseReferences(text []byte, refs []schema.Referenced) (schema.Document, error) {
	bound := map[string][]string{}
	var fields []string
	for _, doc := range append(refs, schema.Referenced{Text: text}) {
		fields = nil
		for line := range strings.Lines(string(doc.Text)) {
			f := strings.TrimSpace(line)
			if name, ok := strings.CutPrefix(f, "@"); ok {
				in, found := bound[name]
				if !found {
					return nil, fmt.Errorf("lines: no reference named %q", name)
				}
				fields = append(fields, in...)
			} else if f != "" {
				fields = append(fields, f)
			}
		}
		bound[doc.Name] = fields
	}
	if len(fields) == 0 {
		return nil, errors.New("lines: no field; write one field name a line")
	}
	slices.Sort(fields)
	return linesDoc(slices.Compact(fields)), nil
}

type linesDoc []string

func (d linesDoc) Type() schema.Type { return linesType }
func (d linesDoc) Canonical() []byte { return []byte(strings.Join(d, "\n")) }

const linesFieldMissing schema.DiffKind = "FIELD_MISSING"

func (d linesDoc) ReadsFrom(writer schema.Document) []schema.Difference {
	var out []schema.Difference
	w := writer.(linesDoc)
	for i, f := range d {
		if !slices.Contains(w, f) {
			out = append(out, schema.Difference{Kind: linesFieldMissing, Path: fmt.Sprintf("/%d", i), Message: "the writer has no field " + f})
		}
	}
	return out
}

// R11, the part every driver stores: a registered document has a type,
// stored with it and part of its fingerprint and global id (the same text
// as JSON and as another type is two schemas); documents are kept as
// registered; a version's revisions are judged by their format's rules,
// and a document of another type than the revisions it follows is a
// SCHEMA_TYPE_CHANGED problem, also for a client that cannot parse it.
func testFormats(t *testing.T, h *harness) {
	c := h.client(t, sqlstreams.WithFormats(linesFormat{}))
	reg := c.Registry()
	if got := reg.Types(); !slices.Equal(got, []schema.Type{schema.TypeJSON, linesType}) {
		t.Errorf("Types() = %v, want [JSON LINES]", got)
	}

	// One text, two types: two schemas.
	text := []byte(`{"type": "object"}`)
	asJSON, err := reg.Register(ctx(t), "r11-json", 1, text)
	if err != nil {
		t.Fatal(err)
	}
	asLines, err := reg.RegisterSchema(ctx(t), sqlstreams.SchemaRegistration{Stream: "r11-lines", Version: 1, Type: linesType, Schema: text})
	if err != nil {
		t.Fatal(err)
	}
	if asJSON.Type != schema.TypeJSON || asLines.Type != linesType {
		t.Errorf("types recorded: %q and %q, want JSON and LINES", asJSON.Type, asLines.Type)
	}
	if asJSON.ID == asLines.ID || asJSON.Fingerprint == asLines.Fingerprint {
		t.Errorf("the same text as JSON and as LINES: ids %d/%d, fingerprints %s/%s; want two schemas", asJSON.ID, asLines.ID, asJSON.Fingerprint, asLines.Fingerprint)
	}
	for _, check := range []struct {
		stream string
		typ    schema.Type
		id     int64
	}{{"r11-json", schema.TypeJSON, asJSON.ID}, {"r11-lines", linesType, asLines.ID}} {
		revs := revisions(t, c, check.stream, 1)
		if len(revs) != 1 || revs[0].Type != check.typ || revs[0].ID != check.id {
			t.Errorf("%s: revisions %+v; want one %s revision with id %d", check.stream, revs, check.typ, check.id)
		}
		doc, err := reg.SchemaByID(ctx(t), check.id)
		if err != nil || doc.Type != check.typ {
			t.Errorf("SchemaByID(%d) = %+v, %v; want type %s", check.id, doc, err, check.typ)
		}
	}
	if revs := revisions(t, c, "r11-lines", 1); !bytes.Equal(revs[0].Text, text) || revs[0].Schema != nil {
		t.Errorf("a LINES revision reads back as %q (JSON Schema %v); want the text as registered and no JSON Schema", revs[0].Text, revs[0].Schema)
	}
	if doc, _ := reg.SchemaByID(ctx(t), asLines.ID); !bytes.Equal(doc.Text, text) {
		t.Errorf("SchemaByID of a LINES document: %q, want the text as registered", doc.Text)
	}

	// The same document in other words is the same revision and id; its
	// first text stays.
	again, err := reg.RegisterSchema(ctx(t), sqlstreams.SchemaRegistration{Stream: "r11-lines", Version: 1, Type: linesType, Schema: []byte("\n" + string(text) + "\n\n")})
	if err != nil || again.Revision != 1 || again.ID != asLines.ID {
		t.Errorf("the same LINES document again: %+v, %v; want revision 1, id %d", again, err, asLines.ID)
	}
	if fp, err := reg.Fingerprint(ctx(t), linesType, text); err != nil || fp != asLines.Fingerprint {
		t.Errorf("Fingerprint(LINES) = %s, %v; want %s", fp, err, asLines.Fingerprint)
	}

	t.Run("FormatRules", func(t *testing.T) { testFormatRules(t, c) })
	t.Run("TypeChanged", func(t *testing.T) { testTypeChanged(t, h, c) })
}

// testFormatRules: a version's revisions of one type are judged by the
// format's own rules, with its kinds and paths; a refusal writes nothing.
func testFormatRules(t *testing.T, c *sqlstreams.Client) {
	reg := c.Registry()
	lines := func(doc string) sqlstreams.SchemaRegistration {
		return sqlstreams.SchemaRegistration{Stream: "r11-rules", Version: 1, Type: linesType, Schema: []byte(doc)}
	}
	if _, err := reg.RegisterSchema(ctx(t), lines("id\ntotal")); err != nil {
		t.Fatal(err)
	}
	want := wantProblem{"revision 1", linesFieldMissing, "/1"}
	incompatible(t, "CheckDocument of a reader needing a field the writer lacks", reg.CheckDocument(ctx(t), lines("id\nnote\ntotal")), schema.Backward, 1, want)
	incompatible(t, "CheckDocumentAgainst revision 1", reg.CheckDocumentAgainst(ctx(t), lines("id\nnote\ntotal"), 1), schema.Backward, 1, want)
	_, err := reg.RegisterSchema(ctx(t), lines("id\nnote\ntotal"))
	incompatible(t, "RegisterSchema of a reader needing a field the writer lacks", err, schema.Backward, 1, want)
	if n := len(revisions(t, c, "r11-rules", 1)); n != 1 {
		t.Errorf("a refused document left %d revisions, want 1", n)
	}
	if rev, err := reg.RegisterSchema(ctx(t), lines("id")); err != nil || rev.Revision != 2 {
		t.Errorf("a reader needing fewer fields under BACKWARD: %+v, %v; want revision 2", rev, err)
	}
	if err := reg.SetLevel(ctx(t), "r11-rules", schema.Forward); err != nil {
		t.Fatal(err)
	}
	_, err = reg.RegisterSchema(ctx(t), lines("note"))
	incompatible(t, "under FORWARD, a writer without the field revision 2 reads", err, schema.Forward, 1, wantProblem{"revision 2", linesFieldMissing, "/0"})
}

// testTypeChanged: a document of another type than the revisions at its
// version is refused under any level but NONE, by a client with the format
// and by one without it (a Go producer meeting a LINES revision).
func testTypeChanged(t *testing.T, h *harness, c *sqlstreams.Client) {
	reg := c.Registry()
	if _, err := reg.Register(ctx(t), "r11-mixed", 1, []byte(`{"type": "object"}`)); err != nil {
		t.Fatal(err)
	}
	lines := sqlstreams.SchemaRegistration{Stream: "r11-mixed", Version: 1, Type: linesType, Schema: []byte("id")}
	_, err := reg.RegisterSchema(ctx(t), lines)
	incompatible(t, "a LINES document after a JSON revision", err, schema.Backward, 1, wantProblem{"revision 1", schema.SchemaTypeChanged, "#"})
	if err := reg.SetLevel(ctx(t), "r11-mixed", schema.None); err != nil {
		t.Fatal(err)
	}
	if rev, err := reg.RegisterSchema(ctx(t), lines); err != nil || rev.Revision != 2 || rev.Type != linesType {
		t.Errorf("a LINES document after a JSON revision under NONE: %+v, %v; want revision 2 of type LINES", rev, err)
	}

	plain := h.client(t)
	if _, err := plain.Registry().RegisterSchema(ctx(t), lines); !errors.Is(err, sqlstreams.ErrInvalidOption) || !strings.Contains(err.Error(), "WithFormats") {
		t.Errorf("a LINES document on a client without the format: %v; want ErrInvalidOption naming WithFormats", err)
	}
	if revs := revisions(t, plain, "r11-mixed", 1); len(revs) != 2 || revs[1].Type != linesType || string(revs[1].Text) != "id" {
		t.Errorf("revisions through a client without the format: %+v; want the LINES one listed as registered", revs)
	}
	if _, err := reg.RegisterSchema(ctx(t), sqlstreams.SchemaRegistration{Stream: "r11-go", Version: 1, Type: linesType, Schema: []byte("id")}); err != nil {
		t.Fatal(err)
	}
	_, err = plain.Stream[EventV1]("r11-go").Producer().Register(ctx(t), nil)
	incompatible(t, "a Go producer at a version holding a LINES revision, on a client without the format", err, schema.Backward, 1,
		wantProblem{"revision 1", schema.SchemaTypeChanged, "#"})
}
