package schema

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The drafts Strict is held to. A case lists the drafts it runs under; the
// draft's "$schema" is added to both documents, and the tokens below are
// replaced by the draft's spelling of a keyword, so one case covers every
// draft where the keyword exists.
const (
	d07 = 1 << iota
	d19
	d20

	allDrafts = d07 | d19 | d20
	since2019 = d19 | d20
)

var draftURIs = []struct {
	bit  int
	name string
	uri  string
	// spellings of the tokens TUPLE (positional items), REST (the items
	// after them), DEPREQ and DEPSCH (dependencies by list and by schema)
	tuple, rest, depReq, depSch string
}{
	{d07, "draft-07", "http://json-schema.org/draft-07/schema#", "items", "additionalItems", "dependencies", "dependencies"},
	{d19, "2019-09", "https://json-schema.org/draft/2019-09/schema", "items", "additionalItems", "dependentRequired", "dependentSchemas"},
	{d20, "2020-12", "https://json-schema.org/draft/2020-12/schema", "prefixItems", "items", "dependentRequired", "dependentSchemas"},
}

func spell(s string, tuple, rest, depReq, depSch string) string {
	return strings.NewReplacer("TUPLE", tuple, "REST", rest, "DEPREQ", depReq, "DEPSCH", depSch).Replace(s)
}

func withDraft(t *testing.T, doc, uri string) *Schema {
	t.Helper()
	body, ok := strings.CutPrefix(strings.TrimSpace(doc), "{")
	if !ok {
		t.Fatalf("case document %s is not an object", doc)
	}
	if strings.TrimSpace(body) != "}" {
		body = "," + body
	}
	return mustParse(t, `{"$schema":"`+uri+`"`+body)
}

// strictCase is one change judged under Strict. kind must be among the
// differences Diff(old, new) reports (at path, when given), and absent
// when notKind is set instead; back and fwd are the verdicts of BACKWARD
// (a reader holding new reads old data) and FORWARD (a reader holding old
// reads new data). kindOK, when set, is the verdict the difference itself
// must carry (it defaults to back).
type strictCase struct {
	name     string
	drafts   int
	old, new string
	kind     DiffKind
	notKind  DiffKind
	path     string
	back     bool
	fwd      bool
	kindOK   *bool
}

func boolPtr(b bool) *bool { return &b }

const (
	objA       = `"type":"object","properties":{"a":{"type":"string"}}`
	objAB      = `"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}`
	strT       = `"type":"string"`
	numT       = `"type":"number"`
	arrT       = `"type":"array"`
	containsS  = `"type":"array","contains":{"type":"string"}`
	tupleS     = `"type":"array","TUPLE":[{"type":"string"}]`
	tupleSI    = `"type":"array","TUPLE":[{"type":"string"},{"type":"integer"}]`
	intRest    = `"REST":{"type":"integer"}`
	closedRest = `"REST":false`
)

