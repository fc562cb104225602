package ccompat_test

import (
	"encoding/json"
	"strconv"
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
