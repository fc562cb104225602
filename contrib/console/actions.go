package console

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sqlstreams/sqlstreams/contrib/console/view"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

var errForbidden = errors.New("forbidden")

// actionResult is what an action did: the JSON answer (as a
// view.ActionResult), and for a browser
// the page to go back to (Post/Redirect/Get) or a page to show instead.
type actionResult struct {
	Action string
	Count  int64
	// Plan is a dry-run reset's planned moves.
	Plan []sqlstreams.CursorChange

	back    string // path under the prefix to redirect to
	show    any    // page data to render instead of redirecting
	showTpl string
}

// maxFormBytes bounds an action's form.
const maxFormBytes = 64 << 10

// action guards a state-changing handler: other origins, read-only mode and
// a missing or wrong form token all answer 403 before anything runs.
func (h *handler) action(fn func(http.ResponseWriter, *http.Request) (*actionResult, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asJSON := wantsJSON(r)
		if err := h.cop.Check(r); err != nil {
			h.fail(w, r, asJSON, fmt.Errorf("%w: cross-origin request refused (%v); use the console from its own origin", errForbidden, err))
			return
		}
		if !h.opts.AllowActions {
			h.fail(w, r, asJSON, fmt.Errorf("%w: the console is read-only; start it with actions allowed (Options.AllowActions, or sqlstreams console --allow-actions) to change anything", errForbidden))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			h.fail(w, r, asJSON, fmt.Errorf("%w: unreadable form: %v", errBadRequest, err))
			return
		}
		tok := r.PostForm.Get("csrf")
		if tok == "" {
			tok = r.Header.Get("X-CSRF-Token")
		}
		if subtle.ConstantTimeCompare([]byte(tok), []byte(h.csrf)) != 1 {
			h.fail(w, r, asJSON, fmt.Errorf("%w: missing or stale form token; reload the page and try again", errForbidden))
			return
		}
		res, err := fn(w, r)
		if err != nil {
			h.fail(w, r, asJSON, err)
			return
		}
		h.opts.Logger.Info("sqlstreams console: action", "action", res.Action, "path", r.URL.Path, "count", res.Count)
		switch {
		case asJSON:
			writeJSON(w, http.StatusOK, view.ActionResult{Action: res.Action, Count: res.Count, Changes: view.CursorChangesOf(res.Plan)})
		case res.show != nil:
			h.render(w, r, http.StatusOK, res.showTpl, titleOf(res.show), res.show)
		default:
			http.Redirect(w, r, h.prefix+res.back, http.StatusSeeOther)
		}
	})
}

func pathOf(segs ...string) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

// ids reads the selected dead-letter ids; all=1 selects every one.
func ids(r *http.Request) (all bool, out []int64, err error) {
	if r.PostForm.Get("all") == "1" {
		return true, nil, nil
	}
	for _, s := range r.PostForm["id"] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			return false, nil, fmt.Errorf("%w: dead letter id %q; tick the rows to act on", errBadRequest, s)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return false, nil, fmt.Errorf("%w: no dead letter selected; tick rows, or use the button for all of them", errBadRequest)
	}
	return false, out, nil
}

func (h *handler) replay(w http.ResponseWriter, r *http.Request) (*actionResult, error) {
	return h.onDead(r, "replayed", (*sqlstreams.GroupAdmin).ReplayAll, (*sqlstreams.GroupAdmin).Replay)
}

func (h *handler) discard(w http.ResponseWriter, r *http.Request) (*actionResult, error) {
	return h.onDead(r, "discarded", (*sqlstreams.GroupAdmin).DiscardAll, (*sqlstreams.GroupAdmin).Discard)
}

func (h *handler) onDead(r *http.Request, done string, onAll func(*sqlstreams.GroupAdmin, context.Context) (int64, error),
	onSome func(*sqlstreams.GroupAdmin, context.Context, ...int64) (int64, error)) (*actionResult, error) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	stream, group := r.PathValue("stream"), r.PathValue("group")
	all, list, err := ids(r)
	if err != nil {
		return nil, err
	}
	g := h.client.Stream[sqlstreams.RawPayload](stream).Group(group)
	if _, err := g.Describe(ctx); err != nil { // a clear 404 for a wrong name
		return nil, err
	}
	var n int64
	if all {
		n, err = onAll(g, ctx)
	} else {
		n, err = onSome(g, ctx, list...)
	}
	if err != nil {
		return nil, err
	}
	back := pathOf("streams", stream, "groups", group, "dead") + "?done=" + done + "&n=" + strconv.FormatInt(n, 10)
	return &actionResult{Action: done, Count: n, back: back}, nil
}

// resetTo reads the reset target of the form.
func resetTo(f ResetForm) (sqlstreams.ResetTo, error) {
	v := strings.TrimSpace(f.Value)
	num := func() (int64, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: reset value %q; give a whole number for %s", errBadRequest, f.Value, f.To)
		}
		return n, nil
	}
	switch f.To {
	case "earliest":
		return sqlstreams.ResetToEarliest(), nil
	case "latest":
		return sqlstreams.ResetToLatest(), nil
	case "id":
		n, err := num()
		return sqlstreams.ResetToID(n), err
	case "shift":
		n, err := num()
		return sqlstreams.ResetShift(n), err
	case "time":
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return sqlstreams.ResetTo{}, fmt.Errorf("%w: reset time %q; use RFC 3339, such as 2026-01-02T15:04:05Z", errBadRequest, f.Value)
		}
		return sqlstreams.ResetToTime(t), nil
	}
	return sqlstreams.ResetTo{}, fmt.Errorf("%w: reset to %q; use earliest, latest, id, time or shift", errBadRequest, f.To)
}