// strictCases covers every kind of Confluent's Difference.Type that applies
// to a JSON Schema document (the two RESERVED_PROPERTY_* kinds come from
// Confluent's schema metadata, not from the schema), under each draft
// where its keyword exists, and the cases issue 14 lists.
var strictCases = []strictCase{
	// Annotations.
	{name: "id changed", drafts: allDrafts, old: `{"$id":"urn:a"}`, new: `{"$id":"urn:b"}`, kind: IDChanged, path: "#/$id", back: true, fwd: true},
	{name: "title changed", drafts: allDrafts, old: `{"title":"a"}`, new: `{"title":"b"}`, kind: TitleChanged, back: true, fwd: true},
	{name: "description changed", drafts: allDrafts, old: `{"description":"a"}`, new: `{}`, kind: DescriptionChanged, back: true, fwd: true},
	{name: "default changed", drafts: allDrafts, old: `{` + strT + `,"default":"a"}`, new: `{` + strT + `,"default":"b"}`, kind: DefaultChanged, back: true, fwd: true},

	// Subschemas present on one side.
	{name: "items schema added", drafts: allDrafts, old: `{` + arrT + `}`, new: `{` + arrT + `,"items":{"type":"string"}}`, kind: SchemaAdded, path: "#/items", back: false, fwd: true},
	{name: "items schema removed", drafts: allDrafts, old: `{` + arrT + `,"items":{"type":"string"}}`, new: `{` + arrT + `}`, kind: SchemaRemoved, path: "#/items", back: true, fwd: false},
	{name: "unconstrained items schema added is no change", drafts: allDrafts, old: `{` + arrT + `}`, new: `{` + arrT + `,"items":{}}`, notKind: SchemaAdded, back: true, fwd: true},

	// Types.
	{name: "type extended", drafts: allDrafts, old: `{"type":"integer"}`, new: `{"type":"number"}`, kind: TypeExtended, path: "#/type", back: true, fwd: false},
	{name: "type array extended", drafts: allDrafts, old: `{"type":["string"]}`, new: `{"type":["string","null"]}`, kind: TypeExtended, back: true, fwd: false},
	{name: "type narrowed", drafts: allDrafts, old: `{"type":"number"}`, new: `{"type":"integer"}`, kind: TypeNarrowed, back: false, fwd: true},
	{name: "type changed", drafts: allDrafts, old: `{"type":"string"}`, new: `{"type":"integer"}`, kind: TypeChanged, back: false, fwd: false},

	// Strings.
	{name: "maxLength added", drafts: allDrafts, old: `{` + strT + `}`, new: `{` + strT + `,"maxLength":5}`, kind: MaxLengthAdded, path: "#/maxLength", back: false, fwd: true},
	{name: "maxLength removed", drafts: allDrafts, old: `{` + strT + `,"maxLength":5}`, new: `{` + strT + `}`, kind: MaxLengthRemoved, back: true, fwd: false},
	{name: "maxLength increased", drafts: allDrafts, old: `{` + strT + `,"maxLength":5}`, new: `{` + strT + `,"maxLength":9}`, kind: MaxLengthIncreased, back: true, fwd: false},
	{name: "maxLength decreased", drafts: allDrafts, old: `{` + strT + `,"maxLength":9}`, new: `{` + strT + `,"maxLength":5}`, kind: MaxLengthDecreased, back: false, fwd: true},
	{name: "minLength added", drafts: allDrafts, old: `{` + strT + `}`, new: `{` + strT + `,"minLength":2}`, kind: MinLengthAdded, back: false, fwd: true},
	{name: "minLength removed", drafts: allDrafts, old: `{` + strT + `,"minLength":2}`, new: `{` + strT + `}`, kind: MinLengthRemoved, back: true, fwd: false},
	{name: "minLength increased", drafts: allDrafts, old: `{` + strT + `,"minLength":2}`, new: `{` + strT + `,"minLength":3}`, kind: MinLengthIncreased, back: false, fwd: true},
	{name: "minLength decreased", drafts: allDrafts, old: `{` + strT + `,"minLength":3}`, new: `{` + strT + `,"minLength":2}`, kind: MinLengthDecreased, back: true, fwd: false},
	{name: "pattern added", drafts: allDrafts, old: `{` + strT + `}`, new: `{` + strT + `,"pattern":"^a"}`, kind: PatternAdded, back: false, fwd: true},
	{name: "pattern removed", drafts: allDrafts, old: `{` + strT + `,"pattern":"^a"}`, new: `{` + strT + `}`, kind: PatternRemoved, back: true, fwd: false},
	{name: "pattern changed", drafts: allDrafts, old: `{` + strT + `,"pattern":"^a"}`, new: `{` + strT + `,"pattern":"^b"}`, kind: PatternChanged, back: false, fwd: false},

	// Numbers.
	{name: "maximum added", drafts: allDrafts, old: `{` + numT + `}`, new: `{` + numT + `,"maximum":10}`, kind: MaximumAdded, path: "#/maximum", back: false, fwd: true},
	{name: "maximum removed", drafts: allDrafts, old: `{` + numT + `,"maximum":10}`, new: `{` + numT + `}`, kind: MaximumRemoved, back: true, fwd: false},
	{name: "maximum increased", drafts: allDrafts, old: `{` + numT + `,"maximum":10}`, new: `{` + numT + `,"maximum":20}`, kind: MaximumIncreased, back: true, fwd: false},
	{name: "maximum decreased", drafts: allDrafts, old: `{` + numT + `,"maximum":20}`, new: `{` + numT + `,"maximum":10}`, kind: MaximumDecreased, back: false, fwd: true},
	{name: "minimum added", drafts: allDrafts, old: `{` + numT + `}`, new: `{` + numT + `,"minimum":1}`, kind: MinimumAdded, back: false, fwd: true},
	{name: "minimum removed", drafts: allDrafts, old: `{` + numT + `,"minimum":1}`, new: `{` + numT + `}`, kind: MinimumRemoved, back: true, fwd: false},
	{name: "minimum increased", drafts: allDrafts, old: `{` + numT + `,"minimum":1}`, new: `{` + numT + `,"minimum":2}`, kind: MinimumIncreased, back: false, fwd: true},
	{name: "minimum decreased", drafts: allDrafts, old: `{` + numT + `,"minimum":2}`, new: `{` + numT + `,"minimum":1}`, kind: MinimumDecreased, back: true, fwd: false},
	{name: "exclusiveMaximum added", drafts: allDrafts, old: `{` + numT + `}`, new: `{` + numT + `,"exclusiveMaximum":10}`, kind: ExclusiveMaximumAdded, path: "#/exclusiveMaximum", back: false, fwd: true},
	{name: "exclusiveMaximum removed", drafts: allDrafts, old: `{` + numT + `,"exclusiveMaximum":10}`, new: `{` + numT + `}`, kind: ExclusiveMaximumRemoved, back: true, fwd: false},
	{name: "exclusiveMaximum increased", drafts: allDrafts, old: `{` + numT + `,"exclusiveMaximum":10}`, new: `{` + numT + `,"exclusiveMaximum":20}`, kind: ExclusiveMaximumIncreased, back: true, fwd: false},
	{name: "exclusiveMaximum decreased", drafts: allDrafts, old: `{` + numT + `,"exclusiveMaximum":20}`, new: `{` + numT + `,"exclusiveMaximum":10}`, kind: ExclusiveMaximumDecreased, back: false, fwd: true},
	{name: "exclusiveMinimum added", drafts: allDrafts, old: `{` + numT + `}`, new: `{` + numT + `,"exclusiveMinimum":0}`, kind: ExclusiveMinimumAdded, back: false, fwd: true},
	{name: "exclusiveMinimum removed", drafts: allDrafts, old: `{` + numT + `,"exclusiveMinimum":0}`, new: `{` + numT + `}`, kind: ExclusiveMinimumRemoved, back: true, fwd: false},
	{name: "exclusiveMinimum increased", drafts: allDrafts, old: `{` + numT + `,"exclusiveMinimum":0}`, new: `{` + numT + `,"exclusiveMinimum":1}`, kind: ExclusiveMinimumIncreased, back: false, fwd: true},
	{name: "exclusiveMinimum decreased", drafts: allDrafts, old: `{` + numT + `,"exclusiveMinimum":1}`, new: `{` + numT + `,"exclusiveMinimum":0}`, kind: ExclusiveMinimumDecreased, back: true, fwd: false},
	{name: "multipleOf added", drafts: allDrafts, old: `{` + numT + `}`, new: `{` + numT + `,"multipleOf":2}`, kind: MultipleOfAdded, back: false, fwd: true},
	{name: "multipleOf removed", drafts: allDrafts, old: `{` + numT + `,"multipleOf":2}`, new: `{` + numT + `}`, kind: MultipleOfRemoved, back: true, fwd: false},
	{name: "multipleOf expanded", drafts: allDrafts, old: `{` + numT + `,"multipleOf":2}`, new: `{` + numT + `,"multipleOf":4}`, kind: MultipleOfExpanded, back: false, fwd: true},
	{name: "multipleOf reduced", drafts: allDrafts, old: `{` + numT + `,"multipleOf":4}`, new: `{` + numT + `,"multipleOf":2}`, kind: MultipleOfReduced, back: true, fwd: false},
	{name: "multipleOf changed", drafts: allDrafts, old: `{` + numT + `,"multipleOf":2}`, new: `{` + numT + `,"multipleOf":3}`, kind: MultipleOfChanged, back: false, fwd: false},

	// Required properties that both schemas declare.
	{name: "required attribute added", drafts: allDrafts, old: `{` + objA + `}`, new: `{` + objA + `,"required":["a"]}`, kind: RequiredAttributeAdded, path: "#/required/a", back: false, fwd: true},
	{name: "required attribute with default added", drafts: allDrafts,
		old:  `{"type":"object","properties":{"a":{"type":"string","default":"x"}}}`,
		new:  `{"type":"object","properties":{"a":{"type":"string","default":"x"}},"required":["a"]}`,
		kind: RequiredAttributeWithDefaultAdded, back: true, fwd: true},
	{name: "required attribute removed", drafts: allDrafts, old: `{` + objA + `,"required":["a"]}`, new: `{` + objA + `}`, kind: RequiredAttributeRemoved, back: true, fwd: false},

	// Object limits.
	{name: "maxProperties added", drafts: allDrafts, old: `{` + objA + `}`, new: `{` + objA + `,"maxProperties":3}`, kind: MaxPropertiesAdded, back: false, fwd: true},
	{name: "maxProperties removed", drafts: allDrafts, old: `{` + objA + `,"maxProperties":3}`, new: `{` + objA + `}`, kind: MaxPropertiesRemoved, back: true, fwd: false},
	{name: "maxProperties increased", drafts: allDrafts, old: `{` + objA + `,"maxProperties":3}`, new: `{` + objA + `,"maxProperties":4}`, kind: MaxPropertiesIncreased, back: true, fwd: false},
	{name: "maxProperties decreased", drafts: allDrafts, old: `{` + objA + `,"maxProperties":4}`, new: `{` + objA + `,"maxProperties":3}`, kind: MaxPropertiesDecreased, back: false, fwd: true},
	{name: "minProperties added", drafts: allDrafts, old: `{` + objA + `}`, new: `{` + objA + `,"minProperties":1}`, kind: MinPropertiesAdded, back: false, fwd: true},
	{name: "minProperties removed", drafts: allDrafts, old: `{` + objA + `,"minProperties":1}`, new: `{` + objA + `}`, kind: MinPropertiesRemoved, back: true, fwd: false},
	{name: "minProperties increased", drafts: allDrafts, old: `{` + objA + `,"minProperties":1}`, new: `{` + objA + `,"minProperties":2}`, kind: MinPropertiesIncreased, back: false, fwd: true},
	{name: "minProperties decreased", drafts: allDrafts, old: `{` + objA + `,"minProperties":2}`, new: `{` + objA + `,"minProperties":1}`, kind: MinPropertiesDecreased, back: true, fwd: false},

	// additionalProperties.
	{name: "additionalProperties added", drafts: allDrafts, old: `{` + objA + `,"additionalProperties":false}`, new: `{` + objA + `}`, kind: AdditionalPropertiesAdded, path: "#/additionalProperties", back: true, fwd: false},
	{name: "additionalProperties added from false to a schema", drafts: allDrafts, old: `{` + objA + `,"additionalProperties":false}`, new: `{` + objA + `,"additionalProperties":{"type":"integer"}}`, kind: AdditionalPropertiesAdded, back: true, fwd: false},
	{name: "additionalProperties removed", drafts: allDrafts, old: `{` + objA + `}`, new: `{` + objA + `,"additionalProperties":false}`, kind: AdditionalPropertiesRemoved, back: false, fwd: true},
	{name: "additionalProperties extended", drafts: allDrafts, old: `{` + objA + `,"additionalProperties":{"type":"integer"}}`, new: `{` + objA + `}`, kind: AdditionalPropertiesExtended, back: true, fwd: false},
	{name: "additionalProperties narrowed", drafts: allDrafts, old: `{` + objA + `}`, new: `{` + objA + `,"additionalProperties":{"type":"integer"}}`, kind: AdditionalPropertiesNarrowed, back: false, fwd: true},

	// Dependencies: "dependencies" in draft-07, dependentRequired and
	// dependentSchemas from 2019-09.
	{name: "dependency array added", drafts: allDrafts, old: `{` + objAB + `}`, new: `{` + objAB + `,"DEPREQ":{"a":["b"]}}`, kind: DependencyArrayAdded, back: false, fwd: true},
	{name: "dependency array removed", drafts: allDrafts, old: `{` + objAB + `,"DEPREQ":{"a":["b"]}}`, new: `{` + objAB + `}`, kind: DependencyArrayRemoved, back: true, fwd: false},
	{name: "dependency array extended", drafts: allDrafts, old: `{` + objAB + `,"DEPREQ":{"a":["b"]}}`, new: `{` + objAB + `,"DEPREQ":{"a":["b","c"]}}`, kind: DependencyArrayExtended, back: false, fwd: true},
	{name: "dependency array narrowed", drafts: allDrafts, old: `{` + objAB + `,"DEPREQ":{"a":["b","c"]}}`, new: `{` + objAB + `,"DEPREQ":{"a":["b"]}}`, kind: DependencyArrayNarrowed, back: true, fwd: false},
	{name: "dependency array changed", drafts: allDrafts, old: `{` + objAB + `,"DEPREQ":{"a":["b"]}}`, new: `{` + objAB + `,"DEPREQ":{"a":["c"]}}`, kind: DependencyArrayChanged, back: false, fwd: false},
	{name: "dependency schema added", drafts: allDrafts, old: `{` + objAB + `}`, new: `{` + objAB + `,"DEPSCH":{"a":{"required":["b"]}}}`, kind: DependencySchemaAdded, back: false, fwd: true},
	{name: "dependency schema removed", drafts: allDrafts, old: `{` + objAB + `,"DEPSCH":{"a":{"required":["b"]}}}`, new: `{` + objAB + `}`, kind: DependencySchemaRemoved, back: true, fwd: false},
	{name: "draft-07 ignores dependentRequired", drafts: d07, old: `{` + objAB + `}`, new: `{` + objAB + `,"dependentRequired":{"a":["b"]}}`, notKind: DependencyArrayAdded, back: true, fwd: true},

	// A property added to an open content model: the split kinds that
	// replace the deprecated PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL.
	{name: "required property added to open model", drafts: allDrafts, old: `{` + objA + `}`, new: `{` + objAB + `,"required":["b"]}`,
		kind: RequiredPropertyAddedToOpenContentModel, path: "#/properties/b", back: false, fwd: true},
	{name: "required property with default added to open model", drafts: allDrafts, old: `{` + objA + `}`,
		new:  `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string","default":"x"}},"required":["b"]}`,
		kind: RequiredPropertyWithDefaultAddedToOpenContentModel, path: "#/properties/b", back: false, fwd: true},
	{name: "optional property added to open model", drafts: allDrafts, old: `{` + objA + `}`, new: `{` + objAB + `}`,
		kind: OptionalPropertyAddedToOpenContentModel, path: "#/properties/b", back: false, fwd: true},
	{name: "property with empty schema added to open model", drafts: allDrafts, old: `{` + objA + `}`, new: `{"type":"object","properties":{"a":{"type":"string"},"b":{}}}`,
		kind: PropertyWithEmptySchemaAddedToOpenContentModel, path: "#/properties/b", back: true, fwd: true},
	{name: "property with true schema added to open model", drafts: allDrafts, old: `{` + objA + `}`, new: `{"type":"object","properties":{"a":{"type":"string"},"b":true}}`,
		kind: PropertyWithEmptySchemaAddedToOpenContentModel, back: true, fwd: true},
	{name: "the deprecated open-model kind is not reported", drafts: allDrafts, old: `{` + objA + `}`, new: `{` + objAB + `}`,
		notKind: PropertyAddedToOpenContentModel, back: false, fwd: true},
	{name: "required property with empty schema added to open model", drafts: allDrafts, old: `{` + objA + `}`,
		new:  `{"type":"object","properties":{"a":{"type":"string"},"b":{}},"required":["b"]}`,
		kind: RequiredPropertyAddedToOpenContentModel, back: false, fwd: true},

	// A property added to an unopen (closed or partially open) model.
	{name: "required property added to closed model", drafts: allDrafts, old: `{` + objA + `,"additionalProperties":false}`, new: `{` + objAB + `,"required":["b"],"additionalProperties":false}`,
		kind: RequiredPropertyAddedToUnopenContentModel, path: "#/properties/b", back: false, fwd: false},
	{name: "required property with default added to closed model", drafts: allDrafts, old: `{` + objA + `,"additionalProperties":false}`,
		new:  `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string","default":"x"}},"required":["b"],"additionalProperties":false}`,
		kind: RequiredPropertyWithDefaultAddedToUnopenContentModel, path: "#/properties/b", back: true, fwd: false},
	{name: "optional property added to closed model", drafts: allDrafts, old: `{` + objA + `,"additionalProperties":false}`, new: `{` + objAB + `,"additionalProperties":false}`,
		kind: OptionalPropertyAddedToUnopenContentModel, back: true, fwd: false},
	{name: "required property added to partially open model", drafts: allDrafts, old: `{` + objA + `,"additionalProperties":{"type":"string"}}`, new: `{` + objAB + `,"required":["b"],"additionalProperties":{"type":"string"}}`,
		kind: RequiredPropertyAddedToUnopenContentModel, back: false, fwd: true},

	// Properties removed.
	{name: "property removed from open model", drafts: allDrafts, old: `{` + objAB + `}`, new: `{` + objA + `}`, kind: PropertyRemovedFromOpenContentModel, path: "#/properties/b", back: true, fwd: false},
	{name: "property removed from closed model", drafts: allDrafts, old: `{` + objAB + `,"additionalProperties":false}`, new: `{` + objA + `,"additionalProperties":false}`,
		kind: PropertyRemovedFromClosedContentModel, path: "#/properties/b", back: false, fwd: true},
	{name: "property with false schema removed from closed model", drafts: allDrafts,
		old:  `{"type":"object","properties":{"a":{"type":"string"},"b":false},"additionalProperties":false}`,
		new:  `{` + objA + `,"additionalProperties":false}`,
		kind: PropertyWithFalseRemovedFromClosedContentModel, path: "#/properties/b", back: true, fwd: true},
	{name: "property with false schema behind a reference removed from closed model", drafts: since2019,
		old:  `{"$defs":{"Never":false},"type":"object","properties":{"a":{"type":"string"},"b":{"$ref":"#/$defs/Never"}},"additionalProperties":false}`,
		new:  `{` + objA + `,"additionalProperties":false}`,
		kind: PropertyWithFalseRemovedFromClosedContentModel, back: true, fwd: true},

	// Partially open models.
	{name: "property added is covered by partially open model", drafts: allDrafts, old: `{` + objA + `,"additionalProperties":{"type":"string"}}`, new: `{` + objAB + `,"additionalProperties":{"type":"string"}}`,
		kind: PropertyAddedIsCoveredByPartiallyOpen, path: "#/properties/b", back: true, fwd: true},
	{name: "property added is not covered by partially open model", drafts: allDrafts, old: `{` + objA + `,"additionalProperties":{"type":"string"}}`,
		new:  `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string","maxLength":3}},"additionalProperties":{"type":"string"}}`,
		kind: PropertyAddedNotCoveredByPartiallyOpen, back: false, fwd: true},
	{name: "property removed is covered by partially open model", drafts: allDrafts,
		old:  `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string","maxLength":3}},"additionalProperties":{"type":"string"}}`,
		new:  `{` + objA + `,"additionalProperties":{"type":"string"}}`,
		kind: PropertyRemovedIsCoveredByPartiallyOpen, back: true, fwd: false},
	{name: "property removed is not covered by partially open model", drafts: allDrafts,
		old:  `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"additionalProperties":{"type":"string"}}`,
		new:  `{` + objA + `,"additionalProperties":{"type":"string"}}`,
		kind: PropertyRemovedNotCoveredByPartiallyOpen, back: false, fwd: false},
	{name: "property added is covered by a pattern property", drafts: allDrafts,
		old:  `{"type":"object","properties":{"a":{"type":"string"}},"patternProperties":{"^b":{"type":"string"}},"additionalProperties":false}`,
		new:  `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"patternProperties":{"^b":{"type":"string"}},"additionalProperties":false}`,
		kind: PropertyAddedIsCoveredByPartiallyOpen, back: true, fwd: true},

	// unevaluatedProperties (2019-09 and 2020-12) as the rule for
	// undeclared properties; same polarity as additionalProperties.
	{name: "unevaluatedProperties added", drafts: since2019, old: `{` + objA + `,"unevaluatedProperties":false}`, new: `{` + objA + `}`,
		kind: UnevaluatedPropertiesAdded, path: "#/unevaluatedProperties", back: true, fwd: false},
	{name: "unevaluatedProperties added from false to a schema", drafts: since2019, old: `{` + objA + `,"unevaluatedProperties":false}`, new: `{` + objA + `,"unevaluatedProperties":{"type":"integer"}}`,
		kind: UnevaluatedPropertiesAdded, back: true, fwd: false},
	{name: "unevaluatedProperties removed", drafts: since2019, old: `{` + objA + `}`, new: `{` + objA + `,"unevaluatedProperties":false}`,
		kind: UnevaluatedPropertiesRemoved, path: "#/unevaluatedProperties", back: false, fwd: true},
	{name: "unevaluatedProperties extended", drafts: since2019, old: `{` + objA + `,"unevaluatedProperties":{"type":"integer"}}`, new: `{` + objA + `}`,
		kind: UnevaluatedPropertiesExtended, back: true, fwd: false},
	{name: "unevaluatedProperties narrowed", drafts: since2019, old: `{` + objA + `}`, new: `{` + objA + `,"unevaluatedProperties":{"type":"integer"}}`,
		kind: UnevaluatedPropertiesNarrowed, back: false, fwd: true},
	{name: "unevaluatedProperties schema changed", drafts: since2019, old: `{` + objA + `,"unevaluatedProperties":{"type":"integer"}}`, new: `{` + objA + `,"unevaluatedProperties":{"type":"string"}}`,
		kind: TypeChanged, path: "#/unevaluatedProperties/type", back: false, fwd: false},
	{name: "unevaluatedProperties true is the open model", drafts: since2019, old: `{` + objA + `}`, new: `{` + objA + `,"unevaluatedProperties":true}`,
		notKind: UnevaluatedPropertiesNarrowed, back: true, fwd: true},
	{name: "draft-07 ignores unevaluatedProperties", drafts: d07, old: `{` + objA + `}`, new: `{` + objA + `,"unevaluatedProperties":false}`,
		notKind: UnevaluatedPropertiesRemoved, back: true, fwd: true},
	{name: "property removed under unevaluatedProperties false", drafts: since2019, old: `{` + objAB + `,"unevaluatedProperties":false}`, new: `{` + objA + `,"unevaluatedProperties":false}`,
		kind: PropertyRemovedFromClosedContentModel, path: "#/properties/b", back: false, fwd: true},
	{name: "property removed under unevaluatedProperties false, draft-07 reads it open", drafts: d07, old: `{` + objAB + `,"unevaluatedProperties":false}`, new: `{` + objA + `,"unevaluatedProperties":false}`,
		kind: PropertyRemovedFromOpenContentModel, back: true, fwd: false},
	{name: "property removed under unevaluatedProperties false with allOf", drafts: since2019,
		old:  `{"allOf":[{"type":"object","properties":{"a":{"type":"string"}}}],"properties":{"b":{"type":"string"}},"unevaluatedProperties":false}`,
		new:  `{"allOf":[{"type":"object","properties":{"a":{"type":"string"}}}],"unevaluatedProperties":false}`,
		kind: PropertyRemovedFromClosedContentModel, path: "#/properties/b", back: false, fwd: true},
	{name: "optional property added under unevaluatedProperties false", drafts: since2019, old: `{` + objA + `,"unevaluatedProperties":false}`, new: `{` + objAB + `,"unevaluatedProperties":false}`,
		kind: OptionalPropertyAddedToUnopenContentModel, back: true, fwd: false},
	{name: "property added is covered by unevaluatedProperties", drafts: since2019, old: `{` + objA + `,"unevaluatedProperties":{"type":"string"}}`, new: `{` + objAB + `,"unevaluatedProperties":{"type":"string"}}`,
		kind: PropertyAddedIsCoveredByPartiallyOpen, back: true, fwd: true},
	{name: "property removed is not covered by unevaluatedProperties", drafts: since2019,
		old:  `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"unevaluatedProperties":{"type":"string"}}`,
		new:  `{` + objA + `,"unevaluatedProperties":{"type":"string"}}`,
		kind: PropertyRemovedNotCoveredByPartiallyOpen, back: false, fwd: false},
	{name: "unevaluatedProperties has no effect beside additionalProperties", drafts: since2019,
		old:  `{` + objAB + `,"additionalProperties":true,"unevaluatedProperties":false}`,
		new:  `{` + objA + `,"additionalProperties":true,"unevaluatedProperties":false}`,
		kind: PropertyRemovedFromOpenContentModel, back: true, fwd: false},
	{name: "additionalProperties false rewritten as unevaluatedProperties false", drafts: since2019,
		old:     `{` + objA + `,"additionalProperties":false}`,
		new:     `{` + objA + `,"unevaluatedProperties":false}`,
		notKind: UnevaluatedPropertiesRemoved, back: true, fwd: true},

	// Arrays.
	{name: "maxItems added", drafts: allDrafts, old: `{` + arrT + `}`, new: `{` + arrT + `,"maxItems":3}`, kind: MaxItemsAdded, back: false, fwd: true},
	{name: "maxItems removed", drafts: allDrafts, old: `{` + arrT + `,"maxItems":3}`, new: `{` + arrT + `}`, kind: MaxItemsRemoved, back: true, fwd: false},
	{name: "maxItems increased", drafts: allDrafts, old: `{` + arrT + `,"maxItems":3}`, new: `{` + arrT + `,"maxItems":4}`, kind: MaxItemsIncreased, back: true, fwd: false},
	{name: "maxItems decreased", drafts: allDrafts, old: `{` + arrT + `,"maxItems":4}`, new: `{` + arrT + `,"maxItems":3}`, kind: MaxItemsDecreased, back: false, fwd: true},
	{name: "minItems added", drafts: allDrafts, old: `{` + arrT + `}`, new: `{` + arrT + `,"minItems":1}`, kind: MinItemsAdded, back: false, fwd: true},
	{name: "minItems removed", drafts: allDrafts, old: `{` + arrT + `,"minItems":1}`, new: `{` + arrT + `}`, kind: MinItemsRemoved, back: true, fwd: false},
	{name: "minItems increased", drafts: allDrafts, old: `{` + arrT + `,"minItems":1}`, new: `{` + arrT + `,"minItems":2}`, kind: MinItemsIncreased, back: false, fwd: true},
	{name: "minItems decreased", drafts: allDrafts, old: `{` + arrT + `,"minItems":2}`, new: `{` + arrT + `,"minItems":1}`, kind: MinItemsDecreased, back: true, fwd: false},
	{name: "uniqueItems added", drafts: allDrafts, old: `{` + arrT + `}`, new: `{` + arrT + `,"uniqueItems":true}`, kind: UniqueItemsAdded, back: false, fwd: true},
	{name: "uniqueItems removed", drafts: allDrafts, old: `{` + arrT + `,"uniqueItems":true}`, new: `{` + arrT + `}`, kind: UniqueItemsRemoved, back: true, fwd: false},
	{name: "maxContains added", drafts: since2019, old: `{` + containsS + `}`, new: `{` + containsS + `,"maxContains":2}`, kind: MaxContainsAdded, back: false, fwd: true},
	{name: "maxContains removed", drafts: since2019, old: `{` + containsS + `,"maxContains":2}`, new: `{` + containsS + `}`, kind: MaxContainsRemoved, back: true, fwd: false},
	{name: "maxContains increased", drafts: since2019, old: `{` + containsS + `,"maxContains":2}`, new: `{` + containsS + `,"maxContains":3}`, kind: MaxContainsIncreased, back: true, fwd: false},
	{name: "maxContains decreased", drafts: since2019, old: `{` + containsS + `,"maxContains":3}`, new: `{` + containsS + `,"maxContains":2}`, kind: MaxContainsDecreased, back: false, fwd: true},
	{name: "minContains added", drafts: since2019, old: `{` + containsS + `}`, new: `{` + containsS + `,"minContains":2}`, kind: MinContainsAdded, back: false, fwd: true},
	{name: "minContains removed", drafts: since2019, old: `{` + containsS + `,"minContains":2}`, new: `{` + containsS + `}`, kind: MinContainsRemoved, back: true, fwd: false},
	{name: "minContains increased", drafts: since2019, old: `{` + containsS + `,"minContains":2}`, new: `{` + containsS + `,"minContains":3}`, kind: MinContainsIncreased, back: false, fwd: true},
	{name: "minContains decreased", drafts: since2019, old: `{` + containsS + `,"minContains":3}`, new: `{` + containsS + `,"minContains":2}`, kind: MinContainsDecreased, back: true, fwd: false},

	// The rule for items after a tuple: additionalItems after an items
	// array (draft-07, 2019-09), items after prefixItems (2020-12).
	{name: "additional items added", drafts: allDrafts, old: `{` + tupleS + `,` + closedRest + `}`, new: `{` + tupleS + `}`, kind: AdditionalItemsAdded, path: "#/REST", back: true, fwd: false},
	{name: "additional items removed", drafts: allDrafts, old: `{` + tupleS + `}`, new: `{` + tupleS + `,` + closedRest + `}`, kind: AdditionalItemsRemoved, path: "#/REST", back: false, fwd: true},
	{name: "additional items extended", drafts: allDrafts, old: `{` + tupleS + `,` + intRest + `}`, new: `{` + tupleS + `}`, kind: AdditionalItemsExtended, back: true, fwd: false},
	{name: "additional items narrowed", drafts: allDrafts, old: `{` + tupleS + `}`, new: `{` + tupleS + `,` + intRest + `}`, kind: AdditionalItemsNarrowed, back: false, fwd: true},
	{name: "items false without a tuple", drafts: allDrafts, old: `{` + arrT + `}`, new: `{` + arrT + `,"items":false}`, kind: AdditionalItemsRemoved, path: "#/items", back: false, fwd: true},

	// unevaluatedItems (2019-09 and 2020-12).
	{name: "unevaluatedItems added", drafts: since2019, old: `{` + tupleS + `,"unevaluatedItems":false}`, new: `{` + tupleS + `}`, kind: UnevaluatedItemsAdded, path: "#/unevaluatedItems", back: true, fwd: false},
	{name: "unevaluatedItems removed", drafts: since2019, old: `{` + tupleS + `}`, new: `{` + tupleS + `,"unevaluatedItems":false}`, kind: UnevaluatedItemsRemoved, path: "#/unevaluatedItems", back: false, fwd: true},
	{name: "unevaluatedItems extended", drafts: since2019, old: `{` + tupleS + `,"unevaluatedItems":{"type":"integer"}}`, new: `{` + tupleS + `}`, kind: UnevaluatedItemsExtended, back: true, fwd: false},
	{name: "unevaluatedItems narrowed", drafts: since2019, old: `{` + tupleS + `}`, new: `{` + tupleS + `,"unevaluatedItems":{"type":"integer"}}`, kind: UnevaluatedItemsNarrowed, back: false, fwd: true},
	{name: "unevaluatedItems narrowed without a tuple", drafts: since2019, old: `{` + arrT + `}`, new: `{` + arrT + `,"unevaluatedItems":{"type":"integer"}}`, kind: UnevaluatedItemsNarrowed, back: false, fwd: true},
	{name: "unevaluatedItems replacing an equal items schema", drafts: since2019, old: `{` + arrT + `,"items":{"type":"integer"}}`, new: `{` + arrT + `,"unevaluatedItems":{"type":"integer"}}`,
		notKind: UnevaluatedItemsNarrowed, back: true, fwd: true},
	{name: "draft-07 ignores unevaluatedItems", drafts: d07, old: `{` + tupleS + `}`, new: `{` + tupleS + `,"unevaluatedItems":false}`, notKind: UnevaluatedItemsRemoved, back: true, fwd: true},

	// Positional items.
	{name: "item added to open model", drafts: allDrafts, old: `{` + tupleS + `}`, new: `{` + tupleSI + `}`, kind: ItemAddedToOpenContentModel, path: "#/TUPLE/1", back: false, fwd: true},
	{name: "item with empty schema added to open model", drafts: allDrafts, old: `{` + tupleS + `}`, new: `{"type":"array","TUPLE":[{"type":"string"},{}]}`,
		kind: ItemWithEmptySchemaAddedToOpenContentModel, path: "#/TUPLE/1", back: true, fwd: true},
	{name: "item added to closed model", drafts: allDrafts, old: `{` + tupleS + `,` + closedRest + `}`, new: `{` + tupleSI + `,` + closedRest + `}`, kind: ItemAddedToClosedContentModel, back: true, fwd: false},
	{name: "item removed from open model", drafts: allDrafts, old: `{` + tupleSI + `}`, new: `{` + tupleS + `}`, kind: ItemRemovedFromOpenContentModel, back: true, fwd: false},
	{name: "item removed from closed model", drafts: allDrafts, old: `{` + tupleSI + `,` + closedRest + `}`, new: `{` + tupleS + `,` + closedRest + `}`,
		kind: ItemRemovedFromClosedContentModel, path: "#/TUPLE/1", back: false, fwd: true},
	{name: "item with false schema removed from closed model", drafts: allDrafts, old: `{"type":"array","TUPLE":[{"type":"string"},false],` + closedRest + `}`, new: `{` + tupleS + `,` + closedRest + `}`,
		kind: ItemWithFalseRemovedFromClosedContentModel, path: "#/TUPLE/1", back: true, fwd: true},
	{name: "item added is covered by partially open model", drafts: allDrafts, old: `{` + tupleS + `,` + intRest + `}`, new: `{` + tupleSI + `,` + intRest + `}`,
		kind: ItemAddedIsCoveredByPartiallyOpen, back: true, fwd: true},
	{name: "item added is not covered by partially open model", drafts: allDrafts, old: `{` + tupleS + `,` + intRest + `}`,
		new:  `{"type":"array","TUPLE":[{"type":"string"},{"type":"integer","maximum":5}],` + intRest + `}`,
		kind: ItemAddedNotCoveredByPartiallyOpen, back: false, fwd: true},
	{name: "item removed is covered by partially open model", drafts: allDrafts,
		old:  `{"type":"array","TUPLE":[{"type":"string"},{"type":"integer","maximum":5}],` + intRest + `}`,
		new:  `{` + tupleS + `,` + intRest + `}`,
		kind: ItemRemovedIsCoveredByPartiallyOpen, back: true, fwd: false},
	{name: "item removed is not covered by partially open model", drafts: allDrafts,
		old:  `{"type":"array","TUPLE":[{"type":"string"},{"type":"string"}],` + intRest + `}`,
		new:  `{` + tupleS + `,` + intRest + `}`,
		kind: ItemRemovedNotCoveredByPartiallyOpen, back: false, fwd: false},
	{name: "item removed under unevaluatedItems false", drafts: since2019, old: `{` + tupleSI + `,"unevaluatedItems":false}`, new: `{` + tupleS + `,"unevaluatedItems":false}`,
		kind: ItemRemovedFromClosedContentModel, path: "#/TUPLE/1", back: false, fwd: true},
	{name: "item removed under unevaluatedItems false, draft-07 reads it open", drafts: d07, old: `{` + tupleSI + `,"unevaluatedItems":false}`, new: `{` + tupleS + `,"unevaluatedItems":false}`,
		kind: ItemRemovedFromOpenContentModel, back: true, fwd: false},
	{name: "item added under unevaluatedItems schema is covered", drafts: since2019, old: `{` + tupleS + `,"unevaluatedItems":{"type":"integer"}}`, new: `{` + tupleSI + `,"unevaluatedItems":{"type":"integer"}}`,
		kind: ItemAddedIsCoveredByPartiallyOpen, back: true, fwd: true},
	{name: "prefixItems means nothing before 2020-12", drafts: d07 | d19,
		old: `{"type":"array","prefixItems":[{"type":"string"}]}`, new: `{"type":"array","prefixItems":[{"type":"integer"}]}`,
		notKind: TypeChanged, back: true, fwd: true},
	{name: "prefixItems changed in 2020-12", drafts: d20,
		old: `{"type":"array","prefixItems":[{"type":"string"}]}`, new: `{"type":"array","prefixItems":[{"type":"integer"}]}`,
		kind: TypeChanged, path: "#/prefixItems/0/type", back: false, fwd: false},

	// Enums and const.
	{name: "enum extended", drafts: allDrafts, old: `{"enum":["a"]}`, new: `{"enum":["a","b"]}`, kind: EnumArrayExtended, path: "#/enum", back: true, fwd: false},
	{name: "enum narrowed", drafts: allDrafts, old: `{"enum":["a","b"]}`, new: `{"enum":["a"]}`, kind: EnumArrayNarrowed, back: false, fwd: true},
	{name: "enum changed", drafts: allDrafts, old: `{"enum":["a"]}`, new: `{"enum":["b"]}`, kind: EnumArrayChanged, back: false, fwd: false},
	{name: "const changed", drafts: allDrafts, old: `{"const":"a"}`, new: `{"const":"b"}`, kind: EnumArrayChanged, back: false, fwd: false},

	// Combinators.
	{name: "anyOf to oneOf that only widens", drafts: allDrafts,
		old:  `{"type":"object","properties":{"p":{"anyOf":[{"type":"string"}]}}}`,
		new:  `{"type":"object","properties":{"p":{"oneOf":[{"type":"number"},{"type":"string"}]}}}`,
		kind: CombinedTypeExtended, path: "#/properties/p/oneOf", back: true, fwd: false},
	{name: "anyOf to oneOf that only widens reports the widening", drafts: allDrafts,
		old:  `{"anyOf":[{"type":"string"}]}`,
		new:  `{"oneOf":[{"type":"string"},{"type":"number"}]}`,
		kind: SumTypeExtended, path: "#/oneOf", back: true, fwd: false},
	{name: "oneOf to anyOf", drafts: allDrafts, old: `{"oneOf":[{"type":"string"},{"type":"number"}]}`, new: `{"anyOf":[{"type":"string"},{"type":"number"}]}`,
		kind: CombinedTypeExtended, path: "#/anyOf", back: true, fwd: false},
	{name: "allOf to anyOf", drafts: allDrafts, old: `{"allOf":[{"type":"number"},{"maximum":5}]}`, new: `{"anyOf":[{"type":"number"},{"maximum":5}]}`,
		kind: CombinedTypeExtended, back: true, fwd: false},
	{name: "allOf to a single-member oneOf", drafts: allDrafts, old: `{"allOf":[{"type":"number"},{"maximum":5}]}`, new: `{"oneOf":[{"type":"number"}]}`,
		kind: CombinedTypeExtended, back: true, fwd: false},
	{name: "anyOf of several to oneOf", drafts: allDrafts, old: `{"anyOf":[{"type":"string"},{"type":"number"}]}`, new: `{"oneOf":[{"type":"string"},{"type":"number"}]}`,
		kind: CombinedTypeChanged, path: "#/oneOf", back: false, fwd: true},
	{name: "anyOf to allOf", drafts: allDrafts, old: `{"anyOf":[{"type":"number"},{"maximum":5}]}`, new: `{"allOf":[{"type":"number"},{"maximum":5}]}`,
		kind: CombinedTypeChanged, back: false, fwd: true},
	{name: "product type extended", drafts: allDrafts, old: `{"allOf":[{"type":"string"}]}`, new: `{"allOf":[{"type":"string"},{"maxLength":5}]}`,
		kind: ProductTypeExtended, path: "#/allOf", back: false, fwd: true},
	{name: "product type extended by a member that constrains nothing", drafts: allDrafts, old: `{"allOf":[{"type":"string"}]}`, new: `{"allOf":[{"type":"string"},{"description":"text"}]}`,
		kind: ProductTypeExtended, back: true, fwd: true},
	{name: "product type narrowed", drafts: allDrafts, old: `{"allOf":[{"type":"string"},{"maxLength":5}]}`, new: `{"allOf":[{"type":"string"}]}`,
		kind: ProductTypeNarrowed, path: "#/allOf", back: true, fwd: false},
	{name: "product type narrowed to a plain schema", drafts: allDrafts, old: `{"allOf":[{"type":"string"},{"maxLength":5}]}`, new: `{"type":"string"}`,
		kind: ProductTypeNarrowed, back: true, fwd: false},
	{name: "duplicate allOf members are one member", drafts: allDrafts, old: `{"allOf":[{"type":"string"},{"type":"string"}]}`, new: `{"allOf":[{"type":"string"}]}`,
		notKind: ProductTypeNarrowed, back: true, fwd: true},
	{name: "sum type extended", drafts: allDrafts, old: `{"anyOf":[{"type":"string"}]}`, new: `{"anyOf":[{"type":"string"},{"type":"number"}]}`,
		kind: SumTypeExtended, path: "#/anyOf", back: true, fwd: false},
	{name: "sum type extended from a plain schema", drafts: allDrafts, old: `{"type":"string"}`, new: `{"oneOf":[{"type":"string"},{"type":"number"}]}`,
		kind: SumTypeExtended, back: true, fwd: false},
	{name: "sum type narrowed", drafts: allDrafts, old: `{"anyOf":[{"type":"string"},{"type":"number"}]}`, new: `{"anyOf":[{"type":"string"}]}`,
		kind: SumTypeNarrowed, path: "#/anyOf", back: false, fwd: true},
	{name: "sum type narrowed to an alternative that covers both", drafts: allDrafts,
		old: `{"anyOf":[{"type":"string","maxLength":5},{"type":"string"}]}`, new: `{"anyOf":[{"type":"string"}]}`,
		kind: SumTypeNarrowed, back: true, fwd: true, kindOK: boolPtr(true)},
	{name: "combined type subschemas changed", drafts: allDrafts, old: `{"anyOf":[{"type":"string"},{"type":"number"}]}`, new: `{"anyOf":[{"type":"string"},{"type":"boolean"}]}`,
		kind: CombinedTypeSubschemasChanged, path: "#", back: false, fwd: false},
	{name: "not type narrowed", drafts: allDrafts, old: `{"not":{"type":["string","number"]}}`, new: `{"not":{"type":"string"}}`,
		kind: NotTypeNarrowed, path: "#/not", back: true, fwd: false},
	{name: "not type narrowed by removing it", drafts: allDrafts, old: `{"type":"string","not":{"enum":["x"]}}`, new: `{"type":"string"}`,
		kind: NotTypeNarrowed, back: true, fwd: false},
	{name: "not type extended", drafts: allDrafts, old: `{"not":{"type":"string"}}`, new: `{"not":{"type":["string","number"]}}`,
		kind: NotTypeExtended, path: "#/not", back: false, fwd: true},
	{name: "not type extended by adding it", drafts: allDrafts, old: `{"type":"string"}`, new: `{"type":"string","not":{"enum":["x"]}}`,
		kind: NotTypeExtended, back: false, fwd: true},
	{name: "not with a changed bound", drafts: allDrafts, old: `{"not":{"type":"string","maxLength":10}}`, new: `{"not":{"type":"string","maxLength":5}}`,
		kind: NotTypeNarrowed, back: true, fwd: false},
}

