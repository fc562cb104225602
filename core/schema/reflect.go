package schema

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// TagName is the struct tag Reflect reads besides "json". Its only option
// today is default=<JSON>, which must come last because the JSON may itself
// contain commas: `sqlstreams:"default=0"`, `sqlstreams:"default={\"a\":1}"`.
// Other comma-separated options before it are reserved for other sqlstreams
// packages and ignored here.
const TagName = "sqlstreams"

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	timeType          = reflect.TypeFor[time.Time]()
	numberType        = reflect.TypeFor[json.Number]()
)

// For is Reflect for a type parameter: For[Order]() describes Order.
func For[T any]() (*Schema, error) {
	return Reflect(reflect.TypeFor[T]())
}

// Reflect returns the JSON Schema of the JSON that encoding/json produces
// for values of type t (pointers at the root are dereferenced: the schema
// describes the value pointed to). See the package documentation for the
// mapping. It fails for types encoding/json cannot marshal (channels,
// functions, complex numbers, maps with unsupported key types) and for
// malformed default tags; the error names the field and says how to fix it.
func Reflect(t reflect.Type) (*Schema, error) {
	if t == nil {
		return nil, fmt.Errorf("schema: Reflect(nil): pass a concrete type, e.g. reflect.TypeFor[Order]()")
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	r := &reflector{
		root:      t,
		defs:      map[string]any{},
		defName:   map[reflect.Type]string{},
		nameOwner: map[string]reflect.Type{},
		active:    map[reflect.Type]bool{},
		cyclic:    map[reflect.Type]bool{},
	}
	body, err := r.schemaOf(t, t.String(), true)
	if err != nil {
		return nil, err
	}
	root, ok := body.(map[string]any)
	if !ok { // true: the root accepts anything
		root = map[string]any{}
	}
	root["$schema"] = Draft
	if len(r.defs) > 0 {
		root["$defs"] = r.defs
	}
	s := newSchema(root)
	s.shared = r.shared
	return s, nil
}

type reflector struct {
	root      reflect.Type
	defs      map[string]any
	defName   map[reflect.Type]string
	nameOwner map[string]reflect.Type
	active    map[reflect.Type]bool // named non-struct types being built
	cyclic    map[reflect.Type]bool // ... that turned out to refer to themselves
	shared    []SharedRef           // shared types met, referenced by name
}

func num(i int64) json.Number   { return json.Number(strconv.FormatInt(i, 10)) }
func unum(u uint64) json.Number { return json.Number(strconv.FormatUint(u, 10)) }

func implements(t, iface reflect.Type) bool {
	return t.Implements(iface) || (t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(iface))
}

// schemaOf builds the schema for t. where names the Go location for errors.
func (r *reflector) schemaOf(t reflect.Type, where string, atRoot bool) (any, error) {
	if t.Kind() == reflect.Pointer {
		s, err := r.schemaOf(t.Elem(), where, false)
		if err != nil {
			return nil, err
		}
		return nullable(s), nil
	}
	// encoding/json's own precedence: json.Marshaler, then TextMarshaler,
	// then the kind. time.Time and json.Number marshal themselves in a
	// known shape, so they get a precise schema instead of "anything".
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}, nil
	case t == numberType:
		return map[string]any{"type": "number"}, nil
	case implements(t, jsonMarshalerType):
		return true, nil
	case implements(t, textMarshalerType):
		return map[string]any{"type": "string"}, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return map[string]any{"type": "boolean"}, nil
	case reflect.Int, reflect.Int64:
		return map[string]any{"type": "integer"}, nil
	case reflect.Int8, reflect.Int16, reflect.Int32:
		bits := t.Bits()
		return map[string]any{"type": "integer",
			"minimum": num(-1 << (bits - 1)), "maximum": num(1<<(bits-1) - 1)}, nil
	case reflect.Uint, reflect.Uint64, reflect.Uintptr:
		return map[string]any{"type": "integer", "minimum": num(0)}, nil
	case reflect.Uint8, reflect.Uint16, reflect.Uint32:
		return map[string]any{"type": "integer", "minimum": num(0), "maximum": unum(1<<t.Bits() - 1)}, nil
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}, nil
	case reflect.String:
		return map[string]any{"type": "string"}, nil
	case reflect.Interface:
		return true, nil
	case reflect.Struct:
		return r.structRef(t, where, atRoot)
	case reflect.Slice, reflect.Array, reflect.Map:
		return r.composite(t, where)
	}
	return nil, fmt.Errorf("schema: %s: encoding/json cannot marshal %s (kind %s); tag the field `json:\"-\"` or give the type a MarshalJSON method",
		where, t, t.Kind())
}

