package ccompat_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// registered is the id a subject's version answers with, read the way a
// client reads it after registering.
func registered(t *testing.T, base, subject string, version int) string {
	t.Helper()
	var v struct{ ID int }
	if err := getJSON(t, newSR(t, base), "/subjects/"+subject+"/versions/"+strconv.Itoa(version), &v); err != nil || v.ID < 1 {
		t.Fatalf("%s version %d: id %d, %v", subject, version, v.ID, err)
	}
	return strconv.Itoa(v.ID)
}

// typed is a registration body with the schema type set, as kafkajs and
// Confluent's Protobuf serializer send it.
func typed(schemaType, doc string) string {
	b, _ := json.Marshal(map[string]string{"schemaType": schemaType, "schema": doc})
	return string(b)
}

// TestKafkaJSRegisterWire replays what @kafkajs/confluent-schema-registry's
// register(schema, {subject, compatibility}) sends for a new subject, on
// SQLite and PostgreSQL: it reads the subject's level (40408: none set),
// sets the one asked for, registers; the next register finds the level it
// set and registers again. A level set on one subject never answers for
// another, so a second subject with the default level (BACKWARD) goes the
// same way instead of failing on the first's FULL. Then the calls its
// getRegistryIdBySchema, getLatestSchemaId and decode make.
func TestKafkaJSRegisterWire(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			base := serve(t, b.open(t), nil).URL
			v1 := `{"type":"record","name":"Payment","namespace":"shop","fields":[{"name":"id","type":"string"}]}`
			v2 := `{"type":"record","name":"Payment","namespace":"shop","fields":[{"name":"id","type":"string"},{"name":"cents","type":"long","default":0}]}`
			v3 := `{"type":"record","name":"Payment","namespace":"shop","fields":[{"name":"id","type":"string"},{"name":"cents","type":"long","default":0},{"name":"iban","type":"string"}]}`
			run(t, base, []exchange{
				{"register v1: the subject's level", "GET", "/config/payments-value", "", 404, 40408, "payments-value"},
				{"register v1: set FULL", "PUT", "/config/payments-value", `{"compatibility":"FULL"}`, 200, 0, `{"compatibility":"FULL"}`},
				{"register v1", "POST", "/subjects/payments-value/versions", typed("AVRO", v1), 200, 0, `"id":`},
				{"register v2: the level it set", "GET", "/config/payments-value", "", 200, 0, `{"compatibilityLevel":"FULL"}`},
				{"register v2 (a field with a default: FULL)", "POST", "/subjects/payments-value/versions", typed("AVRO", v2), 200, 0, `"id":`},
				{"register v3: the level it set", "GET", "/config/payments-value", "", 200, 0, `{"compatibilityLevel":"FULL"}`},
				{"register v3 (a field without a default breaks FULL)", "POST", "/subjects/payments-value/versions", typed("AVRO", v3), 409, 409, "shop.Payment.iban"},

				{"another subject: no level of its own", "GET", "/config/refunds-value", "", 404, 40408, ""},
				{"another subject: set BACKWARD (the default option)", "PUT", "/config/refunds-value", `{"compatibility":"BACKWARD"}`, 200, 0, `{"compatibility":"BACKWARD"}`},
				{"another subject: register", "POST", "/subjects/refunds-value/versions", typed("AVRO", v3), 200, 0, `"id":`},
				{"the first subject's level is unchanged", "GET", "/config/payments-value", "", 200, 0, `{"compatibilityLevel":"FULL"}`},
			})
			id2 := registered(t, base, "payments-value", 2)
			run(t, base, []exchange{
				{"getRegistryIdBySchema", "POST", "/subjects/payments-value", typed("AVRO", v2), 200, 0, `"version":2,"id":` + id2 + `,`},
				{"getLatestSchemaId", "GET", "/subjects/payments-value/versions/latest", "", 200, 0, `"version":2,"id":` + id2 + `,`},
				{"decode: the writer's schema by id", "GET", "/schemas/ids/" + id2, "", 200, 0, strconv.Quote(v2)},
				{"getRegistryIdBySchema of a schema never registered", "POST", "/subjects/payments-value", typed("AVRO", v3), 404, 40403, ""},
			})
		})
	}
}