func TestStrictKinds(t *testing.T) {
	for _, tc := range strictCases {
		for _, dr := range draftURIs {
			if tc.drafts&dr.bit == 0 {
				continue
			}
			t.Run(dr.name+"/"+tc.name, func(t *testing.T) {
				sp := func(s string) string { return spell(s, dr.tuple, dr.rest, dr.depReq, dr.depSch) }
				old, new := withDraft(t, sp(tc.old), dr.uri), withDraft(t, sp(tc.new), dr.uri)
				ds := Diff(old, new, Strict)
				if tc.kind != "" {
					i := slices.IndexFunc(ds, func(d Difference) bool {
						return d.Kind == tc.kind && (tc.path == "" || d.Path == sp(tc.path))
					})
					if i < 0 {
						t.Fatalf("no %s%s among\n%s", tc.kind, ifElse(tc.path == "", "", " at "+sp(tc.path)), diffList(ds))
					}
					want := tc.back
					if tc.kindOK != nil {
						want = *tc.kindOK
					}
					if ds[i].Compatible != want {
						t.Errorf("%s compatible = %v, want %v", ds[i], ds[i].Compatible, want)
					}
					if ds[i].Message == "" {
						t.Errorf("%s has no message", ds[i])
					}
				}
				if tc.notKind != "" && slices.ContainsFunc(ds, func(d Difference) bool { return d.Kind == tc.notKind }) {
					t.Errorf("%s reported:\n%s", tc.notKind, diffList(ds))
				}
				if got := Check(Backward, []*Schema{old}, new, Strict).Compatible(); got != tc.back {
					t.Errorf("BACKWARD compatible = %v, want %v\n%s", got, tc.back, diffList(ds))
				}
				if got := Check(Forward, []*Schema{old}, new, Strict); got.Compatible() != tc.fwd {
					t.Errorf("FORWARD compatible = %v, want %v\n%s", got.Compatible(), tc.fwd, got)
				}
				if got := Check(Full, []*Schema{old}, new, Strict).Compatible(); got != (tc.back && tc.fwd) {
					t.Errorf("FULL compatible = %v, want %v", got, tc.back && tc.fwd)
				}
				for _, p := range []Policy{Strict, GoAware} {
					for _, d := range append(Diff(old, new, p), Diff(new, old, p)...) {
						switch d.Kind {
						case PropertyAddedToOpenContentModel, ItemsAdded, ItemsRemoved:
							t.Errorf("%s: deprecated kind reported: %s", p, d)
						}
					}
				}
			})
		}
	}
}