// structRef returns a reference to the $defs entry of a named struct,
// building it on first use. The root struct is inlined and refers to itself
// as "#". Anonymous structs are inlined (they cannot recur).
func (r *reflector) structRef(t reflect.Type, where string, atRoot bool) (any, error) {
	if atRoot {
		return r.structSchema(t, where)
	}
	if t == r.root {
		return map[string]any{"$ref": "#"}, nil
	}
	if t.Name() == "" {
		return r.structSchema(t, where)
	}
	if ref, ok, err := r.sharedRef(t, where); ok || err != nil {
		return ref, err
	}
	name, done := r.defName[t]
	if !done {
		name = r.assignName(t)
		r.defs[name] = true // placeholder; recursive references stop here
		s, err := r.structSchema(t, where)
		if err != nil {
			return nil, err
		}
		r.defs[name] = s
	}
	return map[string]any{"$ref": "#/$defs/" + escapePointer(name)}, nil
}

// composite builds slices, arrays and maps. A named one that refers to
// itself (type Tree map[string]Tree) is moved to $defs so the schema ends.
func (r *reflector) composite(t reflect.Type, where string) (any, error) {
	if t.Name() != "" {
		if r.active[t] {
			r.cyclic[t] = true
			if _, ok := r.defName[t]; !ok {
				r.assignName(t)
			}
			return map[string]any{"$ref": "#/$defs/" + escapePointer(r.defName[t])}, nil
		}
		r.active[t] = true
		defer delete(r.active, t)
	}
	var s map[string]any
	switch t.Kind() {
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && !implements(t.Elem(), jsonMarshalerType) && !implements(t.Elem(), textMarshalerType) {
			// []byte is a base64 string; nil marshals as null.
			return map[string]any{"type": []any{"string", "null"}, "contentEncoding": "base64"}, nil
		}
		items, err := r.schemaOf(t.Elem(), where+"[]", false)
		if err != nil {
			return nil, err
		}
		// A nil slice marshals as null.
		s = map[string]any{"type": []any{"array", "null"}, "items": items}
	case reflect.Array:
		items, err := r.schemaOf(t.Elem(), where+"[]", false)
		if err != nil {
			return nil, err
		}
		n := num(int64(t.Len()))
		s = map[string]any{"type": "array", "items": items, "minItems": n, "maxItems": n}
	case reflect.Map:
		k := t.Key()
		var names any
		switch {
		case k.Kind() == reflect.String:
		case implements(k, textMarshalerType):
		case k.Kind() >= reflect.Int && k.Kind() <= reflect.Int64:
			names = map[string]any{"pattern": "^-?[0-9]+$"}
		case k.Kind() >= reflect.Uint && k.Kind() <= reflect.Uintptr:
			names = map[string]any{"pattern": "^[0-9]+$"}
		default:
			return nil, fmt.Errorf("schema: %s: encoding/json cannot marshal map key type %s; use string, integer or encoding.TextMarshaler keys", where, k)
		}
		values, err := r.schemaOf(t.Elem(), where+"[key]", false)
		if err != nil {
			return nil, err
		}
		// A nil map marshals as null.
		s = map[string]any{"type": []any{"object", "null"}, "additionalProperties": values}
		if names != nil {
			s["propertyNames"] = names
		}
	}
	if r.cyclic[t] {
		name := r.defName[t]
		r.defs[name] = s
		return map[string]any{"$ref": "#/$defs/" + escapePointer(name)}, nil
	}
	return s, nil
}

