package ccompat_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/contrib/ccompat"
)

// exchange is one request and the answer Confluent documents for it.
type exchange struct {
	what         string
	method, path string
	body         string
	status       int
	code         int    // error_code, when the answer is an error
	says         string // a piece of the answer (or of its message)
}

// run sends the exchanges in order to the server at base and checks each
// answer.
func run(t *testing.T, base string, steps []exchange) {
	t.Helper()
	for _, s := range steps {
		req, err := http.NewRequestWithContext(ctx(t), s.method, base+s.path, strings.NewReader(s.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e javaError
		_ = json.Unmarshal(raw, &e)
		switch {
		case resp.StatusCode != s.status:
			t.Errorf("%s: %s %s answered %d %s; want %d", s.what, s.method, s.path, resp.StatusCode, raw, s.status)
		case s.code != 0 && e.ErrorCode != s.code:
			t.Errorf("%s: %s %s answered %s; want error_code %d", s.what, s.method, s.path, raw, s.code)
		case s.says != "" && !strings.Contains(string(raw), s.says):
			t.Errorf("%s: %s %s answered %s; want it to say %s", s.what, s.method, s.path, raw, s.says)
		}
	}
}

// avroBody is a registration body for an Avro record with these fields.
func avroBody(fields string) string {
	doc := `{"type":"record","name":"A","fields":[` + fields + `]}`
	b, _ := json.Marshal(map[string]string{"schema": doc})
	return string(b)
}

const (
	fieldA  = `{"name":"a","type":"string"}`
	fieldB  = `{"name":"b","type":"string"}`
	fieldBd = `{"name":"b","type":"string","default":""}`
)

// TestSubjectSettingsWire: a free subject's level and mode are its own,
// can be set before its first version and never answer for another
// subject (40408 / 40409 where none is set, defaultToGlobal honoured);
// IMPORT where schemas exist needs force=true (42205 without).
func TestSubjectSettingsWire(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			srv := serve(t, b.open(t), nil)
			run(t, srv.URL, []exchange{
				{"a level before the first version", "PUT", "/config/payments-value", `{"compatibility":"FORWARD"}`, 200, 0, `{"compatibility":"FORWARD"}`},
				{"the level set", "GET", "/config/payments-value", "", 200, 0, `{"compatibilityLevel":"FORWARD"}`},
				{"a subject never configured", "GET", "/config/refunds-value", "", 404, 40408, ""},
				{"defaultToGlobal", "GET", "/config/refunds-value?defaultToGlobal=true", "", 200, 0, `{"compatibilityLevel":"BACKWARD"}`},
				{"payments v1", "POST", "/subjects/payments-value/versions", avroBody(fieldA + "," + fieldB), 200, 0, `"id"`},
				{"a removal under the subject's FORWARD", "POST", "/subjects/payments-value/versions", avroBody(fieldA), 409, 409, "A.b"},
				{"refunds v1", "POST", "/subjects/refunds-value/versions", avroBody(fieldA + "," + fieldB), 200, 0, `"id"`},
				{"the same removal under refunds' BACKWARD", "POST", "/subjects/refunds-value/versions", avroBody(fieldA), 200, 0, `"id"`},
				{"clear the level", "DELETE", "/config/payments-value", "", 200, 0, `"compatibilityLevel":"FORWARD"`},
				{"cleared", "GET", "/config/payments-value", "", 404, 40408, ""},
				{"clear a level never set", "DELETE", "/config/refunds-value", "", 404, 40408, ""},
				{"the removal now under BACKWARD", "POST", "/subjects/payments-value/versions", avroBody(fieldA), 200, 0, `"id"`},

				{"a mode before the first version", "PUT", "/mode/frozen-value", `{"mode":"READONLY"}`, 200, 0, `{"mode":"READONLY"}`},
				{"registering under it", "POST", "/subjects/frozen-value/versions", avroBody(fieldA), 422, 42205, "READONLY"},
				{"the mode set", "GET", "/mode/frozen-value", "", 200, 0, `{"mode":"READONLY"}`},
				{"a subject without a mode", "GET", "/mode/refunds-value", "", 404, 40409, ""},
				{"its mode with defaultToGlobal", "GET", "/mode/refunds-value?defaultToGlobal=true", "", 200, 0, `{"mode":"READWRITE"}`},
				{"clear the mode", "DELETE", "/mode/frozen-value", "", 200, 0, `{"mode":"READONLY"}`},
				{"registering once cleared", "POST", "/subjects/frozen-value/versions", avroBody(fieldA), 200, 0, `"id"`},
				{"IMPORT on a subject with versions", "PUT", "/mode/refunds-value", `{"mode":"IMPORT"}`, 422, 42205, "force"},
				{"IMPORT with force", "PUT", "/mode/refunds-value?force=true", `{"mode":"IMPORT"}`, 200, 0, `{"mode":"IMPORT"}`},
				{"IMPORT on a registry with schemas", "PUT", "/mode", `{"mode":"IMPORT"}`, 422, 42205, "force=true"},
				{"an explicit id in IMPORT", "POST", "/subjects/refunds-value/versions", `{"schema":"\"string\"","id":7000,"version":9}`, 200, 0, `{"id":7000}`},
				{"the imported version", "GET", "/subjects/refunds-value/versions/9", "", 200, 0, `"id":7000`},
			})
		})
	}
}