// TestKafkaJSVersionSubjectsWire replays kafkajs's register(schema,
// {subject, compatibility}) on stream-bound subjects, on SQLite and
// PostgreSQL: the first version's subject before its stream exists (40408,
// the PUT creates the stream, the register records revision 1), then a
// second version's subject. Its GET /config answers 40408, not the level
// set on the first version, so the client sets its own and registers
// instead of failing on a level it did not ask for; each version's
// revisions are then judged by that version's level and mode only, and a
// permanent deletion of a version forgets its settings.
func TestKafkaJSVersionSubjectsWire(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			base := serve(t, b.open(t), nil).URL
			doc := func(fields ...string) string {
				return `{"type":"object","properties":{"id":{"type":"string"},"` + fields[0] + `":{"type":"integer"}},"required":["` + strings.Join(fields[1:], `","`) + `"]}`
			}
			run(t, base, []exchange{
				{"v1: the subject's level before the stream exists", "GET", "/config/invoices-v1", "", 404, 40408, "invoices-v1"},
				{"v1: set FULL (creates the stream)", "PUT", "/config/invoices-v1", `{"compatibility":"FULL"}`, 200, 0, `{"compatibility":"FULL"}`},
				{"v1: register", "POST", "/subjects/invoices-v1/versions", typed("JSON", doc("amount", "id", "amount")), 200, 0, `"id":`},
				{"v1 again: the level it set", "GET", "/config/invoices-v1", "", 200, 0, `{"compatibilityLevel":"FULL"}`},

				{"v2: no level of its own (v1's does not answer)", "GET", "/config/invoices-v2", "", 404, 40408, "invoices-v2"},
				{"v2: with defaultToGlobal, the registry's default", "GET", "/config/invoices-v2?defaultToGlobal=true", "", 200, 0, `{"compatibilityLevel":"BACKWARD"}`},
				{"v2: set BACKWARD (the default option)", "PUT", "/config/invoices-v2", `{"compatibility":"BACKWARD"}`, 200, 0, `{"compatibility":"BACKWARD"}`},
				{"v2: register", "POST", "/subjects/invoices-v2/versions", typed("JSON", doc("cents", "id", "cents")), 200, 0, `"id":`},
				{"v1's level is unchanged", "GET", "/config/invoices-v1", "", 200, 0, `{"compatibilityLevel":"FULL"}`},

				{"v2: a required field made optional passes its BACKWARD", "POST", "/subjects/invoices-v2/versions", typed("JSON", doc("cents", "id")), 200, 0, `"id":`},
				{"v1: the same change breaks its FULL", "POST", "/subjects/invoices-v1/versions", typed("JSON", doc("amount", "id")), 409, 409, "invoices-v1"},
				{"v1: DELETE clears its own level", "DELETE", "/config/invoices-v1", "", 200, 0, `"compatibilityLevel":"FULL"`},
				{"v1: none of its own after the DELETE", "GET", "/config/invoices-v1", "", 404, 40408, ""},
				{"v1: a second DELETE has nothing to clear", "DELETE", "/config/invoices-v1", "", 404, 40408, ""},
				{"v2 keeps its own", "GET", "/config/invoices-v2", "", 200, 0, `{"compatibilityLevel":"BACKWARD"}`},
			})
			noted := `{"type":"object","properties":{"id":{"type":"string"},"cents":{"type":"integer"},"note":{"type":"string"}},"required":["id"]}`
			run(t, base, []exchange{
				{"v1: READONLY", "PUT", "/mode/invoices-v1", `{"mode":"READONLY"}`, 200, 0, `{"mode":"READONLY"}`},
				{"v1: a new revision is refused", "POST", "/subjects/invoices-v1/versions", typed("JSON", doc("total", "id")), 422, 42205, "READONLY"},
				{"v2: no mode of its own", "GET", "/mode/invoices-v2", "", 404, 40409, "invoices-v2"},
				{"v2: still registers", "POST", "/subjects/invoices-v2/versions", typed("JSON", noted), 200, 0, `"id":`},
				{"v2: IMPORT next to its revisions needs force", "PUT", "/mode/invoices-v2", `{"mode":"IMPORT"}`, 422, 42205, "force"},
				{"v3: IMPORT before its first revision", "PUT", "/mode/invoices-v3", `{"mode":"IMPORT"}`, 200, 0, `{"mode":"IMPORT"}`},
				{"v2: IMPORT with force", "PUT", "/mode/invoices-v2?force=true", `{"mode":"IMPORT"}`, 200, 0, `{"mode":"IMPORT"}`},
				{"v1: DELETE clears its own mode", "DELETE", "/mode/invoices-v1", "", 200, 0, `{"mode":"READONLY"}`},
				{"v1: none of its own after the DELETE", "GET", "/mode/invoices-v1?defaultToGlobal=true", "", 200, 0, `{"mode":"READWRITE"}`},

				{"v2: a soft deletion", "DELETE", "/subjects/invoices-v2", "", 200, 0, `[1,2,3]`},
				{"v2 keeps its level while soft-deleted", "GET", "/config/invoices-v2", "", 200, 0, `{"compatibilityLevel":"BACKWARD"}`},
				{"v2: a permanent deletion", "DELETE", "/subjects/invoices-v2?permanent=true", "", 200, 0, `[1,2,3]`},
				{"v2 forgets its level with its revisions", "GET", "/config/invoices-v2", "", 404, 40408, ""},
				{"v2 forgets its mode with its revisions", "GET", "/mode/invoices-v2", "", 404, 40409, ""},
			})
		})
	}
}

