package sqlstreamscli_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/contrib/console"
)

// readAtRE matches the time of a health read, the one value that differs
// between two reads of the same data.
var readAtRE = regexp.MustCompile(`"read_at": "[^"]*"`)

// TestJSONShapeAgreesWithConsole: for one fixture on SQLite, each command's
// -o json and the console's /api answer for the same thing are the same
// document, byte for byte but for the health read's time (docs/json.md).
func TestJSONShapeAgreesWithConsole(t *testing.T) {
	t.Parallel()
	url := "sqlite:" + filepath.Join(t.TempDir(), "cli.db")
	seed(t, url)
	client := goClient(t, url)
	// A member that stopped beating: its record stays as written, so both
	// reads see the same one.
	crashedMember(t, client, "orders", "billing", "crashed-3", time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	h, err := console.New(client, console.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		name string
		args []string
		api  string
	}{
		{"streams describe", []string{"streams", "describe", "orders"}, "/api/streams/orders"},
		{"groups describe", []string{"groups", "describe", "orders", "billing"}, "/api/streams/orders/groups/billing"},
		{"groups describe, nothing read", []string{"groups", "describe", "accounts", "snapshot"}, "/api/streams/accounts/groups/snapshot"},
		{"dead list", []string{"dead", "list", "orders", "billing"}, "/api/streams/orders/groups/billing/dead"},
		{"dead show", []string{"dead", "show", "orders", "billing", "4"}, "/api/streams/orders/groups/billing/dead/4"},
		{"tail", []string{"tail", "orders"}, "/api/streams/orders/messages"},
		{"tail, empty", []string{"tail", "accounts"}, "/api/streams/accounts/messages"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fromCLI := must(t, url, append(tc.args, "-o", "json")...)
			resp, err := http.Get(srv.URL + tc.api)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %d %v\n%s", tc.api, resp.StatusCode, err, body)
			}
			cli, api := readAtRE.ReplaceAllString(fromCLI, `"read_at": "<time>"`), readAtRE.ReplaceAllString(string(body), `"read_at": "<time>"`)
			if len(cli) < 40 || !regexp.MustCompile(`"stream"|"id"`).MatchString(cli) {
				t.Fatalf("sqlstreams %v -o json printed no document:\n%s", tc.args, cli)
			}
			if tc.name == "groups describe" && !regexp.MustCompile(`"identity": "crashed-3"`).MatchString(cli) {
				t.Fatalf("no member in\n%s", cli)
			}
			if cli != api {
				t.Fatalf("sqlstreams %v -o json and GET %s differ:\n--- cli\n%s\n--- api\n%s", tc.args, tc.api, cli, api)
			}
		})
	}
}
