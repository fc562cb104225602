package ccompat_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/contrib/ccompat"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// The DTOs of Confluent's Java client (io.confluent.kafka.schemaregistry.
// client.rest.entities): a response must decode into them with no field
// left over, so every name the handler writes is one the Java client reads.
type (
	javaSchema struct {
		Subject    string          `json:"subject"`
		Version    int             `json:"version"`
		ID         int             `json:"id"`
		SchemaType string          `json:"schemaType"`
		References []javaReference `json:"references"`
		Schema     string          `json:"schema"`
	}
	javaReference struct {
		Name    string `json:"name"`
		Subject string `json:"subject"`
		Version int    `json:"version"`
	}
	javaSchemaString struct {
		SchemaType string          `json:"schemaType"`
		Schema     string          `json:"schema"`
		References []javaReference `json:"references"`
	}
	javaRegisterResponse struct {
		ID int `json:"id"`
	}
	javaCompatibilityResponse struct {
		IsCompatible bool     `json:"is_compatible"`
		Messages     []string `json:"messages"`
	}
	javaConfig struct {
		CompatibilityLevel string `json:"compatibilityLevel"`
	}
	javaConfigUpdate struct {
		Compatibility string `json:"compatibility"`
	}
	javaMode struct {
		Mode string `json:"mode"`
	}
	javaError struct {
		ErrorCode int    `json:"error_code"`
		Message   string `json:"message"`
	}
)

// javaContentType is what RestService sends as Content-Type on every
// request (Versions.SCHEMA_REGISTRY_V1_JSON_WEIGHTED).
const javaContentType = "application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json; qs=0.9, application/json; qs=0.5"

// fixture is one request exactly as a Java client sends it and what must
// come back.
type fixture struct {
	name    string // the client call it replays
	method  string
	path    string // with the query the client adds
	ctype   string
	body    string // a template: {note}, {edited}, {goText} are JSON strings
	status  int
	dto     any    // a pointer to the DTO the client decodes into
	want    string // the exact answer (a template, compared as JSON); empty: not compared
	code    int    // the error_code of an error answer
	says    string // a word the message must contain
	capture string // store the answer's "id" under this name
}

