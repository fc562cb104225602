package avro

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/hamba/avro/v2"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// Validate checks payload, a message as plain JSON (a record as an object,
// a union's value without its branch name, bytes and fixed as strings),
// against the schema: each value that does not fit its type is a violation
// at its JSON Pointer. A record field missing without a default, and a
// field the record does not declare, are violations too.
func (d *Document) Validate(payload []byte) []schema.Violation {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return []schema.Violation{{Message: "not JSON: " + err.Error()}}
	}
	return check(d.s, v, "")
}

func check(s avro.Schema, v any, path string) []schema.Violation {
	if ref, ok := s.(*avro.RefSchema); ok {
		s = ref.Schema()
	}
	bad := func(want string) []schema.Violation {
		return []schema.Violation{{Path: path, Message: fmt.Sprintf("want %s, got %s", want, jsonKind(v))}}
	}
	switch t := s.(type) {
	case *avro.RecordSchema:
		return checkRecord(t, v, path)
	case *avro.UnionSchema:
		for _, branch := range t.Types() {
			if len(check(branch, v, path)) == 0 {
				return nil
			}
		}
		return bad("one of the union's types " + unionNames(t))
	case *avro.ArraySchema:
		items, ok := v.([]any)
		if !ok {
			return bad("an array")
		}
		var out []schema.Violation
		for i, item := range items {
			out = append(out, check(t.Items(), item, path+"/"+strconv.Itoa(i))...)
		}
		return out
	case *avro.MapSchema:
		values, ok := v.(map[string]any)
		if !ok {
			return bad("an object (map)")
		}
		var out []schema.Violation
		for _, k := range sortedKeys(values) {
			out = append(out, check(t.Values(), values[k], path+"/"+pointerToken(k))...)
		}
		return out
	case *avro.EnumSchema:
		if sym, ok := v.(string); !ok || !slices.Contains(t.Symbols(), sym) {
			return bad("a symbol of " + t.FullName())
		}
		return nil
	}
	if !primitiveFits(s.Type(), v) {
		return bad(string(s.Type()))
	}
	return nil
}

func checkRecord(t *avro.RecordSchema, v any, path string) []schema.Violation {
	obj, ok := v.(map[string]any)
	if !ok {
		return []schema.Violation{{Path: path, Message: fmt.Sprintf("want record %s (an object), got %s", t.FullName(), jsonKind(v))}}
	}
	var out []schema.Violation
	declared := map[string]bool{}
	for _, f := range t.Fields() {
		declared[f.Name()] = true
		fv, present := obj[f.Name()]
		switch {
		case present:
			out = append(out, check(f.Type(), fv, path+"/"+pointerToken(f.Name()))...)
		case !f.HasDefault():
			out = append(out, schema.Violation{Path: path + "/" + pointerToken(f.Name()), Message: "missing; the field has no default"})
		}
	}
	for _, k := range sortedKeys(obj) {
		if !declared[k] {
			out = append(out, schema.Violation{Path: path + "/" + pointerToken(k), Message: "not a field of record " + t.FullName()})
		}
	}
	return out
}

func primitiveFits(t avro.Type, v any) bool {
	switch t {
	case avro.Null:
		return v == nil
	case avro.Boolean:
		_, ok := v.(bool)
		return ok
	case avro.String, avro.Bytes, avro.Fixed:
		_, ok := v.(string)
		return ok
	case avro.Int, avro.Long:
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		i, err := strconv.ParseInt(string(n), 10, 64)
		return err == nil && (t == avro.Long || (i >= math.MinInt32 && i <= math.MaxInt32))
	case avro.Float, avro.Double:
		_, ok := v.(json.Number)
		return ok
	}
	return false
}

func unionNames(u *avro.UnionSchema) string {
	names := make([]string, len(u.Types()))
	for i, b := range u.Types() {
		names[i] = string(b.Type())
		if n, ok := b.(avro.NamedSchema); ok {
			names[i] = n.FullName()
		}
	}
	return "(" + strings.Join(names, ", ") + ")"
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// pointerToken escapes a name for a JSON Pointer (RFC 6901).
func pointerToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
