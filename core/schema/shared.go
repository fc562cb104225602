package schema

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Shared is implemented by a named struct type whose schema is recorded
// once, as a schema of its own, and referenced by name from the schema of
// every message that contains it, instead of being copied into each one as
// a "$defs" entry. It is opt-in: types that do not implement it reflect as
// before.
//
// The method is called on the zero value and must return a constant. The
// registry records the shared type's schema on the stream SharedSchema
// names (creating it, without rows, as a producer registration would) at
// its version, and a change to the shared type is then checked against
// every schema that references it and their deployed readers.
type Shared interface {
	SharedSchema() SharedName
}

// SharedName says where a shared type's schema is recorded.
type SharedName struct {
	Stream  string
	Version int
}

// Ref is the "$ref" value that refers to the shared schema, which is also
// the reference's name: "{stream}-v{version}", the subject a
// Confluent-compatible client sees for it.
func (n SharedName) Ref() string { return n.Stream + "-v" + strconv.Itoa(n.Version) }

// SharedRef is one shared type a reflected schema refers to: where it is
// recorded and its own schema (which may refer to further shared types).
type SharedRef struct {
	Name   SharedName
	Schema *Schema
}

// Shared lists the shared types the schema refers to directly, in the
// order reflection met them. Only schemas made by Reflect or For have
// any; a parsed document carries its references separately.
func (s *Schema) Shared() []SharedRef {
	if s == nil {
		return nil
	}
	return append([]SharedRef(nil), s.shared...)
}

var sharedType = reflect.TypeFor[Shared]()

// sharedRef reflects a shared type on its own and returns the reference
// to it; ok is false for types that are not shared.
func (r *reflector) sharedRef(t reflect.Type, where string) (ref any, ok bool, err error) {
	if t.Name() == "" || !implements(t, sharedType) {
		return nil, false, nil
	}
	name, err := sharedName(t)
	if err != nil {
		return nil, true, fmt.Errorf("schema: %s: %w", where, err)
	}
	for _, s := range r.shared {
		if s.Name == name {
			return map[string]any{"$ref": name.Ref()}, true, nil
		}
	}
	own, err := Reflect(t)
	if err != nil {
		return nil, true, err
	}
	r.shared = append(r.shared, SharedRef{Name: name, Schema: own})
	return map[string]any{"$ref": name.Ref()}, true, nil
}

func sharedName(t reflect.Type) (n SharedName, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s.SharedSchema panicked on the zero value (%v); implement it on the value receiver and return a constant", t, p)
		}
	}()
	v := reflect.New(t).Elem()
	if !t.Implements(sharedType) {
		v = reflect.New(t) // pointer receiver
	}
	n = v.Interface().(Shared).SharedSchema()
	if n.Stream == "" || n.Version < 1 || strings.ContainsAny(n.Stream, "/#~") {
		return n, fmt.Errorf("%s.SharedSchema returns %+v; give a stream name and a version from 1", t, n)
	}
	return n, nil
}

// Bundle returns s with its references by name resolved: each
// {"$ref": name} whose name is a key of refs points, in the result, at a
// copy of refs[name] placed under "$defs". refs must hold every schema
// reachable through references (the referenced schemas' own references
// included), flat, by name. The result compares like a self-contained
// schema: Diff and Check follow the resolved references. s is unchanged.
func Bundle(s *Schema, refs map[string]*Schema) (*Schema, error) {
	if len(refs) == 0 {
		return s, nil
	}
	root, ok := deepCopy(s.value()).(map[string]any)
	if !ok { // a boolean schema refers to nothing
		return s, nil
	}
	defs, _ := root["$defs"].(map[string]any)
	if defs == nil {
		defs = map[string]any{}
	}
	for name, ref := range refs {
		key := bundleKey(name)
		if _, taken := defs[key]; taken {
			return nil, fmt.Errorf("schema: bundle: $defs already has %q", key)
		}
		sub := deepCopy(ref.value())
		if m, ok := sub.(map[string]any); ok {
			delete(m, "$schema")
			delete(m, "$id")
			base := "#/$defs/" + escapePointer(key)
			walkSchemas(m, func(n map[string]any) {
				if r, ok := n["$ref"].(string); ok && strings.HasPrefix(r, "#") && (r == "#" || strings.HasPrefix(r, "#/")) {
					n["$ref"] = base + r[1:]
				}
			})
		}
		defs[key] = sub
	}
	root["$defs"] = defs
	walkSchemas(root, func(n map[string]any) {
		if r, ok := n["$ref"].(string); ok {
			if _, named := refs[r]; named {
				n["$ref"] = "#/$defs/" + escapePointer(bundleKey(r))
			}
		}
	})
	return newSchema(root), nil
}

func bundleKey(name string) string { return "ref:" + name }

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = deepCopy(e)
		}
		return l
	}
	return v
}
