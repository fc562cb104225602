package sqlstreams_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/memdriver"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// requireFormat is a fake format whose document is the name of a field a
// message must carry; its documents validate.
type requireFormat struct{ validates bool }

func (f requireFormat) Type() schema.Type { return "REQUIRE" }
func (f requireFormat) Parse(text []byte) (schema.Document, error) {
	if f.validates {
		return requireDoc{field: string(text)}, nil
	}
	return plainDoc{requireDoc{field: string(text)}}, nil
}

type requireDoc struct{ field string }

func (d requireDoc) Type() schema.Type                             { return "REQUIRE" }
func (d requireDoc) Canonical() []byte                             { return []byte(d.field) }
func (d requireDoc) ReadsFrom(schema.Document) []schema.Difference { return nil }
func (d requireDoc) Validate(payload []byte) []schema.Violation {
	var m map[string]any
	if json.Unmarshal(payload, &m) != nil {
		return []schema.Violation{{Path: "", Message: "not an object"}}
	}
	if _, ok := m[d.field]; !ok {
		return []schema.Violation{{Path: "/" + d.field, Message: "missing"}}
	}
	return nil
}

// plainDoc is a document of a format that cannot validate.
type plainDoc struct{ d requireDoc }

func (p plainDoc) Type() schema.Type                               { return p.d.Type() }
func (p plainDoc) Canonical() []byte                               { return p.d.Canonical() }
func (p plainDoc) ReadsFrom(w schema.Document) []schema.Difference { return nil }

// jsonFields is a fake JSON compiler: a document lists required fields;
// a document {"$ref": name} takes the first required field of the
// document its references bind to name.
type jsonFields struct{}

func (jsonFields) Compile(src schema.JSONSource) (schema.Validator, error) {
	var s struct {
		Required []string
		Ref      string `json:"$ref"`
	}
	if err := json.Unmarshal(src.Schema, &s); err != nil {
		return nil, err
	}
	if s.Ref != "" {
		text, ok := src.References[s.Ref]
		if !ok {
			return nil, fmt.Errorf("no reference named %q", s.Ref)
		}
		return jsonFields{}.Compile(schema.JSONSource{Schema: text, References: src.References})
	}
	if len(s.Required) == 0 {
		return requireDoc{field: "\x00none"}, errors.New("no required field")
	}
	return requireDoc{field: s.Required[0]}, nil
}

func openValidating(t *testing.T, opts ...sqlstreams.ClientOption) (*sqlstreams.Client, context.Context) {
	t.Helper()
	ctx := context.Background()
	c, err := sqlstreams.Open(ctx, memdriver.Open(), append(opts, sqlstreams.WithMaintenanceInterval(0))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Stream[sqlstreams.RawPayload]("orders").Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	return c, ctx
}

// TestRegistryValidate: Validate checks a message against the latest
// revision at its version, names the path of each problem, matches
// ErrInvalidMessage when the message breaks it, and says what is missing
// when it cannot validate.
func TestRegistryValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		validates bool
		typ       schema.Type
		docs      []string // registered at version 1, oldest first
		version   int
		payload   string
		wantErr   error
		wantPath  string
		withJSON  bool
	}{
		{"valid", true, "REQUIRE", []string{"id"}, 1, `{"id":1}`, nil, "", false},
		{"invalid names the path", true, "REQUIRE", []string{"id"}, 1, `{"name":"x"}`, sqlstreams.ErrInvalidMessage, "/id", false},
		{"latest revision decides", true, "REQUIRE", []string{"id", "sku"}, 1, `{"id":1}`, sqlstreams.ErrInvalidMessage, "/sku", false},
		{"nothing at the version", true, "REQUIRE", []string{"id"}, 2, `{"id":1}`, sqlstreams.ErrRevisionNotFound, "", false},
		{"format cannot validate", false, "REQUIRE", []string{"id"}, 1, `{"id":1}`, sqlstreams.ErrNoValidator, "", false},
		{"JSON without a compiler", true, schema.TypeJSON, []string{`{"type":"object","required":["id"]}`}, 1, `{"id":1}`, sqlstreams.ErrNoValidator, "", false},
		{"JSON with a compiler", true, schema.TypeJSON, []string{`{"type":"object","required":["id"]}`}, 1, `{"x":1}`, sqlstreams.ErrInvalidMessage, "/id", true},
		{"version out of range", true, "REQUIRE", []string{"id"}, 0, `{"id":1}`, sqlstreams.ErrInvalidOption, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := []sqlstreams.ClientOption{sqlstreams.WithFormats(requireFormat{validates: tc.validates})}
			if tc.withJSON {
				opts = append(opts, sqlstreams.WithJSONValidation(jsonFields{}))
			}
			c, ctx := openValidating(t, opts...)
			reg := c.Registry()
			if err := reg.SetLevel(ctx, "orders", schema.None); err != nil {
				t.Fatal(err)
			}
			for _, d := range tc.docs {
				if _, err := reg.RegisterSchema(ctx, sqlstreams.SchemaRegistration{Stream: "orders", Version: 1, Type: tc.typ, Schema: []byte(d)}); err != nil {
					t.Fatal(err)
				}
			}
			err := reg.Validate(ctx, "orders", tc.version, []byte(tc.payload))
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("Validate: %v, want %v", err, tc.wantErr)
			}
			if tc.wantPath == "" {
				return
			}
			var verr *sqlstreams.ValidationError
			if !errors.As(err, &verr) || len(verr.Violations) != 1 || verr.Violations[0].Path != tc.wantPath {
				t.Fatalf("Validate: %#v, want one violation at %s", err, tc.wantPath)
			}
			if verr.Revision != len(tc.docs) || !strings.Contains(err.Error(), tc.wantPath) {
				t.Errorf("error %q: revision %d, want %d and the path in the text", err, verr.Revision, len(tc.docs))
			}
		})
	}
}

