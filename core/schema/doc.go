// Package schema derives JSON Schemas from Go types, compares schemas, and
// decides whether a new schema revision is compatible with earlier ones.
// It is the engine behind the sqlstreams schema registry (R1–R10 in
// docs/contracts.md): every producer and consumer records the schema of its
// Go type, and a new revision at an existing version must pass the stream's
// compatibility level.
//
// # Reflection
//
// Reflect (or For) describes the JSON that encoding/json writes for a type,
// as a draft 2020-12 schema. It follows encoding/json rather than the Go
// type system, because the JSON is what other readers see:
//
//   - Members are named by the json tag, else the Go field name. `json:"-"`
//     and unexported fields are skipped. Fields of embedded structs without
//     a tag name are promoted with encoding/json's conflict rules (the
//     shallowest wins, then the tagged one, else all conflicting ones
//     vanish); an embedded struct with a tag name is an ordinary member.
//   - Members that encoding/json may leave out are optional: omitzero,
//     omitempty on a type that can be empty (not on structs or non-empty
//     arrays, which omitempty never omits), and members promoted through an
//     embedded pointer (left out when it is nil). All others are listed in
//     "required", because encoding/json always writes them.
//   - A json tag name containing a quote, apostrophe, backslash, control
//     character, non-ASCII symbol or invalid UTF-8 is refused: Go 1.27's
//     default encoding/json (built on json/v2) and GOEXPERIMENT=nojsonv2
//     name such a member differently. So is an option such as "omitempty "
//     or "string-x": v2 reads its leading word, v1 ignores it.
//   - The ",string" option makes a number or boolean a string (with a
//     pattern or enum describing its text).
//   - Pointers, slices and maps may be nil, which encoding/json writes as
//     null, so their schemas also accept null: "type": ["integer", "null"],
//     or anyOf with {"type": "null"} for a reference.
//   - Slices and arrays are arrays with "items" (arrays also fix their
//     length); []byte is a base64 string. Maps with string, integer or
//     encoding.TextMarshaler keys are objects with additionalProperties.
//   - time.Time is a "date-time" string, json.Number a number. Other types
//     implementing json.Marshaler (json.RawMessage included) and interface
//     types accept anything (the empty schema true); types implementing
//     only encoding.TextMarshaler are strings.
//   - Integers are "integer" (with minimum/maximum for 8-, 16- and 32-bit
//     kinds and minimum 0 for unsigned ones, since encoding/json refuses to
//     decode an out-of-range number); floats are "number".
//   - Named struct types become "$defs" entries referenced by
//     {"$ref": "#/$defs/Name"}; the root struct is inlined and a reference
//     to it is "#". That is also how recursive types terminate.
//   - A named struct type that implements Shared is not copied: it is
//     referenced by name, {"$ref": "money-v1"}, and its own schema comes
//     with the reflected one (Schema.Shared), for the registry to record
//     once on the stream it names. Bundle resolves such names for
//     comparisons. Types that do not implement Shared are unaffected.
//
// A field may carry a default with the sqlstreams tag, whose value is JSON
// and must come last in the tag:
//
//	Currency string `json:"currency" sqlstreams:"default=\"EUR\""`
//	Retries  int    `json:"retries" sqlstreams:"default=3"`
//
// The default is written as the property's "default" keyword. It states the
// value a reader assumes when an older writer did not send the field, which
// is what makes adding such a required field compatible. encoding/json does
// not apply defaults itself; a decoder honors them by filling the value
// from the defaults before unmarshalling (unmarshalling leaves missing
// members untouched).
//
// Reflected structs say "additionalProperties": true: encoding/json ignores
// members a struct does not declare, so the Go reader is open. The policies
// below read that differently; see "Open content models".
//
// # Documents, canonical form and fingerprints
//
// A Schema holds any JSON Schema document, so Parse accepts schemas from
// elsewhere (any draft, boolean schemas, unknown keywords) and reports
// malformed input with its position. MarshalJSON writes compact JSON with
// sorted keys, so equal schemas have equal bytes. Canonical additionally
// drops annotations that do not change what a schema accepts (title,
// description, $comment, examples), sorts "required", "type" and "enum",
// and spells numbers one way; Fingerprint is its SHA-256, which the
// registry uses to deduplicate revisions.
//
// # Differences and compatibility
//
// Diff lists the changes from an old schema to a new one, each named with
// Confluent's JSON Schema difference names (TYPE_NARROWED,
// REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL, ...) and marked
// backward compatible or not: can a reader holding the new schema read
// everything written with the old one? It is a structural comparison:
// references are followed (recursion terminates), allOf members are merged,
// and each anyOf/oneOf alternative of the old schema must be accepted by
// some alternative of the new one. Check applies a Level (NONE, BACKWARD,
// FORWARD, FULL and their _TRANSITIVE forms, with Confluent's meanings) to
// a candidate and the existing revisions, and lists every problem with the
// revision and direction it came from.
//
// Under Strict the engine follows the STRICT rules of Confluent's
// json-schema-provider for drafts 7, 2019-09 and 2020-12, uses every
// difference name of its current list that a schema can produce (the
// RESERVED_PROPERTY_* pair checks Confluent's schema metadata, not the
// schema, and is not produced), and agrees with all 145 cases of the
// Apicurio compatibility corpus in testdata. Among the names:
//
//   - A property added to an open model is REQUIRED_PROPERTY_ADDED_,
//     REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_ or OPTIONAL_PROPERTY_ADDED_
//     TO_OPEN_CONTENT_MODEL (all breaks: old data may hold any value under
//     that name), or PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL
//     when its schema accepts anything. The single kind
//     PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL that Confluent deprecated is no
//     longer reported.
//   - Removing a property whose schema is false from a closed model is
//     PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL, compatible
//     (old data never had it); ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL
//     likewise for a tuple.
//   - NOT_TYPE_NARROWED means the "not" excludes less (compatible),
//     NOT_TYPE_EXTENDED that it excludes more (a break). ADDED/REMOVED of
//     the rule for undeclared members (ADDITIONAL_*, UNEVALUATED_*) mean
//     the members became allowed (compatible) or disallowed (a break).
//   - Changing the combinator is COMBINED_TYPE_EXTENDED when the new one
//     accepts at least as much (to anyOf; from a single-member one to
//     oneOf, so anyOf [A] to oneOf [A, B] is fine) and
//     COMBINED_TYPE_CHANGED otherwise; more or fewer alternatives are
//     SUM_TYPE_EXTENDED/NARROWED, more or fewer allOf members
//     PRODUCT_TYPE_EXTENDED/NARROWED, an old alternative that no new one
//     accepts COMBINED_TYPE_SUBSCHEMAS_CHANGED. An "items" schema added or
//     removed is SCHEMA_ADDED/SCHEMA_REMOVED.
//
// # Drafts
//
// The root's "$schema" decides which keywords count, as it does for a
// validator: unevaluatedProperties, unevaluatedItems, dependentRequired
// and dependentSchemas from 2019-09 on, prefixItems in 2020-12 (where
// "items" then rules the items after the tuple; before, an "items" array
// and additionalItems). Draft-04, -06 and -07 documents ignore the newer
// keywords; a document without "$schema" is read with all of them.
// Keywords beside "$ref" apply in every draft, although draft-07
// validators ignore them.
//
// # Open content models
//
// An object schema is open (undeclared properties allowed: the default, or
// additionalProperties true), closed (additionalProperties false) or
// partially open (additionalProperties is a schema). Where
// additionalProperties is absent, unevaluatedProperties (2019-09 and
// later) takes its place, properties declared in merged allOf members
// counting as evaluated; where both are present, additionalProperties
// decides. The model is judged per property name: a name that a
// patternProperties entry matches gets that entry's schema. Tuples work
// the same way with the rule for the items after them (additionalItems,
// "items" after prefixItems, else unevaluatedItems).
//
// Strict takes openness literally, as Confluent does: old data from an open
// schema may hold any value under any name, so adding a constrained
// property to an open schema (OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL
// and its REQUIRED_ siblings) is incompatible, while removing a property
// from it is compatible. For reflected schemas that makes every added
// field a break under Strict.
//
// GoAware reads the "additionalProperties": true of a reflected struct as
// what it is, a property of the Go reader (it ignores unknown members), not
// a promise that writers send arbitrary members: Go writers send exactly
// their declared fields.
//
// # Where Strict departs from Confluent
//
// Confluent compares the parsed schema's structure; this engine compares
// what the schemas accept, so the verdict can differ where Confluent's is
// an artifact of its structure. Each case is deliberate:
//
//   - A name newly listed in "required" without a property schema on
//     either side is REQUIRED_ATTRIBUTE_ADDED (old data may lack it);
//     Confluent only checks properties both schemas declare.
//   - A required property without a default added to an open model is a
//     break even when its schema accepts anything (old data may lack it);
//     Confluent reports PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL.
//   - SUM_TYPE_NARROWED is compatible when every old alternative is still
//     accepted by a remaining one (anyOf [string with maxLength, string]
//     to anyOf [string]); PRODUCT_TYPE_EXTENDED and PRODUCT_TYPE_NARROWED
//     carry the verdict of comparing the merged members (an added allOf
//     member that constrains nothing is fine). Confluent decides these by
//     the count alone.
//   - unevaluatedProperties true (or {}) is the same as leaving it out, it
//     has no effect beside additionalProperties, and moving "false" between
//     the two keywords is no change; Confluent reports the keyword as
//     such. additionalItems without an "items" array has no effect, as the
//     drafts say. An object with patternProperties stays open for names
//     no pattern matches.
//   - Where the parsed structures differ but the accepted values compare
//     directly, the more precise kind is reported at the keyword's path:
//     TYPE_EXTENDED at #/type for a widened type array (Confluent:
//     SUM_TYPE_EXTENDED), the changed keyword inside merged allOf members
//     (Confluent: COMBINED_TYPE_SUBSCHEMAS_CHANGED), a plain schema
//     compared with each alternative of a new anyOf rather than
//     TYPE_CHANGED. Paths point into the new schema at the keyword
//     (#/properties/a/maxLength), not at the schema holding it.
//   - Keywords Confluent does not compare keep their own kinds: format,
//     contentEncoding, contentMediaType, contains, propertyNames,
//     patternProperties, if/then/else and unresolvable references.
//
// # The GoAware policy
//
// GoAware (the default) judges a change by what a Go reader using
// encoding/json actually does with data written under the old schema. It
// differs from Strict only where encoding/json's behavior is known:
//
//   - Adding a property is compatible unless the new schema requires it
//     without a default: old writers do not send it, and encoding/json would
//     silently leave the zero value, so REQUIRED_ATTRIBUTE_ADDED (also when
//     an optional property becomes required) is a break; otherwise the
//     addition is OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL or
//     REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL (or
//     REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED for a property that becomes
//     required), compatible.
//   - Removing a property is compatible even from a closed schema, and
//     closing a schema (additionalProperties or unevaluatedProperties
//     becoming false) is compatible: encoding/json skips members the struct
//     does not declare.
//   - An old alternative that no alternative of the new schema accepts
//     (an integer field becoming an optional struct) keeps the name
//     SUM_TYPE_NARROWED, which GoAware used before Strict adopted
//     Confluent's COMBINED_TYPE_SUBSCHEMAS_CHANGED.
//   - Everything else is as under Strict, because the keywords Reflect
//     emits are exactly the ones encoding/json enforces: a type change it
//     cannot decode (integer to object, number to integer, nullable to
//     non-nullable, which would also yield a silent zero value) is a break,
//     integer to number is fine (a float64 field reads integers), narrowing
//     an integer range (int64 to int32) is a break, a date-time or base64
//     format added to a string is a break, and map value types
//     (additionalProperties schemas) must still decode.
//
// Hand-written schemas under GoAware keep Strict's rules for the keywords
// above, so a pattern or enum added by hand is still a break.
package schema
