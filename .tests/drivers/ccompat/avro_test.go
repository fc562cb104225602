package ccompat_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
)

// The Avro how-to's record, in the three versions it registers (with the
// spacing a person writes, which the registry keeps).
const (
	placedV1 = `{
  "type": "record", "name": "OrderPlaced", "namespace": "shop.orders",
  "fields": [
    {"name": "orderId", "type": "string"},
    {"name": "customerId", "type": "string"},
    {"name": "totalCents", "type": "int"}
  ]
}`
	placedV2 = `{
  "type": "record", "name": "OrderPlaced", "namespace": "shop.orders",
  "fields": [
    {"name": "orderId", "type": "string"},
    {"name": "customerId", "type": "string"},
    {"name": "totalCents", "type": "int"},
    {"name": "currency", "type": "string", "default": "EUR"}
  ]
}`
	placedV3 = `{
  "type": "record", "name": "OrderPlaced", "namespace": "shop.orders",
  "fields": [
    {"name": "orderId", "type": "string"},
    {"name": "customerId", "type": "string"},
    {"name": "totalCents", "type": "int"},
    {"name": "currency", "type": "string", "default": "EUR"},
    {"name": "channel", "type": "string"}
  ]
}`
)

func avroSchema(doc string) sr.Schema { return sr.Schema{Schema: doc} } // no type: AVRO, as franz-go sends it

// storyNames are the subjects a how-to story registers under: stream
// versions ("orders-v1") or free subjects as Kafka clients name them
// ("orders-value"), and how a refusal names the version it was compared
// with.
type storyNames struct {
	orders, removal, transitive, against string
}

var (
	streamNames = storyNames{"orders-v1", "removal-v1", "transitive-v1", "revision 1"}
	topicNames  = storyNames{"orders-value", "removal-value", "transitive-value", "version 1"}
)

// TestAvroHowTo runs the Avro how-to's story through the Confluent API with
// franz-go's client, on SQLite and PostgreSQL, under stream versions and
// under TopicNameStrategy's free subjects: v1, then v2 with a default
// under BACKWARD, then v3 without one refused with 409 naming the field;
// old and new readers resolving each other's bytes through the five-byte
// framing; a removal passing BACKWARD and failing FORWARD and FULL; the
// transitive case; and, for free subjects, a second record type refused
// under the topic's subject and accepted under its record-name subjects.
func TestAvroHowTo(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			srv := serve(t, b.open(t), nil)
			cl, err := sr.NewClient(sr.URLs(srv.URL))
			if err != nil {
				t.Fatal(err)
			}
			for _, names := range []storyNames{streamNames, topicNames} {
				t.Run(names.orders, func(t *testing.T) { avroStory(t, cl, names) })
			}
			recordNames(t, cl)
		})
	}
}

func avroStory(t *testing.T, cl *sr.Client, names storyNames) {
	subject := names.orders
	v1, err := cl.CreateSchema(ctx(t), subject, avroSchema(placedV1))
	if err != nil {
		t.Fatal(err)
	}
	v2, err := cl.CreateSchema(ctx(t), subject, avroSchema(placedV2))
	if err != nil {
		t.Fatalf("v2 with a default under BACKWARD: %v", err)
	}
	if v1.ID == v2.ID || v1.Version != 1 || v2.Version != 2 || v2.Type != sr.TypeAvro {
		t.Errorf("v1 %+v, v2 %+v; want versions 1 and 2 with two ids, AVRO", v1, v2)
	}
	_, err = cl.CreateSchema(ctx(t), subject, avroSchema(placedV3))
	wantCode(t, "v3 without a default", err, 409, "incompatible with an earlier schema", "READER_FIELD_MISSING_DEFAULT_VALUE", "shop.orders.OrderPlaced.channel", subject)
	if versions, err := cl.SubjectVersions(ctx(t), subject); err != nil || len(versions) != 2 {
		t.Errorf("versions after the refusal: %v, %v; want [1 2]", versions, err)
	}
	res, err := cl.CheckCompatibility(sr.WithParams(ctx(t), sr.Verbose), subject, -1, avroSchema(placedV3))
	if err != nil || res.Is || len(res.Messages) == 0 || !strings.Contains(strings.Join(res.Messages, " "), "shop.orders.OrderPlaced.channel") {
		t.Errorf("compatibility of v3: %+v, %v; want incompatible, naming the field", res, err)
	}

	// The registry keeps the text as registered.
	byID, err := cl.SchemaByID(ctx(t), v1.ID)
	if err != nil || byID.Schema != placedV1 || byID.Type != sr.TypeAvro {
		t.Errorf("SchemaByID(%d) = %+v, %v; want the text as registered, AVRO", v1.ID, byID, err)
	}
	// The same document again, spaced otherwise, is version 1.
	again, err := cl.CreateSchema(ctx(t), subject, avroSchema(strings.Join(strings.Fields(placedV1), "")))
	if err != nil || again.ID != v1.ID || again.Version != 1 {
		t.Errorf("v1 respaced: %+v, %v; want id %d, version 1", again, err, v1.ID)
	}
	if found, err := cl.LookupSchema(ctx(t), subject, avroSchema(placedV2)); err != nil || found.Version != 2 || found.ID != v2.ID || found.Subject != subject {
		t.Errorf("LookupSchema(v2) = %+v, %v; want %s version 2", found, err, subject)
	}

	wireBytes(t, cl, v1.ID, v2.ID)
	removal(t, cl, names.removal)
	transitive(t, cl, names.transitive, names.against)
}

