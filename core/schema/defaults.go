package schema

import (
	"reflect"
	"slices"
)

// Default is a member's declared default (the sqlstreams tag), located by
// its reflect index path from the root type.
type Default struct {
	Index []int
	JSON  []byte
}

// Defaults lists the defaults a decoder of t must fill in before it
// unmarshals: the members Reflect gives a "default", following encoding/json's
// rules for embedded and conflicting fields, also inside struct members held
// by value. It is how a reader honours a default that made a new required
// member compatible.
func Defaults(t reflect.Type) ([]Default, error) {
	var out []Default
	var walk func(t reflect.Type, prefix []int, seen []reflect.Type) error
	walk = func(t reflect.Type, prefix []int, seen []reflect.Type) error {
		if t.Kind() != reflect.Struct || slices.Contains(seen, t) {
			return nil
		}
		fields, err := jsonFields(t)
		if err != nil {
			return err
		}
		seen = append(seen, t)
		for _, f := range fields {
			index := append(slices.Clone(prefix), f.index...)
			if f.hasDeflt {
				out = append(out, Default{Index: index, JSON: []byte(f.deflt)})
				continue
			}
			if err := walk(f.typ, index, seen); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(t, nil, nil)
}