// TestProducerValidate: a RawPayload producer with Validate writes nothing
// of a batch holding a message that breaks its version's schema, writes
// messages that follow it, and a typed producer cannot opt in.
func TestProducerValidate(t *testing.T) {
	t.Parallel()
	c, ctx := openValidating(t, sqlstreams.WithFormats(requireFormat{validates: true}))
	if _, err := c.Registry().RegisterSchema(ctx, sqlstreams.SchemaRegistration{Stream: "orders", Version: 1, Type: "REQUIRE", Schema: []byte("id")}); err != nil {
		t.Fatal(err)
	}
	stream := c.Stream[sqlstreams.RawPayload]("orders")
	p, err := stream.Producer().Register(ctx, &sqlstreams.ProducerOptions{Validate: true})
	if err != nil {
		t.Fatal(err)
	}
	good := sqlstreams.RawPayload{Version: 1, Data: json.RawMessage(`{"id":1}`)}
	bad := sqlstreams.RawPayload{Version: 1, Data: json.RawMessage(`{"sku":"a"}`)}
	_, err = p.ProduceBatch(ctx, sqlstreams.NewMessage(good), sqlstreams.NewMessage(bad))
	var verr *sqlstreams.ValidationError
	if !errors.Is(err, sqlstreams.ErrInvalidMessage) || !errors.As(err, &verr) || verr.Violations[0].Path != "/id" {
		t.Fatalf("ProduceBatch with an invalid message: %v, want a ValidationError at /id", err)
	}
	if _, err := p.Produce(ctx, sqlstreams.RawPayload{Version: 2, Data: json.RawMessage(`{"id":1}`)}); !errors.Is(err, sqlstreams.ErrRevisionNotFound) {
		t.Fatalf("Produce at an unregistered version: %v, want ErrRevisionNotFound", err)
	}
	if _, err := p.Produce(ctx, good); err != nil {
		t.Fatalf("Produce a valid message: %v", err)
	}
	page, err := stream.Browse(ctx, sqlstreams.BrowseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Records) != 1 {
		t.Fatalf("the stream holds %d records, want only the valid one", len(page.Records))
	}
	unchecked, err := stream.Producer().Register(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unchecked.Produce(ctx, bad); err != nil {
		t.Fatalf("a producer without Validate checks nothing: %v", err)
	}
	if _, err := c.Stream[OrderPlacedV1]("typed").Producer().Register(ctx, &sqlstreams.ProducerOptions{Validate: true}); !errors.Is(err, sqlstreams.ErrInvalidOption) {
		t.Fatalf("typed producer with Validate: %v, want ErrInvalidOption", err)
	}
}

// TestValidateJSONReferences: the JSON compiler is given the documents a
// revision's references reach, transitively and by the names the
// references bind, and a revision it cannot compile is ErrNoValidator.
func TestValidateJSONReferences(t *testing.T) {
	t.Parallel()
	c, ctx := openValidating(t, sqlstreams.WithJSONValidation(jsonFields{}))
	reg := c.Registry()
	for _, r := range []sqlstreams.SchemaRegistration{
		{Stream: "money", Version: 1, Schema: []byte(`{"type":"object","required":["cents"]}`)},
		{Stream: "price", Version: 1, Schema: []byte(`{"$ref":"money.json"}`),
			References: []sqlstreams.Reference{{Name: "money.json", Stream: "money", Version: 1}}},
		{Stream: "orders", Version: 1, Schema: []byte(`{"$ref":"price.json"}`),
			References: []sqlstreams.Reference{{Name: "price.json", Stream: "price", Version: 1}}},
		{Stream: "orders", Version: 2, Schema: []byte(`{"type":"object"}`)},
	} {
		if _, err := reg.RegisterSchema(ctx, r); err != nil {
			t.Fatalf("register %s v%d: %v", r.Stream, r.Version, err)
		}
	}
	err := reg.Validate(ctx, "orders", 1, []byte(`{"currency":"EUR"}`))
	var verr *sqlstreams.ValidationError
	if !errors.As(err, &verr) || verr.Violations[0].Path != "/cents" {
		t.Fatalf("Validate through two references: %v, want a violation at /cents", err)
	}
	if err := reg.Validate(ctx, "orders", 1, []byte(`{"cents":1}`)); err != nil {
		t.Fatalf("Validate a message the referenced document accepts: %v", err)
	}
	if err := reg.Validate(ctx, "orders", 2, []byte(`{}`)); !errors.Is(err, sqlstreams.ErrNoValidator) || !strings.Contains(err.Error(), "no required field") {
		t.Fatalf("Validate against a document the compiler refuses: %v, want ErrNoValidator with the compiler's reason", err)
	}
}
