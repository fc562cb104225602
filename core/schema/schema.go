package schema

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Draft is the JSON Schema dialect Reflect declares in "$schema".
const Draft = "https://json-schema.org/draft/2020-12/schema"

// Schema is an immutable JSON Schema document: either a boolean schema
// (true accepts everything, false accepts nothing) or a JSON object.
//
// The document is kept as generic JSON rather than as a Go struct so that any
// JSON Schema (any draft, unknown keywords included) round-trips through
// Parse and MarshalJSON without loss. A nil *Schema behaves like the boolean
// schema true.
type Schema struct {
	root    any            // bool or map[string]any; never mutated
	anchors map[string]any // "$anchor" and draft-07 "$id": "#name" targets
	shared  []SharedRef    // shared types referenced by name (Reflect only)
}

func newSchema(root any) *Schema {
	s := &Schema{root: root, anchors: map[string]any{}}
	walkSchemas(root, func(m map[string]any) {
		if a, ok := m["$anchor"].(string); ok {
			s.anchors[a] = m
		}
		if id, ok := m["$id"].(string); ok && strings.HasPrefix(id, "#") && len(id) > 1 {
			s.anchors[id[1:]] = m
		}
	})
	return s
}

func (s *Schema) value() any {
	if s == nil {
		return true
	}
	return s.root
}

// MarshalJSON returns the document as compact JSON with object keys sorted,
// so equal documents always produce equal bytes. Annotations are kept; use
// Canonical for the normalized form.
func (s *Schema) MarshalJSON() ([]byte, error) {
	return marshalSorted(s.value())
}

// UnmarshalJSON parses data with Parse, so a Schema can be a field of a
// larger JSON document (a registry record, for instance).
func (s *Schema) UnmarshalJSON(data []byte) error {
	p, err := Parse(data)
	if err != nil {
		return err
	}
	*s = *p
	return nil
}

// String returns the document as indented JSON, for logs and error messages.
func (s *Schema) String() string {
	b, err := marshalSorted(s.value())
	if err != nil {
		return fmt.Sprintf("<invalid schema: %v>", err)
	}
	var out bytes.Buffer
	if json.Indent(&out, b, "", "  ") != nil {
		return string(b)
	}
	return out.String()
}

// annotationKeywords are dropped by Canonical: they document a schema but
// do not change which values it accepts, so editing them must not produce a
// new revision. "default" is deliberately kept: under GoAware it decides
// whether adding a required property is compatible.
var annotationKeywords = []string{"title", "description", "$comment", "examples"}

// Canonical returns the normalized form used by Fingerprint: compact JSON,
// keys sorted, annotation keywords (title, description, $comment, examples)
// removed from every subschema, "required" and "type" sorted and deduplicated,
// "enum" sorted, and numbers written in one canonical spelling (10.0 and 1e1
// become 10).
func (s *Schema) Canonical() []byte {
	b, err := marshalSorted(normalize(s.value(), true))
	if err != nil {
		// Unreachable: normalize only produces JSON-marshalable values.
		panic("schema: canonical form: " + err.Error())
	}
	return b
}

// Fingerprint is the hex SHA-256 of Canonical. Two schemas with the same
// fingerprint accept the same documents and carry the same defaults; the
// registry deduplicates revisions by it.
func (s *Schema) Fingerprint() string {
	sum := sha256.Sum256(s.Canonical())
	return hex.EncodeToString(sum[:])
}

