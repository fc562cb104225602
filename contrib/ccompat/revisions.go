package ccompat

import (
	"net/http"
	"slices"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// A stream-bound subject's versions are the revisions of one version of a
// stream's schema. They are deleted as a free subject's versions are
// (soft, then permanent=true, with the same codes out of order), except
// that a revision rows of the log or a group's reader still need is
// refused with 42205 and the reason (sqlstreams.ErrSchemaInUse).

// streamDeleteSubject soft-deletes every live revision of a stream
// version, or, with permanent=true, removes its soft-deleted ones.
func (h *handler) streamDeleteSubject(w http.ResponseWriter, r *http.Request, s subjectRef) {
	if h.aliasRefused(w, r, s) {
		return
	}
	permanent := r.URL.Query().Get("permanent") == "true"
	all, err := h.revisionsOf(r.Context(), s, true)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	live := slices.ContainsFunc(all, func(rv sqlstreams.Revision) bool { return !rv.Deleted })
	if err := outOfOrder(s.name, 0, !live, permanent); err != nil {
		h.fail(w, r, err)
		return
	}
	done, err := h.reg.DeleteRevisions(r.Context(), s.stream, s.version, permanent)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.write(w, http.StatusOK, done)
}

// streamDeleteVersion soft-deletes a revision ("latest": the latest live
// one), or, with permanent=true, removes a soft-deleted one.
func (h *handler) streamDeleteVersion(w http.ResponseWriter, r *http.Request, s subjectRef) {
	if h.aliasRefused(w, r, s) {
		return
	}
	permanent := r.URL.Query().Get("permanent") == "true"
	q := r.URL.Query()
	q.Set("deleted", "true")
	r.URL.RawQuery = q.Encode()
	_, rv, err := h.one(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if err := outOfOrder(s.name, rv.Revision, rv.Deleted, permanent); err != nil {
		h.fail(w, r, err)
		return
	}
	n, err := h.reg.DeleteRevision(r.Context(), s.stream, s.version, rv.Revision, permanent)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.write(w, http.StatusOK, n)
}

// aliasRefused refuses a deletion through the read-only "-value" alias of
// a stream's highest version, as a registration through it is refused.
func (h *handler) aliasRefused(w http.ResponseWriter, r *http.Request, s subjectRef) bool {
	if _, err := h.subject(r, true); err != nil {
		h.fail(w, r, err)
		return true
	}
	return false
}
