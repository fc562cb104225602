package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// ErrInvalidOptions: New was given a nil client or a malformed prefix.
var ErrInvalidOptions = errors.New("console: invalid options")

// Options configure New. The zero value serves a read-only console at the
// root of the host's mux.
type Options struct {
	// Prefix is the path the console is mounted under, such as "/console":
	// it starts with "/" and has no trailing slash; "" mounts at the root.
	// Mount the handler on the prefix with a trailing slash
	// (mux.Handle("/console/", h)); it matches the full request path, so do
	// not wrap it in http.StripPrefix. Every link and form it renders stays
	// under the prefix.
	Prefix string
	// AllowActions turns on the buttons that change state (replay, discard,
	// reset cursors, delete a group, registry settings). By default the
	// console is read-only: the buttons render disabled and every POST
	// answers 403, so a console exposed by mistake cannot change anything.
	AllowActions bool
	// Logger receives one record per failed request and per action taken.
	// The default is slog.Default().
	Logger *slog.Logger
	// RequestTimeout bounds the database work of one request. The default
	// is 30s.
	RequestTimeout time.Duration
	// ChartRefresh is how often an open stream page reads its Activity
	// history again and redraws the charts, without a reload. Samples are
	// taken about once a minute (sqlstreams.WithSampleInterval), so a
	// shorter refresh mostly redraws the same points; it is here for hosts
	// sampling faster, and for tests that watch a chart grow. The default
	// is 30s.
	ChartRefresh time.Duration
}

//go:embed templates/*.html static/*
var assets embed.FS

// New returns the console for client as an http.Handler. The console has no
// authentication of its own: put it behind the host's (or BasicAuth). POSTs
// are refused from other origins (Sec-Fetch-Site and Origin, Go's
// http.CrossOriginProtection) and without the per-process form token the
// pages embed.
func New(client *sqlstreams.Client, opts Options) (http.Handler, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil client; pass the *sqlstreams.Client the console reads", ErrInvalidOptions)
	}
	p := opts.Prefix
	if p != "" && (!strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.ContainsAny(p, "{}?#% \t\n") || strings.Contains(p, "//")) {
		return nil, fmt.Errorf("%w: prefix %q; use \"\" or a path such as \"/console\" (leading slash, no trailing slash)", ErrInvalidOptions, p)
	}
	if opts.RequestTimeout < 0 {
		return nil, fmt.Errorf("%w: RequestTimeout %v is negative; use 0 for the default of 30s", ErrInvalidOptions, opts.RequestTimeout)
	}
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = 30 * time.Second
	}
	if opts.ChartRefresh < 0 {
		return nil, fmt.Errorf("%w: ChartRefresh %v is negative; use 0 for the default of 30s", ErrInvalidOptions, opts.ChartRefresh)
	}
	if opts.ChartRefresh == 0 {
		opts.ChartRefresh = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	var tok [32]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return nil, fmt.Errorf("console: form token: %w", err)
	}
	h := &handler{client: client, opts: opts, prefix: p, csrf: hex.EncodeToString(tok[:]),
		mux: http.NewServeMux(), cop: http.NewCrossOriginProtection()}
	_, h.hasRegistry = client.Driver().(driver.Registry)
	if err := h.parseTemplates(); err != nil {
		return nil, err
	}
	h.routes()
	return h, nil
}

type handler struct {
	client      *sqlstreams.Client
	opts        Options
	prefix      string
	csrf        string
	hasRegistry bool
	mux         *http.ServeMux
	cop         *http.CrossOriginProtection
	pages       map[string]*template.Template
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("Cache-Control", "no-store") // pages show live state and payloads; static files override it
	h.mux.ServeHTTP(w, r)
}

