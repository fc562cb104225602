package avro

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/hamba/avro/v2"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// Format is the AVRO format, for sqlstreams.WithFormats.
func Format() schema.Format { return avroFormat{} }

type avroFormat struct{}

func (avroFormat) Type() schema.Type { return schema.TypeAvro }

func (avroFormat) Parse(text []byte) (schema.Document, error) { return Parse(text) }

func (avroFormat) ParseReferences(text []byte, refs []schema.Referenced) (schema.Document, error) {
	return ParseReferences(text, refs)
}

// Document is a parsed Avro schema.
type Document struct {
	s         avro.Schema
	canonical []byte
}

// Parse reads an Avro schema (JSON: a primitive name, a record, enum,
// fixed, array, map or union). Named types resolve within the document
// only: each parse has its own name cache, so a name defined by another
// document never leaks in. Parse never panics.
func Parse(text []byte) (*Document, error) { return ParseReferences(text, nil) }

// ParseReferences is Parse for a document that uses named types other
// registered documents define (Confluent's schema references: each named by
// the full name of its type, such as "shop.Customer"). refs are every
// document text reaches, each after the ones it uses; their named types,
// and only theirs, resolve in text.
func ParseReferences(text []byte, refs []schema.Referenced) (doc *Document, err error) {
	defer func() {
		if p := recover(); p != nil {
			doc, err = nil, fmt.Errorf("avro: cannot parse the schema: %v", p)
		}
	}()
	cache := &avro.SchemaCache{}
	for _, ref := range refs {
		if _, err := parseInto(ref.Text, cache); err != nil {
			return nil, fmt.Errorf("avro: reference %q: %w", ref.Name, err)
		}
	}
	s, err := parseInto(text, cache)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	writeCanonical(&b, s, map[string]bool{})
	return &Document{s: s, canonical: b.Bytes()}, nil
}

// parseInto parses one document, adding the named types it defines to
// cache.
func parseInto(text []byte, cache *avro.SchemaCache) (avro.Schema, error) {
	if len(bytes.TrimSpace(text)) == 0 {
		return nil, fmt.Errorf("avro: empty schema; send a JSON Avro schema such as {\"type\":\"record\",...}")
	}
	if !json.Valid(text) {
		return nil, fmt.Errorf("avro: the schema is not valid JSON; an Avro schema is a JSON string, object or array")
	}
	return avro.ParseBytesWithCache(text, "", cache)
}

// Type is schema.TypeAvro.
func (d *Document) Type() schema.Type { return schema.TypeAvro }

// Canonical is the Parsing Canonical Form extended with what resolution
// reads (defaults, aliases) and logical types; see the package
// documentation.
func (d *Document) Canonical() []byte { return bytes.Clone(d.canonical) }

// ParsingCanonicalForm is Avro's own canonical form (specification,
// "Parsing Canonical Form for Schemas"), the input of Avro fingerprints.
func (d *Document) ParsingCanonicalForm() []byte { return []byte(d.s.String()) }

// Schema is the hamba/avro schema, for encoding and decoding.
func (d *Document) Schema() avro.Schema { return d.s }

// FullName is the full name of a named top-level type (record, enum or
// fixed), such as "shop.orders.OrderPlaced"; empty for other types.
func (d *Document) FullName() string {
	if n, ok := d.s.(avro.NamedSchema); ok {
		return n.FullName()
	}
	return ""
}

// ReadsFrom lists what a reader with this schema meets reading data
// written with writer, an AVRO document, by Avro's resolution rules.
func (d *Document) ReadsFrom(writer schema.Document) []schema.Difference {
	w, ok := writer.(*Document)
	if !ok {
		return []schema.Difference{{Kind: schema.SchemaTypeChanged, Path: "/",
			Message: fmt.Sprintf("an AVRO reader cannot read data written with a %s schema", writer.Type())}}
	}
	c := &checker{seen: map[[2]string]bool{}}
	c.check(d.s, w.s, "")
	return c.problems
}

// writeCanonical writes s in the Parsing Canonical Form's order and
// spelling (named types in full the first time, by name after), adding
// after the attributes it keeps the defaults, aliases and logical types.
func writeCanonical(b *bytes.Buffer, s avro.Schema, seen map[string]bool) {
	if ref, ok := s.(*avro.RefSchema); ok {
		s = ref.Schema()
	}
	if n, ok := s.(avro.NamedSchema); ok {
		if seen[n.FullName()] {
			b.WriteString(quote(n.FullName()))
			return
		}
		seen[n.FullName()] = true
	}
	switch t := s.(type) {
	case *avro.RecordSchema:
		kind := "record"
		if t.IsError() {
			kind = "error"
		}
		fmt.Fprintf(b, `{"name":%s,"type":%q,"fields":[`, quote(t.FullName()), kind)
		for i, f := range t.Fields() {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(b, `{"name":%s,"type":`, quote(f.Name()))
			writeCanonical(b, f.Type(), seen)
			if f.HasDefault() {
				b.WriteString(`,"default":`)
				b.Write(jsonValue(f.Default()))
			}
			writeAliases(b, f.Aliases())
			b.WriteByte('}')
		}
		b.WriteByte(']')
		writeAliases(b, t.Aliases())
		b.WriteByte('}')
	case *avro.EnumSchema:
		fmt.Fprintf(b, `{"name":%s,"type":"enum","symbols":%s`, quote(t.FullName()), jsonValue(t.Symbols()))
		if t.HasDefault() {
			fmt.Fprintf(b, `,"default":%s`, quote(t.Default()))
		}
		writeAliases(b, t.Aliases())
		b.WriteByte('}')
	case *avro.FixedSchema:
		fmt.Fprintf(b, `{"name":%s,"type":"fixed","size":%d`, quote(t.FullName()), t.Size())
		writeLogical(b, t.Logical())
		writeAliases(b, t.Aliases())
		b.WriteByte('}')
	case *avro.ArraySchema:
		b.WriteString(`{"type":"array","items":`)
		writeCanonical(b, t.Items(), seen)
		b.WriteByte('}')
	case *avro.MapSchema:
		b.WriteString(`{"type":"map","values":`)
		writeCanonical(b, t.Values(), seen)
		b.WriteByte('}')
	case *avro.UnionSchema:
		b.WriteByte('[')
		for i, branch := range t.Types() {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonical(b, branch, seen)
		}
		b.WriteByte(']')
	case *avro.PrimitiveSchema:
		if t.Logical() == nil {
			b.WriteString(quote(string(t.Type())))
			return
		}
		fmt.Fprintf(b, `{"type":%s`, quote(string(t.Type())))
		writeLogical(b, t.Logical())
		b.WriteByte('}')
	default:
		b.WriteString(quote(string(s.Type())))
	}
}

func writeAliases(b *bytes.Buffer, aliases []string) {
	if len(aliases) > 0 {
		fmt.Fprintf(b, `,"aliases":%s`, jsonValue(aliases))
	}
}

func writeLogical(b *bytes.Buffer, l avro.LogicalSchema) {
	if l == nil {
		return
	}
	fmt.Fprintf(b, `,"logicalType":%s`, quote(string(l.Type())))
	if d, ok := l.(*avro.DecimalLogicalSchema); ok {
		fmt.Fprintf(b, `,"precision":%d,"scale":%d`, d.Precision(), d.Scale())
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// jsonValue writes a parsed default as JSON; encoding/json sorts map keys,
// so equal defaults are equal bytes.
func jsonValue(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(strconv.Quote(fmt.Sprint(v)))
	}
	return b
}
