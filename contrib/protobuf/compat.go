package protobuf

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/sqlstreams/sqlstreams/core/schema"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The kinds of difference between a writer's file and a reader's, named as
// Confluent's Protobuf provider names them. The incompatible ones are
// problems; the others are listed with Compatible true.
const (
	PackageChanged             schema.DiffKind = "PACKAGE_CHANGED"
	MessageAdded               schema.DiffKind = "MESSAGE_ADDED"
	MessageRemoved             schema.DiffKind = "MESSAGE_REMOVED"
	EnumAdded                  schema.DiffKind = "ENUM_ADDED"
	EnumRemoved                schema.DiffKind = "ENUM_REMOVED"
	EnumConstAdded             schema.DiffKind = "ENUM_CONST_ADDED"
	EnumConstChanged           schema.DiffKind = "ENUM_CONST_CHANGED"
	EnumConstRemoved           schema.DiffKind = "ENUM_CONST_REMOVED"
	FieldAdded                 schema.DiffKind = "FIELD_ADDED"
	FieldRemoved               schema.DiffKind = "FIELD_REMOVED"
	FieldNameChanged           schema.DiffKind = "FIELD_NAME_CHANGED"
	FieldKindChanged           schema.DiffKind = "FIELD_KIND_CHANGED"
	FieldScalarKindChanged     schema.DiffKind = "FIELD_SCALAR_KIND_CHANGED"
	FieldNamedTypeChanged      schema.DiffKind = "FIELD_NAMED_TYPE_CHANGED"
	FieldNumericLabelChanged   schema.DiffKind = "FIELD_NUMERIC_LABEL_CHANGED"
	FieldStringOrBytesLabel    schema.DiffKind = "FIELD_STRING_OR_BYTES_LABEL_CHANGED"
	RequiredFieldAdded         schema.DiffKind = "REQUIRED_FIELD_ADDED"
	RequiredFieldRemoved       schema.DiffKind = "REQUIRED_FIELD_REMOVED"
	OneofAdded                 schema.DiffKind = "ONEOF_ADDED"
	OneofRemoved               schema.DiffKind = "ONEOF_REMOVED"
	OneofFieldAdded            schema.DiffKind = "ONEOF_FIELD_ADDED"
	OneofFieldRemoved          schema.DiffKind = "ONEOF_FIELD_REMOVED"
	OneofFieldMovedToTopLevel  schema.DiffKind = "ONEOF_FIELD_MOVED_TO_TOP_LEVEL"
	MultipleFieldsMovedToOneof schema.DiffKind = "MULTIPLE_FIELDS_MOVED_TO_ONEOF"
	FieldMovedToExistingOneof  schema.DiffKind = "FIELD_MOVED_TO_EXISTING_ONEOF"
	// ReservedFieldReused is this package's own: the reader declares a
	// field with a number or a name the writer reserves. See the package
	// documentation for why it is listed and not refused.
	ReservedFieldReused schema.DiffKind = "RESERVED_FIELD_REUSED"
)

// differ compares a writer's file (Confluent's "original") with a
// reader's ("update"): Confluent judges BACKWARD as the diff from the
// previous schema to the new one, the new one being the reader.
type differ struct {
	out []schema.Difference
}

func (c *differ) add(kind schema.DiffKind, compatible bool, path, format string, args ...any) {
	c.out = append(c.out, schema.Difference{Kind: kind, Path: path, Compatible: compatible, Message: fmt.Sprintf(format, args...)})
}

func (c *differ) file(w, r protoreflect.FileDescriptor) {
	if w.Package() != r.Package() {
		c.add(PackageChanged, false, "#/", "the reader's package %q is not the writer's %q: every message's full name changes; keep the package, or register the file under a new schema version", r.Package(), w.Package())
	}
	c.types(w.Messages(), r.Messages(), w.Enums(), r.Enums(), "#")
}

// types compares the messages and enums declared at one level (the file
// or a message), matched by name.
func (c *differ) types(wm, rm protoreflect.MessageDescriptors, we, re protoreflect.EnumDescriptors, path string) {
	readers := map[protoreflect.Name]protoreflect.MessageDescriptor{}
	for i := range rm.Len() {
		if m := rm.Get(i); !m.IsMapEntry() {
			readers[m.Name()] = m
		}
	}
	for i := range wm.Len() {
		w := wm.Get(i)
		if w.IsMapEntry() {
			continue
		}
		p := path + "/" + string(w.Name())
		r, ok := readers[w.Name()]
		if !ok {
			c.add(MessageRemoved, false, p, "the writer's message %s is missing from the reader; keep it (it may be what the data holds), or register the file under a new schema version", w.FullName())
			continue
		}
		delete(readers, w.Name())
		c.message(w, r, p)
	}
	for _, name := range slices.Sorted(maps.Keys(readers)) {
		c.add(MessageAdded, true, path+"/"+string(name), "message %s added", readers[name].FullName())
	}
	c.enums(we, re, path)
}