// routes registers every page twice: at its path (HTML, or JSON when asked
// for) and under /api (always JSON), as River UI serves its API.
func (h *handler) routes() {
	p := h.prefix
	pages := []struct {
		path, tmpl string
		fn         func(*http.Request) (any, error)
	}{
		{"/{$}", "streams", h.streamsPage},
		{"/streams/{stream}", "stream", h.streamPage},
		{"/streams/{stream}/groups/{group}", "group", h.groupPage},
		{"/streams/{stream}/groups/{group}/dead", "dead", h.deadPage},
		{"/streams/{stream}/groups/{group}/dead/{id}", "deadletter", h.deadLetterPage},
		{"/streams/{stream}/messages", "messages", h.messagesPage},
		{"/streams/{stream}/schemas", "schemas", h.schemasPage},
		{"/streams/{stream}/schemas/{version}", "schemadiff", h.schemaDiffPage},
		{"/registry", "registry", h.registryPage},
		{"/registry/subjects/{subject}", "subject", h.subjectPage},
		{"/registry/subjects/{subject}/diff", "subjectdiff", h.subjectDiffPage},
	}
	for _, pg := range pages {
		h.mux.Handle("GET "+p+pg.path, h.page(pg.tmpl, pg.fn, false))
		api := pg.path
		if api == "/{$}" {
			api = "/streams"
		}
		h.mux.Handle("GET "+p+"/api"+api, h.page(pg.tmpl, pg.fn, true))
	}
	h.mux.Handle("GET "+p+"/api/streams/{stream}/history", h.page("", h.historyPage, true))
	h.mux.HandleFunc("GET "+p+"/api/features", h.features)
	h.mux.HandleFunc("GET "+p+"/healthz", h.healthz)
	h.mux.HandleFunc("GET "+p+"/api/healthz", h.healthz)
	static, _ := fs.Sub(assets, "static")
	h.mux.Handle("GET "+p+"/static/", http.StripPrefix(p+"/static/", staticFiles(static)))

	actions := []struct {
		path string
		fn   func(http.ResponseWriter, *http.Request) (*actionResult, error)
	}{
		{"/streams/{stream}/groups/{group}/dead/replay", h.replay},
		{"/streams/{stream}/groups/{group}/dead/discard", h.discard},
		{"/streams/{stream}/groups/{group}/reset", h.reset},
		{"/streams/{stream}/groups/{group}/delete", h.deleteGroup},
		{"/streams/{stream}/groups/{group}/pause", h.pause},
		{"/streams/{stream}/groups/{group}/resume", h.resume},
		{"/streams/{stream}/alter", h.alter},
		{"/registry/settings", h.settings},
	}
	for _, a := range actions {
		h.mux.Handle("POST "+p+a.path, h.action(a.fn))
	}
	// Anything else under the prefix: a 404 in the console's own words.
	h.mux.HandleFunc(p+"/", func(w http.ResponseWriter, r *http.Request) {
		h.fail(w, r, wantsJSON(r), fmt.Errorf("%w: no console page at %s", errNotFound, r.URL.Path))
	})
}

func staticFiles(fsys fs.FS) http.Handler {
	files := http.FileServerFS(fsys)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		files.ServeHTTP(w, r)
	})
}

var (
	errNotFound   = errors.New("not found")
	errBadRequest = errors.New("bad request")
	errConflict   = errors.New("conflict")
)

// status maps an error to the HTTP status and the text a user sees. Errors
// the user can act on (names, options, missing things) are shown whole;
// anything else is logged and shown as a generic database error, so no raw
// driver error reaches the page.
func status(err error) (int, string) {
	switch {
	case errors.Is(err, errNotFound), errors.Is(err, sqlstreams.ErrStreamNotFound), errors.Is(err, sqlstreams.ErrGroupNotFound),
		errors.Is(err, sqlstreams.ErrDeadLetterNotFound), errors.Is(err, sqlstreams.ErrSubjectNotFound),
		errors.Is(err, sqlstreams.ErrSubjectVersionNotFound), errors.Is(err, sqlstreams.ErrSchemaNotFound):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, errBadRequest), errors.Is(err, sqlstreams.ErrInvalidOption), errors.Is(err, sqlstreams.ErrInvalidName):
		return http.StatusBadRequest, err.Error()
	case errors.Is(err, errConflict), errors.Is(err, sqlstreams.ErrReadOnly):
		return http.StatusConflict, err.Error()
	case errors.Is(err, errForbidden):
		return http.StatusForbidden, err.Error()
	case errors.Is(err, sqlstreams.ErrUnsupported), errors.Is(err, sqlstreams.ErrNoSubjects):
		return http.StatusNotImplemented, err.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout, "the database did not answer in time; try again, or raise Options.RequestTimeout"
	case errors.Is(err, sqlstreams.ErrUnavailable):
		return http.StatusServiceUnavailable, "the database is unavailable; see the server log"
	}
	return http.StatusInternalServerError, "the database call failed; see the server log for the error"
}