// TestSubjectDeletesWire: deletes as Confluent documents them: soft, then
// permanent=true, each out of order with its code (40404-40407); "latest"
// rolls back; deleted=true lists the soft-deleted; a referenced version
// is refused with 42206. A stream-bound subject's revisions are deleted
// alike, except one rows of the log still need: 42205 with the reason.
func TestSubjectDeletesWire(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			c := b.open(t)
			srv := serve(t, c, nil)
			moneyV1, _ := json.Marshal(map[string]any{"schemaType": "JSON", "schema": `{"type":"object","properties":{"cents":{"type":"integer"}}}`})
			invoiceV1, _ := json.Marshal(map[string]any{"schemaType": "JSON", "schema": `{"type":"object","properties":{"total":{"$ref":"money.json"}}}`,
				"references": []map[string]any{{"name": "money.json", "subject": "money-v1", "version": 1}}})
			money, _ := json.Marshal(map[string]any{"schemaType": "JSON", "schema": `{"type":"object","properties":{"cents":{"type":"integer"}}}`})
			invoice, _ := json.Marshal(map[string]any{"schemaType": "JSON", "schema": `{"type":"object","properties":{"total":{"$ref":"money"}}}`,
				"references": []map[string]any{{"name": "money", "subject": "money-value", "version": 1}}})
			run(t, srv.URL, []exchange{
				{"v1", "POST", "/subjects/deletes-value/versions", avroBody(fieldA), 200, 0, `"id"`},
				{"v2", "POST", "/subjects/deletes-value/versions", avroBody(fieldA + "," + fieldBd), 200, 0, `"id"`},
				{"permanent before soft", "DELETE", "/subjects/deletes-value/versions/2?permanent=true", "", 404, 40407, ""},
				{"soft-delete v2", "DELETE", "/subjects/deletes-value/versions/2", "", 200, 0, "2"},
				{"latest rolled back", "GET", "/subjects/deletes-value/versions/latest", "", 200, 0, `"version":1`},
				{"versions", "GET", "/subjects/deletes-value/versions", "", 200, 0, "[1]"},
				{"versions with the deleted", "GET", "/subjects/deletes-value/versions?deleted=true", "", 200, 0, "[1,2]"},
				{"a soft-deleted version", "GET", "/subjects/deletes-value/versions/2", "", 404, 40402, ""},
				{"a soft-deleted version with deleted=true", "GET", "/subjects/deletes-value/versions/2?deleted=true", "", 200, 0, `"version":2`},
				{"only the deleted versions", "GET", "/subjects/deletes-value/versions?deletedOnly=true", "", 200, 0, "[2]"},
				{"soft-delete it again", "DELETE", "/subjects/deletes-value/versions/2", "", 404, 40406, ""},
				{"permanently", "DELETE", "/subjects/deletes-value/versions/2?permanent=true", "", 200, 0, "2"},
				{"the subject permanently before soft", "DELETE", "/subjects/deletes-value?permanent=true", "", 404, 40405, ""},
				{"soft-delete the subject", "DELETE", "/subjects/deletes-value", "", 200, 0, "[1]"},
				{"it is not listed", "GET", "/subjects", "", 200, 0, "[]"},
				{"it is listed with deleted=true", "GET", "/subjects?deleted=true", "", 200, 0, `["deletes-value"]`},
				{"and with deletedOnly=true", "GET", "/subjects?deletedOnly=true", "", 200, 0, `["deletes-value"]`},
				{"soft-delete the subject again", "DELETE", "/subjects/deletes-value", "", 404, 40404, ""},
				{"the subject permanently", "DELETE", "/subjects/deletes-value?permanent=true", "", 200, 0, "[1]"},
				{"it is gone", "GET", "/subjects/deletes-value/versions?deleted=true", "", 404, 40401, ""},
				{"a version of a subject that is gone", "DELETE", "/subjects/deletes-value/versions/1", "", 404, 40401, ""},

				{"money", "POST", "/subjects/money-value/versions", string(money), 200, 0, `"id"`},
				{"invoice referring to money", "POST", "/subjects/invoice-value/versions", string(invoice), 200, 0, `"id"`},
				{"the invoice's references", "GET", "/subjects/invoice-value/versions/1", "", 200, 0, `"references":[{"name":"money","subject":"money-value","version":1}]`},
				{"a referenced version", "DELETE", "/subjects/money-value/versions/1", "", 422, 42206, "invoice-value version 1"},
				{"a referenced subject", "DELETE", "/subjects/money-value", "", 422, 42206, ""},
				{"the referencing subject", "DELETE", "/subjects/invoice-value", "", 200, 0, "[1]"},
				{"still referenced while soft-deleted", "DELETE", "/subjects/money-value", "", 422, 42206, ""},
				{"the referencing subject permanently", "DELETE", "/subjects/invoice-value?permanent=true", "", 200, 0, "[1]"},
				{"no longer referenced", "DELETE", "/subjects/money-value", "", 200, 0, "[1]"},
			})
			// A Go producer's revision, and a row written with it.
			p, err := c.Stream[OrderPlaced]("placed").Producer().Register(ctx(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Produce(ctx(t), OrderPlaced{OrderID: "o-1", Total: Money{Cents: 100, Currency: "EUR"}}); err != nil {
				t.Fatal(err)
			}
			run(t, srv.URL, []exchange{
				{"a stream version", "POST", "/subjects/orders-v1/versions", avroBody(fieldA), 200, 0, `"id"`},
				{"its revision 2", "POST", "/subjects/orders-v1/versions", avroBody(fieldA + "," + fieldBd), 200, 0, `"id"`},
				{"a revision permanently before soft", "DELETE", "/subjects/orders-v1/versions/2?permanent=true", "", 404, 40407, ""},
				{"soft-delete revision 2", "DELETE", "/subjects/orders-v1/versions/2", "", 200, 0, "2"},
				{"the stream version's latest rolled back", "GET", "/subjects/orders-v1/versions/latest", "", 200, 0, `"version":1`},
				{"its revisions", "GET", "/subjects/orders-v1/versions", "", 200, 0, "[1]"},
				{"its revisions with the deleted", "GET", "/subjects/orders-v1/versions?deleted=true", "", 200, 0, "[1,2]"},
				{"its deleted revisions only", "GET", "/subjects/orders-v1/versions?deletedOnly=true", "", 200, 0, "[2]"},
				{"a soft-deleted revision", "GET", "/subjects/orders-v1/versions/2", "", 404, 40402, ""},
				{"a soft-deleted revision with deleted=true", "GET", "/subjects/orders-v1/versions/2?deleted=true", "", 200, 0, `"version":2`},
				{"soft-delete the revision again", "DELETE", "/subjects/orders-v1/versions/2", "", 404, 40406, ""},
				{"the revision permanently", "DELETE", "/subjects/orders-v1/versions/2?permanent=true", "", 200, 0, "2"},
				{"the stream version permanently before soft", "DELETE", "/subjects/orders-v1?permanent=true", "", 404, 40405, ""},
				{"soft-delete the stream version", "DELETE", "/subjects/orders-v1", "", 200, 0, "[1]"},
				{"it is listed with deletedOnly=true", "GET", "/subjects?deletedOnly=true", "", 200, 0, `"orders-v1"`},
				{"soft-delete the stream version again", "DELETE", "/subjects/orders-v1", "", 404, 40404, ""},
				{"the stream version permanently", "DELETE", "/subjects/orders-v1?permanent=true", "", 200, 0, "[1]"},
				{"the stream version is gone", "GET", "/subjects/orders-v1/versions?deleted=true", "", 404, 40401, ""},

				{"a revision rows were written with", "DELETE", "/subjects/placed-v2/versions/1", "", 422, 42205, "rows still in the log"},
				{"a stream version rows were written with", "DELETE", "/subjects/placed-v2", "", 422, 42205, "retention removes them"},
				{"its revision is still there", "GET", "/subjects/placed-v2/versions/latest", "", 200, 0, `"version":1`},

				{"money-v1", "POST", "/subjects/money-v1/versions", string(moneyV1), 200, 0, `"id"`},
				{"invoice-v1 referring to money-v1", "POST", "/subjects/invoice-v1/versions", string(invoiceV1), 200, 0, `"id"`},
				{"a referenced revision", "DELETE", "/subjects/money-v1/versions/1", "", 422, 42206, "invoice version 1 revision 1"},
				{"the referencing revision", "DELETE", "/subjects/invoice-v1/versions/1", "", 200, 0, "1"},
				{"the referencing revision permanently", "DELETE", "/subjects/invoice-v1/versions/1?permanent=true", "", 200, 0, "1"},
				{"no longer referenced", "DELETE", "/subjects/money-v1/versions/latest", "", 200, 0, "1"},
			})
		})
	}
}