func marshalSorted(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // maps are encoded with sorted keys
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// normalize returns a normalized deep copy of v. inSchema reports whether v
// sits where a schema is expected, as opposed to inside a value such as an
// "enum" member or a "default", where keys named "title" are data.
func normalize(v any, inSchema bool) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			if !inSchema {
				out[k] = normalize(x, false)
				continue
			}
			if slices.Contains(annotationKeywords, k) {
				continue
			}
			switch {
			case subschemaKeywords[k]:
				out[k] = normalize(x, true)
			case schemaListKeywords[k] || k == "items":
				out[k] = normalize(x, true) // a list normalizes each member as a schema
			case schemaMapKeywords[k]:
				m, ok := x.(map[string]any)
				if !ok {
					out[k] = normalize(x, false)
					continue
				}
				mm := make(map[string]any, len(m))
				for name, sub := range m {
					mm[name] = normalize(sub, true)
				}
				out[k] = mm
			case k == "dependencies":
				if m, ok := x.(map[string]any); ok {
					mm := make(map[string]any, len(m))
					for name, sub := range m {
						if list, ok := sub.([]any); ok {
							mm[name] = sortedUniqueStrings(list)
						} else {
							mm[name] = normalize(sub, true)
						}
					}
					out[k] = mm
				} else {
					out[k] = normalize(x, false)
				}
			case k == "required":
				if list, ok := x.([]any); ok {
					out[k] = sortedUniqueStrings(list)
				} else {
					out[k] = normalize(x, false)
				}
			case k == "type":
				if list, ok := x.([]any); ok {
					out[k] = sortedUniqueStrings(list)
				} else {
					out[k] = x
				}
			case k == "enum":
				if list, ok := x.([]any); ok {
					out[k] = sortedValues(list)
				} else {
					out[k] = normalize(x, false)
				}
			default:
				out[k] = normalize(x, false)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = normalize(x, inSchema)
		}
		return out
	case json.Number:
		return canonicalNumber(v)
	default:
		return v
	}
}

func sortedUniqueStrings(list []any) []any {
	var ss []string
	for _, x := range list {
		if s, ok := x.(string); ok {
			ss = append(ss, s)
		}
	}
	sort.Strings(ss)
	ss = slices.Compact(ss)
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func sortedValues(list []any) []any {
	type kv struct {
		key string
		v   any
	}
	var items []kv
	seen := map[string]bool{}
	for _, x := range list {
		n := normalize(x, false)
		k := valueKey(n)
		if !seen[k] {
			seen[k] = true
			items = append(items, kv{k, n})
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].key < items[j].key })
	out := make([]any, len(items))
	for i, it := range items {
		out[i] = it.v
	}
	return out
}

// valueKey is a canonical string for a JSON value, used to compare enum
// members and constants independently of key order and number spelling.
func valueKey(v any) string {
	b, err := marshalSorted(normalize(v, false))
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}

func canonicalNumber(n json.Number) json.Number {
	r, ok := new(big.Rat).SetString(string(n))
	if !ok {
		return n
	}
	if r.IsInt() {
		return json.Number(r.Num().String())
	}
	f, _ := r.Float64()
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if back, ok := new(big.Rat).SetString(s); ok && back.Cmp(r) == 0 {
		return json.Number(s)
	}
	return n
}

