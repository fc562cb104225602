package jsonschema

import (
	"cmp"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"github.com/sqlstreams/sqlstreams/core/schema"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// validator is one compiled revision. A compiled jsonschema.Schema is
// read-only, so Validate is safe for concurrent use.
type validator struct{ s *jsonschema.Schema }

// Validate lists what makes payload break the schema, each problem at the
// JSON Pointer of the value at fault: a missing required property and a
// property the schema does not allow at the property's own path, every
// other failing keyword at the value it judged.
func (v validator) Validate(payload []byte) []schema.Violation {
	inst, err := parse(payload)
	if err != nil {
		return []schema.Violation{{Message: "not JSON: " + err.Error()}}
	}
	err = v.s.Validate(inst)
	if err == nil {
		return nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) { // Validate returns nothing else; say so rather than pass the message
		return []schema.Violation{{Message: err.Error()}}
	}
	p := message.NewPrinter(language.English)
	return sorted(collect(p, verr, nil))
}

// sorted orders violations by path, token by token (array indexes as
// numbers), then by message. The library visits an object's members in
// map order, so without it the same message could list its problems in
// another order each time.
func sorted(vs []schema.Violation) []schema.Violation {
	slices.SortFunc(vs, func(a, b schema.Violation) int {
		if c := comparePointers(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	return vs
}

func comparePointers(a, b string) int {
	at, bt := strings.Split(a, "/"), strings.Split(b, "/")
	for i := 0; i < len(at) && i < len(bt); i++ {
		if at[i] == bt[i] {
			continue
		}
		an, aerr := strconv.Atoi(at[i])
		bn, berr := strconv.Atoi(bt[i])
		if aerr == nil && berr == nil {
			return cmp.Compare(an, bn)
		}
		return strings.Compare(at[i], bt[i])
	}
	return cmp.Compare(len(at), len(bt))
}

// collect walks the library's tree of failures: inner nodes ("$ref",
// allOf, properties) only group their causes, so each leaf is a violation,
// except that a failed anyOf or oneOf is one violation at the value it
// judged, naming why each alternative failed, since no single alternative
// is the one the message meant.
func collect(p *message.Printer, e *jsonschema.ValidationError, out []schema.Violation) []schema.Violation {
	path := pointer(e.InstanceLocation)
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		for _, name := range k.Missing {
			out = append(out, schema.Violation{Path: path + "/" + token(name), Message: "missing; the schema requires it"})
		}
		return out
	case *kind.AdditionalProperties:
		for _, name := range k.Properties {
			out = append(out, schema.Violation{Path: path + "/" + token(name), Message: "not allowed; the schema declares no such property"})
		}
		return out
	case *kind.AnyOf, *kind.OneOf:
		if len(e.Causes) > 0 {
			return append(out, schema.Violation{Path: path, Message: alternatives(p, e)})
		}
	}
	if len(e.Causes) == 0 {
		return append(out, schema.Violation{Path: path, Message: e.ErrorKind.LocalizedString(p)})
	}
	for _, c := range e.Causes {
		out = collect(p, c, out)
	}
	return out
}

// alternatives words a failed anyOf or oneOf: the keyword, then each
// alternative's problems.
func alternatives(p *message.Printer, e *jsonschema.ValidationError) string {
	word := "anyOf"
	if _, ok := e.ErrorKind.(*kind.OneOf); ok {
		word = "oneOf"
	}
	parts := make([]string, len(e.Causes))
	for i, c := range e.Causes {
		var problems []string
		for _, v := range sorted(collect(p, c, nil)) {
			problems = append(problems, v.String())
		}
		parts[i] = strings.Join(problems, ", ")
	}
	return "matches no alternative of " + word + ": " + strings.Join(parts, " | ")
}

// pointer is a JSON Pointer (RFC 6901) of a location's tokens; "" is the
// whole message.
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteString("/" + token(t))
	}
	return b.String()
}

// token escapes a name for a JSON Pointer.
func token(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
