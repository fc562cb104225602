package sqlstreamscli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sqlstreamscli "github.com/sqlstreams/sqlstreams/contrib/cli"
)

// `sqlstreams registry serve` answers what a Go producer registered, as the
// Confluent API does, and asks for credentials when told to.
func TestRegistryServe(t *testing.T) {
	t.Parallel()
	dbURL := "sqlite:" + filepath.Join(t.TempDir(), "registry.db")
	client := goClient(t, dbURL)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := client.Stream[OrderV1]("orders").Producer().Register(ctx, nil); err != nil {
		t.Fatal(err)
	}
	revs, err := client.Registry().Revisions(ctx, "orders", 1)
	if err != nil || len(revs) != 1 || revs[0].ID == 0 {
		t.Fatalf("revisions: %v, %v", revs, err)
	}

	base, stop := serveCommand(t, dbURL, map[string]string{sqlstreamscli.EnvRegistryPassword: "pw"}, "registry",
		"registry", "serve", "--listen", "127.0.0.1:0", "--basic-auth", "ci")
	req, _ := http.NewRequest(http.MethodGet, base+"/subjects", nil)
	if code, _ := get(t, req); code != http.StatusUnauthorized {
		t.Errorf("GET /subjects without credentials: %d; want 401", code)
	}
	req, _ = http.NewRequest(http.MethodGet, base+"/subjects", nil)
	req.SetBasicAuth("ci", "pw")
	code, body := get(t, req)
	var subjects []string
	if err := json.Unmarshal([]byte(body), &subjects); code != http.StatusOK || err != nil || len(subjects) != 1 || subjects[0] != "orders-v1" {
		t.Errorf("GET /subjects: %d %s (%v); want [\"orders-v1\"]", code, body, err)
	}
	req, _ = http.NewRequest(http.MethodGet, base+"/subjects/orders-v1/versions/latest", nil)
	req.SetBasicAuth("ci", "pw")
	code, body = get(t, req)
	var latest struct {
		Subject string `json:"subject"`
		Version int    `json:"version"`
		ID      int64  `json:"id"`
		Schema  string `json:"schema"`
	}
	if err := json.Unmarshal([]byte(body), &latest); code != http.StatusOK || err != nil || latest.Version != 1 || latest.ID != revs[0].ID ||
		!strings.Contains(latest.Schema, "order_id") {
		t.Errorf("GET latest: %d %s (%v); want revision 1 with id %d and the producer's schema", code, body, err, revs[0].ID)
	}
	if r := stop(); r.code != 0 || !strings.Contains(r.stderr, "registry: stopped") {
		t.Errorf("interrupted registry: %v; want exit 0 and a stopped note", r)
	}

	// --policy strict judges the documents clients send by Confluent's
	// rules: an optional property added to an open model is a break there,
	// and fine for Go consumers.
	if _, err := client.Registry().Register(ctx, "docs", 1, []byte(`{"type": "object", "properties": {"id": {"type": "string"}}}`)); err != nil {
		t.Fatal(err)
	}
	check := `{"schemaType": "JSON", "schema": "{\"type\": \"object\", \"properties\": {\"id\": {\"type\": \"string\"}, \"note\": {\"type\": \"string\"}}}"}`
	for _, tc := range []struct {
		policy     string
		compatible bool
	}{{"goaware", true}, {"strict", false}} {
		base, stop := serveCommand(t, dbURL, nil, "registry", "registry", "serve", "--listen", "127.0.0.1:0", "--policy", tc.policy)
		req, _ := http.NewRequest(http.MethodPost, base+"/compatibility/subjects/docs-v1/versions/latest", strings.NewReader(check))
		req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		code, body := get(t, req)
		var answer struct {
			IsCompatible *bool `json:"is_compatible"`
		}
		if err := json.Unmarshal([]byte(body), &answer); code != http.StatusOK || err != nil || answer.IsCompatible == nil || *answer.IsCompatible != tc.compatible {
			t.Errorf("--policy %s: compatibility %d %s (%v); want is_compatible %v", tc.policy, code, body, err, tc.compatible)
		}
		stop()
	}
	if r := cli(t, dbURL, "registry", "serve", "--policy", "lenient"); r.code != 2 || !strings.Contains(r.stderr, "goaware or strict") {
		t.Errorf("--policy lenient: %v; want exit 2", r)
	}

	if r := cli(t, dbURL, "registry", "serve", "--basic-auth", "ci"); r.code != 2 || !strings.Contains(r.stderr, sqlstreamscli.EnvRegistryPassword) {
		t.Errorf("--basic-auth without a password: %v; want exit 2 naming $%s", r, sqlstreamscli.EnvRegistryPassword)
	}
}

