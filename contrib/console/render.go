package console

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sqlstreams/sqlstreams/contrib/console/view"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// layout is what every HTML page gets around its own data.
type layout struct {
	Title string
	Flash string
	Page  any
}

func (h *handler) parseTemplates() error {
	funcs := template.FuncMap{
		// url joins path segments under the prefix, escaping each one.
		"url": func(segs ...any) string {
			var b strings.Builder
			b.WriteString(h.prefix)
			for _, s := range segs {
				b.WriteByte('/')
				b.WriteString(url.PathEscape(fmt.Sprint(s)))
			}
			if len(segs) == 0 {
				b.WriteByte('/')
			}
			return b.String()
		},
		"static": func(name string) string { return h.prefix + "/static/" + name },
		"csrf":   func() string { return h.csrf },
		// refreshMs is Options.ChartRefresh for charts.js, refresh the
		// same for people.
		"refreshMs": func() int64 { return h.opts.ChartRefresh.Milliseconds() },
		"refresh":   func() string { return h.opts.ChartRefresh.String() },
		"actions":   func() bool { return h.opts.AllowActions },
		"ts":        formatTime,
		"ago":       view.Ago,
		"rfc3339": func(t time.Time) string {
			if t.IsZero() {
				return ""
			}
			return t.UTC().Format(time.RFC3339)
		},
		"ints":    joinInts,
		"pretty":  view.PrettyJSON,
		"preview": preview,
		"levels":  schema.Levels,
		"modes": func() []sqlstreams.Mode {
			return []sqlstreams.Mode{sqlstreams.ModeReadWrite, sqlstreams.ModeReadOnly, sqlstreams.ModeImport}
		},
		"inc": func(n int) int { return n + 1 },
		// next shows a stored cursor (the last id passed) as the next id
		// to read, as the CLI and the JSON do.
		"next": func(cursor int64) int64 { return cursor + 1 },
		"dec":  func(n int) int { return n - 1 },
		"retention": func(maxAge time.Duration, maxRows int64, hard bool) string {
			var parts []string
			if maxAge > 0 {
				parts = append(parts, "max age "+maxAge.String())
			}
			if maxRows > 0 {
				parts = append(parts, "max "+strconv.FormatInt(maxRows, 10)+" rows")
			}
			if len(parts) == 0 {
				return "forever"
			}
			if hard {
				parts = append(parts, "hard")
			}
			return strings.Join(parts, ", ")
		},
	}
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/comparison.html")
	if err != nil {
		return fmt.Errorf("console: templates: %w", err)
	}
	names, err := fs.Glob(assets, "templates/*.html")
	if err != nil {
		return fmt.Errorf("console: templates: %w", err)
	}
	h.pages = map[string]*template.Template{}
	for _, n := range names {
		if n == "templates/layout.html" || n == "templates/comparison.html" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(assets, n)
		if err != nil {
			return fmt.Errorf("console: template %s: %w", n, err)
		}
		h.pages[strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")] = t
	}
	return nil
}

// render writes a page through the layout. The page is rendered to a
// buffer first, so a template failure is a clean 500, not half a page.
func (h *handler) render(w http.ResponseWriter, r *http.Request, code int, tmpl, title string, data any) {
	t, ok := h.pages[tmpl]
	if !ok {
		h.opts.Logger.Error("sqlstreams console: no template", "template", tmpl)
		http.Error(w, "console: missing template", http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", layout{Title: title, Flash: flashText(r.URL.Query()), Page: data}); err != nil {
		h.opts.Logger.Error("sqlstreams console: render failed", "template", tmpl, "error", err)
		http.Error(w, "console: the page failed to render; see the server log", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = buf.WriteTo(w)
}

// flashText is the confirmation shown after an action redirected back. The
// words are fixed here; the query only picks them and a count, so a crafted
// link cannot put text of its own on the page.
func flashText(q url.Values) string {
	n, _ := strconv.ParseInt(q.Get("n"), 10, 64)
	switch q.Get("done") {
	case "replayed":
		return fmt.Sprintf("Replayed %d dead letter(s): they are due again now.", n)
	case "discarded":
		return fmt.Sprintf("Discarded %d dead letter(s).", n)
	case "reset":
		return fmt.Sprintf("Moved %d cursor(s).", n)
	case "deleted":
		return "Group deleted."
	case "settings":
		return "Registry settings saved."
	case "paused":
		return "Group paused: no member claims until it is resumed; leased deliveries finish as usual."
	case "resumed":
		return "Group resumed: members claim again at their next poll."
	case "altered":
		return "Stream changed."
	}
	return ""
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// previewBytes bounds a payload shown in a list; the message's own page
// (?id=) shows it whole.
const previewBytes = 2000

// preview is view.PrettyJSON cut to previewBytes at a character boundary.
func preview(raw []byte) string {
	s := view.PrettyJSON(raw)
	if len(s) <= previewBytes {
		return s
	}
	cut := previewBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "\n… (" + strconv.Itoa(len(raw)) + " bytes; open the message for all of it)"
}
