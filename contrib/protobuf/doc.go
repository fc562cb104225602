// Package protobuf adds Protocol Buffers to the sqlstreams schema
// registry: enable it with sqlstreams.WithFormats(protobuf.Format()) and
// the registry records PROTOBUF documents (.proto text) beside JSON
// Schemas (RegisterSchema, CheckDocument, and through contrib/ccompat the
// Confluent-compatible API, which enables it by default).
//
// Parsing is github.com/bufbuild/protocompile's, which compiles proto2,
// proto3 and editions files as protoc does. The well-known types
// (google/protobuf/timestamp.proto and the rest) can be imported without
// registering them. Other imports are schema references: a file registered
// under a subject of its own, named by the path its importers import
// (ParseReferences); any other import is refused with ErrImportNotAvailable.
//
// # Rules
//
// The rules are Confluent's Protobuf rules, written here anew so that each
// difference carries a kind and a path as every other registry difference
// does. A reader's file is compared with the writer's, as Confluent
// compares a new schema with the previous one under BACKWARD: messages and
// enums are matched by name at each level (the package left out), fields
// by number wherever they sit (top level or in a oneof). Paths are
// Confluent's: "#/OrderPlaced/4" is field 4 of OrderPlaced,
// "#/OrderPlaced/payment/7" field 7 in oneof payment.
//
// Problems (Compatible false):
//   - PACKAGE_CHANGED: the package differs, so every full name does.
//   - MESSAGE_REMOVED: a writer's message the reader lacks.
//   - FIELD_KIND_CHANGED: a scalar (enums count as scalars), a message and
//     a map are three kinds; a field number moved from one to another.
//   - FIELD_SCALAR_KIND_CHANGED: a scalar type outside its wire-compatible
//     group: int32, uint32, int64, uint64, bool and enums; sint32, sint64;
//     fixed32, sfixed32; fixed64, sfixed64; string, bytes; float; double.
//   - FIELD_NAMED_TYPE_CHANGED: a message field of another message type.
//   - FIELD_NUMERIC_LABEL_CHANGED: a non-string scalar that became repeated
//     or stopped being (packed and unpacked encodings differ), or became or
//     stopped being required.
//   - REQUIRED_FIELD_ADDED, REQUIRED_FIELD_REMOVED (proto2).
//   - ONEOF_FIELD_REMOVED: a member of a oneof that is still there dropped.
//   - MULTIPLE_FIELDS_MOVED_TO_ONEOF, FIELD_MOVED_TO_EXISTING_ONEOF: a
//     reader's oneof joins fields the writer let be set together.
//
// Listed but compatible, as in Confluent: MESSAGE_ADDED, ENUM_ADDED,
// ENUM_REMOVED, ENUM_CONST_ADDED, ENUM_CONST_REMOVED, ENUM_CONST_CHANGED,
// FIELD_ADDED, FIELD_REMOVED, FIELD_NAME_CHANGED,
// FIELD_STRING_OR_BYTES_LABEL_CHANGED, ONEOF_ADDED, ONEOF_REMOVED (a oneof
// dropped with all its members), ONEOF_FIELD_ADDED and
// ONEOF_FIELD_MOVED_TO_TOP_LEVEL.
//
// Two departures, both stricter or more informative, never looser: a
// proto3 field without a label that becomes repeated is a label change (Confluent
// compares labels only when both are written out), and RESERVED_FIELD_REUSED
// (this package's kind) lists a reader's field that takes a number or a
// name the writer reserves. That one is compatible: one pair of files
// cannot tell a reuse (the new reader takes what the old writer reserved)
// from the recommended removal (the new writer reserves what the old
// reader still uses, as FORWARD compares them), so refusing it would
// refuse every reserved removal under FORWARD and FULL. A removal that
// reserves nothing says so in FIELD_REMOVED's message, and
// BACKWARD_TRANSITIVE catches a number reused with another type.
//
// Because the rules compare an old file with a new one and not what one
// reader reads from one writer, FORWARD is the same diff with the files
// swapped, as in Confluent: adding a message fails FORWARD
// (MESSAGE_REMOVED seen from the new file), adding a field passes every
// level.
//
// # Canonical form and fingerprint
//
// Document.Canonical is the compiled FileDescriptorProto with its source
// positions and comments removed and each message's fields in number
// order, encoded with Protobuf's deterministic marshaling. The descriptor
// is what protoc itself produces from the text, so whitespace, comments,
// the order fields are written in and the spelling of type names (Foo,
// .pkg.Foo) all make one fingerprint, while anything that changes how data
// is read (a number, a type, a label, a option such as packed) makes
// another. It is binary: the registry keeps the text as registered and
// uses the canonical form only to find equal documents.
package protobuf