// assignName picks a stable $defs key for t: the type's name, made safe for
// a JSON pointer; on a clash with another package's type of the same name,
// the package's last path element is prepended, then a counter.
func (r *reflector) assignName(t reflect.Type) string {
	base := sanitizeName(t.Name())
	name := base
	if owner, taken := r.nameOwner[name]; taken && owner != t {
		pkg := t.PkgPath()
		pkg = pkg[strings.LastIndex(pkg, "/")+1:]
		name = sanitizeName(pkg) + "_" + base
		for i := 2; r.nameOwner[name] != nil; i++ {
			name = fmt.Sprintf("%s_%s_%d", sanitizeName(pkg), base, i)
		}
	}
	r.nameOwner[name] = t
	r.defName[t] = name
	return name
}

// sanitizeName keeps letters, digits, '_', '-' and '.': generic type names
// such as Pair[int,string] would otherwise need escaping in every $ref.
func sanitizeName(s string) string {
	var b strings.Builder
	for _, c := range s {
		if unicode.IsLetter(c) || unicode.IsDigit(c) || c == '_' || c == '-' || c == '.' {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

// field is one JSON object member of a struct, after encoding/json's rules
// for embedding, tags and name conflicts.
type field struct {
	name     string
	index    []int
	typ      reflect.Type
	tagged   bool
	optional bool // omitempty or omitzero
	quoted   bool // the ",string" option applies
	deflt    string
	hasDeflt bool
	goName   string
}

func (r *reflector) structSchema(t reflect.Type, where string) (map[string]any, error) {
	fields, err := jsonFields(t)
	if err != nil {
		return nil, fmt.Errorf("schema: %s: %w", where, err)
	}
	props := map[string]any{}
	required := []any{}
	for _, f := range fields {
		fwhere := where + "." + f.goName
		s, err := r.schemaOf(f.typ, fwhere, false)
		if err != nil {
			return nil, err
		}
		if f.quoted {
			s = quotedSchema(f.typ)
		}
		if f.hasDeflt {
			var v any
			dec := json.NewDecoder(strings.NewReader(f.deflt))
			dec.UseNumber()
			if err := dec.Decode(&v); err != nil {
				return nil, fmt.Errorf("schema: %s: tag %s:%q: the default must be JSON, e.g. default=0 or default=\"text\": %v", fwhere, TagName, "default="+f.deflt, err)
			}
			if err := json.Unmarshal([]byte(f.deflt), reflect.New(f.typ).Interface()); err != nil && !f.quoted {
				return nil, fmt.Errorf("schema: %s: default %s does not decode into %s: %v", fwhere, f.deflt, f.typ, err)
			}
			s = withKeyword(s, "default", v)
		}
		props[f.name] = s
		if !f.optional {
			required = append(required, f.name)
		}
	}
	sort.Slice(required, func(i, j int) bool { return required[i].(string) < required[j].(string) })
	s := map[string]any{
		"type":       "object",
		"properties": props,
		// encoding/json ignores members it does not know, so a Go reader is
		// open; see the package documentation for how each Policy uses this.
		"additionalProperties": true,
	}
	if len(required) > 0 {
		s["required"] = required
	}
	return s, nil
}

// quotedSchema is the schema of a field with the ",string" option:
// encoding/json writes the value as a JSON string holding its JSON text.
func quotedSchema(t reflect.Type) any {
	ptr := false
	if t.Kind() == reflect.Pointer {
		t, ptr = t.Elem(), true
	}
	s := map[string]any{"type": "string"}
	switch k := t.Kind(); {
	case k == reflect.Bool:
		s["enum"] = []any{"false", "true"}
	case k >= reflect.Int && k <= reflect.Int64:
		s["pattern"] = "^-?[0-9]+$"
	case k >= reflect.Uint && k <= reflect.Uintptr:
		s["pattern"] = "^[0-9]+$"
	}
	if ptr {
		return nullable(s)
	}
	return s
}

// nullable adds null to what s accepts, the way encoding/json writes a nil
// pointer, slice or map.
func nullable(s any) any {
	m, ok := s.(map[string]any)
	if !ok {
		return s // true already accepts null
	}
	_, hasEnum := m["enum"]
	switch t := m["type"].(type) {
	case string:
		if !hasEnum && m["$ref"] == nil {
			c := copyMap(m)
			c["type"] = []any{t, "null"}
			return c
		}
	case []any:
		for _, x := range t {
			if x == "null" {
				return m
			}
		}
		if !hasEnum && m["$ref"] == nil {
			c := copyMap(m)
			c["type"] = append(append([]any{}, t...), "null")
			return c
		}
	}
	return map[string]any{"anyOf": []any{m, map[string]any{"type": "null"}}}
}

func withKeyword(s any, k string, v any) any {
	var m map[string]any
	if mm, ok := s.(map[string]any); ok {
		m = copyMap(mm)
	} else {
		m = map[string]any{}
	}
	m[k] = v
	return m
}

func copyMap(m map[string]any) map[string]any {
	c := make(map[string]any, len(m)+1)
	for k, v := range m {
		c[k] = v
	}
	return c
}

// jsonFields lists the members encoding/json marshals for struct type t,
// applying its rules: unexported fields are skipped (but embedded
// unexported structs still promote their exported fields), `json:"-"`
// drops a field, an embedded struct without a tag name promotes its fields
// breadth-first, and among members with the same name the shallowest wins,
// then the tagged one; otherwise the ambiguous members all disappear.
func jsonFields(t reflect.Type) ([]field, error) {
	fields, err := walkJSONFields(t)
	if err != nil {
		return nil, err
	}
	return dominantFields(fields), nil
}

// walkJSONFields lists every member of t that encoding/json could marshal,
// walking embedded structs breadth-first, one depth at a time, so that
// dominantFields can settle names shared by several members.
func walkJSONFields(t reflect.Type) ([]field, error) {
	type queued struct {
		typ    reflect.Type
		index  []int
		viaPtr bool // reached through an embedded pointer
	}
	var fields []field
	current, next := []queued{}, []queued{{typ: t}}
	var count map[reflect.Type]int
	nextCount := map[reflect.Type]int{t: 1}
	visited := map[reflect.Type]bool{}
	for len(next) > 0 {
		current, next = next, current[:0]
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, q := range current {
			if visited[q.typ] {
				continue
			}
			visited[q.typ] = true
			for i := 0; i < q.typ.NumField(); i++ {
				sf := q.typ.Field(i)
				if !marshalled(sf) {
					continue
				}
				name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
				index := append(append([]int{}, q.index...), i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					f, err := jsonMember(sf, name, opts, index, ft, q.viaPtr)
					if err != nil {
						return nil, err
					}
					fields = append(fields, f)
					if count[q.typ] > 1 {
						// The same struct embedded twice at this depth:
						// duplicate the field so the conflict rule drops it.
						fields = append(fields, f)
					}
					continue
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					next = append(next, queued{typ: ft, index: index, viaPtr: q.viaPtr || sf.Type.Kind() == reflect.Pointer})
				}
			}
		}
	}
	return fields, nil
}

// marshalled reports whether encoding/json can marshal sf or, for an
// embedded unexported struct, the exported fields it promotes.
func marshalled(sf reflect.StructField) bool {
	if sf.Anonymous {
		et := sf.Type
		if et.Kind() == reflect.Pointer {
			et = et.Elem()
		}
		if !sf.IsExported() && et.Kind() != reflect.Struct {
			return false
		}
	} else if !sf.IsExported() {
		return false
	}
	return sf.Tag.Get("json") != "-"
}

// jsonMember is the member sf marshals as, named by its tag's name (or its
// Go name) with the tag's options opts; ft is its type, through an unnamed
// pointer. A member reached through an embedded pointer (viaPtr) is
// optional: encoding/json omits it when the pointer is nil. Tags that
// encoding/json reads differently under GOEXPERIMENT=jsonv2 are refused.
func jsonMember(sf reflect.StructField, name, opts string, index []int, ft reflect.Type, viaPtr bool) (field, error) {
	if name != "" && !validTagName(name) {
		return field{}, fmt.Errorf("field %s: json tag name %q contains a quote, apostrophe or backslash, a control character, a symbol other than ASCII punctuation or invalid UTF-8, which encoding/json reads differently with and without GOEXPERIMENT=jsonv2; rename the member", sf.Name, name)
	}
	f := field{name: name, index: index, typ: sf.Type, tagged: name != "", goName: sf.Name, optional: viaPtr}
	if f.name == "" {
		f.name = sf.Name
	}
	for _, o := range strings.Split(opts, ",") {
		if w := optionWord(o); w != o && (w == "omitempty" || w == "omitzero" || w == "string") {
			return field{}, fmt.Errorf("field %s: json tag option %q is %q to encoding/json under GOEXPERIMENT=jsonv2 (Go 1.27's default) and ignored without it; write %q", sf.Name, o, w, w)
		}
		switch o {
		case "omitempty":
			// Structs and non-empty arrays are never
			// "empty", so omitempty does not omit them.
			f.optional = f.optional || canBeEmpty(sf.Type)
		case "omitzero":
			f.optional = true
		case "string":
			switch ft.Kind() {
			case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
				reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
				reflect.Float32, reflect.Float64, reflect.String:
				f.quoted = true
			}
		}
	}
	if st, ok := sf.Tag.Lookup(TagName); ok {
		if _, d, found := strings.Cut(st, "default="); found {
			f.deflt, f.hasDeflt = d, true
		}
	}
	return f, nil
}

// dominantFields settles members that share a name as encoding/json does:
// the shallowest wins, then the tagged one among equally deep members;
// otherwise none of them is marshalled.
func dominantFields(fields []field) []field {
	sort.SliceStable(fields, func(i, j int) bool {
		a, b := fields[i], fields[j]
		if a.name != b.name {
			return a.name < b.name
		}
		if len(a.index) != len(b.index) {
			return len(a.index) < len(b.index)
		}
		return a.tagged && !b.tagged
	})
	var out []field
	for i := 0; i < len(fields); {
		j := i + 1
		for j < len(fields) && fields[j].name == fields[i].name {
			j++
		}
		group := fields[i:j]
		if len(group) == 1 || len(group[0].index) < len(group[1].index) || group[0].tagged != group[1].tagged {
			out = append(out, group[0])
		}
		i = j
	}
	return out
}

// canBeEmpty reports whether omitempty can omit a value of type t:
// false, 0, "", nil pointers and interfaces, and empty slices, maps and
// zero-length arrays.
func canBeEmpty(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Struct:
		return false
	case reflect.Array:
		return t.Len() == 0
	}
	return true
}

// optionWord is the json tag option encoding/json v2 reads from o: its
// leading letters, digits and underscores (v1 reads o whole).
func optionWord(o string) string {
	rest := strings.TrimLeftFunc(o, func(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) })
	return o[:len(o)-len(rest)]
}

// validTagName is encoding/json v1's test of a tag name. v1 ignores a name
// made of other characters and uses the Go field name; v2 (Go 1.27's
// default encoding/json) uses the name, or reads up to a quote. Reflect
// refuses such a name rather than describe one of the two.
func validTagName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}