// recordNames: a second record type is refused under the topic's subject
// (TopicNameStrategy) and accepted under its own record name
// (RecordNameStrategy) and under topic and record name
// (TopicRecordNameStrategy), each a subject of its own.
func recordNames(t *testing.T, cl *sr.Client) {
	cancelled := avroSchema(`{"type":"record","name":"OrderCancelled","namespace":"shop.orders","fields":[{"name":"orderId","type":"string"}]}`)
	_, err := cl.CreateSchema(ctx(t), "orders-value", cancelled)
	wantCode(t, "a second record type under the topic subject", err, 409, "NAME_MISMATCH")
	for _, subject := range []string{"shop.orders.OrderCancelled", "orders-shop.orders.OrderCancelled"} {
		v, err := cl.CreateSchema(ctx(t), subject, cancelled)
		if err != nil || v.Version != 1 {
			t.Errorf("OrderCancelled under %s: %+v, %v; want version 1", subject, v, err)
		}
	}
	subjects, err := cl.Subjects(ctx(t))
	for _, want := range []string{"orders-v1", "orders-value", "shop.orders.OrderCancelled", "orders-shop.orders.OrderCancelled"} {
		if err != nil || !slices.Contains(subjects, want) {
			t.Errorf("Subjects = %v, %v; want %s listed", subjects, err, want)
		}
	}
	v, err := cl.SchemaByVersion(ctx(t), "shop.orders.OrderCancelled", -1)
	if err != nil {
		t.Fatal(err)
	}
	var usedBy []string
	if err := getJSON(t, cl, fmt.Sprintf("/schemas/ids/%d/subjects", v.ID), &usedBy); err != nil || !slices.Equal(usedBy, []string{"orders-shop.orders.OrderCancelled", "shop.orders.OrderCancelled"}) {
		t.Errorf("/schemas/ids/%d/subjects = %v, %v; want both record-name subjects", v.ID, usedBy, err)
	}
}

// wireBytes: a producer on v2 and one on v1 frame their records with the
// five-byte header; a consumer holding v1 and one holding v2 read both by
// fetching the writer's schema by id and resolving it against their own.
func wireBytes(t *testing.T, cl *sr.Client, id1, id2 int) {
	type order struct {
		OrderID    string `avro:"orderId"`
		CustomerID string `avro:"customerId"`
		TotalCents int    `avro:"totalCents"`
		Currency   string `avro:"currency"`
	}
	encode := func(id int, doc string, v any) []byte {
		var h sr.ConfluentHeader
		b, err := h.AppendEncode(nil, id, nil)
		if err != nil {
			t.Fatal(err)
		}
		body, err := avro.Marshal(avro.MustParse(doc), v)
		if err != nil {
			t.Fatal(err)
		}
		return append(b, body...)
	}
	decode := func(reader string, framed []byte) order {
		var h sr.ConfluentHeader
		id, body, err := h.DecodeID(framed)
		if err != nil {
			t.Fatal(err)
		}
		writer, err := cl.SchemaByID(ctx(t), id)
		if err != nil {
			t.Fatal(err)
		}
		resolved, err := avro.NewSchemaCompatibility().Resolve(avro.MustParse(reader), avro.MustParse(writer.Schema))
		if err != nil {
			t.Fatalf("resolve reader against writer %d: %v", id, err)
		}
		var o order
		if err := avro.Unmarshal(resolved, body, &o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	oldBytes := encode(id1, placedV1, order{OrderID: "ord_1", CustomerID: "cus_9", TotalCents: 4200})
	newBytes := encode(id2, placedV2, order{OrderID: "ord_2", CustomerID: "cus_9", TotalCents: 1500, Currency: "USD"})
	if oldBytes[0] != 0 || len(oldBytes) != 19 {
		t.Errorf("v1 record: % x; want a zero byte, the id and 14 bytes of Avro", oldBytes)
	}
	if got := decode(placedV1, newBytes); got != (order{OrderID: "ord_2", CustomerID: "cus_9", TotalCents: 1500}) {
		t.Errorf("old reader, new bytes: %+v", got)
	}
	if got := decode(placedV2, oldBytes); got != (order{OrderID: "ord_1", CustomerID: "cus_9", TotalCents: 4200, Currency: "EUR"}) {
		t.Errorf("new reader, old bytes: %+v; want the default EUR", got)
	}
}

// removal: removing a field passes BACKWARD and fails FORWARD and FULL.
func removal(t *testing.T, cl *sr.Client, subject string) {
	if _, err := cl.CreateSchema(ctx(t), subject, avroSchema(placedV1)); err != nil {
		t.Fatal(err)
	}
	without := `{"type":"record","name":"OrderPlaced","namespace":"shop.orders","fields":[{"name":"orderId","type":"string"},{"name":"customerId","type":"string"}]}`
	for _, tc := range []struct {
		level sr.CompatibilityLevel
		is    bool
	}{{sr.CompatBackward, true}, {sr.CompatForward, false}, {sr.CompatFull, false}} {
		for _, r := range cl.SetCompatibility(ctx(t), sr.SetCompatibility{Level: tc.level}, subject) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
		res, err := cl.CheckCompatibility(sr.WithParams(ctx(t), sr.Verbose), subject, -1, avroSchema(without))
		if err != nil || res.Is != tc.is {
			t.Errorf("removal under %s: %+v, %v; want compatible %v", tc.level, res, err, tc.is)
		}
		if !tc.is && !strings.Contains(strings.Join(res.Messages, " "), "shop.orders.OrderPlaced.totalCents") {
			t.Errorf("removal under %s: messages %v do not name totalCents", tc.level, res.Messages)
		}
	}
}

// transitive: a third version that drops the default the second added
// reads the second's data but not the first's: BACKWARD accepts it,
// BACKWARD_TRANSITIVE refuses it, naming the first (against).
func transitive(t *testing.T, cl *sr.Client, subject, against string) {
	withB := func(b string) string {
		return `{"type":"record","name":"T","fields":[{"name":"a","type":"string"}` + b + `]}`
	}
	for _, doc := range []string{withB(""), withB(`,{"name":"b","type":"int","default":0}`)} {
		if _, err := cl.CreateSchema(ctx(t), subject, avroSchema(doc)); err != nil {
			t.Fatal(err)
		}
	}
	third := avroSchema(withB(`,{"name":"b","type":"int"}`))
	if res, err := cl.CheckCompatibility(ctx(t), subject, -1, third); err != nil || !res.Is {
		t.Errorf("under BACKWARD: %+v, %v; want compatible (the latest has b)", res, err)
	}
	cl.SetCompatibility(ctx(t), sr.SetCompatibility{Level: sr.CompatBackwardTransitive}, subject)
	_, err := cl.CreateSchema(ctx(t), subject, third)
	wantCode(t, "under BACKWARD_TRANSITIVE", err, 409, "T.b", against)
}

// TestAvroWire: what the Confluent API answers about types: the types it
// lists, a body without schemaType read as AVRO, and the same text
// registered as JSON and as AVRO being two schemas with two ids.
func TestAvroWire(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) { avroTypes(t, serve(t, b.open(t), nil)) })
	}
}

