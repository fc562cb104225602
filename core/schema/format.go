package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Type names the language a registered document is written in, with the
// names Confluent's schemaType uses. The registry stores it with every
// document: the same text registered as JSON and as AVRO is two schemas,
// with two fingerprints and two global ids.
type Type string

// The document types Confluent-compatible clients name. JSON Schema is
// built in; the others come from a Format a client enables (contrib/avro
// for AVRO).
const (
	TypeJSON     Type = "JSON"
	TypeAvro     Type = "AVRO"
	TypeProtobuf Type = "PROTOBUF"
)

// ParseType reads a type name in any case; an empty name is JSON, the type
// of every schema reflected from a Go type.
func ParseType(s string) (Type, error) {
	t := Type(strings.ToUpper(strings.TrimSpace(s)))
	if t == "" {
		return TypeJSON, nil
	}
	if !validTypeName(string(t)) {
		return "", fmt.Errorf("schema: type %q is not a type name; use JSON, AVRO or PROTOBUF", s)
	}
	return t, nil
}

func validTypeName(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, r := range s {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '_' {
			return false
		}
	}
	return true
}

// Format is a schema language the registry records and judges beside JSON
// Schema. An implementation lives outside package schema when it needs a
// parser that is not in the standard library (contrib/avro wraps
// github.com/hamba/avro/v2), and a client enables it with
// sqlstreams.WithFormats. Implementations must be safe for concurrent use.
type Format interface {
	// Type is the name stored with each document, such as TypeAvro.
	Type() Type
	// Parse reads a document. A malformed one is an error that says where
	// and why; Parse never panics.
	Parse(text []byte) (Document, error)
}

// Referenced is a registered document another one refers to, under the
// name the referring document uses for it: for Avro the full name of the
// named type it defines ("shop.Customer"), for Protobuf its import path
// ("shop/customer.proto"), as Confluent's schema references name them.
type Referenced struct {
	Name string
	Text []byte
}

// ReferenceParser is implemented by a Format whose documents may use types
// defined by other registered documents (Confluent's schema references).
// Without it, the registry refuses a document of the format that has
// references.
type ReferenceParser interface {
	// ParseReferences parses text given every document it reaches through
	// references, its own and theirs, each listed after the documents it
	// refers to. Only these documents are visible to text: a name defined
	// elsewhere never leaks in. It never panics.
	ParseReferences(text []byte, refs []Referenced) (Document, error)
}

// Document is one parsed schema of a Format.
type Document interface {
	// Type is the Format's type.
	Type() Type
	// Canonical is the normalized text the fingerprint is taken of: two
	// documents with equal Canonical forms read and write the same data,
	// so the registry records them as one revision.
	Canonical() []byte
	// ReadsFrom lists what a reader using this document meets when it reads
	// data written with writer, a document of the same Type: every
	// difference the format's resolution rules see, each with a kind, a
	// path into this (the reader's) document and words; the ones that
	// break reading have Compatible false.
	ReadsFrom(writer Document) []Difference
}

// SchemaTypeChanged is the difference between documents of two types: no
// format's reader reads another format's data.
const SchemaTypeChanged DiffKind = "SCHEMA_TYPE_CHANGED"

// Fingerprint is the hex SHA-256 the registry deduplicates documents by.
// A JSON Schema's is its Schema.Fingerprint, unchanged since JSON was the
// only type, so existing fingerprints and ids stay; every other type's also
// covers the type name, so no document of one type shares a fingerprint
// with a document of another.
func Fingerprint(d Document) string {
	if d.Type() == TypeJSON {
		sum := sha256.Sum256(d.Canonical())
		return hex.EncodeToString(sum[:])
	}
	h := sha256.New()
	h.Write([]byte(d.Type()))
	h.Write([]byte{'\n'})
	h.Write(d.Canonical())
	return hex.EncodeToString(h.Sum(nil))
}

// JSONDocument is a JSON Schema as a Document, judged under policy: what
// the registry compares when JSON documents meet documents of other types.
func JSONDocument(s *Schema, policy Policy) Document {
	return jsonDocument{s: s, policy: policy}
}

type jsonDocument struct {
	s      *Schema
	policy Policy
}

func (d jsonDocument) Type() Type        { return TypeJSON }
func (d jsonDocument) Canonical() []byte { return d.s.Canonical() }

// ReadsFrom is Diff from the writer to this reader: Diff's old schema is
// the one data was written with.
func (d jsonDocument) ReadsFrom(writer Document) []Difference {
	w, ok := writer.(jsonDocument)
	if !ok {
		return []Difference{typeChanged(writer.Type(), TypeJSON)}
	}
	return Diff(w.s, d.s, d.policy)
}

// Opaque is a Document of a type this process cannot parse (its Format is
// not enabled): enough to tell that it differs from a document of another
// type, which is all the registry needs to judge it against one.
func Opaque(t Type, text []byte) Document { return opaque{t: t, text: text} }

type opaque struct {
	t    Type
	text []byte
}

func (o opaque) Type() Type        { return o.t }
func (o opaque) Canonical() []byte { return o.text }
func (o opaque) ReadsFrom(writer Document) []Difference {
	if writer.Type() != o.t {
		return []Difference{typeChanged(writer.Type(), o.t)}
	}
	return []Difference{{Kind: SchemaTypeChanged, Path: "#", Compatible: false,
		Message: fmt.Sprintf("cannot judge %s documents: this client has no %s format enabled; enable it with sqlstreams.WithFormats", o.t, o.t)}}
}

func typeChanged(writer, reader Type) Difference {
	return Difference{Kind: SchemaTypeChanged, Path: "#", Compatible: false,
		Message: fmt.Sprintf("a %s reader cannot read data written with a %s schema; register the new type under a new schema version", reader, writer)}
}

// Judge reports whether candidate may follow existing (oldest first) at the
// given level, for documents of any type: Check's rules with each format's
// own reading rules. A plain level compares with the last existing document,
// a transitive one with each; backward directions let the candidate read
// what an existing document wrote, forward ones the reverse. A document of
// another type than the candidate's is a SCHEMA_TYPE_CHANGED problem in
// every direction the level checks. Report.Policy is left zero: each
// Document carries its own rules.
func Judge(level Level, existing []Document, candidate Document) *Report {
	level = level.effective()
	r := &Report{Level: level, Compared: []int{}, Problems: []Problem{}}
	if level == None || len(existing) == 0 {
		return r
	}
	first := len(existing) - 1
	if level.transitive() {
		first = 0
	}
	for i := first; i < len(existing); i++ {
		r.Compared = append(r.Compared, i)
		if level.backward() {
			r.add(readsFrom(candidate, existing[i]), i, NewReadsOld)
		}
		if level.forward() {
			r.add(readsFrom(existing[i], candidate), i, OldReadsNew)
		}
	}
	return r
}

func readsFrom(reader, writer Document) []Difference {
	if reader.Type() != writer.Type() {
		return []Difference{typeChanged(writer.Type(), reader.Type())}
	}
	return reader.ReadsFrom(writer)
}