func partitions(s string) ([]int, error) {
	var out []int
	for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		n, err := strconv.Atoi(part)
		if err != nil {
			return nil, fmt.Errorf("%w: partition %q; list partition numbers such as 0,2 or leave it empty for all", errBadRequest, part)
		}
		out = append(out, n)
	}
	return out, nil
}

// reset plans a cursor reset (dry_run=1: the group page with the plan and
// a button that applies it) or makes it.
func (h *handler) reset(w http.ResponseWriter, r *http.Request) (*actionResult, error) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	stream, group := r.PathValue("stream"), r.PathValue("group")
	form := ResetForm{To: r.PostForm.Get("to"), Value: r.PostForm.Get("value"), Partitions: r.PostForm.Get("partitions")}
	to, err := resetTo(form)
	if err != nil {
		return nil, err
	}
	parts, err := partitions(form.Partitions)
	if err != nil {
		return nil, err
	}
	dry := r.PostForm.Get("dry_run") == "1"
	changes, err := h.client.Stream[sqlstreams.RawPayload](stream).Group(group).ResetCursors(ctx,
		sqlstreams.ResetOptions{To: to, Partitions: parts, DryRun: dry})
	if err != nil {
		return nil, err
	}
	if changes == nil {
		changes = []sqlstreams.CursorChange{}
	}
	if dry {
		page, err := h.group(ctx, stream, group)
		if err != nil {
			return nil, err
		}
		page.Plan, page.Reset = changes, &form
		return &actionResult{Action: "reset-plan", Count: int64(len(changes)), Plan: changes, show: page, showTpl: "group"}, nil
	}
	back := pathOf("streams", stream, "groups", group) + "?done=reset&n=" + strconv.Itoa(len(changes))
	return &actionResult{Action: "reset", Count: int64(len(changes)), Plan: changes, back: back}, nil
}

// deleteGroup deletes a group that is retirable, or any group after the
// form repeats its name: deleting one with work left loses that work.
func (h *handler) deleteGroup(w http.ResponseWriter, r *http.Request) (*actionResult, error) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	stream, group := r.PathValue("stream"), r.PathValue("group")
	page, err := h.group(ctx, stream, group)
	if err != nil {
		return nil, err
	}
	if !page.Retirable && r.PostForm.Get("confirm") != group {
		var why []string
		for _, b := range page.Blockers {
			why = append(why, b.Text)
		}
		return nil, fmt.Errorf("%w: group %s is not retirable (%s); type the group's name to delete it anyway, losing that work",
			errConflict, group, strings.Join(why, "; "))
	}
	if err := h.client.Stream[sqlstreams.RawPayload](stream).Group(group).Delete(ctx); err != nil {
		return nil, err
	}
	return &actionResult{Action: "deleted", Count: 1, back: pathOf("streams", stream) + "?done=deleted"}, nil
}

// settings changes a level or mode, of a stream (stream=name) or registry
// wide (stream empty). "INHERIT" clears the scope's own setting.
func (h *handler) settings(w http.ResponseWriter, r *http.Request) (*actionResult, error) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	if !h.hasRegistry {
		return nil, fmt.Errorf("%w: %w", errNotFound, sqlstreams.ErrNoRegistry)
	}
	reg := h.client.Registry()
	stream := r.PostForm.Get("stream")
	setMode := func() error {
		switch m := r.PostForm.Get("mode"); m {
		case "":
			return nil
		case "INHERIT":
			return reg.ClearMode(ctx, stream)
		default:
			mode, err := sqlstreams.ParseMode(m)
			if err != nil {
				return err
			}
			return reg.SetMode(ctx, stream, mode)
		}
	}
	setLevel := func() error {
		switch l := r.PostForm.Get("level"); l {
		case "":
			return nil
		case "INHERIT":
			return reg.ClearLevel(ctx, stream)
		default:
			level, err := schema.ParseLevel(l)
			if err != nil {
				return fmt.Errorf("%w: %v", errBadRequest, err)
			}
			return reg.SetLevel(ctx, stream, level)
		}
	}
	// READONLY refuses level changes: a form that closes the registry sets
	// the level first, one that reopens it sets the mode first.
	steps := []func() error{setMode, setLevel}
	if strings.EqualFold(r.PostForm.Get("mode"), string(sqlstreams.ModeReadOnly)) {
		steps = []func() error{setLevel, setMode}
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	n := int64(0)
	for _, f := range []string{"mode", "level"} {
		if r.PostForm.Get(f) != "" {
			n++
		}
	}
	back := "/registry?done=settings"
	if stream != "" {
		back = pathOf("streams", stream, "schemas") + "?done=settings"
	}
	return &actionResult{Action: "settings", Count: n, back: back}, nil
}
