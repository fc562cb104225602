// Package avro adds Apache Avro to the sqlstreams schema registry: enable it
// with sqlstreams.WithFormats(avro.Format()) and the registry records AVRO
// documents beside JSON Schemas (RegisterSchema, CheckDocument, and through
// contrib/ccompat the Confluent-compatible API, which enables it by default).
//
// Parsing is github.com/hamba/avro/v2's; the compatibility rules are this
// package's, so that each problem carries a kind and a path as every other
// registry problem does.
//
// # Rules
//
// A reader schema reads data written with a writer schema by Avro's schema
// resolution (specification 1.12, "Schema Resolution"). Each way it fails is
// a problem with the kind Avro's Java SchemaCompatibility and Confluent's
// registry name it, and a JSON-pointer path into the reader schema such as
// "/fields/3" or "/fields/1/type/2":
//
//   - READER_FIELD_MISSING_DEFAULT_VALUE: a reader field that the writer has
//     neither under its name nor under one of the reader field's aliases, and
//     that has no default to fill it.
//   - TYPE_MISMATCH: the writer's type cannot be read as the reader's.
//     Promotions are allowed: int to long, float or double; long to float or
//     double; float to double; string to bytes and bytes to string.
//   - MISSING_UNION_BRANCH: the reader is a union with no branch for a type
//     the writer writes (a writer union is read branch by branch; each branch
//     is resolved against the first reader branch of the same type and name,
//     else the first it promotes to).
//   - MISSING_ENUM_SYMBOLS: the writer has symbols the reader's enum lacks and
//     the reader's enum has no default symbol to read them as.
//   - NAME_MISMATCH: named types (record, enum, fixed) whose unqualified names
//     differ, unless one of the reader's aliases is the writer's full name.
//   - FIXED_SIZE_MISMATCH: fixed types of different sizes.
//
// A writer's field the reader does not have is skipped, as Avro does; logical
// types are read as their underlying types. The levels of package schema
// apply unchanged: BACKWARD lets the new schema read the latest's data,
// FORWARD the reverse, FULL both, and the transitive ones compare with every
// earlier schema.
//
// # Canonical form and fingerprint
//
// Avro's Parsing Canonical Form keeps only what decoding a writer's bytes
// needs (names, types, fields, symbols, sizes) and drops defaults and
// aliases. Those decide resolution, so a fingerprint of the Parsing Canonical
// Form alone would make a schema that adds a default the same revision as
// the one without it, and the registry would never judge the change.
// Document.Canonical is therefore the Parsing Canonical Form with, after
// each attribute it keeps, the field and enum defaults, the aliases (fully
// qualified for named types) and logical types; docs, field order and other
// properties stay out. The plain Parsing Canonical Form, from which Avro's
// own fingerprints (CRC-64-AVRO, SHA-256) are taken, is ParsingCanonicalForm.
// The registry keeps the text as registered and uses the canonical form only
// to find equal documents.
package avro
