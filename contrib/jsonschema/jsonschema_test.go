package jsonschema_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sqlstreams/sqlstreams/contrib/jsonschema"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/memdriver"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// order is a 2020-12 document with a nested object, an array, an enum, a
// closed model and bounds: one of each kind of violation.
const order = `{
  "type": "object",
  "properties": {
    "id": {"type": "string", "minLength": 3},
    "qty": {"type": "integer", "minimum": 1},
    "status": {"enum": ["new", "paid"]},
    "at": {"type": "string", "format": "date-time"},
    "lines": {"type": "array", "items": {
      "type": "object",
      "properties": {"sku": {"type": "string", "pattern": "^[A-Z]+$"}, "a/b": {"type": "number"}},
      "required": ["sku"]
    }},
    "pay": {"anyOf": [{"type": "string"}, {"type": "object", "required": ["card"]}]}
  },
  "required": ["id", "qty"],
  "additionalProperties": false
}`

func compile(t *testing.T, src schema.JSONSource) schema.Validator {
	t.Helper()
	v, err := jsonschema.Compiler().Compile(src)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return v
}

// TestValidate: each kind of violation is reported once, at the JSON
// Pointer of the value at fault, with words that name the rule.
func TestValidate(t *testing.T) {
	t.Parallel()
	v := compile(t, schema.JSONSource{Schema: []byte(order)})
	for _, tc := range []struct {
		name    string
		payload string
		want    []string // "path: words in the message"
	}{
		{"valid", `{"id":"abc","qty":2,"status":"paid","at":"2026-01-02T03:04:05Z","lines":[{"sku":"AB","a/b":1.5}],"pay":"cash"}`, nil},
		{"wrong type", `{"id":7,"qty":1}`, []string{"/id: want string"}},
		{"missing required", `{"qty":1}`, []string{"/id: missing"}},
		{"two missing", `{}`, []string{"/id: missing", "/qty: missing"}},
		{"not allowed", `{"id":"abc","qty":1,"tip":5}`, []string{"/tip: not allowed"}},
		{"below minimum", `{"id":"abc","qty":0}`, []string{"/qty: minimum"}},
		{"integer", `{"id":"abc","qty":1.5}`, []string{"/qty: want integer"}},
		{"too short", `{"id":"ab","qty":1}`, []string{"/id: minLength"}},
		{"enum", `{"id":"abc","qty":1,"status":"lost"}`, []string{"/status: value must be one of"}},
		{"format", `{"id":"abc","qty":1,"at":"yesterday"}`, []string{"/at: date-time"}},
		{"nested in an array", `{"id":"abc","qty":1,"lines":[{"sku":"AB"},{"sku":"ab"}]}`, []string{"/lines/1/sku: does not match pattern"}},
		{"missing in an array", `{"id":"abc","qty":1,"lines":[{}]}`, []string{"/lines/0/sku: missing"}},
		{"pointer escapes", `{"id":"abc","qty":1,"lines":[{"sku":"A","a/b":"x"}]}`, []string{"/lines/0/a~1b: want number"}},
		{"anyOf", `{"id":"abc","qty":1,"pay":{}}`, []string{"/pay: matches no alternative of anyOf: /pay: got object, want string | /pay/card: missing"}},
		{"whole message", `[1]`, []string{": want object"}},
		{"several at once", `{"id":1,"qty":0,"x":1}`, []string{"/id: want string", "/qty: minimum", "/x: not allowed"}},
		{"not JSON", `{"id":`, []string{": not JSON"}},
		{"trailing data", `{"id":"abc","qty":1} {}`, []string{": not JSON"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := v.Validate([]byte(tc.payload))
			if len(got) != len(tc.want) {
				t.Fatalf("Validate(%s): %v, want %d violation(s) %q", tc.payload, got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				path, words, _ := strings.Cut(w, ": ")
				if got[i].Path != path || !strings.Contains(got[i].Message, words) {
					t.Errorf("violation %d: %q at %q, want %q at %q", i, got[i].Message, got[i].Path, words, path)
				}
			}
		})
	}
}

// TestDrafts: "$schema" chooses the draft, and a document without one is
// read as 2020-12.
func TestDrafts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, doc, payload string
		valid              bool
	}{
		// prefixItems is 2020-12's: draft-07 ignores it.
		{"2020-12 by default", `{"prefixItems":[{"type":"string"}]}`, `[1]`, false},
		{"draft-07 ignores prefixItems", `{"$schema":"http://json-schema.org/draft-07/schema#","prefixItems":[{"type":"string"}]}`, `[1]`, true},
		// An items array is draft-07's tuple; in 2020-12 it is not a schema.
		{"draft-07 tuple", `{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"string"}]}`, `[1]`, false},
		// draft-04's boolean exclusiveMinimum.
		{"draft-04 exclusiveMinimum", `{"$schema":"http://json-schema.org/draft-04/schema#","minimum":1,"exclusiveMinimum":true}`, `1`, false},
		{"2019-09 dependentRequired", `{"$schema":"https://json-schema.org/draft/2019-09/schema","dependentRequired":{"a":["b"]}}`, `{"a":1}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, err := jsonschema.Compiler().Compile(schema.JSONSource{Schema: []byte(tc.doc)})
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			if got := v.Validate([]byte(tc.payload)); (len(got) == 0) != tc.valid {
				t.Fatalf("Validate(%s): %v, want valid=%v", tc.payload, got, tc.valid)
			}
		})
	}
}

// TestReferences: a "$ref" resolves among the documents the references
// name, by the name, by the name against an "$id", transitively, with a
// fragment into the referenced document; nothing else is loaded.
func TestReferences(t *testing.T) {
	t.Parallel()
	money := `{"type":"object","properties":{"cents":{"type":"integer"}},"required":["cents"],"$defs":{"currency":{"enum":["EUR","USD"]}}}`
	price := `{"type":"object","properties":{"amount":{"$ref":"money.json"},"currency":{"$ref":"money.json#/$defs/currency"}}}`
	refs := map[string][]byte{"money.json": []byte(money), "price.json": []byte(price)}
	for _, tc := range []struct {
		name, doc, payload, wantPath string
		refs                         map[string][]byte
	}{
		{"by name", `{"$ref":"money.json"}`, `{"cents":"1"}`, "/cents", refs},
		{"by name, valid", `{"$ref":"money.json"}`, `{"cents":1}`, "", refs},
		{"transitively", `{"properties":{"price":{"$ref":"price.json"}}}`, `{"price":{"amount":{}}}`, "/price/amount/cents", refs},
		{"fragment", `{"properties":{"price":{"$ref":"price.json"}}}`, `{"price":{"currency":"GBP"}}`, "/price/currency", refs},
		{"against the $id", `{"$id":"https://shop.example/order.json","properties":{"total":{"$ref":"money.json"}}}`, `{"total":{}}`, "/total/cents", refs},
		{"by the referenced $id", `{"properties":{"total":{"$ref":"https://shop.example/m.json"}}}`, `{"total":{}}`, "/total/cents",
			map[string][]byte{"m": []byte(`{"$id":"https://shop.example/m.json","required":["cents"]}`)}},
		{"a reflected name", `{"$ref":"money-v1"}`, `{}`, "/cents", map[string][]byte{"money-v1": []byte(money)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := compile(t, schema.JSONSource{Schema: []byte(tc.doc), References: tc.refs})
			got := v.Validate([]byte(tc.payload))
			if tc.wantPath == "" {
				if len(got) != 0 {
					t.Fatalf("Validate(%s): %v, want valid", tc.payload, got)
				}
				return
			}
			if len(got) != 1 || got[0].Path != tc.wantPath {
				t.Fatalf("Validate(%s): %v, want one violation at %s", tc.payload, got, tc.wantPath)
			}
		})
	}
}

// TestBadSchema: a document the validator cannot compile is
// ErrInvalidSchema with the reason, and a "$ref" no reference names is
// never read from the file system or the network.
func TestBadSchema(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, doc, words string
		refs             map[string][]byte
	}{
		{"not JSON", `{"type":`, "unexpected EOF", nil},
		{"breaks the meta-schema", `{"type":"strin"}`, "type", nil},
		{"bad pattern", `{"pattern":"("}`, "pattern", nil},
		{"unnamed reference", `{"$ref":"customer.json"}`, "customer.json", nil},
		{"unknown draft", `{"$schema":"https://example.com/my-meta"}`, "my-meta", nil},
		{"bad referenced document", `{"$ref":"a.json"}`, `"a.json"`, map[string][]byte{"a.json": []byte(`{`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := jsonschema.Compiler().Compile(schema.JSONSource{Schema: []byte(tc.doc), References: tc.refs})
			if !errors.Is(err, jsonschema.ErrInvalidSchema) || !strings.Contains(err.Error(), tc.words) {
				t.Fatalf("Compile(%s): %v, want ErrInvalidSchema naming %q", tc.doc, err, tc.words)
			}
		})
	}
}

// TestNoFileAccess: a "$ref" to a schema file that exists, as an absolute
// file URL or as a path relative to the working directory, is not read
// (the library's default loader would read both). Not parallel: it
// changes directory.
func TestNoFileAccess(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "customer.json")
	if err := os.WriteFile(file, []byte(`{"type":"object"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, ref := range []string{"file://" + filepath.ToSlash(file), "customer.json"} {
		doc := `{"$ref":"` + ref + `"}`
		if _, err := jsonschema.Compiler().Compile(schema.JSONSource{Schema: []byte(doc)}); !errors.Is(err, jsonschema.ErrInvalidSchema) {
			t.Errorf("Compile(%s) with the file present: %v, want ErrInvalidSchema", doc, err)
		}
	}
}

// TestConcurrent: one compiled validator serves many goroutines (the
// registry shares it within a produce call); run with -race.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	v := compile(t, schema.JSONSource{Schema: []byte(order)})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			payload := `{"id":"abc","qty":1}`
			if i%2 == 1 {
				payload = `{"qty":1}`
			}
			for range 50 {
				if got := v.Validate([]byte(payload)); len(got) != i%2 {
					t.Errorf("Validate(%s): %v", payload, got)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestThroughTheRegistry: Registry.Validate hands the compiler the stored
// revision; one the registry accepted but the validator cannot compile
// matches both sqlstreams.ErrNoValidator and ErrInvalidSchema.
func TestThroughTheRegistry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, err := sqlstreams.Open(ctx, memdriver.Open(), sqlstreams.WithJSONValidation(jsonschema.Compiler()), sqlstreams.WithMaintenanceInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	reg := c.Registry()
	if _, err := reg.Register(ctx, "orders", 1, []byte(order)); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(ctx, "odd", 1, []byte(`{"$schema":"https://example.com/my-meta","type":"object"}`)); err != nil {
		t.Fatal(err)
	}
	err = reg.Validate(ctx, "orders", 1, []byte(`{"id":"abc","qty":0}`))
	var verr *sqlstreams.ValidationError
	if !errors.As(err, &verr) || len(verr.Violations) != 1 || verr.Violations[0].Path != "/qty" || !errors.Is(err, sqlstreams.ErrInvalidMessage) {
		t.Fatalf("Validate: %v, want one violation at /qty", err)
	}
	if err := reg.Validate(ctx, "orders", 1, []byte(`{"id":"abc","qty":1}`)); err != nil {
		t.Fatalf("Validate a valid message: %v", err)
	}
	err = reg.Validate(ctx, "odd", 1, []byte(`{}`))
	if !errors.Is(err, sqlstreams.ErrNoValidator) || !errors.Is(err, jsonschema.ErrInvalidSchema) {
		t.Fatalf("Validate against an unknown draft: %v, want ErrNoValidator and ErrInvalidSchema", err)
	}
}

// TestOrder: the problems of one message come in one order, by path
// (array indexes as numbers), whatever order the library met them in.
func TestOrder(t *testing.T) {
	t.Parallel()
	v := compile(t, schema.JSONSource{Schema: []byte(`{"type":"object","additionalProperties":false,"properties":{"list":{"type":"array","items":{"type":"integer"}}}}`)})
	payload := `{"z":1,"list":[0,1,2,3,4,5,6,7,8,9,"ten","eleven"],"b":1,"a":1,"m":1}`
	want := []string{"/a", "/b", "/list/10", "/list/11", "/m", "/z"}
	for range 20 {
		got := v.Validate([]byte(payload))
		var paths []string
		for _, g := range got {
			paths = append(paths, g.Path)
		}
		if !slices.Equal(paths, want) {
			t.Fatalf("paths %q, want %q", paths, want)
		}
	}
}
