package protobuf

import (
	"strings"

	"github.com/sqlstreams/sqlstreams/core/schema"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/dynamicpb"
)

// Validate reads payload, a message in protobuf's JSON mapping, into a
// dynamic message of the file's first top-level message (the one
// Confluent's serializers frame a record with): a field the message does not
// declare, a value of the wrong kind or a missing proto2 required field is
// a violation. The decoder's own words say where; the path is the message.
func (d *Document) Validate(payload []byte) []schema.Violation {
	ms := d.fd.Messages()
	if ms.Len() == 0 {
		return []schema.Violation{{Message: "the schema declares no message to validate against"}}
	}
	m := dynamicpb.NewMessage(ms.Get(0))
	if err := protojson.Unmarshal(payload, m); err != nil {
		return []schema.Violation{{Path: "", Message: string(ms.Get(0).FullName()) + ": " + decodeProblem(err)}}
	}
	return nil
}

// decodeProblem is the decoder's words without its "proto:" prefix, whose
// following space google.golang.org/protobuf varies between runs on purpose
// (so that nobody matches its text); what stays is stable.
func decodeProblem(err error) string {
	return strings.TrimSpace(strings.TrimPrefix(err.Error(), "proto:"))
}
