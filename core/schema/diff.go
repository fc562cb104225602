package schema

import (
	"fmt"
	"maps"
	"math/big"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Difference is one change found by Diff.
type Difference struct {
	Kind DiffKind
	// Path locates the change as a JSON pointer fragment into the new
	// schema, following references from where they are used, e.g.
	// "#/properties/total/type".
	Path    string
	Message string
	// Compatible reports whether this change on its own is backward
	// compatible: a reader using the new schema still reads every document
	// written with the old one.
	Compatible bool
}

func (d Difference) String() string {
	verdict := "incompatible"
	if d.Compatible {
		verdict = "compatible"
	}
	return fmt.Sprintf("%s %s at %s: %s", verdict, d.Kind, d.Path, d.Message)
}

// Policy selects the rules Diff judges changes by. The zero value is
// GoAware.
type Policy int

const (
	// GoAware judges a change by what a Go reader decoding with
	// encoding/json actually does; see the package documentation. It is
	// the default because sqlstreams derives schemas from Go types.
	GoAware Policy = iota
	// Strict follows Confluent's JSON Schema rules: every schema keyword is
	// a promise about the documents, and content models are taken
	// literally. It is what the Apicurio corpus in testdata checks.
	Strict
)

func (p Policy) String() string {
	switch p {
	case GoAware:
		return "GoAware"
	case Strict:
		return "Strict"
	}
	return "Policy(" + strconv.Itoa(int(p)) + ")"
}

// Limits that keep Diff finite on adversarial documents. Schemas from
// Reflect stay far below them.
const (
	maxDepth = 200
	maxSteps = 200000
	maxCross = 64 // alternatives produced by merging two anyOf/oneOf lists
)

// Diff lists the differences from old to new, each with a backward
// compatibility verdict under policy (backward: a reader using new reads
// data written with old). The list is deterministic. Compatible changes
// are listed too, so the result doubles as a change log; filter on
// Difference.Compatible for the problems. To judge the other direction,
// swap the arguments: Check does exactly that for FORWARD levels.
func Diff(old, new *Schema, policy Policy) []Difference {
	d := &differ{policy: policy, active: map[string]bool{}}
	out := []Difference{}
	d.compare(&out, node{old.value(), "#", old}, node{new.value(), "#", new}, "#")
	return out
}

// node is a subschema together with the document its references resolve
// in and a location that identifies it for cycle detection.
type node struct {
	v   any
	loc string
	doc *Schema
}

func (n node) child(v any, seg string) node {
	return node{v, n.loc + "/" + seg, n.doc}
}

func (n node) m() map[string]any {
	if m, ok := n.v.(map[string]any); ok {
		return m
	}
	return map[string]any{}
}

// draft is the JSON Schema draft a document declares with "$schema".
// Keywords a draft does not define are ignored in documents of that draft,
// as a validator of that draft would; a document that declares no draft
// (or one not listed) is read with every keyword.
type draft int

const (
	draftAny    draft = iota // no or unknown $schema
	draftLegacy              // draft-04, draft-06, draft-07
	draft2019                // 2019-09
	draft2020                // 2020-12
)

func draftOf(s *Schema) draft {
	if s == nil {
		return draftAny
	}
	m, _ := s.root.(map[string]any)
	uri, _ := m["$schema"].(string)
	switch {
	case strings.Contains(uri, "/draft-03/"), strings.Contains(uri, "/draft-04/"),
		strings.Contains(uri, "/draft-06/"), strings.Contains(uri, "/draft-07/"):
		return draftLegacy
	case strings.Contains(uri, "/draft/2019-09/"):
		return draft2019
	case strings.Contains(uri, "/draft/2020-12/"):
		return draft2020
	}
	return draftAny
}

// keywordSince lists the keywords that only some drafts define, with the
// first draft that does.
var keywordSince = map[string]draft{
	"unevaluatedProperties": draft2019,
	"unevaluatedItems":      draft2019,
	"dependentRequired":     draft2019,
	"dependentSchemas":      draft2019,
	"prefixItems":           draft2020,
}

// kw returns a keyword's value if the node's draft defines the keyword.
func (n node) kw(name string) (any, bool) {
	v, ok := n.m()[name]
	if !ok {
		return nil, false
	}
	if since, gated := keywordSince[name]; gated {
		if dr := draftOf(n.doc); dr != draftAny && dr < since {
			return nil, false
		}
	}
	return v, true
}

type differ struct {
	policy Policy
	active map[string]bool // (old, new) location pairs being compared
	depth  int
	steps  int
}

func (d *differ) add(out *[]Difference, kind DiffKind, path string, compatible bool, format string, args ...any) {
	*out = append(*out, Difference{Kind: kind, Path: path, Message: fmt.Sprintf(format, args...), Compatible: compatible})
}

// accepts reports whether everything o accepts, n accepts too, according
// to the same rules, without recording the differences.
func (d *differ) accepts(o, n node) bool {
	var ds []Difference
	d.compare(&ds, o, n, "#")
	return allCompatible(ds)
}

func allCompatible(ds []Difference) bool {
	for _, x := range ds {
		if !x.Compatible {
			return false
		}
	}
	return true
}

var anything = node{v: true, loc: "true"}

// deref replaces a schema that is a "$ref" by its target. Keywords beside
// the reference apply too (as in draft 2019-09 and later), so they are
// merged in. Unresolvable (remote) references are left in place.
func (d *differ) deref(n node) node {
	for range 32 {
		m, ok := n.v.(map[string]any)
		if !ok {
			return n
		}
		ref, ok := m["$ref"].(string)
		if !ok || n.doc == nil {
			return n
		}
		target, found := n.doc.resolve(ref)
		if !found {
			return n
		}
		siblings := map[string]any{}
		for k, v := range m {
			switch k {
			case "$ref", "$schema", "$id", "id", "$anchor", "$defs", "definitions", "title", "description", "$comment", "examples", "default":
			default:
				siblings[k] = v
			}
		}
		loc := "ref:" + ref
		if len(siblings) > 0 {
			if tm, isMap := target.(map[string]any); isMap {
				target = merge(tm, siblings)
				loc = n.loc + "&" + loc
			} else if target == false {
				// false stays false whatever is beside it
			} else {
				target = siblings
				loc = n.loc + "&" + loc
			}
		}
		n = node{target, loc, n.doc}
	}
	return anything // a chain of 32 references: give up rather than loop
}

func (d *differ) compare(out *[]Difference, o, n node, path string) {
	d.steps++
	if d.steps > maxSteps || d.depth > maxDepth {
		return
	}
	d.depth++
	defer func() { d.depth-- }()

	o, n = d.deref(o), d.deref(n)
	key := fmt.Sprintf("%p%s\x00%p%s", o.doc, o.loc, n.doc, n.loc)
	if d.active[key] {
		// A recursive type compared with itself: assume compatible here;
		// any real difference shows up on the first pass through it.
		return
	}
	d.active[key] = true
	defer delete(d.active, key)

	if o.v == false {
		if n.v != false {
			d.add(out, TypeExtended, path, true, "the old schema accepted nothing (false); the new one accepts values")
		}
		return
	}
	if n.v == false {
		d.add(out, TypeNarrowed, path, false, "the new schema accepts nothing (false), so no value written with the old schema can be read")
		return
	}
	if hasCombinator(o.m()) || hasCombinator(n.m()) {
		d.compareCombined(out, o, n, path)
		return
	}
	d.compareKeywords(out, o, n, path)
}

func hasCombinator(m map[string]any) bool {
	_, a := m["allOf"]
	_, b := m["anyOf"]
	_, c := m["oneOf"]
	return a || b || c
}

// disjuncts rewrites a schema as alternatives without combinators at the
// top: allOf members are merged into the schema, and anyOf (or oneOf)
// members are each merged with the rest. kind is the combinator split on.
func (d *differ) disjuncts(n node) ([]node, string) {
	seen := map[string]bool{} // A ∧ A = A: a recursive allOf merges once
	for range 16 {
		m := n.m()
		all, ok := m["allOf"].([]any)
		if !ok {
			break
		}
		merged := without(m, "allOf")
		var result any = merged
		for i, item := range all {
			d.steps++
			it := d.deref(n.child(item, "allOf/"+strconv.Itoa(i)))
			if seen[it.loc] {
				continue
			}
			seen[it.loc] = true
			if it.v == false {
				result = false
				break
			}
			merged = merge(merged, it.m())
			result = merged
		}
		n = node{result, n.loc + "/allOf*", n.doc}
		if result == false {
			return []node{n}, ""
		}
	}
	m := n.m()
	for _, kind := range []string{"anyOf", "oneOf"} {
		list, ok := m[kind].([]any)
		if !ok {
			continue
		}
		top := without(m, kind)
		alts := make([]node, 0, len(list))
		for i, b := range list {
			br := d.deref(n.child(b, kind+"/"+strconv.Itoa(i)))
			var v any = top
			if br.v == false {
				v = false
			} else if bm := br.m(); len(bm) > 0 {
				v = merge(top, bm)
			}
			alts = append(alts, node{v, br.loc + "*", n.doc})
		}
		return alts, kind
	}
	return []node{n}, ""
}

// combinator is the top-level combination keyword of a schema and how many
// members it lists: anyOf or oneOf when present (they decide the
// alternatives; an allOf beside them is merged into each), else allOf,
// else none.
type combinator struct {
	kind  string // "anyOf", "oneOf", "allOf" or ""
	count int
}

func combinatorOf(m map[string]any) combinator {
	for _, kind := range []string{"anyOf", "oneOf", "allOf"} {
		if list, ok := m[kind].([]any); ok {
			return combinator{kind, len(list)}
		}
	}
	return combinator{}
}

// criterionWidens says whether replacing combinator o by n (both present,
// different) keeps every value acceptable: anything may become anyOf, and
// a single-member combinator is the same as its member, so it may become
// oneOf, and allOf may become a single-member one. This is Confluent's
// rule; any other change (anyOf or oneOf to allOf, anyOf or allOf to a
// oneOf of several) is COMBINED_TYPE_CHANGED.
func criterionWidens(o, n combinator) bool {
	return n.kind == "anyOf" ||
		(o.count == 1 && n.count == 1) ||
		(o.count == 1 && n.kind == "oneOf") ||
		(n.count == 1 && o.kind == "allOf")
}

// compareCombined compares schemas using allOf/anyOf/oneOf: every
// alternative of the old schema must be accepted by some alternative of the
// new one. allOf only narrows, so its members are merged first.
func (d *differ) compareCombined(out *[]Difference, o, n node, path string) {
	oc, nc := combinatorOf(o.m()), combinatorOf(n.m())
	_, oKept := n.m()[oc.kind]
	_, nHad := o.m()[nc.kind]
	if oc.kind != "" && nc.kind != "" && oc.kind != nc.kind && !oKept && !nHad {
		p := path + "/" + nc.kind
		if !criterionWidens(oc, nc) {
			d.add(out, CombinedTypeChanged, p, false, "%s became %s%s", oc.kind, nc.kind, combinedChangeReason(oc, nc))
			return
		}
		d.add(out, CombinedTypeExtended, p, true, "%s became %s, which accepts at least the same values", oc.kind, nc.kind)
	}

	var ds []Difference
	d.compareAlternatives(&ds, o, n, path)
	*out = append(*out, ds...)

	// allOf members counted; a schema without allOf is one member.
	if hasAllOf(o.m()) || hasAllOf(n.m()) {
		op, np := conjuncts(o.m()), conjuncts(n.m())
		ok := allCompatible(ds)
		switch {
		case np > op:
			d.add(out, ProductTypeExtended, path+"/allOf", ok, "allOf has more members (%d, was %d)%s", np, op,
				ifElse(ok, "; together they accept every old value", "; they reject some old values"))
		case np < op:
			d.add(out, ProductTypeNarrowed, path+"/allOf", ok, "allOf has fewer members (%d, was %d)%s", np, op,
				ifElse(ok, "", "; what is left still rejects some old values"))
		}
	}
}

func combinedChangeReason(o, n combinator) string {
	switch {
	case n.kind == "oneOf":
		return ": a value the old schema accepted may match several alternatives, which oneOf rejects"
	case n.kind == "allOf":
		return ": a value must now match every member, not just one"
	}
	return ""
}

func hasAllOf(m map[string]any) bool {
	_, ok := m["allOf"]
	return ok
}

// conjuncts counts the distinct allOf members (Confluent collapses
// duplicates too); a schema without allOf is one member.
func conjuncts(m map[string]any) int {
	if list, ok := m["allOf"].([]any); ok {
		return distinct(list)
	}
	return 1
}

func distinct(list []any) int {
	seen := map[string]bool{}
	for _, v := range list {
		seen[string(marshalCanon(v))] = true
	}
	return len(seen)
}

func distinctNodes(ns []node) int {
	vs := make([]any, len(ns))
	for i, x := range ns {
		vs[i] = x.v
	}
	return distinct(vs)
}

// compareAlternatives splits both schemas into alternatives and matches
// each old alternative with a new one that accepts it.
func (d *differ) compareAlternatives(out *[]Difference, o, n node, path string) {
	oAlts, _ := d.disjuncts(o)
	nAlts, nKind := d.disjuncts(n)
	if len(oAlts) == 1 && len(nAlts) == 1 {
		d.compare(out, oAlts[0], nAlts[0], path)
		return
	}
	altPath := func(j int) string {
		if nKind == "" {
			return path
		}
		return path + "/" + nKind + "/" + strconv.Itoa(j)
	}
	allMatched := true
	for i, oa := range oAlts {
		order := make([]int, 0, len(nAlts))
		if i < len(nAlts) {
			order = append(order, i)
		}
		for j := range nAlts {
			if j != i {
				order = append(order, j)
			}
		}
		var best []Difference
		bestBad := -1
		for _, j := range order {
			var ds []Difference
			d.compare(&ds, oa, nAlts[j], altPath(j))
			bad := 0
			for _, x := range ds {
				if !x.Compatible {
					bad++
				}
			}
			if bestBad < 0 || bad < bestBad {
				best, bestBad = ds, bad
			}
			if bad == 0 {
				break
			}
		}
		*out = append(*out, best...)
		if bestBad > 0 {
			allMatched = false
			switch {
			case len(nAlts) < 2:
			case d.policy == GoAware:
				// GoAware's long-standing name for this (the conformance
				// suite asserts it).
				d.add(out, SumTypeNarrowed, path, false,
					"old alternative %d is not accepted by any %s alternative of the new schema", i, nKind)
			default:
				d.add(out, CombinedTypeSubschemasChanged, path, false,
					"old alternative %d is not accepted by any %s alternative of the new schema", i, nKind)
			}
		}
	}
	on, nn := distinctNodes(oAlts), distinctNodes(nAlts)
	switch {
	case allMatched && nn > on:
		d.add(out, SumTypeExtended, path+"/"+nKind, true, "the new schema accepts more alternatives (%d, was %d)", nn, on)
	case nn < on && d.policy != GoAware:
		d.add(out, SumTypeNarrowed, path+ifElse(nKind == "", "", "/"+nKind), allMatched, "the new schema has fewer alternatives (%d, was %d)%s", nn, on,
			ifElse(allMatched, ", but each old alternative is accepted by one of them", ""))
	}
}

func without(m map[string]any, keys ...string) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	for _, k := range keys {
		delete(c, k)
	}
	return c
}

