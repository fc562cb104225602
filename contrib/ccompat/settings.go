package ccompat

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// readMode reads a PUT /mode body.
func readMode(r *http.Request) (sqlstreams.Mode, error) {
	var req struct {
		Mode string `json:"mode"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return "", errorf(http.StatusUnprocessableEntity, codeInvalidMode, "Invalid mode: unreadable body (%v); send {\"mode\":\"READWRITE\"}", err)
	}
	if strings.EqualFold(req.Mode, "READONLY_OVERRIDE") {
		return "", errorf(http.StatusUnprocessableEntity, codeInvalidMode,
			"Invalid mode READONLY_OVERRIDE: sqlstreams has READWRITE, READONLY and IMPORT; READONLY already refuses every new schema")
	}
	mode, err := sqlstreams.ParseMode(req.Mode)
	if err != nil {
		return "", errorf(http.StatusUnprocessableEntity, codeInvalidMode, "Invalid mode %q: %v", req.Mode, err)
	}
	return mode, nil
}

func forced(r *http.Request) bool { return r.URL.Query().Get("force") == "true" }

// importNeedsForce refuses a registry-wide IMPORT without force=true where
// schemas are recorded already, as Confluent refuses it on a non-empty
// registry. A subject's own IMPORT is refused the same way by
// Registry.SetSubjectMode and Registry.SetVersionMode (ErrNotEmpty).
func (h *handler) importNeedsForce(r *http.Request, mode sqlstreams.Mode) error {
	if mode != sqlstreams.ModeImport || forced(r) {
		return nil
	}
	subjects, err := h.reg.Subjects(r.Context())
	if err != nil {
		return err
	}
	free, err := h.reg.FreeSubjects(r.Context(), true)
	if err != nil {
		return err
	}
	if n := len(subjects) + len(free); n > 0 {
		return errorf(http.StatusUnprocessableEntity, codeNotPermitted,
			"Operation not permitted: cannot import since schemas are registered already (%d subject(s)); send force=true to import next to them", n)
	}
	return nil
}

// ownSettings are the settings of the subject a /config/{subject} or
// /mode/{subject} request names: a free subject's, or a stream version's
// ({stream}-v{N}). Both have a level and a mode of their own, settable
// before the first registration, and both fall back to a wider scope
// (the stream's, the registry-wide one) that the subject does not own.
type ownSettings struct {
	own        string // the Setting.Scope of a value set on the subject itself
	level      func(context.Context) (sqlstreams.Setting[schema.Level], error)
	setLevel   func(context.Context, schema.Level) error
	clearLevel func(context.Context) error
	mode       func(context.Context) (sqlstreams.Setting[sqlstreams.Mode], error)
	setMode    func(context.Context, sqlstreams.Mode, bool) error
	clearMode  func(context.Context) error
}

// settingsOf is the settings scope of a subject.
func (h *handler) settingsOf(s subjectRef) ownSettings {
	if !s.free {
		return h.versionSettings(s)
	}
	return ownSettings{own: "subject",
		level: func(ctx context.Context) (sqlstreams.Setting[schema.Level], error) {
			return h.reg.SubjectLevel(ctx, s.name)
		},
		setLevel:   func(ctx context.Context, l schema.Level) error { return h.reg.SetSubjectLevel(ctx, s.name, l) },
		clearLevel: func(ctx context.Context) error { return h.reg.ClearSubjectLevel(ctx, s.name) },
		mode: func(ctx context.Context) (sqlstreams.Setting[sqlstreams.Mode], error) {
			return h.reg.SubjectMode(ctx, s.name)
		},
		setMode: func(ctx context.Context, m sqlstreams.Mode, force bool) error {
			return h.reg.SetSubjectMode(ctx, s.name, m, force)
		},
		clearMode: func(ctx context.Context) error { return h.reg.ClearSubjectMode(ctx, s.name) },
	}
}

// versionSettings is a stream version's settings scope. Before its stream
// exists the version has none of its own (the registry-wide ones are in
// force), and setting one creates the stream with defaults, as its first
// registration would: a Kafka client sets a subject's level before it
// registers there.
func (h *handler) versionSettings(s subjectRef) ownSettings {
	ensure := func(ctx context.Context) error {
		_, err := h.client.Stream[sqlstreams.RawPayload](s.stream).Create(ctx, nil)
		if errors.Is(err, sqlstreams.ErrStreamExists) {
			return nil
		}
		return err
	}
	return ownSettings{own: "version",
		level: func(ctx context.Context) (sqlstreams.Setting[schema.Level], error) {
			l, err := h.reg.VersionLevel(ctx, s.stream, s.version)
			if errors.Is(err, sqlstreams.ErrStreamNotFound) {
				return h.reg.Level(ctx, sqlstreams.RegistryWide)
			}
			return l, err
		},
		setLevel: func(ctx context.Context, l schema.Level) error {
			if err := ensure(ctx); err != nil {
				return err
			}
			return h.reg.SetVersionLevel(ctx, s.stream, s.version, l)
		},
		clearLevel: func(ctx context.Context) error { return h.reg.ClearVersionLevel(ctx, s.stream, s.version) },
		mode: func(ctx context.Context) (sqlstreams.Setting[sqlstreams.Mode], error) {
			m, err := h.reg.VersionMode(ctx, s.stream, s.version)
			if errors.Is(err, sqlstreams.ErrStreamNotFound) {
				return h.reg.Mode(ctx, sqlstreams.RegistryWide)
			}
			return m, err
		},
		setMode: func(ctx context.Context, m sqlstreams.Mode, force bool) error {
			if err := ensure(ctx); err != nil {
				return err
			}
			return h.reg.SetVersionMode(ctx, s.stream, s.version, m, force)
		},
		clearMode: func(ctx context.Context) error { return h.reg.ClearVersionMode(ctx, s.stream, s.version) },
	}
}

// subjectSettings serves /config/{subject} and /mode/{subject} and reports
// whether it did (not for the registry-wide /config and /mode): a level or
// mode belongs to the subject it is set on (a free subject or one stream
// version), can be set before its first version, and a subject without its
// own answers 40408 / 40409 unless defaultToGlobal.
func (h *handler) subjectSettings(w http.ResponseWriter, r *http.Request) bool {
	if r.PathValue("subject") == "" {
		return false
	}
	s, err := h.subject(r, r.Method != http.MethodGet)
	var out any
	switch {
	case err != nil:
	case strings.HasPrefix(r.URL.Path, "/config/"):
		out, err = h.subjectConfig(r, s, h.settingsOf(s))
	default:
		out, err = h.subjectMode(r, s, h.settingsOf(s))
	}
	if err != nil {
		h.fail(w, r, err)
		return true
	}
	h.write(w, http.StatusOK, out)
	return true
}

func (h *handler) subjectConfig(r *http.Request, s subjectRef, set ownSettings) (any, error) {
	ctx := r.Context()
	if r.Method == http.MethodPut {
		level, err := readLevel(r)
		if err != nil {
			return nil, err
		}
		return struct {
			Level string `json:"compatibility"`
		}{level.String()}, set.setLevel(ctx, level)
	}
	level, err := set.level(ctx)
	if err != nil {
		return nil, err
	}
	own := level.Scope == set.own
	switch {
	case r.Method == http.MethodDelete && own:
		err = set.clearLevel(ctx)
	case !own && (r.Method == http.MethodDelete || r.URL.Query().Get("defaultToGlobal") != "true"):
		return nil, errorf(http.StatusNotFound, codeSubjectLevelNoLevel,
			"Subject '%s' does not have subject-level compatibility configured; ask with defaultToGlobal=true for the %s level %s", s.name, level.Scope, level.Value)
	}
	return struct {
		Level     string `json:"compatibilityLevel"`
		LevelName string `json:"compatibility,omitempty"`
	}{Level: level.Value.String(), LevelName: deleteEcho(r, level.Value)}, err
}

// deleteEcho is the level under Confluent's other field name, which a
// DELETE answers with too.
func deleteEcho(r *http.Request, l schema.Level) string {
	if r.Method == http.MethodDelete {
		return l.String()
	}
	return ""
}

func (h *handler) subjectMode(r *http.Request, s subjectRef, set ownSettings) (any, error) {
	ctx := r.Context()
	type answer struct {
		Mode string `json:"mode"`
	}
	if r.Method == http.MethodPut {
		mode, err := readMode(r)
		if err != nil {
			return nil, err
		}
		return answer{string(mode)}, set.setMode(ctx, mode, forced(r))
	}
	mode, err := set.mode(ctx)
	if err != nil {
		return nil, err
	}
	own := mode.Scope == set.own
	switch {
	case r.Method == http.MethodDelete && own:
		err = set.clearMode(ctx)
	case !own && (r.Method == http.MethodDelete || r.URL.Query().Get("defaultToGlobal") != "true"):
		return nil, errorf(http.StatusNotFound, codeSubjectLevelNoMode,
			"Subject '%s' does not have subject-level mode configured; ask with defaultToGlobal=true for the %s mode %s", s.name, mode.Scope, mode.Value)
	}
	return answer{string(mode.Value)}, err
}
