package ccompat

import (
	"encoding/json"
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

// importNeedsForce refuses IMPORT without force=true where schemas are
// recorded already (the whole registry, or the stream), as Confluent
// refuses it on a non-empty registry.
func (h *handler) importNeedsForce(r *http.Request, stream string, mode sqlstreams.Mode) error {
	if mode != sqlstreams.ModeImport || forced(r) {
		return nil
	}
	subjects, err := h.reg.Subjects(r.Context())
	if err != nil {
		return err
	}
	n := 0
	for _, s := range subjects {
		if stream == sqlstreams.RegistryWide || s.Stream == stream {
			n++
		}
	}
	if stream == sqlstreams.RegistryWide {
		free, err := h.reg.FreeSubjects(r.Context(), true)
		if err != nil {
			return err
		}
		n += len(free)
	}
	if n == 0 {
		return nil
	}
	return errorf(http.StatusUnprocessableEntity, codeNotPermitted,
		"Operation not permitted: cannot import since schemas are registered already (%d subject(s)); send force=true to import next to them", n)
}

// freeSettings serves /config/{subject} and /mode/{subject} for a free
// subject and reports whether it did: a level or mode belongs to the
// subject it is set on, can be set before its first version, and a
// subject without its own answers 40408 / 40409 unless defaultToGlobal.
func (h *handler) freeSettings(w http.ResponseWriter, r *http.Request) bool {
	if r.PathValue("subject") == "" {
		return false
	}
	s, err := h.subject(r, r.Method != http.MethodGet)
	if err != nil || !s.free {
		return false
	}
	var out any
	if strings.HasPrefix(r.URL.Path, "/config/") {
		out, err = h.freeConfig(r, s)
	} else {
		out, err = h.freeMode(r, s)
	}
	if err != nil {
		h.fail(w, r, err)
		return true
	}
	h.write(w, http.StatusOK, out)
	return true
}

func (h *handler) freeConfig(r *http.Request, s subjectRef) (any, error) {
	ctx := r.Context()
	if r.Method == http.MethodPut {
		level, err := readLevel(r)
		if err != nil {
			return nil, err
		}
		return struct {
			Level string `json:"compatibility"`
		}{level.String()}, h.reg.SetSubjectLevel(ctx, s.name, level)
	}
	level, err := h.reg.SubjectLevel(ctx, s.name)
	if err != nil {
		return nil, err
	}
	own := level.Scope == "subject"
	switch {
	case r.Method == http.MethodDelete && own:
		err = h.reg.ClearSubjectLevel(ctx, s.name)
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

func (h *handler) freeMode(r *http.Request, s subjectRef) (any, error) {
	ctx := r.Context()
	type answer struct {
		Mode string `json:"mode"`
	}
	if r.Method == http.MethodPut {
		mode, err := readMode(r)
		if err != nil {
			return nil, err
		}
		return answer{string(mode)}, h.reg.SetSubjectMode(ctx, s.name, mode, forced(r))
	}
	mode, err := h.reg.SubjectMode(ctx, s.name)
	if err != nil {
		return nil, err
	}
	own := mode.Scope == "subject"
	switch {
	case r.Method == http.MethodDelete && own:
		err = h.reg.ClearSubjectMode(ctx, s.name)
	case !own && (r.Method == http.MethodDelete || r.URL.Query().Get("defaultToGlobal") != "true"):
		return nil, errorf(http.StatusNotFound, codeSubjectLevelNoMode,
			"Subject '%s' does not have subject-level mode configured; ask with defaultToGlobal=true for the %s mode %s", s.name, mode.Scope, mode.Value)
	}
	return answer{string(mode.Value)}, err
}