// TestSubjectIDsWire: a free subject's versions are served by id with the
// subjects and versions that use it, next to the stream versions that
// record the same schema; deleted=true lists the soft-deleted ones of both.
func TestSubjectIDsWire(t *testing.T) {
	t.Parallel()
	b := backends(t)[0]
	srv := serve(t, b.open(t), nil)
	body := avroBody(fieldA)
	run(t, srv.URL, []exchange{
		{"under a stream version", "POST", "/subjects/orders-v1/versions", body, 200, 0, `{"id":1}`},
		{"under a free subject", "POST", "/subjects/orders-value/versions", body, 200, 0, `{"id":1}`},
		{"lookup", "POST", "/subjects/orders-value", body, 200, 0, `"subject":"orders-value","version":1,"id":1`},
		{"lookup of another schema", "POST", "/subjects/orders-value", avroBody(fieldB), 404, 40403, ""},
		{"lookup under a subject that has none", "POST", "/subjects/nothing-value", body, 404, 40401, ""},
		{"subjects of the id", "GET", "/schemas/ids/1/subjects", "", 200, 0, `["orders-v1","orders-value"]`},
		{"versions of the id", "GET", "/schemas/ids/1/versions", "", 200, 0, `[{"subject":"orders-v1","version":1},{"subject":"orders-value","version":1}]`},
		{"every subject", "GET", "/subjects", "", 200, 0, `["orders-v1","orders-value"]`},
		{"every schema", "GET", "/schemas?subjectPrefix=orders-va", "", 200, 0, `"subject":"orders-value"`},
		{"the version by number", "GET", "/subjects/orders-value/versions/1", "", 200, 0, `"schemaType":"AVRO"`},
		{"the version's text", "GET", "/subjects/orders-value/versions/latest/schema", "", 200, 0, strconv.Quote("a")},

		// Soft-deleted, both are hidden from the id's usages unless
		// deleted=true, as Confluent lists them; the id is still served.
		{"soft-delete the stream revision", "DELETE", "/subjects/orders-v1/versions/1", "", 200, 0, "1"},
		{"soft-delete the subject version", "DELETE", "/subjects/orders-value/versions/1", "", 200, 0, "1"},
		{"versions of the id, live", "GET", "/schemas/ids/1/versions", "", 200, 0, `[]`},
		{"versions of the id with deleted=true", "GET", "/schemas/ids/1/versions?deleted=true", "", 200, 0,
			`[{"subject":"orders-v1","version":1},{"subject":"orders-value","version":1}]`},
		{"subjects of the id with deleted=true", "GET", "/schemas/ids/1/subjects?deleted=true", "", 200, 0, `["orders-v1","orders-value"]`},
		{"the id is still served", "GET", "/schemas/ids/1", "", 200, 0, `"schemaType":"AVRO"`},
		{"the stream revision permanently", "DELETE", "/subjects/orders-v1/versions/1?permanent=true", "", 200, 0, "1"},
		{"versions of the id with deleted=true, after", "GET", "/schemas/ids/1/versions?deleted=true", "", 200, 0, `[{"subject":"orders-value","version":1}]`},
	})
}

