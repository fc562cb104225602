package sqlstreamscli_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/contrib/console"
)

// readAtRE matches the time of a health read, the one value that differs
// between two reads of the same data.
var readAtRE = regexp.MustCompile(`"read_at": "[^"]*"`)

// compactReadAtRE matches it in a compacted document.
var compactReadAtRE = regexp.MustCompile(`"read_at":"[^"]*"`)

// TestJSONShapeAgreesWithConsole: for one fixture on SQLite, each command's
// -o json and the console's /api answer for the same thing are the same
// document, byte for byte but for the health read's time (docs/json.md).
// Where the console carries the command's document inside a larger one
// (health and groups in a stream's description, a reset plan's changes in
// the action's answer), the key named by part is compared, compacted, as
// the documents nest it at another depth.
func TestJSONShapeAgreesWithConsole(t *testing.T) {
	t.Parallel()
	dbURL := "sqlite:" + filepath.Join(t.TempDir(), "cli.db")
	seed(t, dbURL)
	client := goClient(t, dbURL)
	// A member that stopped beating: its record stays as written, so both
	// reads see the same one.
	crashedMember(t, client, "orders", "billing", "crashed-3", time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	h, err := console.New(client, console.Options{Logger: slog.New(slog.DiscardHandler), AllowActions: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		name string
		args []string
		api  string
		// cliPart and apiPart name the key of each document compared,
		// "" the whole; form makes the console request a POST.
		cliPart, apiPart string
		form             url.Values
	}{
		{name: "health", args: []string{"health", "orders"}, api: "/api/streams/orders", apiPart: "health"},
		{name: "health, nothing produced", args: []string{"health", "accounts"}, api: "/api/streams/accounts", apiPart: "health"},
		{name: "groups list S", args: []string{"groups", "list", "orders"}, api: "/api/streams/orders", cliPart: "groups", apiPart: "groups"},
		{name: "groups reset plan", args: []string{"groups", "reset", "orders", "audit", "--to-earliest"}, api: "/streams/orders/groups/audit/reset",
			cliPart: "changes", apiPart: "changes", form: url.Values{"to": {"earliest"}, "dry_run": {"1"}}},
		{name: "groups reset plan, one partition", args: []string{"groups", "reset", "orders", "billing", "--to-latest", "--partition", "1"},
			api: "/streams/orders/groups/billing/reset", cliPart: "changes", apiPart: "changes", form: url.Values{"to": {"latest"}, "partitions": {"1"}, "dry_run": {"1"}}},
		{name: "streams describe", args: []string{"streams", "describe", "orders"}, api: "/api/streams/orders"},
		{name: "groups describe", args: []string{"groups", "describe", "orders", "billing"}, api: "/api/streams/orders/groups/billing"},
		{name: "groups describe, nothing read", args: []string{"groups", "describe", "accounts", "snapshot"}, api: "/api/streams/accounts/groups/snapshot"},
		{name: "dead list", args: []string{"dead", "list", "orders", "billing"}, api: "/api/streams/orders/groups/billing/dead"},
		{name: "dead show", args: []string{"dead", "show", "orders", "billing", "4"}, api: "/api/streams/orders/groups/billing/dead/4"},
		{name: "tail", args: []string{"tail", "orders"}, api: "/api/streams/orders/messages"},
		{name: "tail, empty", args: []string{"tail", "accounts"}, api: "/api/streams/accounts/messages"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fromCLI := must(t, dbURL, append(tc.args, "-o", "json")...)
			body := consoleJSON(t, srv.URL, tc.api, tc.form)
			cli, api := jsonPart(t, fromCLI, tc.cliPart), jsonPart(t, body, tc.apiPart)
			if tc.cliPart != "" || tc.apiPart != "" {
				cli, api = compact(t, []byte(cli)), compact(t, []byte(api))
			}
			cli, api = readAtRE.ReplaceAllString(cli, `"read_at": "<time>"`), readAtRE.ReplaceAllString(api, `"read_at": "<time>"`)
			if tc.cliPart != "" || tc.apiPart != "" {
				cli, api = compactReadAtRE.ReplaceAllString(cli, `"read_at":"<time>"`), compactReadAtRE.ReplaceAllString(api, `"read_at":"<time>"`)
			}
			if len(cli) < 40 || !regexp.MustCompile(`"stream"|"id"|"partition"`).MatchString(cli) {
				t.Fatalf("sqlstreams %v -o json printed no document:\n%s", tc.args, cli)
			}
			if tc.name == "groups describe" && !regexp.MustCompile(`"identity": "crashed-3"`).MatchString(cli) {
				t.Fatalf("no member in\n%s", cli)
			}
			if cli != api {
				t.Fatalf("sqlstreams %v -o json and %s differ:\n--- cli\n%s\n--- api\n%s", tc.args, tc.api, cli, api)
			}
		})
	}
}

// consoleJSON asks the console at srv for path as JSON: a GET, or with
// form a same-origin POST of the action with the page's form token.
func consoleJSON(t *testing.T, srv, path string, form url.Values) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv+path, nil)
	if form != nil {
		form.Set("csrf", formToken(t, srv))
		req, err = http.NewRequest(http.MethodPost, srv+path, strings.NewReader(form.Encode()))
	}
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %d %v\n%s", req.Method, path, resp.StatusCode, err, body)
	}
	return string(body)
}

var formTokenRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// formToken reads the form token the console's pages embed.
func formToken(t *testing.T, srv string) string {
	t.Helper()
	resp, err := http.Get(srv + "/registry")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	m := formTokenRE.FindSubmatch(body)
	if err != nil || m == nil {
		t.Fatalf("no form token on the registry page (%v)", err)
	}
	return string(m[1])
}

// jsonPart returns the value of key in the JSON object doc, compacted,
// keeping its keys' order; key "" returns doc as it is.
func jsonPart(t *testing.T, doc, key string) string {
	t.Helper()
	if key == "" {
		return doc
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, doc)
	}
	part, ok := obj[key]
	if !ok {
		t.Fatalf("no %q in\n%s", key, doc)
	}
	return compact(t, part)
}