// wantsJSON reports whether the request asks for JSON: ?format=json or an
// Accept header that prefers application/json to text/html.
func wantsJSON(r *http.Request) bool {
	if f := r.URL.Query().Get("format"); f != "" {
		return f == "json"
	}
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case "application/json":
			return true
		case "text/html":
			return false
		}
	}
	return false
}

func (h *handler) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), h.opts.RequestTimeout)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	// Indented and without HTML escaping, as the CLI's -o json writes it:
	// the same document, byte for byte (the answer is never HTML, and
	// nosniff stops a browser from taking it for some).
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// errorBody is the JSON answer of a failed request.
type errorBody struct {
	Error  string `json:"error"`
	Status int    `json:"status"`
}

func (h *handler) fail(w http.ResponseWriter, r *http.Request, asJSON bool, err error) {
	code, text := status(err)
	if code >= 500 {
		h.opts.Logger.Error("sqlstreams console: request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	} else {
		h.opts.Logger.Debug("sqlstreams console: request refused", "method", r.Method, "path", r.URL.Path, "status", code, "error", err)
	}
	if asJSON {
		writeJSON(w, code, errorBody{Error: text, Status: code})
		return
	}
	h.render(w, r, code, "error", "Error", errorPage{Status: code, StatusText: http.StatusText(code), Message: text})
}

type errorPage struct {
	Status     int
	StatusText string
	Message    string
}

// page serves one read-only page as HTML or JSON.
func (h *handler) page(tmpl string, fn func(*http.Request) (any, error), api bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asJSON := api || wantsJSON(r)
		data, err := fn(r)
		if err != nil {
			h.fail(w, r, asJSON, err)
			return
		}
		if asJSON {
			if d, ok := data.(documented); ok {
				data = d.document()
			}
			writeJSON(w, http.StatusOK, data)
			return
		}
		h.render(w, r, http.StatusOK, tmpl, titleOf(data), data)
	})
}

// documented is implemented by page data whose JSON form is a document of
// package view: the one JSON shape the CLI prints too.
type documented interface{ document() any }

// titled is implemented by page data that names its page.
type titled interface{ title() string }

func titleOf(data any) string {
	if t, ok := data.(titled); ok {
		return t.title()
	}
	return "sqlstreams"
}

// BasicAuth wraps h so that every request needs the given user name and
// password (HTTP basic authentication), compared in constant time. It is
// for the standalone console (sqlstreams console --listen); an embedding
// application puts the console behind its own authentication instead. An
// empty user name refuses every request, so a missing setting cannot open
// the console.
func BasicAuth(h http.Handler, user, pass string) http.Handler {
	wantUser, wantPass := sha256.Sum256([]byte(user)), sha256.Sum256([]byte(pass))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		gotUser, gotPass := sha256.Sum256([]byte(u)), sha256.Sum256([]byte(p))
		userOK := subtle.ConstantTimeCompare(gotUser[:], wantUser[:])
		passOK := subtle.ConstantTimeCompare(gotPass[:], wantPass[:])
		if !ok || user == "" || userOK&passOK != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="sqlstreams console", charset="UTF-8"`)
			http.Error(w, "sqlstreams console: authentication required", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