// TestJSONTextWire: a JSON Schema is kept as registered (title,
// description, examples, order, spacing), under a free subject and a
// stream version alike; normalize=true registers the canonical form.
func TestJSONTextWire(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			jsonText(t, serve(t, b.open(t), nil))
		})
	}
}

func jsonText(t *testing.T, srv *httptest.Server) {
	text := `{"title": "Order", "description": "An order placed.", "type": "object", "properties": {"id": {"type": "string", "examples": ["ord_1"]}}}`
	body, _ := json.Marshal(map[string]string{"schemaType": "JSON", "schema": text})
	quoted, _ := json.Marshal(text)
	run(t, srv.URL, []exchange{
		{"under a free subject", "POST", "/subjects/described-value/versions", string(body), 200, 0, `{"id":1}`},
		{"served as sent", "GET", "/subjects/described-value/versions/1", "", 200, 0, string(quoted)},
		{"its text", "GET", "/subjects/described-value/versions/1/schema", "", 200, 0, text},
		{"by id", "GET", "/schemas/ids/1", "", 200, 0, string(quoted)},
		{"under a stream version: the same id", "POST", "/subjects/described-v1/versions", string(body), 200, 0, `{"id":1}`},
		{"served as sent there too", "GET", "/subjects/described-v1/versions/1/schema", "", 200, 0, text},
		{"normalize=true", "POST", "/subjects/normalized-value/versions?normalize=true", string(body), 200, 0, `{"id":1}`},
		{"the text of the id stays the first", "GET", "/subjects/normalized-value/versions/1/schema", "", 200, 0, text},
		{"normalize=true of a new schema", "POST", "/subjects/fresh-value/versions?normalize=true",
			`{"schemaType":"JSON","schema":"{\"type\": \"object\", \"title\": \"Fresh\"}"}`, 200, 0, `{"id":`},
		{"registered canonical (annotations dropped)", "GET", "/subjects/fresh-value/versions/1/schema", "", 200, 0, `{"type":"object"}`},
	})
	// A new schema has an id of its own. Ids are unique, not consecutive,
	// as in Confluent: PostgreSQL spends a sequence value on every insert
	// that finds the schema already there.
	var fresh struct{ ID int }
	if err := getJSON(t, newSR(t, srv.URL), "/subjects/fresh-value/versions/1", &fresh); err != nil || fresh.ID <= 1 {
		t.Errorf("the fresh schema's id: %d, %v; want a new one", fresh.ID, err)
	}
	run(t, srv.URL, []exchange{{"the fresh schema by its id", "GET", "/schemas/ids/" + strconv.Itoa(fresh.ID), "", 200, 0, `"schema":"{\"type\":\"object\"}"`}})
}

