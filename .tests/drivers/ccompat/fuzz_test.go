package ccompat_test

// FuzzRequestBody is the fuzz target for the registry API's request bodies
// (issue #25 §5); core/fuzz_test.go has the command line that fuzzes every
// target.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/contrib/ccompat"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/driver/sqlite"
)

// bodyRoutes are the requests that carry a body; %s is the subject.
var bodyRoutes = []struct{ method, path string }{
	{"POST", "/subjects/%s/versions"},
	{"POST", "/subjects/%s"},
	{"POST", "/compatibility/subjects/%s/versions"},
	{"POST", "/compatibility/subjects/%s/versions/latest"},
	{"PUT", "/config"},
	{"PUT", "/config/%s"},
	{"PUT", "/mode"},
	{"PUT", "/mode/%s"},
}

// fuzzRegistry serves one SQLite registry to a fuzz worker and starts a
// new one every fuzzRegistryUses requests, so the database stays small and
// a mode set by one input does not shape the rest of the run.
type fuzzRegistry struct {
	dir     string
	n, uses int
	client  *sqlstreams.Client
	handler http.Handler
}

const fuzzRegistryUses = 500

func (r *fuzzRegistry) get(t *testing.T) http.Handler {
	if r.client != nil && r.uses < fuzzRegistryUses {
		r.uses++
		return r.handler
	}
	r.close()
	r.n++
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := sqlstreams.Open(ctx, sqlite.Open(filepath.Join(r.dir, "registry.db")), sqlstreams.WithMaintenanceInterval(0))
	if err != nil {
		t.Fatalf("open the registry: %v", err)
	}
	r.client, r.uses, r.handler = c, 1, ccompat.NewHandler(c, nil)
	return r.handler
}

func (r *fuzzRegistry) close() {
	if r.client != nil {
		_ = r.client.Close()
		r.client = nil
		for _, f := range []string{"registry.db", "registry.db-wal", "registry.db-shm"} {
			_ = os.Remove(filepath.Join(r.dir, f))
		}
	}
}

// FuzzRequestBody sends arbitrary bodies to every route that reads one,
// through the handler on an in-process SQLite registry. Every answer is
// JSON; bad input is a 4xx with an error_code and a message, never a 5xx;
// a schema the API registers is then found by a lookup of the same body
// under the same id, and a level it sets is the level it reads back.
func FuzzRequestBody(f *testing.F) {
	seeds := []struct {
		route   uint8
		subject string
		body    string
	}{
		{0, "orders-v1", `{"schema":"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}"}`},
		{0, "orders-v1", `{"schemaType":"JSON","schema":"true","references":[{"name":"m","subject":"money-v1","version":1}]}`},
		{0, "orders-v1", `{"schema":"{\"type\":\"string\"}","id":7,"version":3}`},
		{0, "orders-v1", `{"schemaType":"AVRO","schema":"{}"}`},
		{0, "orders-value", `{"schema":"{}"}`},
		{0, "bad name!-v1", `{"schema":"{}"}`},
		{0, "orders-v0", `{"schema":"{}"}`},
		{0, "orders-v99999999999999999999", `{"schema":"{}"}`},
		{1, "orders-v1", `{"schema":"{\"type\":5}"}`},
		{1, "orders-v1", `{"schema":""}`},
		{2, "orders-v1", `{"schema":"{\"type\":\"integer\"}"}`},
		{3, "orders-v1", `{"schema":"{\"$ref\":\"#/nowhere\"}"}`},
		{4, "", `{"compatibility":"FULL_TRANSITIVE"}`},
		{5, "orders-v1", `{"compatibilityLevel":"none"}`},
		{4, "", `{"compatibility":"SIDEWAYS"}`},
		{6, "", `{"mode":"READONLY"}`},
		{7, "orders-v1", `{"mode":"IMPORT"}`},
		{6, "", `{"mode":"IMPORT","force":true}`},
		{0, "orders-v1", `[`}, {0, "orders-v1", `null`}, {0, "orders-v1", `{"schema":1}`}, {0, "orders-v1", `{} trailing`},
		{0, "orders-v1", `{"schema":"{}","references":[{"name":"","subject":"nope","version":-1}]}`},
	}
	for _, s := range seeds {
		f.Add(s.route, s.subject, []byte(s.body))
	}
	reg := &fuzzRegistry{dir: f.TempDir()}
	f.Cleanup(reg.close)
	f.Fuzz(func(t *testing.T, route uint8, subject string, body []byte) {
		h := reg.get(t)
		rt := bodyRoutes[int(route)%len(bodyRoutes)]
		if subject == "" {
			subject = "orders-v1"
		}
		path := strings.Replace(rt.path, "%s", url.PathEscape(subject), 1)
		status, answer := serveFuzz(t, h, rt.method, path, body)
		switch {
		case status == http.StatusOK && rt.path == "/subjects/%s/versions":
			checkRegistered(t, h, path, body, answer)
		case status == http.StatusOK && strings.HasPrefix(rt.path, "/config"):
			checkLevel(t, h, path, answer)
		}
	})
}