func (c *differ) enums(we, re protoreflect.EnumDescriptors, path string) {
	readers := map[protoreflect.Name]protoreflect.EnumDescriptor{}
	for i := range re.Len() {
		readers[re.Get(i).Name()] = re.Get(i)
	}
	for i := range we.Len() {
		w := we.Get(i)
		p := path + "/" + string(w.Name())
		r, ok := readers[w.Name()]
		if !ok {
			c.add(EnumRemoved, true, p, "enum %s removed", w.FullName())
			continue
		}
		delete(readers, w.Name())
		c.enumValues(w, r, p)
	}
	for _, name := range slices.Sorted(maps.Keys(readers)) {
		c.add(EnumAdded, true, path+"/"+string(name), "enum %s added", readers[name].FullName())
	}
}

// enumValues compares constants by number, as the wire carries them. A
// value the reader lacks is read as an unknown number (proto3) or kept
// among unknown fields (proto2), so Confluent counts every change here
// compatible.
func (c *differ) enumValues(w, r protoreflect.EnumDescriptor, path string) {
	for i := range w.Values().Len() {
		wv := w.Values().Get(i)
		p := path + "/" + strconv.Itoa(int(wv.Number()))
		rv := r.Values().ByNumber(wv.Number())
		switch {
		case rv == nil:
			c.add(EnumConstRemoved, true, p, "the reader's enum %s has no value %d (%s): it reads it as an unknown value; reserve %d and %q so no later value reuses them", r.FullName(), wv.Number(), wv.Name(), wv.Number(), wv.Name())
		case rv.Name() != wv.Name():
			c.add(EnumConstChanged, true, p, "enum %s value %d renamed from %s to %s", r.FullName(), wv.Number(), wv.Name(), rv.Name())
		}
	}
	for i := range r.Values().Len() {
		rv := r.Values().Get(i)
		if w.Values().ByNumber(rv.Number()) == nil {
			c.add(EnumConstAdded, true, path+"/"+strconv.Itoa(int(rv.Number())), "enum %s value %d (%s) added", r.FullName(), rv.Number(), rv.Name())
		}
	}
}

// realOneof is the oneof a field belongs to, or nil: proto3's optional
// fields sit in a synthetic oneof of their own that is no oneof on the
// wire or in Confluent's rules.
func realOneof(f protoreflect.FieldDescriptor) protoreflect.OneofDescriptor {
	if o := f.ContainingOneof(); o != nil && !o.IsSynthetic() {
		return o
	}
	return nil
}

func oneofs(m protoreflect.MessageDescriptor) map[protoreflect.Name]protoreflect.OneofDescriptor {
	out := map[protoreflect.Name]protoreflect.OneofDescriptor{}
	for i := range m.Oneofs().Len() {
		if o := m.Oneofs().Get(i); !o.IsSynthetic() {
			out[o.Name()] = o
		}
	}
	return out
}