// TestJavaClientWire replays the requests of Confluent's Java RestService
// and of the maven plugin's register and test-compatibility goals (which
// cannot run here) against a registry a Go producer wrote to.
func TestJavaClientWire(t *testing.T) {
	t.Parallel()
	c := backends(t)[0].open(t)
	p, err := c.Stream[OrderPlaced]("orders.placed").Producer().Register(ctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Produce(ctx(t), OrderPlaced{OrderID: "o-1", Total: Money{Cents: 100, Currency: "EUR"}}); err != nil {
		t.Fatal(err)
	}
	revs := mustRevisions(t, c.Registry(), "orders.placed", 2)
	srv := serve(t, c, nil)
	vars := map[string]string{"id": strconv.FormatInt(revs[0].ID, 10)}
	quote := func(b []byte) string { q, _ := json.Marshal(string(b)); return string(q) }
	noteText, _ := schema.For[OrderPlacedNote]()
	texts := map[string]string{
		"{goText}":        quote(revs[0].Schema.Canonical()),
		"{note}":          quote(docOf[OrderPlacedNote](t)),
		"{edited}":        quote(docOf[OrderPlacedEdited](t)),
		"{noteCanonical}": quote(noteText.Canonical()),
	}
	const subj = "/subjects/orders.placed-v2"
	fixtures := []fixture{
		{name: "GET / (health)", method: "GET", path: "/", status: 200, want: `{}`},
		{name: "RestService.getSchemaTypes", method: "GET", path: "/schemas/types", status: 200, dto: &[]string{}, want: `["JSON","AVRO","PROTOBUF"]`},
		{name: "RestService.getAllSubjects", method: "GET", path: "/subjects?deleted=false", ctype: javaContentType, status: 200, dto: &[]string{}, want: `["orders.placed-v2"]`},
		{name: "RestService.getAllVersions", method: "GET", path: subj + "/versions", ctype: javaContentType, status: 200, dto: &[]int{}, want: `[1]`},
		{name: "RestService.getVersion", method: "GET", path: subj + "/versions/1?deleted=false", ctype: javaContentType, status: 200, dto: &javaSchema{},
			want: `{"subject":"orders.placed-v2","version":1,"id":{id},"schemaType":"JSON","schema":{goText}}`},
		{name: "RestService.getLatestVersion", method: "GET", path: subj + "/versions/latest", ctype: javaContentType, status: 200, dto: &javaSchema{},
			want: `{"subject":"orders.placed-v2","version":1,"id":{id},"schemaType":"JSON","schema":{goText}}`},
		{name: "RestService.getVersionSchemaOnly", method: "GET", path: subj + "/versions/1/schema", ctype: javaContentType, status: 200},
		{name: "RestService.getId", method: "GET", path: "/schemas/ids/{id}?fetchMaxId=false&subject=orders.placed-v2", ctype: javaContentType, status: 200,
			dto: &javaSchemaString{}, want: `{"schemaType":"JSON","schema":{goText}}`},
		{name: "RestService.getAllSubjectsById", method: "GET", path: "/schemas/ids/{id}/subjects", ctype: javaContentType, status: 200, dto: &[]string{}, want: `["orders.placed-v2"]`},
		{name: "RestService.getAllVersionsById", method: "GET", path: "/schemas/ids/{id}/versions", ctype: javaContentType, status: 200,
			want: `[{"subject":"orders.placed-v2","version":1}]`},
		{name: "RestService.getConfig", method: "GET", path: "/config", ctype: javaContentType, status: 200, dto: &javaConfig{}, want: `{"compatibilityLevel":"BACKWARD"}`},
		{name: "RestService.updateCompatibility(FULL)", method: "PUT", path: "/config", ctype: javaContentType, body: `{"compatibility":"FULL"}`, status: 200,
			dto: &javaConfigUpdate{}, want: `{"compatibility":"FULL"}`},
		{name: "RestService.getConfig(subject, defaultToGlobal)", method: "GET", path: "/config/orders.placed-v2?defaultToGlobal=true", ctype: javaContentType, status: 200,
			dto: &javaConfig{}, want: `{"compatibilityLevel":"FULL"}`},
		{name: "RestService.getConfig(subject)", method: "GET", path: "/config/orders.placed-v2", ctype: javaContentType, status: 404, dto: &javaError{}, code: 40408},
		{name: "RestService.updateCompatibility(BACKWARD)", method: "PUT", path: "/config", ctype: javaContentType, body: `{"compatibility":"BACKWARD"}`, status: 200,
			dto: &javaConfigUpdate{}, want: `{"compatibility":"BACKWARD"}`},
		{name: "RestService.updateCompatibility(bad)", method: "PUT", path: "/config", ctype: javaContentType, body: `{"compatibility":"SIDEWAYS"}`, status: 422,
			dto: &javaError{}, code: 42203, says: "SIDEWAYS"},
		{name: "RestService.getMode", method: "GET", path: "/mode", ctype: javaContentType, status: 200, dto: &javaMode{}, want: `{"mode":"READWRITE"}`},
		{name: "RestService.setMode(READONLY_OVERRIDE)", method: "PUT", path: "/mode", ctype: javaContentType, body: `{"mode":"READONLY_OVERRIDE"}`, status: 422,
			dto: &javaError{}, code: 42204, says: "READONLY_OVERRIDE"},
		{name: "RestService.getMode(subject)", method: "GET", path: "/mode/orders.placed-v2", ctype: javaContentType, status: 404, dto: &javaError{}, code: 40409},
		{name: "RestService.lookUpSubjectVersion", method: "POST", path: subj + "?deleted=false", ctype: javaContentType, body: `{"schemaType":"JSON","schema":{goText}}`, status: 200,
			dto: &javaSchema{}, want: `{"subject":"orders.placed-v2","version":1,"id":{id},"schemaType":"JSON","schema":{goText}}`},
		{name: "RestService.testCompatibility(1)", method: "POST", path: "/compatibility" + subj + "/versions/1", ctype: javaContentType, body: `{"schemaType":"JSON","schema":{note}}`, status: 200,
			dto: &javaCompatibilityResponse{}, want: `{"is_compatible":true}`},

		// The maven plugin's test-compatibility goal: verbose, the type from
		// <schemaTypes>, an empty reference list; it fails the build when
		// the returned list is not empty.
		{name: "maven test-compatibility (compatible)", method: "POST", path: "/compatibility" + subj + "/versions/latest?verbose=true", ctype: javaContentType,
			body: `{"schemaType":"JSON","schema":{note},"references":[]}`, status: 200, dto: &javaCompatibilityResponse{}, want: `{"is_compatible":true,"messages":[]}`},
		{name: "maven test-compatibility (incompatible)", method: "POST", path: "/compatibility" + subj + "/versions/latest?verbose=true", ctype: javaContentType,
			body: `{"schemaType":"JSON","schema":{edited},"references":[]}`, status: 200, dto: &javaCompatibilityResponse{}, says: "TYPE_CHANGED at #/properties/total"},
		{name: "maven test-compatibility (new subject)", method: "POST", path: "/compatibility/subjects/brand.new-v1/versions/latest?verbose=true", ctype: javaContentType,
			body: `{"schemaType":"JSON","schema":{edited},"references":[]}`, status: 200, dto: &javaCompatibilityResponse{}, want: `{"is_compatible":true,"messages":[]}`},

		// The maven plugin's register goal: register, then look the version up.
		{name: "maven register", method: "POST", path: subj + "/versions?normalize=false", ctype: javaContentType,
			body: `{"schemaType":"JSON","schema":{note},"references":[]}`, status: 200, dto: &javaRegisterResponse{}, capture: "id2"},
		{name: "maven register (version lookup)", method: "POST", path: subj + "?normalize=false", ctype: javaContentType,
			body: `{"schemaType":"JSON","schema":{note},"references":[]}`, status: 200, dto: &javaSchema{},
			want: `{"subject":"orders.placed-v2","version":2,"id":{id2},"schemaType":"JSON","schema":{noteCanonical}}`},
		{name: "maven register (incompatible)", method: "POST", path: subj + "/versions?normalize=false", ctype: javaContentType,
			body: `{"schemaType":"JSON","schema":{edited},"references":[]}`, status: 409, dto: &javaError{}, code: 409, says: "TYPE_CHANGED at #/properties/total"},

		// Errors, in the envelope with Confluent's codes.
		{name: "subject not found", method: "GET", path: "/subjects/nope-v1/versions", ctype: javaContentType, status: 404, dto: &javaError{}, code: 40401},
		{name: "version not found", method: "GET", path: subj + "/versions/9", ctype: javaContentType, status: 404, dto: &javaError{}, code: 40402},
		{name: "invalid version", method: "GET", path: subj + "/versions/abc", ctype: javaContentType, status: 422, dto: &javaError{}, code: 42202},
		{name: "schema not found", method: "GET", path: "/schemas/ids/999999", ctype: javaContentType, status: 404, dto: &javaError{}, code: 40403},
		{name: "lookup of an unregistered schema", method: "POST", path: subj, ctype: javaContentType, body: `{"schemaType":"JSON","schema":{edited}}`, status: 404, dto: &javaError{}, code: 40403},
		{name: "malformed PROTOBUF refused", method: "POST", path: subj + "/versions", ctype: javaContentType, body: `{"schemaType":"PROTOBUF","schema":"message {"}`, status: 422,
			dto: &javaError{}, code: 42201, says: "syntax error"},
		{name: "invalid subject (a control character)", method: "POST", path: "/subjects/bad%01name/versions", ctype: javaContentType, body: `{"schema":{note}}`, status: 422, dto: &javaError{}, code: 42208},
		{name: "RestService.deleteSubject", method: "DELETE", path: subj, ctype: javaContentType, status: 422, dto: &javaError{}, code: 42205, says: "rows still in the log"},
		{name: "RestService.deleteSchemaVersion", method: "DELETE", path: subj + "/versions/1", ctype: javaContentType, status: 422, dto: &javaError{}, code: 42205,
			says: "rows still in the log"},
		{name: "RestService.deleteSchemaVersion permanently", method: "DELETE", path: subj + "/versions/1?permanent=true", ctype: javaContentType, status: 404, dto: &javaError{}, code: 40407,
			says: "not deleted first"},
		{name: "unsupported media type", method: "POST", path: subj, ctype: "text/plain", body: `{"schema":{note}}`, status: 415, dto: &javaError{}, code: 415},
	}
	// Every accepted body type reads the same.
	for _, ct := range []string{"application/vnd.schemaregistry.v1+json", "application/vnd.schemaregistry+json", "application/json", "application/octet-stream"} {
		fixtures = append(fixtures, fixture{name: "lookup as " + ct, method: "POST", path: subj, ctype: ct, body: `{"schemaType":"JSON","schema":{goText}}`, status: 200, dto: &javaSchema{},
			want: `{"subject":"orders.placed-v2","version":1,"id":{id},"schemaType":"JSON","schema":{goText}}`})
	}
	for _, f := range fixtures { // in order: later fixtures see earlier changes
		expand := func(s string) string {
			for k, v := range texts {
				s = strings.ReplaceAll(s, k, v)
			}
			for k, v := range vars {
				s = strings.ReplaceAll(s, "{"+k+"}", v)
			}
			return s
		}
		var body io.Reader
		if f.body != "" {
			body = strings.NewReader(expand(f.body))
		}
		req, err := http.NewRequestWithContext(ctx(t), f.method, srv.URL+expand(f.path), body)
		if err != nil {
			t.Fatal(err)
		}
		if f.ctype != "" {
			req.Header.Set("Content-Type", f.ctype)
		}
		req.Header.Set("Accept", "application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json; qs=0.9, application/json; qs=0.5")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != f.status || resp.Header.Get("Content-Type") != ccompat.ContentType {
			t.Errorf("%s: HTTP %d, Content-Type %q, body %s; want %d, %s", f.name, resp.StatusCode, resp.Header.Get("Content-Type"), got, f.status, ccompat.ContentType)
			continue
		}
		if f.dto != nil {
			dec := json.NewDecoder(bytes.NewReader(got))
			dec.DisallowUnknownFields()
			if err := dec.Decode(f.dto); err != nil {
				t.Errorf("%s: %s does not decode into the Java client's DTO: %v", f.name, got, err)
			}
		}
		if f.want != "" && !sameJSON(t, got, []byte(expand(f.want))) {
			t.Errorf("%s: answer %s\nwant %s", f.name, got, expand(f.want))
		}
		var e javaError
		_ = json.Unmarshal(got, &e)
		if f.code != 0 && (e.ErrorCode != f.code || e.Message == "") {
			t.Errorf("%s: %s; want error_code %d and a message", f.name, got, f.code)
		}
		if f.says != "" && !strings.Contains(string(got), f.says) {
			t.Errorf("%s: %s does not say %q", f.name, got, f.says)
		}
		if f.capture != "" {
			var r javaRegisterResponse
			if err := json.Unmarshal(got, &r); err != nil || r.ID == 0 {
				t.Fatalf("%s: no id in %s", f.name, got)
			}
			vars[f.capture] = strconv.Itoa(r.ID)
		}
		if f.name == "RestService.getVersionSchemaOnly" && string(got) != string(revs[0].Schema.Canonical()) {
			t.Errorf("%s: %s; want the stored text itself", f.name, got)
		}
	}
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		return false
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("bad fixture JSON %s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}
