package jsonschema

import (
	"bytes"
	"errors"
	"fmt"
	gourl "net/url"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// ErrInvalidSchema: a stored document is not a JSON Schema the validator
// can compile (it breaks its draft's meta-schema, uses an unknown draft,
// or refers to a document no reference names). Registry.Validate reports
// it wrapped in sqlstreams.ErrNoValidator.
var ErrInvalidSchema = errors.New("JSON Schema cannot be compiled")

// root is the made-up URL a document is compiled at: references without a
// scheme resolve against it (money.json becomes sqlstreams-registry:///
// money.json), and its scheme is nobody's, so no name can reach a real
// location.
const root = "sqlstreams-registry:///schema.json"

// Compiler returns the schema.Compiler to pass to
// sqlstreams.WithJSONValidation. It is safe for concurrent use: every
// Compile builds a validator of its own.
func Compiler() schema.Compiler { return compiler{} }

type compiler struct{}

// Compile makes a validator of src.Schema, resolving its "$ref"s among
// src.References only.
func (compiler) Compile(src schema.JSONSource) (schema.Validator, error) {
	doc, err := parse(src.Schema)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	docs, err := referenced(doc, src.References)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(docs)
	if err := c.AddResource(root, doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	s, err := c.Compile(root)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, strings.ReplaceAll(err.Error(), root, "the schema"))
	}
	return validator{s: s}, nil
}

// parse reads JSON as the validator wants it: numbers as json.Number, so
// that no integer loses precision to float64.
func parse(b []byte) (any, error) {
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}

// namedDocs is the loader of one compilation: the referenced documents by
// every URL a "$ref" may resolve to. Anything else is refused, which keeps
// the library's default loader (files) out of reach of a stored schema.
type namedDocs map[string]any

func (d namedDocs) Load(url string) (any, error) {
	if doc, ok := d[url]; ok {
		return doc, nil
	}
	return nil, fmt.Errorf("no reference of the revision names %s", strings.TrimPrefix(url, "sqlstreams-registry:///"))
}

// referenced parses each referenced document and binds it to the URLs a
// "$ref" to its name can resolve to: the name against the root and
// against every "$id" in the set, and the document's own "$id". The first
// binding of a URL wins; names are taken in order, so the result does not
// depend on map order.
func referenced(main any, refs map[string][]byte) (namedDocs, error) {
	names := make([]string, 0, len(refs))
	for name := range refs {
		names = append(names, name)
	}
	slices.Sort(names)
	parsed := make(map[string]any, len(refs))
	bases := []string{root}
	if id := idOf(main, root); id != "" {
		bases = append(bases, id)
	}
	for _, name := range names {
		doc, err := parse(refs[name])
		if err != nil {
			return nil, fmt.Errorf("referenced document %q: %v", name, err)
		}
		parsed[name] = doc
		if id := idOf(doc, root); id != "" {
			bases = append(bases, id)
		}
	}
	out := namedDocs{}
	for _, name := range names {
		doc := parsed[name]
		if id := idOf(doc, root); id != "" {
			bind(out, id, doc)
		}
		for _, base := range bases {
			if u := resolve(base, name); u != "" {
				bind(out, u, doc)
			}
		}
	}
	return out, nil
}

func bind(out namedDocs, url string, doc any) {
	if _, taken := out[url]; !taken {
		out[url] = doc
	}
}

// idOf is a document's root "$id" (draft-04's "id"), resolved against
// base, without its fragment; "" when it has none.
func idOf(doc any, base string) string {
	m, ok := doc.(map[string]any)
	if !ok {
		return ""
	}
	id, ok := m["$id"].(string)
	if !ok {
		id, _ = m["id"].(string)
	}
	if id == "" {
		return ""
	}
	return resolve(base, id)
}

// resolve is ref resolved against base as a "$ref" is (RFC 3986), without
// the fragment; "" when either does not parse.
func resolve(base, ref string) string {
	ref, _, _ = strings.Cut(ref, "#")
	b, err := gourl.Parse(base)
	if err != nil {
		return ""
	}
	r, err := gourl.Parse(ref)
	if err != nil {
		return ""
	}
	return b.ResolveReference(r).String()
}