// TestConfluentGoFirstCallsWire replays what confluent-kafka-go's
// schemaregistry client sends with a serializer's default settings
// (auto.register.schemas, TopicNameStrategy, normalize.schemas false), on
// SQLite and PostgreSQL: GetAllContexts, the serializer's Register (POST
// .../versions?normalize=false, no schemaType for Avro), registering the
// same schema again (the same id), a deserializer's GetBySubjectAndID
// (GET /schemas/ids/{id}?subject=...), GetLatestSchemaMetadata, GetID's
// lookup, GetCompatibility before a level is set (40408),
// UpdateCompatibility and TestCompatibility; and the Protobuf serializer's
// Register, which names the type.
func TestConfluentGoFirstCallsWire(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			base := serve(t, b.open(t), nil).URL
			shipment := `{"type":"record","name":"Shipment","namespace":"shop","fields":[{"name":"id","type":"string"}]}`
			untyped, _ := json.Marshal(map[string]string{"schema": shipment})
			withCarrier := `{"type":"record","name":"Shipment","namespace":"shop","fields":[{"name":"id","type":"string"},{"name":"carrier","type":"string","default":""}]}`
			renamed := `{"type":"record","name":"Shipment","namespace":"shop","fields":[{"name":"ref","type":"string"}]}`
			run(t, base, []exchange{
				{"GetAllContexts", "GET", "/contexts", "", 200, 0, `["."]`},
				{"Register (serializer, auto-register)", "POST", "/subjects/shipments-value/versions?normalize=false", string(untyped), 200, 0, `"id":`},
			})
			id := registered(t, base, "shipments-value", 1)
			quoted := strconv.Quote(shipment)
			run(t, base, []exchange{
				{"Register again: the same id", "POST", "/subjects/shipments-value/versions?normalize=false", string(untyped), 200, 0, `{"id":` + id + `}`},
				{"the subject has one version", "GET", "/subjects/shipments-value/versions", "", 200, 0, `[1]`},
				{"GetBySubjectAndID (deserializer)", "GET", "/schemas/ids/" + id + "?subject=shipments-value", "", 200, 0, quoted},
				{"GetBySubjectAndID of an unknown id", "GET", "/schemas/ids/999999?subject=shipments-value", "", 404, 40403, ""},
				{"GetLatestSchemaMetadata (use.latest.version)", "GET", "/subjects/shipments-value/versions/latest", "", 200, 0,
					`"subject":"shipments-value","version":1,"id":` + id + `,`},
				{"GetID (lookup)", "POST", "/subjects/shipments-value?normalize=false", string(untyped), 200, 0, `"version":1,"id":` + id + `,`},
				{"GetCompatibility before a level is set", "GET", "/config/shipments-value", "", 404, 40408, ""},
				{"UpdateCompatibility", "PUT", "/config/shipments-value", `{"compatibility":"FULL"}`, 200, 0, `{"compatibility":"FULL"}`},
				{"GetCompatibility", "GET", "/config/shipments-value", "", 200, 0, `{"compatibilityLevel":"FULL"}`},
				{"TestCompatibility (a field with a default)", "POST", "/compatibility/subjects/shipments-value/versions/latest", typed("AVRO", withCarrier), 200, 0, `{"is_compatible":true}`},
				{"TestCompatibility (a field renamed)", "POST", "/compatibility/subjects/shipments-value/versions/latest", typed("AVRO", renamed), 200, 0, `{"is_compatible":false}`},
				{"Register (Protobuf serializer)", "POST", "/subjects/parcels-value/versions?normalize=false",
					typed("PROTOBUF", "syntax = \"proto3\";\npackage shop;\nimport \"google/protobuf/timestamp.proto\";\nmessage Parcel {\n  string id = 1;\n  google.protobuf.Timestamp sent_at = 2;\n}\n"), 200, 0, `"id":`},
				{"the Protobuf version", "GET", "/subjects/parcels-value/versions/1", "", 200, 0, `"schemaType":"PROTOBUF"`},
			})
		})
	}
}
