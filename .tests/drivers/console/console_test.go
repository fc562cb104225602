package console_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/contrib/console"
)

func TestNewRefusesBadOptions(t *testing.T) {
	t.Parallel()
	c := openClient(t, engines()[0])
	for _, tc := range []struct {
		name string
		opts console.Options
		want string
	}{
		{"no leading slash", console.Options{Prefix: "console"}, "leading slash"},
		{"trailing slash", console.Options{Prefix: "/console/"}, "no trailing slash"},
		{"pattern characters", console.Options{Prefix: "/con{sole}"}, `prefix "/con{sole}"`},
		{"negative timeout", console.Options{RequestTimeout: -1}, "RequestTimeout"},
		{"negative chart refresh", console.Options{ChartRefresh: -time.Second}, "ChartRefresh"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := console.New(c, tc.opts)
			if !errors.Is(err, console.ErrInvalidOptions) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want ErrInvalidOptions with %q", err, tc.want)
			}
		})
	}
	if _, err := console.New(nil, console.Options{}); !errors.Is(err, console.ErrInvalidOptions) {
		t.Fatalf("nil client: %v", err)
	}
}

// At the root, with no prefix, the pages and links work the same.
func TestMountedAtRoot(t *testing.T) {
	t.Parallel()
	c := openClient(t, engines()[0])
	seed(t, c)
	h, err := console.New(c, console.Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	code, body := get(t, srv.URL, "/")
	if code != 200 || !strings.Contains(body, `href="/streams/orders.placed"`) || !strings.Contains(body, `href="/static/console.css"`) {
		t.Fatalf("root: %d %s", code, body)
	}
	if code, body := get(t, srv.URL, "/static/console.css"); code != 200 || !strings.Contains(body, "sqlstreams console") {
		t.Fatalf("stylesheet: %d", code)
	}
}

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	c := openClient(t, engines()[0])
	srv := serve(t, c, false)
	resp, err := http.Get(srv.URL + prefix + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for k, want := range map[string]string{
		"Content-Security-Policy": "default-src 'self'",
		"X-Frame-Options":         "DENY",
		"X-Content-Type-Options":  "nosniff",
		"Content-Type":            "text/html; charset=utf-8",
	} {
		if got := resp.Header.Get(k); !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
}

func TestJSONNegotiation(t *testing.T) {
	t.Parallel()
	c := openClient(t, engines()[0])
	seed(t, c)
	srv := serve(t, c, false).URL + prefix
	for _, tc := range []struct {
		path   string
		accept string
		json   bool
	}{
		{"/", "", false},
		{"/", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", false},
		{"/", "application/json", true},
		{"/?format=json", "text/html", true},
		{"/api/streams", "text/html", true},
		{"/registry?format=html", "application/json", false},
	} {
		code, body := get(t, srv, tc.path, "Accept", tc.accept)
		if code != 200 || strings.HasPrefix(body, "{") != tc.json {
			t.Errorf("GET %s (Accept %q): %d, JSON %v: %.80s", tc.path, tc.accept, code, tc.json, body)
		}
	}
}

func TestBasicAuth(t *testing.T) {
	t.Parallel()
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("in")) })
	for _, tc := range []struct {
		name         string
		user, pass   string
		sendU, sendP string
		send         bool
		code         int
	}{
		{"right", "ops", "s3cret", "ops", "s3cret", true, 200},
		{"wrong password", "ops", "s3cret", "ops", "s3cre", true, 401},
		{"wrong user", "ops", "s3cret", "op", "s3cret", true, 401},
		{"none sent", "ops", "s3cret", "", "", false, 401},
		{"empty user configured refuses all", "", "", "", "", true, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			if tc.send {
				req.SetBasicAuth(tc.sendU, tc.sendP)
			}
			console.BasicAuth(ok, tc.user, tc.pass).ServeHTTP(rec, req)
			if rec.Code != tc.code {
				t.Fatalf("status %d, want %d", rec.Code, tc.code)
			}
			if tc.code == 401 && !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Basic ") {
				t.Fatalf("no challenge: %v", rec.Header())
			}
		})
	}
}
