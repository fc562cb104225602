package console

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/sqlstreams/sqlstreams/contrib/console/view"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// AlterForm is the stream page's form for Stream.Alter, as typed: an empty
// field keeps the stored setting, as a flag left out of `sqlstreams streams
// alter` does.
type AlterForm struct {
	Partitions string // a count, or "" to keep
	Compacted  string // "on", "off" or "" to keep
	MaxAge     string // a Go duration ("72h"), "0" for none, or "" to keep
	MaxRows    string // a count, "0" for none, or "" to keep
	Hard       string // "on", "off" or "" to keep
}

func alterFormOf(r *http.Request) AlterForm {
	f := r.PostForm
	return AlterForm{Partitions: f.Get("partitions"), Compacted: f.Get("compacted"), MaxAge: f.Get("max_age"),
		MaxRows: f.Get("max_rows"), Hard: f.Get("hard")}
}

// changes reads the form into StreamChanges on top of the stored settings.
func (f AlterForm) changes(stored sqlstreams.StreamInfo) (sqlstreams.StreamChanges, error) {
	var ch sqlstreams.StreamChanges
	if f.Partitions != "" {
		n, err := strconv.Atoi(f.Partitions)
		if err != nil || n < 1 {
			return ch, fmt.Errorf("%w: partitions %q: give a count of 1 or more (now %d)", errBadRequest, f.Partitions, stored.Partitions)
		}
		ch.Partitions = n
	}
	compacted, err := onOff("compacted", f.Compacted)
	if err != nil {
		return ch, err
	}
	ch.Compacted = compacted
	r, touched := stored.Retention, false
	if f.MaxAge != "" {
		d, err := time.ParseDuration(f.MaxAge)
		if err != nil || d < 0 {
			return ch, fmt.Errorf("%w: max age %q: give a duration such as 72h, or 0 for no limit", errBadRequest, f.MaxAge)
		}
		r.MaxAge, touched = d, true
	}
	if f.MaxRows != "" {
		n, err := strconv.ParseInt(f.MaxRows, 10, 64)
		if err != nil || n < 0 {
			return ch, fmt.Errorf("%w: max rows %q: give a count, or 0 for no limit", errBadRequest, f.MaxRows)
		}
		r.MaxRows, touched = n, true
	}
	hard, err := onOff("hard", f.Hard)
	if err != nil {
		return ch, err
	}
	if hard != nil {
		r.Hard, touched = *hard, true
	}
	if touched {
		ch.Retention = &r
	}
	return ch, nil
}

// onOff reads a three-way switch: "on", "off", or "" for no change.
func onOff(field, v string) (*bool, error) {
	switch v {
	case "":
		return nil, nil
	case "on", "off":
		b := v == "on"
		return &b, nil
	}
	return nil, fmt.Errorf("%w: %s %q: choose on, off, or leave it as it is", errBadRequest, field, v)
}

// alter plans a change to a stream (dry_run=1: the stream page with the
// plan and a button that applies it) or makes it, as groups' reset does.
func (h *handler) alter(w http.ResponseWriter, r *http.Request) (*actionResult, error) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	name := r.PathValue("stream")
	s := h.client.Stream[sqlstreams.RawPayload](name)
	stored, err := s.Get(ctx)
	if err != nil {
		return nil, err
	}
	form := alterFormOf(r)
	ch, err := form.changes(stored)
	if err != nil {
		return nil, err
	}
	plan, err := view.PlanAlter(stored, ch)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBadRequest, err)
	}
	if r.PostForm.Get("dry_run") == "1" {
		page, err := h.stream(ctx, name)
		if err != nil {
			return nil, err
		}
		page.AlterPlan, page.Alter = &plan, &form
		return &actionResult{Action: "alter-plan", show: page, showTpl: "stream"}, nil
	}
	if _, err := s.Alter(ctx, ch); err != nil {
		return nil, err
	}
	return &actionResult{Action: "altered", Count: 1, back: pathOf("streams", name) + "?done=altered"}, nil
}

// pause and resume stop and restart a group's claims in every process.
func (h *handler) pause(w http.ResponseWriter, r *http.Request) (*actionResult, error) {
	return h.setPaused(r, "paused", (*sqlstreams.GroupAdmin).Pause)
}

func (h *handler) resume(w http.ResponseWriter, r *http.Request) (*actionResult, error) {
	return h.setPaused(r, "resumed", (*sqlstreams.GroupAdmin).Resume)
}

func (h *handler) setPaused(r *http.Request, done string, fn func(*sqlstreams.GroupAdmin, context.Context) error) (*actionResult, error) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	stream, group := r.PathValue("stream"), r.PathValue("group")
	if err := fn(h.client.Stream[sqlstreams.RawPayload](stream).Group(group), ctx); err != nil {
		return nil, err
	}
	return &actionResult{Action: done, Count: 1, back: pathOf("streams", stream, "groups", group) + "?done=" + done}, nil
}