// `registry serve` and the schema commands share one client set-up, so they
// accept and judge the same types: an Avro schema registered with the CLI is
// served with its type, a Protobuf schema registered through the API is
// shown by the CLI, and both refuse the same change.
func TestRegistryServeTypes(t *testing.T) {
	t.Parallel()
	for _, b := range backends[:2] { // SQLite and PostgreSQL
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			dbURL := b.newURL(t)
			must(t, dbURL, "schema", "register", "payments", "1", "testdata/types/payment-v1.avsc")

			base, stop := serveCommand(t, dbURL, nil, "registry", "registry", "serve", "--listen", "127.0.0.1:0")
			req, _ := http.NewRequest(http.MethodGet, base+"/schemas/types", nil)
			code, body := get(t, req)
			var types []string
			if err := json.Unmarshal([]byte(body), &types); code != http.StatusOK || err != nil || strings.Join(types, ",") != "JSON,AVRO,PROTOBUF" {
				t.Errorf("GET /schemas/types: %d %s (%v); want JSON, AVRO and PROTOBUF", code, body, err)
			}
			req, _ = http.NewRequest(http.MethodGet, base+"/subjects/payments-v1/versions/latest", nil)
			code, body = get(t, req)
			var latest struct {
				SchemaType string `json:"schemaType"`
				Schema     string `json:"schema"`
			}
			if err := json.Unmarshal([]byte(body), &latest); code != http.StatusOK || err != nil || latest.SchemaType != "AVRO" || !strings.Contains(latest.Schema, "PaymentTaken") {
				t.Errorf("GET payments-v1 latest: %d %s (%v); want the AVRO schema the CLI registered", code, body, err)
			}
			post := func(path, file string) (int, string) {
				text, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				doc, _ := json.Marshal(map[string]string{"schemaType": "PROTOBUF", "schema": string(text)})
				req, _ := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(doc))
				req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
				return get(t, req)
			}
			if code, body := post("/subjects/shipments-v1/versions", "testdata/types/shipment-v1.proto"); code != http.StatusOK {
				t.Errorf("register PROTOBUF through the API: %d %s; want 200", code, body)
			}
			code, body = post("/compatibility/subjects/shipments-v1/versions/latest", "testdata/types/shipment-kind-changed.proto")
			var answer struct {
				IsCompatible *bool `json:"is_compatible"`
			}
			if err := json.Unmarshal([]byte(body), &answer); code != http.StatusOK || err != nil || answer.IsCompatible == nil || *answer.IsCompatible {
				t.Errorf("API compatibility of a kind change: %d %s (%v); want is_compatible false", code, body, err)
			}
			if r := stop(); r.code != 0 {
				t.Errorf("interrupted registry: %v; want exit 0", r)
			}

			want, _ := os.ReadFile("testdata/types/shipment-v1.proto")
			if out := must(t, dbURL, "schema", "show", "shipments", "1"); out != string(want) {
				t.Errorf("schema show of the API's PROTOBUF schema:\n%s\nwant the text as registered:\n%s", out, want)
			}
			r := cli(t, dbURL, "schema", "check", "shipments", "1", "testdata/types/shipment-kind-changed.proto")
			if r.code != 3 || !strings.Contains(r.stdout, "FIELD_SCALAR_KIND_CHANGED") || !strings.Contains(r.stdout, "#/ShipmentSent/2") {
				t.Errorf("schema check of the kind change: %v; want exit 3 naming FIELD_SCALAR_KIND_CHANGED at #/ShipmentSent/2", r)
			}
		})
	}
}
