package ccompat_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/contrib/ccompat"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// call sends one request and decodes the answer's JSON.
func call(t *testing.T, method, url, body string) (int, map[string]any, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ccompat.ContentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, m, raw
}

func code(m map[string]any) int {
	f, _ := m["error_code"].(float64)
	return int(f)
}

func TestParseSubject(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		subject string
		stream  string
		version int
		ok      bool
	}{
		{"orders.placed-v2", "orders.placed", 2, true},
		{"orders-v2-v1", "orders-v2", 1, true},
		{"a-v2147483647", "a", 2147483647, true},
		{"a-v2147483648", "", 0, false},
		{"orders-v0", "", 0, false},
		{"orders-v01", "", 0, false},
		{"orders-v", "", 0, false},
		{"orders-vx", "", 0, false},
		{"-v1", "", 0, false},
		{"orders-value", "", 0, false},
		{"orders", "", 0, false},
	} {
		stream, version, ok := ccompat.ParseSubject(tc.subject)
		if stream != tc.stream || version != tc.version || ok != tc.ok {
			t.Errorf("ParseSubject(%q) = %q, %d, %v; want %q, %d, %v", tc.subject, stream, version, ok, tc.stream, tc.version, tc.ok)
		}
		if tc.ok && ccompat.SubjectName(stream, version) != tc.subject {
			t.Errorf("SubjectName(%q, %d) does not give %q back", stream, version, tc.subject)
		}
	}
}

// TestOptions: the "-value" alias serves the highest version read-only; a
// custom mapping replaces the default one; subjectPrefix filters.
func TestOptions(t *testing.T) {
	t.Parallel()
	c := backends(t)[0].open(t)
	reg := c.Registry()
	for _, v := range []int{1, 3} {
		doc := `{"type":"object","properties":{"v` + strconv.Itoa(v) + `":{"type":"string"}}}`
		if _, err := reg.Register(ctx(t), "orders", v, []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := reg.Register(ctx(t), "payments", 1, []byte(`{"type":"string"}`)); err != nil {
		t.Fatal(err)
	}

	alias := serve(t, c, &ccompat.Options{ValueAlias: true}).URL
	status, m, raw := call(t, "GET", alias+"/subjects/orders-value/versions/latest", "")
	if status != 200 || m["subject"] != "orders-v3" || !strings.Contains(m["schema"].(string), `"v3"`) {
		t.Errorf("GET orders-value latest: %d %s; want version 3's schema under orders-v3", status, raw)
	}
	status, m, raw = call(t, "POST", alias+"/subjects/orders-value/versions", `{"schemaType":"JSON","schema":"{}"}`)
	if status != 422 || code(m) != 42205 || !strings.Contains(m["message"].(string), "read-only alias") {
		t.Errorf("POST to the alias: %d %s; want 42205", status, raw)
	}
	// The alias's settings are the highest version's, read-only.
	if err := reg.SetVersionLevel(ctx(t), "orders", 3, schema.Full); err != nil {
		t.Fatal(err)
	}
	if status, m, raw = call(t, "GET", alias+"/config/orders-value", ""); status != 200 || m["compatibilityLevel"] != "FULL" {
		t.Errorf("GET /config of the alias: %d %s; want version 3's FULL", status, raw)
	}
	for _, path := range []string{"/config/orders-value", "/mode/orders-value"} {
		if status, m, raw = call(t, "PUT", alias+path, `{"compatibility":"NONE","mode":"READONLY"}`); status != 422 || code(m) != 42205 {
			t.Errorf("PUT %s: %d %s; want 42205 (a read-only alias)", path, status, raw)
		}
	}
	if status, m, _ = call(t, "GET", alias+"/subjects/missing-value/versions", ""); status != 404 || code(m) != 40401 {
		t.Errorf("alias of a missing stream: %d %v", status, m)
	}
	if status, m, _ = call(t, "GET", serve(t, c, nil).URL+"/subjects/orders-value/versions", ""); status != 404 || code(m) != 40401 {
		t.Errorf("the alias without ValueAlias: %d %v; want 40401", status, m)
	}

	custom := serve(t, c, &ccompat.Options{
		SubjectName: func(stream string, version int) string { return stream + ".v" + strconv.Itoa(version) },
		ParseSubject: func(s string) (string, int, bool) {
			i := strings.LastIndex(s, ".v")
			if i < 0 {
				return "", 0, false
			}
			v, err := strconv.Atoi(s[i+2:])
			return s[:i], v, err == nil && v > 0
		},
	}).URL
	_, _, raw = call(t, "GET", custom+"/subjects", "")
	var subjects []string
	if err := json.Unmarshal(raw, &subjects); err != nil || !slices.Equal(subjects, []string{"orders.v1", "orders.v3", "payments.v1"}) {
		t.Errorf("subjects under a custom mapping: %s", raw)
	}
	if status, m, raw = call(t, "GET", custom+"/subjects/orders.v3/versions/1", ""); status != 200 || m["subject"] != "orders.v3" {
		t.Errorf("a version under a custom mapping: %d %s", status, raw)
	}

	_, _, raw = call(t, "GET", alias+"/subjects?subjectPrefix=orders", "")
	if err := json.Unmarshal(raw, &subjects); err != nil || !slices.Equal(subjects, []string{"orders-v1", "orders-v3"}) {
		t.Errorf("subjectPrefix=orders: %s", raw)
	}
	_, _, raw = call(t, "GET", alias+"/schemas?subjectPrefix=pay", "")
	var all []map[string]any
	if err := json.Unmarshal(raw, &all); err != nil || len(all) != 1 || all[0]["subject"] != "payments-v1" {
		t.Errorf("GET /schemas?subjectPrefix=pay: %s", raw)
	}
	if status, m, _ = call(t, "GET", alias+"/no/such/route", ""); status != 404 || code(m) != 404 {
		t.Errorf("an unknown route: %d %v", status, m)
	}
}

// TestStoreError: a failure of the database is 500 / 50001, logged with
// slog, and says what failed.
func TestStoreError(t *testing.T) {
	t.Parallel()
	c := backends(t)[0].open(t)
	var logs bytes.Buffer
	srv := serve(t, c, &ccompat.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	_ = c.Close()
	status, m, raw := call(t, "GET", srv.URL+"/subjects", "")
	if status != 500 || code(m) != 50001 || !strings.Contains(m["message"].(string), "closed") {
		t.Errorf("a request on a closed client: %d %s; want 500 / 50001 saying the client is closed", status, raw)
	}
	if !strings.Contains(logs.String(), "ccompat: request failed") || !strings.Contains(logs.String(), "/subjects") {
		t.Errorf("the failure was not logged: %q", logs.String())
	}
}
