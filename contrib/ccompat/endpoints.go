package ccompat

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// The small endpoints Confluent's clients call besides the registry's own:
// contexts, the server's id, a subject's metadata, schemas by guid.

// contexts answers the one context there is, the default ".": sqlstreams
// has no schema contexts (Confluent's Go client asks before it looks ids
// up).
func (h *handler) contexts(w http.ResponseWriter, r *http.Request) {
	h.write(w, http.StatusOK, []string{"."})
}

// serverID answers /v1/metadata/id in Confluent's shape. The registry is
// its database, so the id names the handler, not a cluster.
func (h *handler) serverID(w http.ResponseWriter, r *http.Request) {
	type scope struct {
		Path     []string          `json:"path"`
		Clusters map[string]string `json:"clusters"`
	}
	h.write(w, http.StatusOK, struct {
		ID    string `json:"id"`
		Scope scope  `json:"scope"`
	}{"sqlstreams", scope{Path: []string{}, Clusters: map[string]string{"schema-registry-cluster": "sqlstreams"}}})
}

// subjectMetadata answers the latest version whose metadata has the asked
// key=value pairs. sqlstreams keeps no metadata on versions, so with no
// pair asked that is the latest version, and with any it is none (40403).
func (h *handler) subjectMetadata(w http.ResponseWriter, r *http.Request) {
	s, err := h.subject(r, false)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	var latest subjectSchema
	if s.free {
		vs, err := h.reg.SubjectVersions(r.Context(), s.name, false)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		latest = h.freeSchema(vs[len(vs)-1])
	} else {
		revs, err := h.revisions(r.Context(), s)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		latest = h.subjectSchema(s, revs[len(revs)-1])
	}
	if keys := r.URL.Query()["key"]; len(keys) > 0 {
		h.fail(w, r, errorf(http.StatusNotFound, codeSchemaNotFound,
			"Schema not found: no version of subject %q has metadata %s; this registry keeps no metadata on versions", s.name, strings.Join(keys, ", ")))
		return
	}
	h.write(w, http.StatusOK, latest)
}

// GUID is the guid /schemas/guids/{guid} serves a global schema id under:
// the id in the last twelve hex digits of a UUID (version 8, the variant
// of RFC 9562), so it is as stable as the id, for the database's life.
func GUID(id int64) string {
	return fmt.Sprintf("00000000-0000-8000-8000-%012x", id)
}

// schemaByGUID serves /schemas/guids/{guid} as /schemas/ids/{id}.
func (h *handler) schemaByGUID(w http.ResponseWriter, r *http.Request) {
	guid := strings.ToLower(r.PathValue("guid"))
	hexID, ok := strings.CutPrefix(guid, "00000000-0000-8000-8000-")
	id, err := strconv.ParseInt(hexID, 16, 64)
	if !ok || len(hexID) != 12 || err != nil || id < 1 {
		h.fail(w, r, errorf(http.StatusNotFound, codeSchemaNotFound, "Schema %s not found: guids here are ccompat.GUID(id) of a global id", r.PathValue("guid")))
		return
	}
	r.SetPathValue("id", strconv.FormatInt(id, 10))
	h.schemaByID(w, r)
}