// Keyword classes, by the shape of their value. They drive normalization,
// validation, anchor discovery and reference resolution.
var (
	subschemaKeywords = setOf("additionalProperties", "additionalItems", "contains", "propertyNames",
		"not", "if", "then", "else", "unevaluatedItems", "unevaluatedProperties", "contentSchema")
	schemaListKeywords = setOf("allOf", "anyOf", "oneOf", "prefixItems")
	schemaMapKeywords  = setOf("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// walkSchemas calls fn for every object schema reachable from v through
// schema-valued keywords (not through $ref).
func walkSchemas(v any, fn func(map[string]any)) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	fn(m)
	for k, x := range m {
		switch {
		case subschemaKeywords[k]:
			walkSchemas(x, fn)
		case schemaListKeywords[k] || k == "items":
			if list, ok := x.([]any); ok {
				for _, s := range list {
					walkSchemas(s, fn)
				}
			} else {
				walkSchemas(x, fn)
			}
		case schemaMapKeywords[k] || k == "dependencies":
			if mm, ok := x.(map[string]any); ok {
				for _, s := range mm {
					walkSchemas(s, fn)
				}
			}
		}
	}
}

// ParseError reports malformed input to Parse. Offset, Line and Column
// locate the problem in the input; Pointer is the JSON pointer of the
// offending value when the JSON is well formed but is not a valid schema.
type ParseError struct {
	Offset  int64  // byte offset into the input, 0-based
	Line    int    // 1-based
	Column  int    // 1-based, in bytes
	Pointer string // JSON pointer ("" for the root or for syntax errors)
	Msg     string
}

func (e *ParseError) Error() string {
	where := fmt.Sprintf("line %d, column %d (offset %d)", e.Line, e.Column, e.Offset)
	if e.Pointer != "" {
		where += " at " + e.Pointer
	}
	return "schema: parse: " + where + ": " + e.Msg
}

// Parse reads a JSON Schema document (any draft; boolean schemas included).
// It never panics: malformed JSON, duplicate object keys, trailing data,
// keywords with values of the wrong shape (for example "type": 5) and local
// "$ref"s that do not resolve are reported as a *ParseError with the
// position of the problem.
func Parse(data []byte) (*Schema, error) {
	p := &parser{data: data, dec: json.NewDecoder(bytes.NewReader(data)), offsets: map[string]int64{}}
	if off, msg, ok := scanJSON(data); !ok {
		return nil, p.errorf(int64(off), "", "%s", msg)
	}
	p.dec.UseNumber()
	v, err := p.value("")
	if err != nil {
		return nil, err
	}
	rest := p.start()
	if tok, err := p.dec.Token(); err != io.EOF {
		if err != nil {
			return nil, p.wrap(err)
		}
		return nil, p.errorf(rest, "", "unexpected %v after the end of the schema; a document holds exactly one schema", tok)
	}
	if err := p.validate(v, ""); err != nil {
		return nil, err
	}
	s := newSchema(v)
	if err := p.checkRefs(s); err != nil {
		return nil, err
	}
	return s, nil
}

type parser struct {
	data    []byte
	dec     *json.Decoder
	offsets map[string]int64 // JSON pointer -> offset of the value
}

// start is the offset of the next value, skipping whitespace and the
// separators the decoder has not consumed yet.
func (p *parser) start() int64 {
	off := p.dec.InputOffset()
	for off < int64(len(p.data)) {
		switch p.data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
			continue
		}
		break
	}
	return off
}

func (p *parser) errorf(off int64, ptr, format string, args ...any) *ParseError {
	line, col := 1, 1
	for _, c := range p.data[:min(off, int64(len(p.data)))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return &ParseError{Offset: off, Line: line, Column: col, Pointer: ptr, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) wrap(err error) error {
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &syn):
		// Offset counts the offending byte; point at it, not past it.
		return p.errorf(max(syn.Offset-1, 0), "", "%s", syn.Error())
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return p.errorf(int64(len(p.data)), "", "unexpected end of input; the JSON is truncated")
	default:
		return p.errorf(p.dec.InputOffset(), "", "%v", err)
	}
}