func diffList(ds []Difference) string {
	if len(ds) == 0 {
		return "  (no differences)"
	}
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "  %s\n", d)
	}
	return b.String()
}

// confluentKinds is Confluent's current Difference.Type (json-schema-provider,
// io.confluent.kafka.schemaregistry.json.diff) without the deprecated
// PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL and the two RESERVED_PROPERTY_*
// kinds, which check Confluent's schema metadata rather than the schema.
var confluentKinds = []DiffKind{
	IDChanged, DescriptionChanged, TitleChanged, DefaultChanged,
	SchemaAdded, SchemaRemoved, TypeExtended, TypeNarrowed, TypeChanged,
	MaxLengthAdded, MaxLengthRemoved, MaxLengthIncreased, MaxLengthDecreased,
	MinLengthAdded, MinLengthRemoved, MinLengthIncreased, MinLengthDecreased,
	PatternAdded, PatternRemoved, PatternChanged,
	MaximumAdded, MaximumRemoved, MaximumIncreased, MaximumDecreased,
	MinimumAdded, MinimumRemoved, MinimumIncreased, MinimumDecreased,
	ExclusiveMaximumAdded, ExclusiveMaximumRemoved, ExclusiveMaximumIncreased, ExclusiveMaximumDecreased,
	ExclusiveMinimumAdded, ExclusiveMinimumRemoved, ExclusiveMinimumIncreased, ExclusiveMinimumDecreased,
	MultipleOfAdded, MultipleOfRemoved, MultipleOfExpanded, MultipleOfReduced, MultipleOfChanged,
	RequiredAttributeAdded, RequiredAttributeWithDefaultAdded, RequiredAttributeRemoved,
	MaxPropertiesAdded, MaxPropertiesRemoved, MaxPropertiesIncreased, MaxPropertiesDecreased,
	MinPropertiesAdded, MinPropertiesRemoved, MinPropertiesIncreased, MinPropertiesDecreased,
	AdditionalPropertiesAdded, AdditionalPropertiesRemoved, AdditionalPropertiesExtended, AdditionalPropertiesNarrowed,
	DependencyArrayAdded, DependencyArrayRemoved, DependencyArrayExtended, DependencyArrayNarrowed, DependencyArrayChanged,
	DependencySchemaAdded, DependencySchemaRemoved,
	RequiredPropertyAddedToOpenContentModel, RequiredPropertyWithDefaultAddedToOpenContentModel,
	OptionalPropertyAddedToOpenContentModel, PropertyWithEmptySchemaAddedToOpenContentModel,
	RequiredPropertyAddedToUnopenContentModel, RequiredPropertyWithDefaultAddedToUnopenContentModel,
	OptionalPropertyAddedToUnopenContentModel, PropertyRemovedFromOpenContentModel,
	PropertyWithFalseRemovedFromClosedContentModel, PropertyRemovedFromClosedContentModel,
	PropertyRemovedIsCoveredByPartiallyOpen, PropertyRemovedNotCoveredByPartiallyOpen,
	PropertyAddedIsCoveredByPartiallyOpen, PropertyAddedNotCoveredByPartiallyOpen,
	UnevaluatedPropertiesAdded, UnevaluatedPropertiesRemoved, UnevaluatedPropertiesExtended, UnevaluatedPropertiesNarrowed,
	MaxItemsAdded, MaxItemsRemoved, MaxItemsIncreased, MaxItemsDecreased,
	MinItemsAdded, MinItemsRemoved, MinItemsIncreased, MinItemsDecreased,
	MaxContainsAdded, MaxContainsRemoved, MaxContainsIncreased, MaxContainsDecreased,
	MinContainsAdded, MinContainsRemoved, MinContainsIncreased, MinContainsDecreased,
	UniqueItemsAdded, UniqueItemsRemoved,
	AdditionalItemsAdded, AdditionalItemsRemoved, AdditionalItemsExtended, AdditionalItemsNarrowed,
	UnevaluatedItemsAdded, UnevaluatedItemsRemoved, UnevaluatedItemsExtended, UnevaluatedItemsNarrowed,
	ItemAddedToOpenContentModel, ItemWithEmptySchemaAddedToOpenContentModel,
	ItemAddedToClosedContentModel, ItemRemovedFromOpenContentModel,
	ItemWithFalseRemovedFromClosedContentModel, ItemRemovedFromClosedContentModel,
	ItemRemovedIsCoveredByPartiallyOpen, ItemRemovedNotCoveredByPartiallyOpen,
	ItemAddedIsCoveredByPartiallyOpen, ItemAddedNotCoveredByPartiallyOpen,
	EnumArrayExtended, EnumArrayNarrowed, EnumArrayChanged,
	CombinedTypeExtended, CombinedTypeChanged,
	ProductTypeExtended, ProductTypeNarrowed, SumTypeExtended, SumTypeNarrowed,
	CombinedTypeSubschemasChanged,
	NotTypeExtended, NotTypeNarrowed,
}

// TestStrictCoversConfluentKinds keeps strictCases complete: every kind of
// Confluent's enum has a case under Strict where Diff reports it.
func TestStrictCoversConfluentKinds(t *testing.T) {
	if len(confluentKinds) != 129 {
		t.Errorf("confluentKinds has %d kinds, want Confluent's 132 less 3", len(confluentKinds))
	}
	covered := map[DiffKind]bool{}
	for _, tc := range strictCases {
		covered[tc.kind] = true
	}
	seen := map[DiffKind]bool{}
	for _, k := range confluentKinds {
		if seen[k] {
			t.Errorf("%s listed twice", k)
		}
		seen[k] = true
		if !covered[k] {
			t.Errorf("no strictCases case reports %s", k)
		}
	}
}