func (d *differ) compareKeywords(out *[]Difference, o, n node, path string) {
	om, nm := o.m(), n.m()

	d.annotations(out, om, nm, path)

	if or, nr := om["$ref"], nm["$ref"]; or != nil || nr != nil {
		if valueKey(or) != valueKey(nr) {
			d.add(out, ReferenceChanged, path+"/$ref", false, "unresolvable reference changed from %s to %s; the two cannot be compared", show(or), show(nr))
		}
	}

	d.compareTypes(out, om, nm, path)
	d.compareEnum(out, om, nm, path)

	// Strings.
	d.limit(out, om, nm, "maxLength", path, true, limitKinds{MaxLengthAdded, MaxLengthRemoved, MaxLengthIncreased, MaxLengthDecreased})
	d.limit(out, om, nm, "minLength", path, false, limitKinds{MinLengthAdded, MinLengthRemoved, MinLengthIncreased, MinLengthDecreased})
	d.exact(out, om, nm, "pattern", path, PatternAdded, PatternRemoved, PatternChanged)
	d.exact(out, om, nm, "format", path, FormatAdded, FormatRemoved, FormatChanged)
	d.exact(out, om, nm, "contentEncoding", path, ContentEncodingAdded, ContentEncodingRemoved, ContentEncodingChanged)
	d.exact(out, om, nm, "contentMediaType", path, ContentMediaTypeAdded, ContentMediaTypeRemoved, ContentMediaTypeChanged)

	// Numbers.
	d.bound(out, om, nm, path, false)
	d.bound(out, om, nm, path, true)
	d.multipleOf(out, om, nm, path)

	// Objects.
	d.properties(out, o, n, path)
	d.limit(out, om, nm, "maxProperties", path, true, limitKinds{MaxPropertiesAdded, MaxPropertiesRemoved, MaxPropertiesIncreased, MaxPropertiesDecreased})
	d.limit(out, om, nm, "minProperties", path, false, limitKinds{MinPropertiesAdded, MinPropertiesRemoved, MinPropertiesIncreased, MinPropertiesDecreased})
	d.subschema(out, o, n, "propertyNames", path, PropertyNamesAdded, PropertyNamesRemoved)
	d.dependencies(out, o, n, path)

	// Arrays.
	d.items(out, o, n, path)
	d.limit(out, om, nm, "maxItems", path, true, limitKinds{MaxItemsAdded, MaxItemsRemoved, MaxItemsIncreased, MaxItemsDecreased})
	d.limit(out, om, nm, "minItems", path, false, limitKinds{MinItemsAdded, MinItemsRemoved, MinItemsIncreased, MinItemsDecreased})
	if ou, nu := om["uniqueItems"] == true, nm["uniqueItems"] == true; ou != nu {
		if nu {
			d.add(out, UniqueItemsAdded, path+"/uniqueItems", false, "items must now be unique; old data may repeat them")
		} else {
			d.add(out, UniqueItemsRemoved, path+"/uniqueItems", true, "items no longer need to be unique")
		}
	}
	d.subschema(out, o, n, "contains", path, ContainsAdded, ContainsRemoved)
	d.limit(out, om, nm, "maxContains", path, true, limitKinds{MaxContainsAdded, MaxContainsRemoved, MaxContainsIncreased, MaxContainsDecreased})
	d.limit(out, om, nm, "minContains", path, false, limitKinds{MinContainsAdded, MinContainsRemoved, MinContainsIncreased, MinContainsDecreased})

	d.not(out, o, n, path)
	d.conditional(out, o, n, path)
}

