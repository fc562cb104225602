// Package jsonschema validates messages against the JSON Schema revisions
// of the sqlstreams schema registry. Core registers and judges JSON Schema
// documents itself, but checking a message takes a full validator, which
// core (standard library only) does not carry; this module wraps
// github.com/santhosh-tekuri/jsonschema/v6 as a schema.Compiler:
//
//	client, err := sqlstreams.Open(ctx, drv, sqlstreams.WithJSONValidation(jsonschema.Compiler()))
//
// Registry.Validate and ProducerOptions.Validate (RawPayload producers)
// then check JSON messages too, each problem reported as a
// schema.Violation with the JSON Pointer of the value at fault.
//
// # Drafts
//
// A document's "$schema" chooses the draft (draft-04, -06, -07, 2019-09 or
// 2020-12). A document without one is read as 2020-12, the draft the
// registry reflects Go types to and reads undeclared documents with (every
// keyword counts). "format" is asserted in every draft: a reader of a
// "date-time" string, a Go time.Time for one, fails on anything else, and
// the point of validating is to refuse what readers cannot read. Formats
// the validator does not know are ignored; content keywords
// (contentEncoding, contentMediaType) are annotations, as the drafts say.
//
// # References
//
// A revision registered with references (R10) refers to shared schemas by
// name: {"$ref": "money.json"}. The registry hands the compiler the text of
// every document the references reach, by name, and only those: a "$ref"
// resolves to a named document when it is the name itself, the name
// resolved against the "$id" of the referring schema or of another
// document in the set (as a Confluent user writes them), or the "$id" of a
// referenced document. Nothing is loaded from files or the network; a
// "$ref" to anything else makes the revision fail to compile.
package jsonschema
