package sqlstreamscli_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	sqlstreamscli "github.com/sqlstreams/sqlstreams/contrib/cli"
)

// serveConsole starts `sqlstreams console` in process and returns the base
// URL it printed, a stop function that interrupts it, and its result.
func serveConsole(t *testing.T, dbURL string, env map[string]string, args ...string) (base string, stop func() result) {
	t.Helper()
	return serveCommand(t, dbURL, env, "console", append([]string{"console", "--listen", "127.0.0.1:0"}, args...)...)
}

// serveCommand runs a server command (console, registry serve) in process
// until stop, returning the base URL it printed as "what: http://...".
func serveCommand(t *testing.T, dbURL string, env map[string]string, what string, args ...string) (base string, stop func() result) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	o := &sqlstreamscli.Options{Stdout: &stdout, Stderr: &stderr, Stdin: strings.NewReader(""),
		Getenv: func(k string) string { return env[k] }}
	done := make(chan int, 1)
	go func() {
		done <- sqlstreamscli.New(o).Execute(ctx, append([]string{"--url", dbURL}, args...))
	}()
	stop = func() result {
		cancel()
		select {
		case code := <-done:
			return result{stdout.String(), stderr.String(), code}
		case <-time.After(time.Minute):
			t.Fatalf("%s did not stop within a minute of its interrupt; stderr:\n%s", what, stderr.String())
			return result{}
		}
	}
	printed := regexp.MustCompile(regexp.QuoteMeta(what) + `: (http://\S+)/ `)
	deadline := time.Now().Add(time.Minute)
	for {
		if m := printed.FindStringSubmatch(stderr.String()); m != nil {
			return m[1], stop
		}
		select {
		case code := <-done:
			cancel()
			t.Fatalf("%s exited with %d before listening:\n%s", what, code, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			r := stop()
			t.Fatalf("%s printed no address within a minute: %v", what, r)
		}
	}
}

func get(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestConsoleCommand(t *testing.T) {
	t.Parallel()
	dbURL := "sqlite:" + filepath.Join(t.TempDir(), "console.db")
	must(t, dbURL, "streams", "create", "orders.placed")

	t.Run("ReadOnlyUnderPrefix", func(t *testing.T) {
		base, stop := serveConsole(t, dbURL, nil, "--prefix", "/ops")
		if !strings.HasSuffix(base, "/ops") {
			t.Errorf("printed base %q; want it to end in the prefix /ops", base)
		}
		req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
		if code, body := get(t, req); code != http.StatusOK || !strings.Contains(body, "orders.placed") {
			t.Errorf("GET %s/: %d; want 200 listing orders.placed:\n%.400s", base, code, body)
		}
		// Read-only by default: the console refuses every action.
		req, _ = http.NewRequest(http.MethodPost, base+"/streams/orders.placed/groups/g/dead/replay", strings.NewReader(url.Values{"all": {"1"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if code, _ := get(t, req); code != http.StatusForbidden {
			t.Errorf("POST on a read-only console: %d; want 403", code)
		}
		if r := stop(); r.code != 0 || !strings.Contains(r.stderr, "console: stopped") || !strings.Contains(r.stderr, "read-only") {
			t.Errorf("interrupted console: %v; want exit 0 and a stopped note", r)
		}
	})

	t.Run("AllowActions", func(t *testing.T) {
		base, stop := serveConsole(t, dbURL, nil, "--allow-actions")
		defer stop()
		req, _ := http.NewRequest(http.MethodGet, base+"/api/features", nil)
		code, body := get(t, req)
		var f map[string]any
		if err := json.Unmarshal([]byte(body), &f); code != http.StatusOK || err != nil || f["read_only"] != false {
			t.Errorf("features with --allow-actions: %d %s (%v); want read_only false", code, body, err)
		}
	})

	t.Run("ChartRefresh", func(t *testing.T) {
		base, stop := serveConsole(t, dbURL, nil, "--chart-refresh", "2s")
		defer stop()
		req, _ := http.NewRequest(http.MethodGet, base+"/streams/orders.placed", nil)
		if code, body := get(t, req); code != http.StatusOK || !strings.Contains(body, `data-refresh-ms="2000"`) {
			t.Errorf("stream page with --chart-refresh 2s: %d; want the charts redrawn every 2000 ms:\n%.400s", code, body)
		}
	})

	t.Run("BasicAuth", func(t *testing.T) {
		base, stop := serveConsole(t, dbURL, map[string]string{sqlstreamscli.EnvConsolePassword: "s3cret"}, "--basic-auth", "ops")
		defer stop()
		req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
		if code, _ := get(t, req); code != http.StatusUnauthorized {
			t.Errorf("GET without credentials: %d; want 401", code)
		}
		req, _ = http.NewRequest(http.MethodGet, base+"/", nil)
		req.SetBasicAuth("ops", "wrong")
		if code, _ := get(t, req); code != http.StatusUnauthorized {
			t.Errorf("GET with a wrong password: %d; want 401", code)
		}
		req, _ = http.NewRequest(http.MethodGet, base+"/", nil)
		req.SetBasicAuth("ops", "s3cret")
		if code, body := get(t, req); code != http.StatusOK || !strings.Contains(body, "orders.placed") {
			t.Errorf("GET with credentials: %d; want 200", code)
		}
	})

	t.Run("Usage", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"console", "--basic-auth", "ops"}, "needs the password in $" + sqlstreamscli.EnvConsolePassword},
			{[]string{"console", "--prefix", "ops/"}, "--prefix"},
			{[]string{"-o", "json", "console"}, "no -o json"},
		} {
			r := cli(t, dbURL, tc.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("sqlstreams %s: %v; want exit 2 mentioning %q", strings.Join(tc.args, " "), r, tc.want)
			}
		}
	})
}