func (d *differ) annotations(out *[]Difference, om, nm map[string]any, path string) {
	id := func(m map[string]any) any {
		if v, ok := m["$id"]; ok {
			return v
		}
		return m["id"] // draft-04 spelling
	}
	if a, b := id(om), id(nm); valueKey(a) != valueKey(b) {
		d.add(out, IDChanged, path+"/$id", true, "$id changed from %s to %s", show(a), show(b))
	}
	for _, k := range []struct {
		kw   string
		kind DiffKind
	}{{"title", TitleChanged}, {"description", DescriptionChanged}, {"default", DefaultChanged}} {
		a, aok := om[k.kw]
		b, bok := nm[k.kw]
		if aok != bok || valueKey(a) != valueKey(b) {
			d.add(out, k.kind, path+"/"+k.kw, true, "%s changed from %s to %s", k.kw, show(a), show(b))
		}
	}
}

func show(v any) string {
	if v == nil {
		return "(none)"
	}
	return valueKey(v)
}

var allTypes = []string{"array", "boolean", "integer", "null", "number", "object", "string"}

// typeSet is the set of JSON types a schema's "type" allows (all of them
// when absent).
func typeSet(m map[string]any) []string {
	switch t := m["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		sort.Strings(out)
		return out
	}
	return allTypes
}