// message compares two messages of the same name field by field number,
// wherever each field sits (top level or in a oneof), then their nested
// types.
func (c *differ) message(w, r protoreflect.MessageDescriptor, path string) {
	c.oneofMoves(w, r, path)
	wOneofs, rOneofs := oneofs(w), oneofs(r)
	for _, name := range slices.Sorted(maps.Keys(wOneofs)) {
		if _, ok := rOneofs[name]; !ok {
			c.add(OneofRemoved, true, path+"/"+string(name), "oneof %s removed", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(rOneofs)) {
		if _, ok := wOneofs[name]; !ok {
			c.add(OneofAdded, true, path+"/"+string(name), "oneof %s added", name)
		}
	}
	numbers := map[protoreflect.FieldNumber]bool{}
	for i := range w.Fields().Len() {
		numbers[w.Fields().Get(i).Number()] = true
	}
	for i := range r.Fields().Len() {
		numbers[r.Fields().Get(i).Number()] = true
	}
	for _, n := range slices.Sorted(maps.Keys(numbers)) {
		c.fieldPair(w, r, w.Fields().ByNumber(n), r.Fields().ByNumber(n), wOneofs, rOneofs, path)
	}
	c.reserved(w, r, path)
	c.types(w.Messages(), r.Messages(), w.Enums(), r.Enums(), path)
}

// fieldPair judges one field number: removed, added, moved out of a oneof,
// or present in both.
func (c *differ) fieldPair(w, r protoreflect.MessageDescriptor, wf, rf protoreflect.FieldDescriptor, wOneofs, rOneofs map[protoreflect.Name]protoreflect.OneofDescriptor, path string) {
	var wo, ro protoreflect.OneofDescriptor
	if wf != nil {
		wo = realOneof(wf)
	}
	if rf != nil {
		ro = realOneof(rf)
	}
	switch {
	case rf == nil && wo != nil:
		if deletedOneof(wo, r, rOneofs) {
			return
		}
		c.add(OneofFieldRemoved, false, path+"/"+string(wo.Name())+"/"+num(wf), "the reader has no field %d (%s) of the writer's oneof %s: data that set it reads as if the oneof were unset; keep the field", wf.Number(), wf.Name(), wo.Name())
	case rf == nil && wf.Cardinality() == protoreflect.Required:
		c.add(RequiredFieldRemoved, false, path+"/"+num(wf), "required field %d (%s) removed: readers of the old schema fail on data without it; keep it", wf.Number(), wf.Name())
	case rf == nil:
		c.add(FieldRemoved, true, path+"/"+num(wf), "field %d (%s) removed: the reader skips it; %s", wf.Number(), wf.Name(), reserveAdvice(wf, r))
	case wf == nil && ro != nil:
		c.add(OneofFieldAdded, true, path+"/"+string(ro.Name())+"/"+num(rf), "field %d (%s) added to oneof %s", rf.Number(), rf.Name(), ro.Name())
	case wf == nil && rf.Cardinality() == protoreflect.Required:
		c.add(RequiredFieldAdded, false, path+"/"+num(rf), "required field %d (%s) added: data written without it fails to parse; make it optional", rf.Number(), rf.Name())
	case wf == nil:
		c.add(FieldAdded, true, path+"/"+num(rf), "field %d (%s) added", rf.Number(), rf.Name())
	default:
		if wo != nil && ro == nil {
			c.add(OneofFieldMovedToTopLevel, true, path+"/"+num(rf), "field %d (%s) moved out of oneof %s", rf.Number(), rf.Name(), wo.Name())
		}
		p := path + "/" + num(rf)
		if ro != nil {
			p = path + "/" + string(ro.Name()) + "/" + num(rf)
		}
		c.field(wf, rf, p)
	}
}

func num(f protoreflect.FieldDescriptor) string { return strconv.Itoa(int(f.Number())) }

// deletedOneof: a writer's oneof the reader has dropped entirely (no member
// survives anywhere) is one compatible removal, not a removal per member.
func deletedOneof(o protoreflect.OneofDescriptor, r protoreflect.MessageDescriptor, rOneofs map[protoreflect.Name]protoreflect.OneofDescriptor) bool {
	if _, ok := rOneofs[o.Name()]; ok {
		return false
	}
	for i := range o.Fields().Len() {
		if r.Fields().ByNumber(o.Fields().Get(i).Number()) != nil {
			return false
		}
	}
	return true
}

func reserveAdvice(f protoreflect.FieldDescriptor, r protoreflect.MessageDescriptor) string {
	if r.ReservedRanges().Has(f.Number()) && r.ReservedNames().Has(f.Name()) {
		return "its number and name are reserved"
	}
	return fmt.Sprintf("reserve %d and %q so no later version reuses them", f.Number(), f.Name())
}

// oneofMoves finds the reader's oneofs that make fields exclusive which
// the writer let be set together: members that come from more than one
// group of the writer (a oneof, or a top-level field each).
func (c *differ) oneofMoves(w, r protoreflect.MessageDescriptor, path string) {
	for i := range r.Oneofs().Len() {
		o := r.Oneofs().Get(i)
		if o.IsSynthetic() {
			continue
		}
		groups := map[string]bool{}
		movedIn := 0
		for j := range o.Fields().Len() {
			wf := w.Fields().ByNumber(o.Fields().Get(j).Number())
			switch {
			case wf == nil:
			case realOneof(wf) != nil:
				groups["oneof:"+string(realOneof(wf).Name())] = true
			default:
				groups["field:"+num(wf)] = true
				movedIn++
			}
		}
		if len(groups) <= 1 {
			continue
		}
		p := path + "/" + string(o.Name())
		if movedIn > 1 {
			c.add(MultipleFieldsMovedToOneof, false, p, "oneof %s joins fields the writer let be set together: data that set several of them loses all but one; keep them out of the oneof", o.Name())
		} else {
			c.add(FieldMovedToExistingOneof, false, p, "oneof %s takes in a field the writer kept outside it, or from another oneof: data that set both loses one; keep the field where it was", o.Name())
		}
	}
}

// reserved lists the reader's fields that use a number or a name the
// writer reserves.
func (c *differ) reserved(w, r protoreflect.MessageDescriptor, path string) {
	for i := range r.Fields().Len() {
		f := r.Fields().Get(i)
		if w.Fields().ByNumber(f.Number()) != nil {
			continue
		}
		if w.ReservedRanges().Has(f.Number()) {
			c.add(ReservedFieldReused, true, path+"/"+num(f), "field %d (%s) uses a number the writer reserves: data from before the reservation may hold another field under %d; pick an unused number", f.Number(), f.Name(), f.Number())
		} else if w.ReservedNames().Has(f.Name()) {
			c.add(ReservedFieldReused, true, path+"/"+num(f), "field %d uses the name %s, which the writer reserves; pick another name", f.Number(), f.Name())
		}
	}
}

// kind is Confluent's coarse kind of a field's type: a scalar (enums
// included), a message or a map.
type kind int

const (
	scalarKind kind = iota
	messageKind
	mapKind
)

func (k kind) String() string { return [...]string{"a scalar", "a message", "a map"}[k] }

func kindOf(f protoreflect.FieldDescriptor) kind {
	switch {
	case f.IsMap():
		return mapKind
	case f.Kind() == protoreflect.MessageKind || f.Kind() == protoreflect.GroupKind:
		return messageKind
	}
	return scalarKind
}

// scalarGroup is the wire-compatible group of a scalar type, as the
// Protobuf language guide ("Updating a message type") and Confluent
// group them; an enum is read as an int32.
func scalarGroup(k protoreflect.Kind) string {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Int64Kind, protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.BoolKind, protoreflect.EnumKind:
		return "varint"
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		return "zigzag"
	case protoreflect.StringKind, protoreflect.BytesKind:
		return "length-delimited"
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		return "fixed32"
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		return "fixed64"
	}
	return k.String()
}

// label is repeated, required or singular (proto3's implicit presence and
// optional are one label: the wire does not tell them apart).
func label(f protoreflect.FieldDescriptor) string {
	switch {
	case f.IsList():
		return "repeated"
	case f.Cardinality() == protoreflect.Required:
		return "required"
	}
	return "singular"
}

// field compares one field number present in both files.
func (c *differ) field(wf, rf protoreflect.FieldDescriptor, path string) {
	if wf.Name() != rf.Name() {
		c.add(FieldNameChanged, true, path, "field %d renamed from %s to %s (the binary encoding carries numbers, the JSON encoding names)", rf.Number(), wf.Name(), rf.Name())
	}
	c.types2(wf, rf, label(wf), label(rf), path)
}

// types2 compares the types (and, for scalars, the labels) of two fields
// or of a map's keys or values.
func (c *differ) types2(wf, rf protoreflect.FieldDescriptor, wl, rl, path string) {
	wk, rk := kindOf(wf), kindOf(rf)
	if wk != rk {
		c.add(FieldKindChanged, false, path, "field %d (%s) is %s in the reader and %s in the writer: the reader cannot read it; add a new field under a new number instead", rf.Number(), rf.Name(), rk, wk)
		return
	}
	switch wk {
	case mapKind:
		c.types2(wf.MapKey(), rf.MapKey(), "", "", path)
		c.types2(wf.MapValue(), rf.MapValue(), "", "", path)
	case messageKind:
		wn, rn := localName(wf.Message()), localName(rf.Message())
		if wn != rn {
			c.add(FieldNamedTypeChanged, false, path, "field %d (%s) is a %s in the reader and a %s in the writer; add a new field under a new number instead", rf.Number(), rf.Name(), rf.Message().FullName(), wf.Message().FullName())
		}
	default:
		wg, rg := scalarGroup(wf.Kind()), scalarGroup(rf.Kind())
		if wg != rg {
			c.add(FieldScalarKindChanged, false, path, "field %d (%s) is a %s in the reader and a %s in the writer, which encode differently (compatible groups: int32, uint32, int64, uint64, bool and enums; sint32, sint64; fixed32, sfixed32; fixed64, sfixed64; string, bytes); add a new field under a new number instead", rf.Number(), rf.Name(), typeName(rf), typeName(wf))
			return
		}
		if wl == rl {
			return
		}
		if wg == "length-delimited" {
			c.add(FieldStringOrBytesLabel, true, path, "field %d (%s) changed from %s to %s", rf.Number(), rf.Name(), wl, rl)
			return
		}
		c.add(FieldNumericLabelChanged, false, path, "field %d (%s) is %s in the reader and %s in the writer: the encodings differ; add a new field under a new number instead", rf.Number(), rf.Name(), rl, wl)
	}
}

// localName is a message's full name less its file's package: Confluent
// compares named types so, which lets a package change be reported once.
func localName(m protoreflect.MessageDescriptor) string {
	pkg := string(m.ParentFile().Package())
	name := string(m.FullName())
	if pkg != "" && strings.HasPrefix(name, pkg+".") {
		return name[len(pkg)+1:]
	}
	return name
}

func typeName(f protoreflect.FieldDescriptor) string {
	if f.Kind() == protoreflect.EnumKind {
		return "enum " + string(f.Enum().FullName())
	}
	return f.Kind().String()
}
