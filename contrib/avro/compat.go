package avro

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hamba/avro/v2"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// The kinds of problem Avro's resolution rules find, named as Avro's Java
// SchemaCompatibility and Confluent's registry name them.
const (
	ReaderFieldMissingDefaultValue schema.DiffKind = "READER_FIELD_MISSING_DEFAULT_VALUE"
	TypeMismatch                   schema.DiffKind = "TYPE_MISMATCH"
	MissingUnionBranch             schema.DiffKind = "MISSING_UNION_BRANCH"
	MissingEnumSymbols             schema.DiffKind = "MISSING_ENUM_SYMBOLS"
	NameMismatch                   schema.DiffKind = "NAME_MISMATCH"
	FixedSizeMismatch              schema.DiffKind = "FIXED_SIZE_MISMATCH"
)

// checker walks a reader schema and a writer schema together.
type checker struct {
	problems []schema.Difference
	// seen holds the (reader, writer) pairs of named types being or already
	// checked: recursive types end there, and a pair is judged once.
	seen map[[2]string]bool
}

func (c *checker) fail(kind schema.DiffKind, path, format string, args ...any) {
	if path == "" {
		path = "/"
	}
	c.problems = append(c.problems, schema.Difference{Kind: kind, Path: path, Message: fmt.Sprintf(format, args...)})
}

func deref(s avro.Schema) avro.Schema {
	if r, ok := s.(*avro.RefSchema); ok {
		return r.Schema()
	}
	return s
}

// check resolves writer against reader at path (in the reader).
func (c *checker) check(reader, writer avro.Schema, path string) {
	r, w := deref(reader), deref(writer)
	if wu, ok := w.(*avro.UnionSchema); ok {
		// Data may have been written with any branch: each must resolve.
		for _, branch := range wu.Types() {
			c.check(r, branch, path)
		}
		return
	}
	if ru, ok := r.(*avro.UnionSchema); ok {
		i := firstMatch(ru.Types(), w)
		if i < 0 {
			c.fail(MissingUnionBranch, path, "the reader's union %s has no branch for the writer's %s; add one", describeUnion(ru), describe(w))
			return
		}
		c.check(ru.Types()[i], w, path+"/"+strconv.Itoa(i))
		return
	}
	if r.Type() != w.Type() {
		if !promotes(w.Type(), r.Type()) {
			c.fail(TypeMismatch, path, "the reader's %s cannot read the writer's %s", describe(r), describe(w))
		}
		return
	}
	switch rt := r.(type) {
	case *avro.RecordSchema:
		c.record(rt, w.(*avro.RecordSchema), path)
	case *avro.EnumSchema:
		c.enum(rt, w.(*avro.EnumSchema), path)
	case *avro.FixedSchema:
		wt := w.(*avro.FixedSchema)
		if c.named(rt, wt, path, "fixed") && rt.Size() != wt.Size() {
			c.fail(FixedSizeMismatch, path+"/size", "the reader's fixed %s has %d bytes, the writer's %s has %d", rt.FullName(), rt.Size(), wt.FullName(), wt.Size())
		}
	case *avro.ArraySchema:
		c.check(rt.Items(), w.(*avro.ArraySchema).Items(), path+"/items")
	case *avro.MapSchema:
		c.check(rt.Values(), w.(*avro.MapSchema).Values(), path+"/values")
	}
}

// named checks that a named reader type reads the named writer type and
// reports whether the pair is to be checked further (not seen before).
func (c *checker) named(r, w avro.NamedSchema, path, kind string) bool {
	if !nameMatches(r, w) {
		c.fail(NameMismatch, path+"/name", "the reader's %s %s does not read the writer's %s; keep the name, or list %q in the reader's aliases",
			kind, r.FullName(), w.FullName(), w.FullName())
		return false
	}
	key := [2]string{r.FullName(), w.FullName()}
	if c.seen[key] {
		return false
	}
	c.seen[key] = true
	return true
}

func (c *checker) record(r, w *avro.RecordSchema, path string) {
	if !c.named(r, w, path, "record") {
		return
	}
	for i, rf := range r.Fields() {
		at := path + "/fields/" + strconv.Itoa(i)
		wf := writerField(rf, w)
		if wf != nil {
			c.check(rf.Type(), wf.Type(), at+"/type")
			continue
		}
		if !rf.HasDefault() {
			also := ""
			if len(rf.Aliases()) > 0 {
				also = " (nor any of its aliases " + strings.Join(rf.Aliases(), ", ") + ")"
			}
			c.fail(ReaderFieldMissingDefaultValue, at, "reader field %s.%s has no default and the writer has no field %s%s; give it a default, or add it under a new schema version",
				r.FullName(), rf.Name(), rf.Name(), also)
		}
	}
}

// writerField is the writer's field a reader field reads: by name, else
// by one of the reader field's aliases.
func writerField(rf *avro.Field, w *avro.RecordSchema) *avro.Field {
	for _, name := range append([]string{rf.Name()}, rf.Aliases()...) {
		for _, wf := range w.Fields() {
			if wf.Name() == name {
				return wf
			}
		}
	}
	return nil
}

func (c *checker) enum(r, w *avro.EnumSchema, path string) {
	if !c.named(r, w, path, "enum") {
		return
	}
	var missing []string
	for _, sym := range w.Symbols() {
		if !slices.Contains(r.Symbols(), sym) {
			missing = append(missing, sym)
		}
	}
	if len(missing) > 0 && !r.HasDefault() {
		c.fail(MissingEnumSymbols, path+"/symbols", "the reader's enum %s lacks the writer's symbols [%s] and has no default; add them, or give the enum a default symbol",
			r.FullName(), strings.Join(missing, ", "))
	}
}

// nameMatches: the same unqualified name, or a reader alias that is the
// writer's full name.
func nameMatches(r, w avro.NamedSchema) bool {
	return r.Name() == w.Name() || slices.Contains(r.Aliases(), w.FullName())
}

// promotes reports whether Avro reads a writer's from as a reader's to.
func promotes(from, to avro.Type) bool {
	switch from {
	case avro.Int:
		return to == avro.Long || to == avro.Float || to == avro.Double
	case avro.Long:
		return to == avro.Float || to == avro.Double
	case avro.Float:
		return to == avro.Double
	case avro.String:
		return to == avro.Bytes
	case avro.Bytes:
		return to == avro.String
	}
	return false
}

// firstMatch is the reader branch a writer's type resolves to: the first
// of the same type (and name, for named types), else the first the type
// promotes to; -1 when none.
func firstMatch(branches []avro.Schema, w avro.Schema) int {
	for i, b := range branches {
		b = deref(b)
		if b.Type() != w.Type() {
			continue
		}
		rn, named := b.(avro.NamedSchema)
		if !named || nameMatches(rn, w.(avro.NamedSchema)) {
			return i
		}
	}
	for i, b := range branches {
		if promotes(w.Type(), deref(b).Type()) {
			return i
		}
	}
	return -1
}

func describe(s avro.Schema) string {
	s = deref(s)
	if n, ok := s.(avro.NamedSchema); ok {
		return fmt.Sprintf("%s %s", s.Type(), n.FullName())
	}
	if u, ok := s.(*avro.UnionSchema); ok {
		return describeUnion(u)
	}
	return string(s.Type())
}

func describeUnion(u *avro.UnionSchema) string {
	names := make([]string, len(u.Types()))
	for i, b := range u.Types() {
		b = deref(b)
		if n, ok := b.(avro.NamedSchema); ok {
			names[i] = n.FullName()
		} else {
			names[i] = string(b.Type())
		}
	}
	return "[" + strings.Join(names, ", ") + "]"
}