func (p *parser) value(ptr string) (any, error) {
	off := p.start()
	p.offsets[ptr] = off
	tok, err := p.dec.Token()
	if err != nil {
		if err == io.EOF && off == 0 {
			return nil, p.errorf(0, "", "empty input; expected a JSON object or a boolean")
		}
		return nil, p.wrap(err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			m := map[string]any{}
			for p.dec.More() {
				koff := p.start()
				ktok, err := p.dec.Token()
				if err != nil {
					return nil, p.wrap(err)
				}
				key, _ := ktok.(string)
				kptr := ptr + "/" + escapePointer(key)
				if _, dup := m[key]; dup {
					return nil, p.errorf(koff, kptr, "duplicate key %q; JSON Schema keywords must appear once per object", key)
				}
				v, err := p.value(kptr)
				if err != nil {
					return nil, err
				}
				m[key] = v
			}
			if _, err := p.dec.Token(); err != nil {
				return nil, p.wrap(err)
			}
			return m, nil
		case '[':
			list := []any{}
			for p.dec.More() {
				v, err := p.value(ptr + "/" + strconv.Itoa(len(list)))
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			if _, err := p.dec.Token(); err != nil {
				return nil, p.wrap(err)
			}
			return list, nil
		}
		return nil, p.errorf(off, ptr, "unexpected %q", t)
	default:
		return tok, nil
	}
}

var typeNames = setOf("array", "boolean", "integer", "null", "number", "object", "string")

// validate checks the shape of the keywords it knows. Unknown keywords are
// accepted untouched: vocabularies and drafts add keywords, and a schema
// registry must not reject a document because it is newer than its code.
func (p *parser) validate(v any, ptr string) error {
	m, ok := v.(map[string]any)
	if !ok {
		if _, ok := v.(bool); ok {
			return nil
		}
		return p.errorf(p.offsets[ptr], ptr, "a schema must be a JSON object or a boolean, not %s", describe(v))
	}
	for _, k := range sortedKeys(m) {
		if err := p.validateKeyword(k, m[k], ptr+"/"+escapePointer(k)); err != nil {
			return err
		}
	}
	return nil
}

// validateKeyword checks the value x of keyword k, found at kp: the
// schemas it holds, recursively, or the kind of value it takes.
func (p *parser) validateKeyword(k string, x any, kp string) error {
	bad := func(want string) error {
		return p.errorf(p.offsets[kp], kp, "%q must be %s, not %s", k, want, describe(x))
	}
	switch {
	case subschemaKeywords[k]:
		return p.validate(x, kp)
	case k == "items":
		if list, ok := x.([]any); ok {
			return p.validateList(list, kp)
		}
		return p.validate(x, kp)
	case schemaListKeywords[k]:
		list, ok := x.([]any)
		if !ok || (len(list) == 0 && k != "prefixItems") {
			return bad("a non-empty array of schemas")
		}
		return p.validateList(list, kp)
	case schemaMapKeywords[k] || k == "dependencies" || k == "dependentRequired":
		mm, ok := x.(map[string]any)
		if !ok {
			return bad("an object")
		}
		return p.validateSchemaMap(k, mm, kp)
	case k == "type":
		return p.validateType(x, kp, bad)
	}
	if want := valueWanted(k, x); want != "" {
		return bad(want)
	}
	return nil
}

// validateList checks each schema of an array keyword's value, at kp.
func (p *parser) validateList(list []any, kp string) error {
	for i, s := range list {
		if err := p.validate(s, kp+"/"+strconv.Itoa(i)); err != nil {
			return err
		}
	}
	return nil
}

// validateSchemaMap checks the values of an object of schemas, at kp:
// "dependencies" also takes arrays of property names, and
// "dependentRequired" only those.
func (p *parser) validateSchemaMap(k string, mm map[string]any, kp string) error {
	for _, name := range sortedKeys(mm) {
		sub, sp := mm[name], kp+"/"+escapePointer(name)
		if list, isList := sub.([]any); isList && (k == "dependencies" || k == "dependentRequired") {
			if !allStrings(list) {
				return p.errorf(p.offsets[sp], sp, "a dependency list must hold only strings")
			}
			continue
		}
		if k == "dependentRequired" {
			return p.errorf(p.offsets[sp], sp, "%q values must be arrays of property names", k)
		}
		if err := p.validate(sub, sp); err != nil {
			return err
		}
	}
	return nil
}

// validateType checks a "type" value, at kp: a type name or an array of
// them, each one JSON Schema knows.
func (p *parser) validateType(x any, kp string, bad func(want string) error) error {
	switch t := x.(type) {
	case string:
		if !typeNames[t] {
			return p.errorf(p.offsets[kp], kp, "unknown type %q; use one of array, boolean, integer, null, number, object, string", t)
		}
	case []any:
		for i, e := range t {
			s, ok := e.(string)
			if !ok || !typeNames[s] {
				ep := kp + "/" + strconv.Itoa(i)
				what := describe(e)
				if ok {
					what = strconv.Quote(s)
				}
				return p.errorf(p.offsets[ep], ep, "unknown type %s; use one of array, boolean, integer, null, number, object, string", what)
			}
		}
	default:
		return bad("a type name or an array of type names")
	}
	return nil
}

// valueWanted returns what keyword k's value must be when x is not that,
// in words for the error, or "" when x will do (or k holds no schemas and
// is not one it checks).
func valueWanted(k string, x any) string {
	switch k {
	case "required":
		if list, ok := x.([]any); !ok || !allStrings(list) {
			return "an array of property names"
		}
	case "enum":
		if _, ok := x.([]any); !ok {
			return "an array"
		}
	case "minimum", "maximum":
		if _, ok := x.(json.Number); !ok {
			return "a number"
		}
	case "exclusiveMinimum", "exclusiveMaximum":
		switch x.(type) {
		case json.Number, bool: // bool is the draft-04 spelling
		default:
			return "a number"
		}
	case "multipleOf":
		if r, ok := ratOf(x); !ok || r.Sign() <= 0 {
			return "a number greater than 0"
		}
	case "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "minContains", "maxContains":
		if r, ok := ratOf(x); !ok || !r.IsInt() || r.Sign() < 0 {
			return "a non-negative integer"
		}
	case "uniqueItems":
		if _, ok := x.(bool); !ok {
			return "a boolean"
		}
	case "$ref", "pattern", "format", "$anchor", "$id", "contentEncoding", "contentMediaType":
		if _, ok := x.(string); !ok {
			return "a string"
		}
	}
	return ""
}

// checkRefs rejects local references ("#...") that point nowhere: the diff
// engine would otherwise have to guess what they meant. Remote references
// are kept as opaque strings.
func (p *parser) checkRefs(s *Schema) error {
	var err error
	var walk func(v any, ptr string)
	walk = func(v any, ptr string) {
		m, ok := v.(map[string]any)
		if !ok || err != nil {
			return
		}
		if ref, ok := m["$ref"].(string); ok && strings.HasPrefix(ref, "#") {
			if _, found := s.resolve(ref); !found {
				rp := ptr + "/$ref"
				err = p.errorf(p.offsets[rp], rp, "$ref %q does not resolve within the document; define the target under $defs or fix the pointer", ref)
				return
			}
		}
		for _, k := range sortedKeys(m) {
			x, kp := m[k], ptr+"/"+escapePointer(k)
			switch {
			case subschemaKeywords[k]:
				walk(x, kp)
			case schemaListKeywords[k] || k == "items":
				if list, ok := x.([]any); ok {
					for i, e := range list {
						walk(e, kp+"/"+strconv.Itoa(i))
					}
				} else {
					walk(x, kp)
				}
			case schemaMapKeywords[k] || k == "dependencies":
				if mm, ok := x.(map[string]any); ok {
					for _, name := range sortedKeys(mm) {
						walk(mm[name], kp+"/"+escapePointer(name))
					}
				}
			}
		}
	}
	walk(s.root, "")
	return err
}

// resolve finds the target of a reference within the document: "#" (the
// root), "#/json/pointer", a plain-name fragment ("#name", matching
// "$anchor" or a draft-07 "$id": "#name"), or any of those prefixed by the
// root's own "$id".
func (s *Schema) resolve(ref string) (any, bool) {
	if m, ok := s.root.(map[string]any); ok {
		if id, ok := m["$id"].(string); ok && id != "" {
			base := strings.TrimSuffix(id, "#")
			if rest, ok := strings.CutPrefix(ref, base); ok && (rest == "" || rest[0] == '#') {
				ref = "#" + strings.TrimPrefix(rest, "#")
			}
		}
	}
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, false
	}
	if frag == "" {
		return s.root, true
	}
	if !strings.HasPrefix(frag, "/") {
		v, ok := s.anchors[frag]
		return v, ok
	}
	cur := s.root
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = unescapePointer(tok)
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	switch cur.(type) {
	case map[string]any, bool:
		return cur, true
	}
	return nil, false
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func unescapePointer(s string) string {
	if strings.Contains(s, "%") {
		if u, err := urlUnescape(s); err == nil {
			s = u
		}
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// urlUnescape decodes %XX escapes (references are URI fragments).
func urlUnescape(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", errors.New("bad escape")
		}
		n, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", err
		}
		b.WriteByte(byte(n))
		i += 2
	}
	return b.String(), nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func allStrings(list []any) bool {
	for _, x := range list {
		if _, ok := x.(string); !ok {
			return false
		}
	}
	return true
}

func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "the number " + string(v)
	case string:
		return fmt.Sprintf("the string %q", v)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// ratOf reads a JSON number exactly. Reflect builds documents with
// json.Number too, so every number in a Schema reaches here the same way.
func ratOf(v any) (*big.Rat, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return nil, false
	}
	return new(big.Rat).SetString(string(n))
}