// typesCover reports whether every type in a is allowed by b; integer is
// allowed by number (every integer is a number, and encoding/json decodes an
// integer into a float64 field).
func typesCover(a, b []string) bool {
	for _, t := range a {
		if !contains(b, t) && !(t == "integer" && contains(b, "number")) {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (d *differ) compareTypes(out *[]Difference, om, nm map[string]any, path string) {
	ot, nt := typeSet(om), typeSet(nm)
	fwd, back := typesCover(ot, nt), typesCover(nt, ot)
	p := path + "/type"
	switch {
	case fwd && back:
	case fwd:
		d.add(out, TypeExtended, p, true, "type widened from %s to %s", typesString(ot), typesString(nt))
	case back:
		d.add(out, TypeNarrowed, p, false, "type narrowed from %s to %s: old %s values cannot be read", typesString(ot), typesString(nt), strings.Join(missingTypes(ot, nt), "/"))
	default:
		d.add(out, TypeChanged, p, false, "type changed from %s to %s: old %s values cannot be read", typesString(ot), typesString(nt), strings.Join(missingTypes(ot, nt), "/"))
	}
}

func typesString(ts []string) string {
	switch {
	case len(ts) == len(allTypes):
		return "any type"
	case len(ts) == 0:
		return "no type"
	}
	return strings.Join(ts, "|")
}

func missingTypes(a, b []string) []string {
	var out []string
	for _, t := range a {
		if !typesCover([]string{t}, b) {
			out = append(out, t)
		}
	}
	return out
}

// enumValues is the set of allowed values from "enum" and "const" (which
// is a one-member enum), keyed canonically; nil when unrestricted.
func enumValues(m map[string]any) map[string]bool {
	var set map[string]bool
	if list, ok := m["enum"].([]any); ok {
		set = map[string]bool{}
		for _, v := range list {
			set[valueKey(v)] = true
		}
	}
	if c, ok := m["const"]; ok {
		k := valueKey(c)
		if set == nil || set[k] {
			set = map[string]bool{k: true}
		} else {
			set = map[string]bool{}
		}
	}
	return set
}

func (d *differ) compareEnum(out *[]Difference, om, nm map[string]any, path string) {
	oe, ne := enumValues(om), enumValues(nm)
	p := path + "/enum"
	switch {
	case oe == nil && ne == nil:
	case ne == nil:
		d.add(out, EnumArrayExtended, p, true, "the allowed values are no longer restricted")
	case oe == nil:
		d.add(out, EnumArrayNarrowed, p, false, "values are now restricted to %s; old data may hold others", setString(ne))
	default:
		lost, gained := setMinus(oe, ne), setMinus(ne, oe)
		switch {
		case len(lost) == 0 && len(gained) == 0:
		case len(lost) == 0:
			d.add(out, EnumArrayExtended, p, true, "allowed values extended with %s", strings.Join(gained, ", "))
		case len(gained) == 0:
			d.add(out, EnumArrayNarrowed, p, false, "allowed values %s were removed; old data may hold them", strings.Join(lost, ", "))
		default:
			d.add(out, EnumArrayChanged, p, false, "allowed values changed: %s removed, %s added", strings.Join(lost, ", "), strings.Join(gained, ", "))
		}
	}
}

func setMinus(a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func setString(s map[string]bool) string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return "[" + strings.Join(keys, ", ") + "]"
}

type limitKinds struct{ added, removed, increased, decreased DiffKind }

// limit compares a numeric limit; upper limits may grow, lower ones shrink.
func (d *differ) limit(out *[]Difference, om, nm map[string]any, kw, path string, upper bool, k limitKinds) {
	a, aok := ratOf(om[kw])
	b, bok := ratOf(nm[kw])
	p := path + "/" + kw
	switch {
	case !aok && !bok:
	case !aok:
		d.add(out, k.added, p, false, "%s %s added; old data is not limited", kw, b.RatString())
	case !bok:
		d.add(out, k.removed, p, true, "%s %s removed", kw, a.RatString())
	default:
		c := b.Cmp(a)
		switch {
		case c > 0:
			d.add(out, k.increased, p, upper, "%s increased from %s to %s", kw, a.RatString(), b.RatString())
		case c < 0:
			d.add(out, k.decreased, p, !upper, "%s decreased from %s to %s", kw, a.RatString(), b.RatString())
		}
	}
}

// exact compares a keyword whose values cannot be ordered (pattern,
// format, ...): removing it is compatible, adding or changing it is not.
func (d *differ) exact(out *[]Difference, om, nm map[string]any, kw, path string, added, removed, changed DiffKind) {
	a, aok := om[kw]
	b, bok := nm[kw]
	p := path + "/" + kw
	switch {
	case !aok && !bok:
	case !aok:
		d.add(out, added, p, false, "%s %s added; old data was not checked against it", kw, show(b))
	case !bok:
		d.add(out, removed, p, true, "%s %s removed", kw, show(a))
	case valueKey(a) != valueKey(b):
		d.add(out, changed, p, false, "%s changed from %s to %s", kw, show(a), show(b))
	}
}

// numBound is an effective lower or upper numeric bound.
type numBound struct {
	v         *big.Rat
	exclusive bool
}

// boundOf folds minimum/exclusiveMinimum (or the maximum pair) into the
// tightest bound, reading draft-04's boolean exclusiveMinimum too.
func boundOf(m map[string]any, upper bool) *numBound {
	kw, xkw := "minimum", "exclusiveMinimum"
	if upper {
		kw, xkw = "maximum", "exclusiveMaximum"
	}
	var cands []numBound
	if v, ok := ratOf(m[kw]); ok {
		cands = append(cands, numBound{v, m[xkw] == true})
	}
	if v, ok := ratOf(m[xkw]); ok {
		cands = append(cands, numBound{v, true})
	}
	var best *numBound
	for i := range cands {
		c := &cands[i]
		if best == nil || tighter(c, best, upper) {
			best = c
		}
	}
	return best
}

// tighter reports whether bound a excludes more than bound b.
func tighter(a, b *numBound, upper bool) bool {
	c := a.v.Cmp(b.v)
	if upper {
		c = -c
	}
	return c > 0 || (c == 0 && a.exclusive && !b.exclusive)
}

func (b *numBound) String() string {
	if b.exclusive {
		return "exclusive " + b.v.RatString()
	}
	return b.v.RatString()
}

func (d *differ) bound(out *[]Difference, om, nm map[string]any, path string, upper bool) {
	a, b := boundOf(om, upper), boundOf(nm, upper)
	name := "minimum"
	kinds := [2]limitKinds{
		{MinimumAdded, MinimumRemoved, MinimumIncreased, MinimumDecreased},
		{ExclusiveMinimumAdded, ExclusiveMinimumRemoved, ExclusiveMinimumIncreased, ExclusiveMinimumDecreased},
	}
	if upper {
		name = "maximum"
		kinds = [2]limitKinds{
			{MaximumAdded, MaximumRemoved, MaximumIncreased, MaximumDecreased},
			{ExclusiveMaximumAdded, ExclusiveMaximumRemoved, ExclusiveMaximumIncreased, ExclusiveMaximumDecreased},
		}
	}
	pick := func(x *numBound) (limitKinds, string) {
		if x.exclusive {
			return kinds[1], path + "/exclusive" + strings.ToUpper(name[:1]) + name[1:]
		}
		return kinds[0], path + "/" + name
	}
	switch {
	case a == nil && b == nil:
	case a == nil:
		k, p := pick(b)
		d.add(out, k.added, p, false, "%s %s added; old data is not bounded", name, b)
	case b == nil:
		k, p := pick(a)
		d.add(out, k.removed, p, true, "%s %s removed", name, a)
	case a.v.Cmp(b.v) == 0 && a.exclusive == b.exclusive:
	default:
		k, p := pick(b)
		looser := tighter(a, b, upper)
		grew := b.v.Cmp(a.v) > 0 || (b.v.Cmp(a.v) == 0 && upper == looser)
		kind := k.decreased
		if grew {
			kind = k.increased
		}
		verdict := "relaxed"
		if !looser {
			verdict = "tightened; old data may fall outside it"
		}
		d.add(out, kind, p, looser, "%s changed from %s to %s: %s", name, a, b, verdict)
	}
}

func (d *differ) multipleOf(out *[]Difference, om, nm map[string]any, path string) {
	a, aok := ratOf(om["multipleOf"])
	b, bok := ratOf(nm["multipleOf"])
	p := path + "/multipleOf"
	divides := func(x, y *big.Rat) bool { // y is a multiple of x
		return new(big.Rat).Quo(y, x).IsInt()
	}
	switch {
	case !aok && !bok:
	case !aok:
		d.add(out, MultipleOfAdded, p, false, "multipleOf %s added", b.RatString())
	case !bok:
		d.add(out, MultipleOfRemoved, p, true, "multipleOf %s removed", a.RatString())
	case a.Cmp(b) == 0:
	case divides(b, a):
		d.add(out, MultipleOfReduced, p, true, "multipleOf %s became %s, which every old value still satisfies", a.RatString(), b.RatString())
	case divides(a, b):
		d.add(out, MultipleOfExpanded, p, false, "multipleOf %s became %s; old values need not be multiples of it", a.RatString(), b.RatString())
	default:
		d.add(out, MultipleOfChanged, p, false, "multipleOf changed from %s to %s", a.RatString(), b.RatString())
	}
}

// contentModel says how an object (or tuple) treats members it does not
// name: open (anything), closed (nothing) or partially open (a schema).
type contentModel int

const (
	open contentModel = iota
	closed
	partial
)

func (d *differ) classify(n node) contentModel {
	switch v := n.v.(type) {
	case nil:
		return open
	case bool:
		if v {
			return open
		}
		return closed
	}
	if d.accepts(anything, n) {
		return open
	}
	return partial
}

// objectRest is the rule an object applies to properties that neither
// "properties" nor "patternProperties" name, and the keyword it comes
// from: additionalProperties when present (it evaluates every such
// property, so unevaluatedProperties beside it has no effect), else
// unevaluatedProperties (2019-09 and later; allOf members are merged by
// then, so their properties count as evaluated), else none (v is nil: the
// model is open).
func (d *differ) objectRest(n node) (node, string) {
	if ap, ok := n.m()["additionalProperties"]; ok {
		return n.child(ap, "additionalProperties"), "additionalProperties"
	}
	if up, ok := n.kw("unevaluatedProperties"); ok {
		return n.child(up, "unevaluatedProperties"), "unevaluatedProperties"
	}
	return node{nil, n.loc + "/additionalProperties", n.doc}, ""
}

// memberSchema is the schema an object applies to a property it does not
// declare: the first matching patternProperties entry, else the rule of
// objectRest.
func (d *differ) memberSchema(n node, name string) node {
	m := n.m()
	if pp, ok := m["patternProperties"].(map[string]any); ok {
		for _, pat := range sortedKeys(pp) {
			if re, err := regexp.Compile(pat); err == nil && re.MatchString(name) {
				return d.deref(n.child(pp[pat], "patternProperties/"+escapePointer(pat)))
			}
		}
	}
	rest, _ := d.objectRest(n)
	if rest.v == nil {
		return rest
	}
	return d.deref(rest)
}

// restKinds picks the names for a change of the rule for undeclared
// members: the unevaluated* kinds when the new rule comes from
// unevaluatedProperties/unevaluatedItems (or the new schema has none and
// the old one's did), else the additional* kinds. kw is the keyword the
// path names.
func restKinds(okw, nkw, additionalKw string, additional, unevaluated opennessKinds) (opennessKinds, string) {
	switch {
	case strings.HasPrefix(nkw, "unevaluated"):
		return unevaluated, nkw
	case nkw == "" && strings.HasPrefix(okw, "unevaluated"):
		return unevaluated, okw
	case nkw != "":
		return additional, nkw
	}
	return additional, additionalKw
}

func hasDefault(n node, d *differ) bool {
	if _, ok := n.m()["default"]; ok {
		return true
	}
	_, ok := d.deref(n).m()["default"]
	return ok
}

func stringSet(v any) map[string]bool {
	set := map[string]bool{}
	if list, ok := v.([]any); ok {
		for _, x := range list {
			if s, ok := x.(string); ok {
				set[s] = true
			}
		}
	}
	return set
}

func (d *differ) properties(out *[]Difference, o, n node, path string) {
	om, nm := o.m(), n.m()
	op, _ := om["properties"].(map[string]any)
	np, _ := nm["properties"].(map[string]any)
	oreq, nreq := stringSet(om["required"]), stringSet(nm["required"])
	goAware := d.policy == GoAware
	reported := map[string]bool{} // newly required properties already judged as added

	for _, name := range unionKeys(op, np) {
		p := path + "/properties/" + escapePointer(name)
		ov, inOld := op[name]
		nv, inNew := np[name]
		on := o.child(ov, "properties/"+escapePointer(name))
		nn := n.child(nv, "properties/"+escapePointer(name))
		switch {
		case inOld && inNew:
			d.compare(out, on, nn, p)
		case inNew:
			d.propertyAdded(out, o, nn, name, p, nreq[name] && !oreq[name], reported)
		default:
			d.propertyRemoved(out, n, on, name, p)
		}
	}

	for _, name := range slices.Sorted(maps.Keys(nreq)) {
		if oreq[name] || reported[name] {
			continue
		}
		p := path + "/required/" + escapePointer(name)
		nn := n.child(np[name], "properties/"+escapePointer(name))
		switch {
		case np[name] != nil && hasDefault(nn, d):
			d.add(out, RequiredAttributeWithDefaultAdded, p, true, "property %q is now required and has a default for old data that lacks it", name)
		case goAware:
			d.add(out, RequiredAttributeAdded, p, false,
				"property %q is now required without a default: old data may lack it, and encoding/json would silently leave the zero value; add `sqlstreams:\"default=...\"` or make it omitempty", name)
		default:
			d.add(out, RequiredAttributeAdded, p, false, "property %q is now required without a default; old data may lack it", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(oreq)) {
		if !nreq[name] {
			d.add(out, RequiredAttributeRemoved, path+"/required/"+escapePointer(name), true, "property %q is no longer required", name)
		}
	}

	// Undeclared members.
	orest, okw := d.objectRest(o)
	nrest, nkw := d.objectRest(n)
	if okw != "" || nkw != "" {
		kinds, kw := restKinds(okw, nkw, "additionalProperties", additionalPropertiesKinds, unevaluatedPropertiesKinds)
		d.openness(out, orest, nrest, path+"/"+kw, kinds, goAware)
	}

	opp, _ := om["patternProperties"].(map[string]any)
	npp, _ := nm["patternProperties"].(map[string]any)
	for _, pat := range unionKeys(opp, npp) {
		p := path + "/patternProperties/" + escapePointer(pat)
		ov, inOld := opp[pat]
		nv, inNew := npp[pat]
		on := o.child(ov, "patternProperties/"+escapePointer(pat))
		nn := n.child(nv, "patternProperties/"+escapePointer(pat))
		switch {
		case inOld && inNew:
			d.compare(out, on, nn, p)
		case inNew:
			prev := orest
			if prev.v == nil {
				prev = anything
			}
			ok := d.accepts(prev, nn)
			d.add(out, PatternPropertyAdded, p, ok, "pattern property %q added%s", pat, ifElse(ok, "", "; it rejects values old data may hold under matching names"))
		default:
			next := nrest
			if next.v == nil {
				next = anything
			}
			ok := d.accepts(on, next)
			d.add(out, PatternPropertyRemoved, p, ok, "pattern property %q removed%s", pat, ifElse(ok, "", "; matching names now fall under the rule for undeclared properties, which rejects some old values"))
		}
	}
}

// propertyAdded judges a property the new schema declares and the old one
// did not, by the rule the old schema applied to it as an undeclared
// member. newlyRequired says the new schema requires it and the old one
// did not; when the verdict here covers that, the name goes into reported.
func (d *differ) propertyAdded(out *[]Difference, o, nn node, name, p string, newlyRequired bool, reported map[string]bool) {
	eff := d.memberSchema(o, name)
	withDefault := newlyRequired && hasDefault(nn, d)
	switch d.classify(eff) {
	case open:
		empty := d.accepts(anything, nn)
		if d.policy == GoAware {
			// Go writers of the old schema send exactly their declared
			// fields, so old data never has this one: only requiring it
			// without a default matters, and the required check reports
			// that as REQUIRED_ATTRIBUTE_ADDED.
			switch {
			case newlyRequired && !withDefault:
			case empty:
				reported[name] = true
				d.add(out, PropertyWithEmptySchemaAddedToOpenContentModel, p, true, "unconstrained property %q added", name)
			case withDefault:
				reported[name] = true
				d.add(out, RequiredPropertyWithDefaultAddedToOpenContentModel, p, true,
					"required property %q added with a default; Go writers of the old schema do not send it, so readers see the default", name)
			default:
				d.add(out, OptionalPropertyAddedToOpenContentModel, p, true,
					"property %q added; Go writers of the old schema do not send it, so readers see it missing", name)
			}
			return
		}
		reported[name] = true
		switch {
		case newlyRequired && !withDefault:
			d.add(out, RequiredPropertyAddedToOpenContentModel, p, false,
				"required property %q added without a default; old data may lack it, or hold any value under that name (the old schema was open)", name)
		case empty:
			d.add(out, PropertyWithEmptySchemaAddedToOpenContentModel, p, true, "unconstrained property %q added", name)
		case withDefault:
			d.add(out, RequiredPropertyWithDefaultAddedToOpenContentModel, p, false,
				"required property %q added with a default and constraints, but the old schema was open and old data may hold any value under that name", name)
		default:
			d.add(out, OptionalPropertyAddedToOpenContentModel, p, false,
				"property %q added with constraints, but the old schema was open and old data may hold any value under that name", name)
		}
		return
	case partial:
		var ds []Difference
		d.compare(&ds, eff, nn, p)
		*out = append(*out, ds...)
		if allCompatible(ds) {
			d.add(out, PropertyAddedIsCoveredByPartiallyOpen, p, true,
				"property %q added; it accepts every value the old schema allowed for undeclared properties", name)
		} else {
			d.add(out, PropertyAddedNotCoveredByPartiallyOpen, p, false,
				"property %q added, but it rejects values the old schema allowed for undeclared properties", name)
		}
	}
	// Closed or partially open: old data never has the property, or has it
	// only with the values the partial rule allowed.
	switch {
	case newlyRequired && !withDefault:
		reported[name] = true
		d.add(out, RequiredPropertyAddedToUnopenContentModel, p, false,
			"required property %q added without a default, but old data may lack it (the old schema did not declare it)", name)
	case withDefault:
		reported[name] = true
		d.add(out, RequiredPropertyWithDefaultAddedToUnopenContentModel, p, true,
			"required property %q added with a default for old data that lacks it", name)
	default:
		d.add(out, OptionalPropertyAddedToUnopenContentModel, p, true, "optional property %q added", name)
	}
}

// propertyRemoved judges a property the old schema declared and the new one
// does not, by the rule the new schema applies to it as an undeclared
// member.
func (d *differ) propertyRemoved(out *[]Difference, n, on node, name, p string) {
	eff := d.memberSchema(n, name)
	switch d.classify(eff) {
	case open:
		d.add(out, PropertyRemovedFromOpenContentModel, p, true, "property %q removed; the new schema accepts it as an undeclared property", name)
	case partial:
		var ds []Difference
		d.compare(&ds, on, eff, p)
		*out = append(*out, ds...)
		if allCompatible(ds) {
			d.add(out, PropertyRemovedIsCoveredByPartiallyOpen, p, true,
				"property %q removed; the new schema's rule for undeclared properties accepts its old values", name)
		} else {
			d.add(out, PropertyRemovedNotCoveredByPartiallyOpen, p, false,
				"property %q removed, and the new schema's rule for undeclared properties rejects some of its old values", name)
		}
	case closed:
		switch {
		case d.deref(on).v == false:
			d.add(out, PropertyWithFalseRemovedFromClosedContentModel, p, true,
				"property %q removed; its old schema was false, so old data never has it", name)
		case d.policy == GoAware:
			d.add(out, PropertyRemovedFromClosedContentModel, p, true,
				"property %q removed; encoding/json ignores members the reader does not declare", name)
		default:
			d.add(out, PropertyRemovedFromClosedContentModel, p, false,
				"property %q removed, but the new schema rejects undeclared properties and old data may have it", name)
		}
	}
}

func ifElse(c bool, a, b string) string {
	if c {
		return a
	}
	return b
}

// unionKeys returns the keys present in a or b, sorted, so that a diff
// walks both sides' members in one deterministic order.
func unionKeys[A, B any](a map[string]A, b map[string]B) []string {
	set := make(map[string]bool, len(a)+len(b))
	for k := range a {
		set[k] = true
	}
	for k := range b {
		set[k] = true
	}
	return slices.Sorted(maps.Keys(set))
}

type opennessKinds struct {
	added, removed, extended, narrowed DiffKind
	noun                               string // "undeclared properties" or "extra items"
}

var (
	additionalPropertiesKinds  = opennessKinds{AdditionalPropertiesAdded, AdditionalPropertiesRemoved, AdditionalPropertiesExtended, AdditionalPropertiesNarrowed, "undeclared properties"}
	unevaluatedPropertiesKinds = opennessKinds{UnevaluatedPropertiesAdded, UnevaluatedPropertiesRemoved, UnevaluatedPropertiesExtended, UnevaluatedPropertiesNarrowed, "unevaluated properties"}
	additionalItemsKinds       = opennessKinds{AdditionalItemsAdded, AdditionalItemsRemoved, AdditionalItemsExtended, AdditionalItemsNarrowed, "extra items"}
	unevaluatedItemsKinds      = opennessKinds{UnevaluatedItemsAdded, UnevaluatedItemsRemoved, UnevaluatedItemsExtended, UnevaluatedItemsNarrowed, "unevaluated items"}
)

// openness compares the rule for undeclared members (additionalProperties
// or unevaluatedProperties, additionalItems/items after a tuple or
// unevaluatedItems), with Confluent's names: ADDED when the members
// become allowed at all (from false), REMOVED when they stop being
// allowed (to false), EXTENDED when a schema for them is dropped,
// NARROWED when one is imposed on an open model. readerIgnoresUnknown
// relaxes closing the model, because encoding/json skips members a struct
// does not declare.
func (d *differ) openness(out *[]Difference, o, n node, path string, k opennessKinds, readerIgnoresUnknown bool) {
	o, n = d.deref(o), d.deref(n)
	oc, nc := d.classify(o), d.classify(n)
	const ignored = "; encoding/json ignores members a struct does not declare, so a Go reader still reads old data"
	switch {
	case oc == nc && oc != partial:
	case oc == closed && nc == open:
		d.add(out, k.added, path, true, "%s are now allowed", k.noun)
	case oc == closed && nc == partial:
		d.add(out, k.added, path, true, "%s are now allowed if they match a schema", k.noun)
	case oc == partial && nc == open:
		d.add(out, k.extended, path, true, "%s are no longer constrained", k.noun)
	case nc == closed:
		if readerIgnoresUnknown {
			d.add(out, k.removed, path, true, "%s are no longer allowed"+ignored, k.noun)
		} else {
			d.add(out, k.removed, path, false, "%s are no longer allowed; old data may have them", k.noun)
		}
	case oc == open && nc == partial:
		d.add(out, k.narrowed, path, false, "%s must now match a schema; old data may hold any value", k.noun)
	default: // both partial
		d.compare(out, o, n, path)
	}
}

// subschema compares a keyword holding one constraining schema: adding it
// narrows (unless it accepts everything), removing it widens.
func (d *differ) subschema(out *[]Difference, o, n node, kw, path string, added, removed DiffKind) {
	ov, ook := o.m()[kw]
	nv, nok := n.m()[kw]
	p := path + "/" + kw
	switch {
	case !ook && !nok:
	case ook && nok:
		d.compare(out, o.child(ov, kw), n.child(nv, kw), p)
	case nok:
		if kw == "contains" || !d.accepts(anything, n.child(nv, kw)) {
			d.add(out, added, p, false, "%s added; old data was not checked against it", kw)
		}
	default:
		d.add(out, removed, p, true, "%s removed", kw)
	}
}

// dependencies compares dependentRequired/dependentSchemas and draft-07's
// combined "dependencies".
func (d *differ) dependencies(out *[]Difference, o, n node, path string) {
	split := func(x node) (lists map[string]map[string]bool, schemas map[string]node) {
		lists, schemas = map[string]map[string]bool{}, map[string]node{}
		for _, kw := range []string{"dependencies", "dependentRequired", "dependentSchemas"} {
			v, _ := x.kw(kw)
			deps, _ := v.(map[string]any)
			for name, v := range deps {
				if list, ok := v.([]any); ok {
					lists[name] = stringSet(list)
				} else {
					schemas[name] = x.child(v, kw+"/"+escapePointer(name))
				}
			}
		}
		return lists, schemas
	}
	ol, os := split(o)
	nl, ns := split(n)
	for _, name := range unionKeys(ol, nl) {
		p := path + "/dependentRequired/" + escapePointer(name)
		a, aok := ol[name]
		b, bok := nl[name]
		switch {
		case !aok:
			d.add(out, DependencyArrayAdded, p, false, "when %q is present, %s are now required", name, setString(b))
		case !bok:
			d.add(out, DependencyArrayRemoved, p, true, "the properties required alongside %q are no longer required", name)
		default:
			lost, gained := setMinus(a, b), setMinus(b, a)
			switch {
			case len(lost) == 0 && len(gained) == 0:
			case len(gained) == 0:
				d.add(out, DependencyArrayNarrowed, p, true, "%s no longer required alongside %q", strings.Join(lost, ", "), name)
			case len(lost) == 0:
				d.add(out, DependencyArrayExtended, p, false, "%s now required alongside %q", strings.Join(gained, ", "), name)
			default:
				d.add(out, DependencyArrayChanged, p, false, "properties required alongside %q changed", name)
			}
		}
	}
	for _, name := range unionKeys(os, ns) {
		p := path + "/dependentSchemas/" + escapePointer(name)
		a, aok := os[name]
		b, bok := ns[name]
		switch {
		case aok && bok:
			d.compare(out, a, b, p)
		case bok:
			d.add(out, DependencySchemaAdded, p, false, "a schema now applies when %q is present", name)
		default:
			d.add(out, DependencySchemaRemoved, p, true, "the schema applied when %q is present was removed", name)
		}
	}
}

// arrayShape reads how an array schema constrains its items. prefix holds
// the positional schemas of a tuple: prefixItems (2020-12) or an items
// array (draft-07 and 2019-09). rest is the rule for the other items (all
// of them when there is no tuple): "items" after prefixItems, or
// additionalItems after an items array, or a plain "items" schema; failing
// those, unevaluatedItems (2019-09 and later), which then applies to every
// item nothing else evaluated. restKw is the keyword rest came from, ""
// when nothing constrains those items (rest.v is nil).
func (d *differ) arrayShape(x node) (prefix []node, rest node, restKw string, isTuple bool) {
	m := x.m()
	rest = node{nil, x.loc + "/items", x.doc}
	if pv, ok := x.kw("prefixItems"); ok {
		pi, _ := pv.([]any)
		for i, v := range pi {
			prefix = append(prefix, x.child(v, "prefixItems/"+strconv.Itoa(i)))
		}
		isTuple = true
		if it, ok := m["items"]; ok {
			rest, restKw = x.child(it, "items"), "items"
		}
	} else if it, ok := m["items"].([]any); ok {
		for i, v := range it {
			prefix = append(prefix, x.child(v, "items/"+strconv.Itoa(i)))
		}
		isTuple = true
		if ai, ok := m["additionalItems"]; ok {
			rest, restKw = x.child(ai, "additionalItems"), "additionalItems"
		}
	} else if it, ok := m["items"]; ok {
		return nil, x.child(it, "items"), "items", false
	}
	if restKw == "" {
		if ui, ok := x.kw("unevaluatedItems"); ok {
			rest, restKw = x.child(ui, "unevaluatedItems"), "unevaluatedItems"
		}
	}
	return prefix, rest, restKw, isTuple
}

func (d *differ) items(out *[]Difference, o, n node, path string) {
	op, orest, okw, otup := d.arrayShape(o)
	np, nrest, nkw, ntup := d.arrayShape(n)
	if !otup && !ntup {
		if okw == "unevaluatedItems" || nkw == "unevaluatedItems" {
			kinds, kw := restKinds(okw, nkw, "items", unevaluatedItemsKinds, unevaluatedItemsKinds)
			d.openness(out, orest, nrest, path+"/"+kw, kinds, false)
			return
		}
		p := path + "/items"
		if d.classify(d.deref(orest)) == closed || d.classify(d.deref(nrest)) == closed {
			// "items": false allows only the empty array: no items beyond
			// an empty tuple, which is how Confluent names it.
			d.openness(out, orest, nrest, p, additionalItemsKinds, false)
			return
		}
		switch {
		case orest.v == nil && nrest.v == nil:
		case orest.v == nil:
			if !d.accepts(anything, nrest) {
				d.add(out, SchemaAdded, p, false, "items must now match a schema; old arrays may hold anything")
			}
		case nrest.v == nil:
			d.add(out, SchemaRemoved, p, true, "items are no longer constrained")
		default:
			d.compare(out, orest, nrest, p)
		}
		return
	}
	prefixKw := "items"
	if _, ok := n.kw("prefixItems"); ok {
		prefixKw = "prefixItems"
	}
	prev, next := d.deref(orest), d.deref(nrest)
	for i := 0; i < max(len(op), len(np)); i++ {
		p := path + "/" + prefixKw + "/" + strconv.Itoa(i)
		switch {
		case i < len(op) && i < len(np):
			d.compare(out, op[i], np[i], p)
		case i < len(np):
			switch d.classify(prev) {
			case closed:
				d.add(out, ItemAddedToClosedContentModel, p, true, "item %d added; old arrays never reach it", i)
			case open:
				if d.accepts(anything, np[i]) {
					d.add(out, ItemWithEmptySchemaAddedToOpenContentModel, p, true, "unconstrained item %d added", i)
				} else {
					d.add(out, ItemAddedToOpenContentModel, p, false, "item %d added; old arrays may hold any value at that position", i)
				}
			case partial:
				var ds []Difference
				d.compare(&ds, prev, np[i], p)
				*out = append(*out, ds...)
				if allCompatible(ds) {
					d.add(out, ItemAddedIsCoveredByPartiallyOpen, p, true, "item %d added; it accepts what the old schema allowed there", i)
				} else {
					d.add(out, ItemAddedNotCoveredByPartiallyOpen, p, false, "item %d added, but it rejects values the old schema allowed there", i)
				}
			}
		default:
			switch d.classify(next) {
			case closed:
				if d.deref(op[i]).v == false {
					d.add(out, ItemWithFalseRemovedFromClosedContentModel, p, true, "item %d removed; its old schema was false, so old arrays never reach it", i)
				} else {
					d.add(out, ItemRemovedFromClosedContentModel, p, false, "item %d removed, but the new schema rejects extra items and old arrays have it", i)
				}
			case open:
				d.add(out, ItemRemovedFromOpenContentModel, p, true, "item %d removed; the new schema accepts anything there", i)
			case partial:
				var ds []Difference
				d.compare(&ds, op[i], next, p)
				*out = append(*out, ds...)
				if allCompatible(ds) {
					d.add(out, ItemRemovedIsCoveredByPartiallyOpen, p, true, "item %d removed; the new schema's rule for extra items accepts its old values", i)
				} else {
					d.add(out, ItemRemovedNotCoveredByPartiallyOpen, p, false, "item %d removed, and the new schema's rule for extra items rejects some of its old values", i)
				}
			}
		}
	}
	defaultKw := "additionalItems"
	if prefixKw == "prefixItems" {
		defaultKw = "items"
	}
	kinds, kw := restKinds(okw, nkw, defaultKw, additionalItemsKinds, unevaluatedItemsKinds)
	d.openness(out, orest, nrest, path+"/"+kw, kinds, false)
}

// not compares negations: "not X" accepts more when X accepts less, so the
// inner schemas are compared the other way round. The kinds name what
// happened to the excluded set: NOT_TYPE_NARROWED (it excludes less, or
// the "not" was removed) is compatible, NOT_TYPE_EXTENDED (it excludes
// more, or a "not" was added) is not.
func (d *differ) not(out *[]Difference, o, n node, path string) {
	ov, ook := o.m()["not"]
	nv, nok := n.m()["not"]
	p := path + "/not"
	switch {
	case !ook && !nok:
	case ook && nok:
		var ds []Difference
		d.compare(&ds, n.child(nv, "not"), o.child(ov, "not"), p)
		switch {
		case !allCompatible(ds):
			d.add(out, NotTypeExtended, p, false, "the excluded schema now excludes values the old one allowed")
		case len(ds) > 0:
			d.add(out, NotTypeNarrowed, p, true, "the excluded schema now excludes fewer values")
		}
	case nok:
		if d.accepts(n.child(nv, "not"), node{v: false, loc: "false"}) {
			return // "not": false excludes nothing
		}
		d.add(out, NotTypeExtended, p, false, "a \"not\" exclusion was added; old data may hold values it excludes")
	default:
		d.add(out, NotTypeNarrowed, p, true, "the \"not\" exclusion was removed")
	}
}

// conditional compares if/then/else. A changed condition reroutes values
// between the branches, so any change to "if" is reported as incompatible.
// Branches are compared together with the rest of their schema (a "then"
// that only adds a pattern to a property typed outside it is still about
// strings).
func (d *differ) conditional(out *[]Difference, o, n node, path string) {
	om, nm := o.m(), n.m()
	oi, oiok := om["if"]
	ni, niok := nm["if"]
	if !oiok && !niok {
		return
	}
	if oiok != niok || string(marshalCanon(oi)) != string(marshalCanon(ni)) {
		d.add(out, ConditionChanged, path+"/if", false, "the \"if\" condition changed, which moves values between the then and else branches")
		return
	}
	otop, ntop := without(om, "if", "then", "else"), without(nm, "if", "then", "else")
	for _, kw := range []string{"then", "else"} {
		ob, nb := om[kw], nm[kw]
		if string(marshalCanon(ob)) == string(marshalCanon(nb)) {
			continue
		}
		oe := d.withBranch(o, otop, ob, kw)
		ne := d.withBranch(n, ntop, nb, kw)
		d.compare(out, oe, ne, path+"/"+kw)
	}
}

func (d *differ) withBranch(x node, top map[string]any, branch any, kw string) node {
	if branch == nil {
		return node{top, x.loc + "/" + kw + "*", x.doc}
	}
	b := d.deref(x.child(branch, kw))
	if b.v == false {
		return node{false, b.loc + "*", x.doc}
	}
	return node{merge(top, b.m()), b.loc + "*", x.doc}
}

func marshalCanon(v any) []byte {
	if v == nil {
		return nil
	}
	b, _ := marshalSorted(normalize(v, true))
	return b
}

var (
	lowerLimits = setOf("minimum", "minLength", "minItems", "minProperties", "minContains")
	upperLimits = setOf("maximum", "maxLength", "maxItems", "maxProperties", "maxContains")
)

// merge returns a schema accepting what both a and b accept (their
// conjunction), one level deep: overlapping subschemas become an allOf of
// both, which the differ merges lazily when it gets there, so recursive
// schemas never make merge loop. Keywords that cannot be combined exactly
// (two different patterns, formats, conditions) keep a's value; this only
// matters for schemas that constrain one value in two incompatible ways.
func merge(a, b map[string]any) map[string]any {
	out := copyMap(a)
	for k, bv := range b {
		av, ok := out[k]
		if !ok {
			out[k] = bv
			continue
		}
		if valueKey(av) == valueKey(bv) {
			continue
		}
		switch {
		case k == "properties" || k == "patternProperties" || k == "dependentSchemas":
			am, aok := av.(map[string]any)
			bm, bok := bv.(map[string]any)
			if !aok || !bok {
				continue
			}
			mm := copyMap(am)
			for name, s := range bm {
				if x, dup := mm[name]; dup {
					mm[name] = map[string]any{"allOf": []any{x, s}}
				} else {
					mm[name] = s
				}
			}
			out[k] = mm
		case k == "required":
			out[k] = sortedUniqueStrings(append(append([]any{}, asList(av)...), asList(bv)...))
		case k == "type":
			out[k] = intersectTypes(typeSet(map[string]any{"type": av}), typeSet(map[string]any{"type": bv}))
		case k == "enum":
			keep := map[string]bool{}
			for _, x := range asList(bv) {
				keep[valueKey(x)] = true
			}
			var inter []any
			for _, x := range asList(av) {
				if keep[valueKey(x)] {
					inter = append(inter, x)
				}
			}
			out[k] = append([]any{}, inter...)
		case k == "not":
			out[k] = map[string]any{"anyOf": []any{av, bv}}
		case k == "allOf":
			out[k] = append(append([]any{}, asList(av)...), asList(bv)...)
		case k == "anyOf" || k == "oneOf":
			if len(asList(av))*len(asList(bv)) > maxCross {
				continue // too many combinations: keep a's alternatives
			}
			var cross []any
			for _, x := range asList(av) {
				for _, y := range asList(bv) {
					cross = append(cross, map[string]any{"allOf": []any{x, y}})
				}
			}
			out[k] = cross
		case subschemaKeywords[k] && k != "if" && k != "then" && k != "else":
			out[k] = map[string]any{"allOf": []any{av, bv}}
		case k == "items" || k == "prefixItems":
			al, alist := av.([]any)
			bl, blist := bv.([]any)
			switch {
			case !alist && !blist:
				out[k] = map[string]any{"allOf": []any{av, bv}}
			case alist && blist:
				n := max(len(al), len(bl))
				merged := make([]any, n)
				for i := range n {
					switch {
					case i < len(al) && i < len(bl):
						merged[i] = map[string]any{"allOf": []any{al[i], bl[i]}}
					case i < len(al):
						merged[i] = al[i]
					default:
						merged[i] = bl[i]
					}
				}
				out[k] = merged
			}
		case lowerLimits[k] || upperLimits[k]:
			x, xok := ratOf(av)
			y, yok := ratOf(bv)
			if xok && yok && (x.Cmp(y) < 0) == lowerLimits[k] {
				out[k] = bv
			}
		case k == "uniqueItems":
			out[k] = av == true || bv == true
		}
	}
	return out
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func intersectTypes(a, b []string) []any {
	set := map[string]bool{}
	for _, t := range a {
		switch {
		case contains(b, t):
			set[t] = true
		case t == "number" && contains(b, "integer"), t == "integer" && contains(b, "number"):
			set["integer"] = true
		}
	}
	out := []any{}
	for _, t := range allTypes {
		if set[t] {
			out = append(out, t)
		}
	}
	return out
}
