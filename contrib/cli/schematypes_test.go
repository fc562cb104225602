package sqlstreamscli_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// typeCases register, check, list and show documents of every schema type,
// in order (later cases see what earlier ones registered), on an empty
// database. Each names the exit code it must end with, beside the golden.
var typeCases = []struct {
	name string
	code int
	args []string
}{
	// AVRO, told by the extension: v2 adds a field with a default (BACKWARD
	// accepts it), v3 one without (refused, naming the field).
	{"register-avro-v1", 0, []string{"schema", "register", "payments", "1", "testdata/types/payment-v1.avsc"}},
	{"register-avro-v2-json", 0, []string{"schema", "register", "payments", "v1", "testdata/types/payment-v2.avsc", "-o", "json"}},
	{"register-avro-again", 0, []string{"schema", "register", "payments", "1", "testdata/types/payment-v2.avsc"}},
	{"check-avro-no-default", 3, []string{"schema", "check", "payments", "1", "testdata/types/payment-v3-no-default.avsc"}},
	{"check-avro-no-default-json", 3, []string{"schema", "check", "payments", "1", "testdata/types/payment-v3-no-default.avsc", "-o", "json"}},
	{"register-avro-no-default", 3, []string{"schema", "register", "payments", "1", "testdata/types/payment-v3-no-default.avsc"}},
	{"register-avro-malformed", 1, []string{"schema", "register", "payments", "1", "testdata/types/payment-broken.avsc"}},
	// An extension that says no type: a usage error, unless --type says it.
	{"check-unknown-extension", 2, []string{"schema", "check", "payments", "1", "testdata/types/payment-v3-no-default.txt"}},
	{"register-unknown-extension", 2, []string{"schema", "register", "payments", "1", "testdata/types/payment-v3-no-default.txt"}},
	{"check-type-flag", 3, []string{"schema", "check", "payments", "1", "testdata/types/payment-v3-no-default.txt", "--type", "avro"}},
	{"check-bad-type", 2, []string{"schema", "check", "payments", "1", "testdata/types/payment-v1.avsc", "--type", "XML"}},
	// --type overrides the extension: an Avro schema is no JSON Schema.
	{"check-avro-as-json", 1, []string{"schema", "check", "payments", "1", "testdata/types/payment-v2.avsc", "--type", "JSON"}},
	// A JSON Schema at a version of AVRO revisions is another type.
	{"check-type-changed", 3, []string{"schema", "check", "payments", "1", "testdata/types/note-v1.json"}},
	// PROTOBUF: v2 adds a field (with a well-known import), then a field's
	// kind changes.
	{"register-proto-v1", 0, []string{"schema", "register", "shipments", "1", "testdata/types/shipment-v1.proto"}},
	{"register-proto-v2", 0, []string{"schema", "register", "shipments", "1", "testdata/types/shipment-v2.proto"}},
	{"check-proto-kind-changed-json", 3, []string{"schema", "check", "shipments", "1", "testdata/types/shipment-kind-changed.proto", "-o", "json"}},
	{"register-proto-kind-changed", 3, []string{"schema", "register", "shipments", "1", "testdata/types/shipment-kind-changed.proto"}},
	{"check-proto-compatible", 0, []string{"schema", "check", "shipments", "1", "testdata/types/shipment-v2.proto"}},
	// JSON beside them, and a new stream.
	{"register-json", 0, []string{"schema", "register", "notes", "1", "testdata/types/note-v1.json"}},
	// Messages against the latest revision: each problem with its path,
	// exit 3 when invalid.
	{"validate-avro", 0, []string{"schema", "validate", "payments", "1", "testdata/types/payment-message.json"}},
	{"validate-avro-invalid", 3, []string{"schema", "validate", "payments", "1", "testdata/types/payment-message-bad.json"}},
	{"validate-avro-invalid-json", 3, []string{"schema", "validate", "payments", "1", "testdata/types/payment-message-bad.json", "-o", "json"}},
	{"validate-proto-invalid", 3, []string{"schema", "validate", "shipments", "1", "testdata/types/shipment-message-bad.json"}},
	// JSON Schema: a 2020-12 reading of note-v1 (no $schema), and a
	// draft-07 document with a closed model, a pattern and a format.
	{"validate-json", 0, []string{"schema", "validate", "notes", "1", "testdata/types/note-message.json"}},
	{"validate-json-invalid", 3, []string{"schema", "validate", "notes", "1", "testdata/types/note-message-bad.json"}},
	{"register-json-draft7", 0, []string{"schema", "register", "memos", "1", "testdata/types/memo-v1.json"}},
	{"validate-json-draft7", 0, []string{"schema", "validate", "memos", "1", "testdata/types/memo-message.json"}},
	{"validate-json-draft7-invalid", 3, []string{"schema", "validate", "memos", "1", "testdata/types/memo-message-bad.json"}},
	{"validate-json-draft7-invalid-json", 3, []string{"schema", "validate", "memos", "1", "testdata/types/memo-message-bad.json", "-o", "json"}},
	{"validate-no-revision", 1, []string{"schema", "validate", "payments", "2", "testdata/types/payment-message.json"}},
	{"validate-usage", 2, []string{"schema", "validate", "payments", "1"}},
	{"check-new-stream-proto", 0, []string{"schema", "check", "parcels", "1", "testdata/types/shipment-v1.proto"}},
	// What was recorded.
	{"list-avro", 0, []string{"schema", "list", "payments"}},
	{"list-proto-json", 0, []string{"schema", "list", "shipments", "-o", "json"}},
	{"list-filtered-out", 0, []string{"schema", "list", "payments", "--type", "PROTOBUF"}},
	{"list-bad-type", 2, []string{"schema", "list", "payments", "--type", "thrift"}},
	{"show-avro", 0, []string{"schema", "show", "payments", "1"}},
	{"show-avro-json", 0, []string{"schema", "show", "payments", "1", "--revision", "1", "-o", "json"}},
	{"show-proto", 0, []string{"schema", "show", "shipments", "1"}},
	{"show-proto-json", 0, []string{"schema", "show", "shipments", "1", "--type", "PROTOBUF", "-o", "json"}},
	{"show-missing-type", 1, []string{"schema", "show", "payments", "1", "--type", "PROTOBUF"}},
	{"show-revision-other-type", 1, []string{"schema", "show", "payments", "1", "--revision", "1", "--type", "JSON"}},
	// --offline, with no database: every type by its own rules.
	{"offline-avro-backward", 3, []string{"schema", "check", "--offline", "testdata/types/payment-v2.avsc", "testdata/types/payment-v3-no-default.avsc"}},
	{"offline-avro-forward", 0, []string{"schema", "check", "--offline", "testdata/types/payment-v2.avsc", "testdata/types/payment-v3-no-default.avsc", "--level", "FORWARD"}},
	// Removing a field with a default passes FULL; one without fails its
	// forward half (old readers need it).
	{"offline-avro-removal-default", 0, []string{"schema", "check", "--offline", "testdata/types/payment-v2.avsc", "testdata/types/payment-v1.avsc", "--level", "FULL"}},
	{"offline-avro-removal-full-json", 3, []string{"schema", "check", "--offline", "testdata/types/payment-v3-no-default.avsc", "testdata/types/payment-v2.avsc", "--level", "FULL", "-o", "json"}},
	{"offline-proto-compatible", 0, []string{"schema", "check", "--offline", "testdata/types/shipment-v1.proto", "testdata/types/shipment-v2.proto", "--level", "FULL"}},
	{"offline-proto-kind-changed", 3, []string{"schema", "check", "--offline", "testdata/types/shipment-v2.proto", "testdata/types/shipment-kind-changed.proto"}},
	{"offline-mixed-types", 3, []string{"schema", "check", "--offline", "testdata/types/payment-v1.avsc", "testdata/types/shipment-v1.proto"}},
	{"offline-type-flag", 3, []string{"schema", "check", "--offline", "testdata/types/payment-v1.avsc", "testdata/types/payment-v3-no-default.txt", "--type", "AVRO"}},
	{"offline-unknown-extension", 2, []string{"schema", "check", "--offline", "testdata/types/payment-v1.avsc", "testdata/types/payment-v3-no-default.txt"}},
	{"offline-policy-avro", 2, []string{"schema", "check", "--offline", "testdata/types/payment-v1.avsc", "testdata/types/payment-v2.avsc", "--policy", "strict"}},
	{"offline-malformed", 1, []string{"schema", "check", "--offline", "testdata/types/payment-v1.avsc", "testdata/types/payment-broken.avsc"}},
}

// TestSchemaTypes runs typeCases on SQLite, a PostgreSQL schema and a
// MariaDB database. Every backend must print the same thing, so the
// goldens are one set (testdata/golden/types), and the exit codes are
// asserted beside them.
func TestSchemaTypes(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, url string) {
		for _, c := range typeCases {
			r := cli(t, url, c.args...)
			if r.code != c.code {
				t.Errorf("%s: sqlstreams %s: exit %d, want %d\n%v", c.name, strings.Join(c.args, " "), r.code, c.code, r)
			}
			golden(t, "types", c.name, "$ sqlstreams "+strings.Join(c.args, " ")+"\n"+normalize(r.String(), url))
			if strings.Contains(strings.Join(c.args, " ")+" ", "-o json ") && !json.Valid([]byte(r.stdout)) {
				t.Errorf("%s: -o json output does not parse:\n%s", c.name, r.stdout)
			}
		}
	})
}