// TestEndpointsWire: the endpoints Confluent's clients call besides the
// registry's own, with the answers Confluent documents.
func TestEndpointsWire(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			endpoints(t, serve(t, b.open(t), nil))
		})
	}
}

func endpoints(t *testing.T, srv *httptest.Server) {
	cl := newSR(t, srv.URL)
	if got, err := cl.Contexts(ctx(t)); err != nil || len(got) != 1 || got[0] != "." {
		t.Errorf("Contexts = %v, %v; want [.]", got, err)
	}
	run(t, srv.URL, []exchange{
		{"contexts", "GET", "/contexts", "", 200, 0, `["."]`},
		{"the server's id", "GET", "/v1/metadata/id", "", 200, 0, `"scope":{"path":[],"clusters":{"schema-registry-cluster":"sqlstreams"}}`},
		{"metadata of a subject that has none", "GET", "/subjects/orders-value/metadata", "", 404, 40401, ""},
		{"orders v1", "POST", "/subjects/orders-value/versions", avroBody(fieldA), 200, 0, `{"id":1}`},
		{"orders v2", "POST", "/subjects/orders-value/versions", avroBody(fieldA + "," + fieldBd), 200, 0, `{"id":2}`},
		{"metadata without a key: the latest", "GET", "/subjects/orders-value/metadata", "", 200, 0, `"version":2`},
		{"metadata with a key no version has", "GET", "/subjects/orders-value/metadata?key=owner&value=payments", "", 404, 40403, "no metadata"},
		{"metadata of a stream version", "POST", "/subjects/orders-v1/versions", avroBody(fieldA), 200, 0, `{"id":1}`},
		{"its latest", "GET", "/subjects/orders-v1/metadata", "", 200, 0, `"subject":"orders-v1","version":1`},
		{"a schema by guid", "GET", "/schemas/guids/" + ccompat.GUID(2), "", 200, 0, `"schemaType":"AVRO"`},
		{"a guid of no schema", "GET", "/schemas/guids/" + ccompat.GUID(99), "", 404, 40403, ""},
		{"not a guid of ours", "GET", "/schemas/guids/123e4567-e89b-12d3-a456-426614174000", "", 404, 40403, ""},
	})
}