// serveFuzz sends one request and checks the properties every answer has.
func serveFuzz(t *testing.T, h http.Handler, method, path string, body []byte) (int, map[string]any) {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code >= 500 {
		t.Fatalf("%s %s with %q: %d %s", method, path, body, rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.Contains(ct, "json") {
		t.Fatalf("%s %s with %q: Content-Type %q", method, path, body, ct)
	}
	var answer any
	if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil {
		t.Fatalf("%s %s with %q: the answer is not JSON: %v\n%s", method, path, body, err, rec.Body)
	}
	obj, _ := answer.(map[string]any)
	if rec.Code >= 400 {
		code, _ := obj["error_code"].(float64)
		msg, _ := obj["message"].(string)
		if code < 400 || msg == "" {
			t.Fatalf("%s %s with %q: %d without an error_code and a message: %s", method, path, body, rec.Code, rec.Body)
		}
	}
	return rec.Code, obj
}

// checkRegistered looks the registered body up under the same subject: it
// must name the id the registration answered.
func checkRegistered(t *testing.T, h http.Handler, path string, body []byte, answer map[string]any) {
	id, _ := answer["id"].(float64)
	if id < 1 {
		t.Fatalf("POST %s with %q answered %v; want an id", path, body, answer)
	}
	status, found := serveFuzz(t, h, "POST", strings.TrimSuffix(path, "/versions"), body)
	if status != http.StatusOK || found["id"] != id {
		t.Fatalf("POST %s with %q registered id %v, but the lookup answers %d %v", path, body, id, status, found)
	}
}

// checkLevel reads back the level a PUT /config answered.
func checkLevel(t *testing.T, h http.Handler, path string, answer map[string]any) {
	status, got := serveFuzz(t, h, "GET", path, nil)
	if status != http.StatusOK || got["compatibilityLevel"] != answer["compatibility"] {
		t.Fatalf("PUT %s answered %v, but GET answers %d %v", path, answer, status, got)
	}
}

// TestUncleanPathAnswersJSON: a path with an empty, '.' or '..' segment is a
// JSON 404, not the mux's bare 301 that a client would follow as a GET
// (found by FuzzRequestBody with the subject ".").
func TestUncleanPathAnswersJSON(t *testing.T) {
	t.Parallel()
	h := ccompat.NewHandler(openClient(t, sqlite.Open(filepath.Join(t.TempDir(), "r.db"))), nil)
	for _, tc := range []struct{ method, path string }{
		{"POST", "/compatibility/subjects/./versions/latest"},
		{"POST", "/subjects/../subjects/orders-v1/versions"},
		{"GET", "//subjects"},
		{"GET", "/subjects/orders-v1/versions/./1"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, "/", strings.NewReader(`{"schema":"{}"}`))
			req.URL.Path = tc.path
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			var answer struct {
				Code    int    `json:"error_code"`
				Message string `json:"message"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &answer); rec.Code != http.StatusNotFound || err != nil || answer.Code != 404 || !strings.Contains(answer.Message, "segment") {
				t.Fatalf("%s %s: %d %s", tc.method, tc.path, rec.Code, rec.Body)
			}
		})
	}
}