func avroTypes(t *testing.T, srv *httptest.Server) {
	post := func(path, body string) (int, map[string]any) {
		resp, err := http.Post(srv.URL+path, "application/vnd.schemaregistry.v1+json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		return resp.StatusCode, m
	}
	get := func(path string) []byte {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return raw
	}
	if got := get("/schemas/types"); !bytes.Equal(got, []byte(`["JSON","AVRO","PROTOBUF"]`)) {
		t.Errorf("GET /schemas/types = %s", got)
	}
	status, avroID := post("/subjects/keys-v1/versions", `{"schema": "{\"type\": \"string\"}"}`)
	if status != 200 {
		t.Fatalf("a body without schemaType: %d %v", status, avroID)
	}
	if got := get("/subjects/keys-v1/versions/1"); !strings.Contains(string(got), `"schemaType":"AVRO"`) || !strings.Contains(string(got), `"schema":"{\"type\": \"string\"}"`) {
		t.Errorf("the version registered without schemaType: %s; want AVRO, the text as sent", got)
	}
	status, jsonID := post("/subjects/keys.json-v1/versions", `{"schemaType": "JSON", "schema": "{\"type\": \"string\"}"}`)
	if status != 200 || jsonID["id"] == avroID["id"] {
		t.Errorf("the same text as JSON: %d, id %v (AVRO's is %v); want another id", status, jsonID["id"], avroID["id"])
	}
	// The subject holds AVRO: a JSON Schema there is another type.
	status, m := post("/subjects/keys-v1/versions", `{"schemaType": "JSON", "schema": "{\"type\": \"string\"}"}`)
	if status != 409 || !strings.Contains(m["message"].(string), "SCHEMA_TYPE_CHANGED") {
		t.Errorf("JSON after AVRO in one subject: %d %v; want 409 SCHEMA_TYPE_CHANGED", status, m)
	}
	status, m = post("/subjects/keys-v1/versions", `{"schema": "{\"type\": \"nope\"}"}`)
	if status != 422 || m["error_code"] != float64(42201) {
		t.Errorf("a malformed Avro schema: %d %v; want 42201", status, m)
	}
	// normalize=true registers the canonical form.
	status, _ = post("/subjects/norm-v1/versions?normalize=true", `{"schema": "{ \"type\": \"record\", \"name\": \"N\", \"doc\": \"x\", \"fields\": [] }"}`)
	if got := get("/subjects/norm-v1/versions/1/schema"); status != 200 || string(got) != `{"name":"N","type":"record","fields":[]}` {
		t.Errorf("normalize=true: %d, stored %s; want the canonical form", status, got)
	}
}
