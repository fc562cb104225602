package ccompat

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/sqlstreams/sqlstreams/contrib/avro"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

type route struct {
	pattern string
	fn      http.HandlerFunc
}

func (h *handler) routes() []route {
	return []route{
		{"GET /schemas/types", h.types},
		{"GET /contexts", h.contexts},
		{"GET /v1/metadata/id", h.serverID},
		{"GET /subjects/{subject}/metadata", h.subjectMetadata},
		{"GET /schemas/guids/{guid}", h.schemaByGUID},
		{"GET /subjects", h.subjects},
		{"GET /subjects/{subject}/versions", h.versions},
		{"GET /subjects/{subject}/versions/{version}", h.version},
		{"GET /subjects/{subject}/versions/{version}/schema", h.versionSchema},
		{"GET /subjects/{subject}/versions/{version}/referencedby", h.referencedBy},
		{"POST /subjects/{subject}/versions", h.register},
		{"POST /subjects/{subject}", h.lookup},
		{"DELETE /subjects/{subject}", h.deleteSubject},
		{"DELETE /subjects/{subject}/versions/{version}", h.deleteVersion},
		{"GET /schemas", h.allSchemas},
		{"GET /schemas/ids/{id}", h.schemaByID},
		{"GET /schemas/ids/{id}/schema", h.schemaTextByID},
		{"GET /schemas/ids/{id}/versions", h.idVersions},
		{"GET /schemas/ids/{id}/subjects", h.idSubjects},
		{"GET /config", h.getConfig},
		{"PUT /config", h.putConfig},
		{"DELETE /config", h.deleteConfig},
		{"GET /config/{subject}", h.getConfig},
		{"PUT /config/{subject}", h.putConfig},
		{"DELETE /config/{subject}", h.deleteConfig},
		{"GET /mode", h.getMode},
		{"PUT /mode", h.putMode},
		{"DELETE /mode", h.deleteMode},
		{"GET /mode/{subject}", h.getMode},
		{"PUT /mode/{subject}", h.putMode},
		{"DELETE /mode/{subject}", h.deleteMode},
		{"POST /compatibility/subjects/{subject}/versions/{version}", h.compatibility},
		{"POST /compatibility/subjects/{subject}/versions", h.compatibility},
	}
}

// subjectRef is a parsed subject.
type subjectRef struct {
	name    string
	stream  string
	version int
	free    bool // a free subject: name is all there is
}

// subject parses the {subject} wildcard. A write to the read-only
// "-value" alias is refused.
func (h *handler) subject(r *http.Request, write bool) (subjectRef, error) {
	name := r.PathValue("subject")
	if stream, version, ok := h.opts.ParseSubject(name); ok {
		return subjectRef{name: name, stream: stream, version: version}, nil
	}
	if stream, ok := strings.CutSuffix(name, "-value"); ok && h.opts.ValueAlias && stream != "" {
		if write {
			return subjectRef{}, errorf(http.StatusUnprocessableEntity, codeNotPermitted,
				"subject %q is a read-only alias of the highest version of stream %q; write to %q instead", name, stream, h.opts.SubjectName(stream, 1))
		}
		subjects, err := h.reg.Subjects(r.Context())
		if err != nil {
			return subjectRef{}, err
		}
		highest := 0
		for _, s := range subjects {
			if s.Stream == stream && s.Version > highest {
				highest = s.Version
			}
		}
		if highest == 0 {
			return subjectRef{}, errorf(http.StatusNotFound, codeSubjectNotFound, "Subject %q not found: stream %q has no schemas", name, stream)
		}
		return subjectRef{name: name, stream: stream, version: highest}, nil
	}
	if err := sqlstreams.ValidSubject(name); err != nil {
		if write {
			return subjectRef{}, errorf(http.StatusUnprocessableEntity, codeInvalidSubject, "Invalid subject %q: %v", name, err)
		}
		return subjectRef{}, errorf(http.StatusNotFound, codeSubjectNotFound, "Subject %q not found: %v", name, err)
	}
	return subjectRef{name: name, free: true}, nil
}

// revisions lists a subject's revisions; none is 40401.
func (h *handler) revisions(ctx context.Context, s subjectRef) ([]sqlstreams.Revision, error) {
	return h.revisionsOf(ctx, s, false)
}

// revisionsOf lists a subject's revisions, the soft-deleted ones too with
// deleted; none is 40401.
func (h *handler) revisionsOf(ctx context.Context, s subjectRef, deleted bool) ([]sqlstreams.Revision, error) {
	list := h.reg.Revisions
	if deleted {
		list = h.reg.RevisionsWithDeleted
	}
	revs, err := list(ctx, s.stream, s.version)
	if errors.Is(err, sqlstreams.ErrStreamNotFound) || err == nil && len(revs) == 0 {
		return nil, errorf(http.StatusNotFound, codeSubjectNotFound, "Subject %q not found", s.name)
	}
	return revs, err
}

// pick finds {version}: a number, "latest" or -1.
func (h *handler) pick(revs []sqlstreams.Revision, s subjectRef, v string) (sqlstreams.Revision, error) {
	if v == "latest" || v == "-1" {
		return revs[len(revs)-1], nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return sqlstreams.Revision{}, errorf(http.StatusUnprocessableEntity, codeInvalidVersion,
			"The specified version '%s' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\"", v)
	}
	for _, rv := range revs {
		if rv.Revision == n {
			return rv, nil
		}
	}
	return sqlstreams.Revision{}, errorf(http.StatusNotFound, codeVersionNotFound, "Version %d not found for subject %q", n, s.name)
}

type reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

type subjectSchema struct {
	Subject    string      `json:"subject"`
	Version    int         `json:"version"`
	ID         int64       `json:"id"`
	SchemaType string      `json:"schemaType"`
	References []reference `json:"references,omitempty"`
	Schema     string      `json:"schema"`
}

func (h *handler) refs(refs []sqlstreams.Reference) []reference {
	var out []reference
	for _, f := range refs {
		out = append(out, reference{Name: f.Name, Subject: h.opts.SubjectName(f.Stream, f.Version), Version: f.Revision})
	}
	return out
}

func (h *handler) subjectSchema(s subjectRef, rv sqlstreams.Revision) subjectSchema {
	return subjectSchema{Subject: h.opts.SubjectName(s.stream, s.version), Version: rv.Revision, ID: rv.ID, SchemaType: string(rv.Type),
		References: h.refs(rv.References), Schema: string(docText(rv.Type, rv.Schema, rv.Text))}
}

// docText is the text a document is served as: as it is stored, which is
// the text registered (a Go type's schema: its canonical form).
func docText(_ schema.Type, _ *schema.Schema, text []byte) []byte {
	return text
}

// types lists the schema types the registry accepts.
func (h *handler) types(w http.ResponseWriter, r *http.Request) {
	out := []string{}
	for _, t := range h.reg.Types() {
		out = append(out, string(t))
	}
	h.write(w, http.StatusOK, out)
}

func (h *handler) subjects(w http.ResponseWriter, r *http.Request) {
	subjects, err := h.streamSubjects(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	prefix := r.URL.Query().Get("subjectPrefix")
	out := []string{}
	for _, s := range subjects {
		if name := h.opts.SubjectName(s.Stream, s.Version); strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	free, err := h.freeNames(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	for _, name := range free {
		if strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	h.write(w, http.StatusOK, out)
}

func (h *handler) versions(w http.ResponseWriter, r *http.Request) {
	s, err := h.subject(r, false)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if s.free {
		h.freeVersions(w, r, s)
		return
	}
	revs, err := h.revisionsOf(r.Context(), s, deletedToo(r))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := []int{}
	for _, rv := range revs {
		if rv.Deleted || !deletedOnly(r) {
			out = append(out, rv.Revision)
		}
	}
	h.write(w, http.StatusOK, out)
}

// one resolves {subject} and {version} to a revision: a number
// (soft-deleted only with deleted=true), or "latest" / -1, the latest live
// revision.
func (h *handler) one(r *http.Request) (subjectRef, sqlstreams.Revision, error) {
	s, err := h.subject(r, false)
	if err != nil {
		return s, sqlstreams.Revision{}, err
	}
	v := r.PathValue("version")
	revs, err := h.revisionsOf(r.Context(), s, deletedToo(r) && v != "latest" && v != "-1")
	if err != nil {
		return s, sqlstreams.Revision{}, err
	}
	rv, err := h.pick(revs, s, r.PathValue("version"))
	return s, rv, err
}

func (h *handler) version(w http.ResponseWriter, r *http.Request) {
	if s, err := h.subject(r, false); err == nil && s.free {
		v, err := h.freeOne(r, s)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		h.write(w, http.StatusOK, h.freeSchema(v))
		return
	}
	s, rv, err := h.one(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.write(w, http.StatusOK, h.subjectSchema(s, rv))
}

func (h *handler) versionSchema(w http.ResponseWriter, r *http.Request) {
	if s, err := h.subject(r, false); err == nil && s.free {
		v, err := h.freeOne(r, s)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		h.raw(w, docText(v.Type, v.Schema, v.Text))
		return
	}
	_, rv, err := h.one(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.raw(w, docText(rv.Type, rv.Schema, rv.Text))
}

func (h *handler) raw(w http.ResponseWriter, text []byte) {
	w.Header().Set("Content-Type", ContentType)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(text)
}

// referencedBy lists the ids of the schemas that reference the revision.
func (h *handler) referencedBy(w http.ResponseWriter, r *http.Request) {
	if s, err := h.subject(r, false); err == nil && s.free {
		h.freeReferencedBy(w, r, s)
		return
	}
	s, rv, err := h.one(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	users, err := h.reg.ReferencedBy(r.Context(), s.stream, s.version, rv.Revision)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	ids := []int64{}
	for _, u := range users {
		revs, err := h.reg.Revisions(r.Context(), u.Stream, u.Version)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		for _, x := range revs {
			if x.Revision == u.Revision && !slices.Contains(ids, x.ID) {
				ids = append(ids, x.ID)
			}
		}
	}
	h.write(w, http.StatusOK, ids)
}

// request is a registration, lookup or compatibility body.
type request struct {
	Schema     string      `json:"schema"`
	SchemaType string      `json:"schemaType"`
	References []reference `json:"references"`
	ID         int64       `json:"id"`
	Version    int         `json:"version"`
}

func (h *handler) body(r *http.Request) (request, error) {
	var req request
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return req, errorf(http.StatusRequestEntityTooLarge, 413, "cannot read the request body (at most %d bytes): %v", maxBody, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&req); err != nil {
		return req, errorf(http.StatusUnprocessableEntity, 422, "Unrecognized request body: %v; send {\"schemaType\":\"JSON\",\"schema\":\"...\"}", err)
	}
	// Confluent reads a body without a schemaType as AVRO.
	t, err := schema.ParseType(cmp.Or(req.SchemaType, string(schema.TypeAvro)))
	if err != nil || !slices.Contains(h.reg.Types(), t) {
		var names []string
		for _, t := range h.reg.Types() {
			names = append(names, string(t))
		}
		return req, errorf(http.StatusUnprocessableEntity, codeInvalidSchema,
			"Invalid schema: schemaType %s is not supported; this registry stores %s", cmp.Or(req.SchemaType, "AVRO (no schemaType)"), strings.Join(names, ", "))
	}
	req.SchemaType = string(t)
	if strings.TrimSpace(req.Schema) == "" {
		return req, errorf(http.StatusUnprocessableEntity, codeInvalidSchema, "Invalid schema: the body has no \"schema\"")
	}
	return req, nil
}

// libRefs turns the body's references (subject + subject version) into
// the library's (stream, version, revision).
func (h *handler) libRefs(req request) ([]sqlstreams.Reference, error) {
	var out []sqlstreams.Reference
	for _, f := range req.References {
		stream, version, ok := h.opts.ParseSubject(f.Subject)
		if !ok {
			return nil, errorf(http.StatusUnprocessableEntity, codeInvalidSchema, "Invalid schema: reference %q names subject %q, which is not {stream}-v{version}", f.Name, f.Subject)
		}
		rev := f.Version
		if rev < 0 { // -1: the latest
			rev = 0
		}
		out = append(out, sqlstreams.Reference{Name: f.Name, Stream: stream, Version: version, Revision: rev})
	}
	return out, nil
}

func (h *handler) register(w http.ResponseWriter, r *http.Request) {
	s, err := h.subject(r, true)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	req, err := h.body(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if req.ID < 0 || req.Version < 0 {
		req.ID, req.Version = max(req.ID, 0), max(req.Version, 0)
	}
	text := []byte(req.Schema)
	if r.URL.Query().Get("normalize") == "true" {
		if text, err = normalized(req); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	if req.ID != 0 || req.Version != 0 {
		if err := h.importOnly(r, s); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	if s.free {
		h.freeRegister(w, r, s, req, text)
		return
	}
	refs, err := h.libRefs(req)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if req.ID < 0 || req.Version < 0 {
		req.ID, req.Version = max(req.ID, 0), max(req.Version, 0)
	}
	rv, err := h.reg.RegisterSchema(r.Context(), sqlstreams.SchemaRegistration{Stream: s.stream, Version: s.version, Type: schema.Type(req.SchemaType),
		Schema: text, References: refs, ID: req.ID, Revision: req.Version})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.write(w, http.StatusOK, struct {
		ID int64 `json:"id"`
	}{rv.ID})
}

// importOnly refuses an explicit id or version unless the subject's mode
// (a stream version's own, else its stream's; a missing stream's: the
// registry-wide one) is IMPORT.
func (h *handler) importOnly(r *http.Request, s subjectRef) error {
	var mode sqlstreams.Setting[sqlstreams.Mode]
	var err error
	switch {
	case s.free:
		mode, err = h.reg.SubjectMode(r.Context(), s.name)
	default:
		mode, err = h.reg.VersionMode(r.Context(), s.stream, s.version)
		if errors.Is(err, sqlstreams.ErrStreamNotFound) {
			mode, err = h.reg.Mode(r.Context(), sqlstreams.RegistryWide)
		}
	}
	if err != nil {
		return err
	}
	if mode.Value != sqlstreams.ModeImport {
		return errorf(http.StatusUnprocessableEntity, codeNotPermitted,
			"Operation not permitted: an explicit id or version needs IMPORT mode; subject %q is in %s mode (set %s)", s.name, mode.Value, mode.Scope)
	}
	return nil
}

// lookup finds the revision of the subject that holds the body's schema.
func (h *handler) lookup(w http.ResponseWriter, r *http.Request) {
	s, err := h.subject(r, false)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	req, err := h.body(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if s.free {
		h.freeLookup(w, r, s, req)
		return
	}
	refs, err := h.libRefs(req)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	t := schema.Type(req.SchemaType)
	var want []byte
	if t == schema.TypeJSON {
		sch, err := schema.Parse([]byte(req.Schema))
		if err != nil {
			h.fail(w, r, errorf(http.StatusUnprocessableEntity, codeInvalidSchema, "Invalid schema: %v", err))
			return
		}
		want = sch.Canonical()
	} else {
		fp, err := h.reg.Fingerprint(r.Context(), t, []byte(req.Schema))
		if err != nil {
			h.fail(w, r, err)
			return
		}
		want = []byte(fp)
	}
	revs, err := h.revisions(r.Context(), s)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	for _, rv := range revs {
		same := rv.Type == t && (t == schema.TypeJSON && bytes.Equal(rv.Schema.Canonical(), want) || t != schema.TypeJSON && rv.Fingerprint == string(want))
		if same && sameRefs(rv.References, refs) {
			h.write(w, http.StatusOK, h.subjectSchema(s, rv))
			return
		}
	}
	h.fail(w, r, errorf(http.StatusNotFound, codeSchemaNotFound, "Schema not found: subject %q has no revision with this schema", s.name))
}

// sameRefs compares stored references with requested ones; a requested
// revision 0 (latest) matches any.
func sameRefs(stored, asked []sqlstreams.Reference) bool {
	if len(stored) != len(asked) {
		return false
	}
	for i := range stored {
		a, b := stored[i], asked[i]
		if a.Name != b.Name || a.Stream != b.Stream || a.Version != b.Version || b.Revision != 0 && a.Revision != b.Revision {
			return false
		}
	}
	return true
}

func (h *handler) deleteSubject(w http.ResponseWriter, r *http.Request) {
	s, err := h.subject(r, false)
	switch {
	case err != nil:
		h.fail(w, r, err)
	case s.free:
		h.freeDeleteSubject(w, r, s)
	default:
		h.streamDeleteSubject(w, r, s)
	}
}

func (h *handler) deleteVersion(w http.ResponseWriter, r *http.Request) {
	s, err := h.subject(r, false)
	switch {
	case err != nil:
		h.fail(w, r, err)
	case s.free:
		h.freeDeleteVersion(w, r, s)
	default:
		h.streamDeleteVersion(w, r, s)
	}
}

func (h *handler) allSchemas(w http.ResponseWriter, r *http.Request) {
	subjects, err := h.reg.Subjects(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	prefix, latestOnly := q.Get("subjectPrefix"), q.Get("latestOnly") == "true"
	out := []subjectSchema{}
	for _, sub := range subjects {
		s := subjectRef{name: h.opts.SubjectName(sub.Stream, sub.Version), stream: sub.Stream, version: sub.Version}
		if !strings.HasPrefix(s.name, prefix) {
			continue
		}
		revs, err := h.reg.Revisions(r.Context(), sub.Stream, sub.Version)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		if latestOnly && len(revs) > 0 {
			revs = revs[len(revs)-1:]
		}
		for _, rv := range revs {
			out = append(out, h.subjectSchema(s, rv))
		}
	}
	free, err := h.reg.FreeSubjects(r.Context(), false)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	for _, name := range free {
		vs, err := h.reg.SubjectVersions(r.Context(), name, false)
		if err != nil || !strings.HasPrefix(name, prefix) {
			continue // deleted meanwhile, or not asked for
		}
		if latestOnly {
			vs = vs[len(vs)-1:]
		}
		for _, v := range vs {
			out = append(out, h.freeSchema(v))
		}
	}
	h.write(w, http.StatusOK, out)
}

func (h *handler) id(r *http.Request) (sqlstreams.SchemaDocument, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		return sqlstreams.SchemaDocument{}, errorf(http.StatusNotFound, codeSchemaNotFound, "Schema %s not found: ids are positive integers", r.PathValue("id"))
	}
	doc, err := h.reg.SchemaByID(r.Context(), id)
	if errors.Is(err, sqlstreams.ErrSchemaNotFound) {
		return doc, errorf(http.StatusNotFound, codeSchemaNotFound, "Schema %d not found", id)
	}
	return doc, err
}

// usages are the stream revisions recorded with an id, the soft-deleted
// ones only with deleted=true, as freeUsages lists free subjects'.
func (h *handler) usages(r *http.Request, id int64) ([]sqlstreams.SchemaUsage, error) {
	if deletedToo(r) {
		return h.reg.SchemaUsagesWithDeleted(r.Context(), id)
	}
	return h.reg.SchemaUsages(r.Context(), id)
}

func (h *handler) schemaByID(w http.ResponseWriter, r *http.Request) {
	doc, err := h.id(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := struct {
		SchemaType string      `json:"schemaType"`
		References []reference `json:"references,omitempty"`
		Schema     string      `json:"schema"`
	}{SchemaType: string(doc.Type), Schema: string(docText(doc.Type, doc.Schema, doc.Text))}
	// The references of an id are those of the revisions that use it.
	usages, err := h.usages(r, doc.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if len(usages) == 0 {
		if free, err := h.freeUsages(r, doc.ID); err == nil && len(free) > 0 {
			out.References = h.freeSchema(free[0]).References
		}
	}
	if len(usages) > 0 {
		u := usages[0]
		revs, err := h.reg.Revisions(r.Context(), u.Stream, u.Version)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		for _, rv := range revs {
			if rv.Revision == u.Revision {
				out.References = h.refs(rv.References)
			}
		}
	}
	h.write(w, http.StatusOK, out)
}

func (h *handler) schemaTextByID(w http.ResponseWriter, r *http.Request) {
	doc, err := h.id(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.raw(w, docText(doc.Type, doc.Schema, doc.Text))
}

func (h *handler) idVersions(w http.ResponseWriter, r *http.Request) {
	doc, err := h.id(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	usages, err := h.usages(r, doc.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	type subjectVersion struct {
		Subject string `json:"subject"`
		Version int    `json:"version"`
	}
	out := []subjectVersion{}
	for _, u := range usages {
		out = append(out, subjectVersion{h.opts.SubjectName(u.Stream, u.Version), u.Revision})
	}
	free, err := h.freeUsages(r, doc.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	for _, v := range free {
		out = append(out, subjectVersion{v.Subject, v.Version})
	}
	h.write(w, http.StatusOK, out)
}

func (h *handler) idSubjects(w http.ResponseWriter, r *http.Request) {
	doc, err := h.id(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	usages, err := h.usages(r, doc.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := []string{}
	for _, u := range usages {
		if name := h.opts.SubjectName(u.Stream, u.Version); !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	free, err := h.freeUsages(r, doc.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	for _, v := range free {
		if !slices.Contains(out, v.Subject) {
			out = append(out, v.Subject)
		}
	}
	h.write(w, http.StatusOK, out)
}

// getConfig answers the registry-wide level; /config/{subject} is the
// subject's own (subjectSettings).
func (h *handler) getConfig(w http.ResponseWriter, r *http.Request) {
	if h.subjectSettings(w, r) {
		return
	}
	level, err := h.reg.Level(r.Context(), sqlstreams.RegistryWide)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.write(w, http.StatusOK, struct {
		Level string `json:"compatibilityLevel"`
	}{level.Value.String()})
}

func (h *handler) putConfig(w http.ResponseWriter, r *http.Request) {
	if h.subjectSettings(w, r) {
		return
	}
	level, err := readLevel(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.reg.SetLevel(r.Context(), sqlstreams.RegistryWide, level); err != nil {
		h.fail(w, r, err)
		return
	}
	h.write(w, http.StatusOK, struct {
		Level string `json:"compatibility"`
	}{level.String()})
}

// readLevel reads a PUT /config body.
func readLevel(r *http.Request) (schema.Level, error) {
	var req struct {
		Compatibility      string `json:"compatibility"`
		CompatibilityLevel string `json:"compatibilityLevel"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return 0, errorf(http.StatusUnprocessableEntity, codeInvalidLevel, "Invalid compatibility level: unreadable body (%v); send {\"compatibility\":\"BACKWARD\"}", err)
	}
	name := cmp.Or(req.Compatibility, req.CompatibilityLevel)
	level, err := schema.ParseLevel(name)
	if err != nil {
		return 0, errorf(http.StatusUnprocessableEntity, codeInvalidLevel, "Invalid compatibility level %q: %v", name, err)
	}
	return level, nil
}

// deleteConfig clears the registry-wide level and answers the one that
// was in force, under both of Confluent's field names.
func (h *handler) deleteConfig(w http.ResponseWriter, r *http.Request) {
	if h.subjectSettings(w, r) {
		return
	}
	before, err := h.reg.Level(r.Context(), sqlstreams.RegistryWide)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if before.Scope == "registry" {
		if err := h.reg.ClearLevel(r.Context(), sqlstreams.RegistryWide); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	h.write(w, http.StatusOK, struct {
		Level     string `json:"compatibilityLevel"`
		LevelName string `json:"compatibility"`
	}{before.Value.String(), before.Value.String()})
}

// getMode answers the registry-wide mode; /mode/{subject} is the
// subject's own (subjectSettings).
func (h *handler) getMode(w http.ResponseWriter, r *http.Request) {
	if h.subjectSettings(w, r) {
		return
	}
	mode, err := h.reg.Mode(r.Context(), sqlstreams.RegistryWide)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.write(w, http.StatusOK, struct {
		Mode string `json:"mode"`
	}{string(mode.Value)})
}

func (h *handler) putMode(w http.ResponseWriter, r *http.Request) {
	if h.subjectSettings(w, r) {
		return
	}
	mode, err := readMode(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.importNeedsForce(r, mode); err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.reg.SetMode(r.Context(), sqlstreams.RegistryWide, mode); err != nil {
		h.fail(w, r, err)
		return
	}
	h.write(w, http.StatusOK, struct {
		Mode string `json:"mode"`
	}{string(mode)})
}

func (h *handler) deleteMode(w http.ResponseWriter, r *http.Request) {
	if h.subjectSettings(w, r) {
		return
	}
	before, err := h.reg.Mode(r.Context(), sqlstreams.RegistryWide)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.reg.ClearMode(r.Context(), sqlstreams.RegistryWide); err != nil {
		h.fail(w, r, err)
		return
	}
	h.write(w, http.StatusOK, struct {
		Mode string `json:"mode"`
	}{string(before.Value)})
}

// compatibility checks the body against "latest" (the level and the
// deployed readers, as a registration would), one revision, or, without
// {version}, every revision.
func (h *handler) compatibility(w http.ResponseWriter, r *http.Request) {
	s, err := h.subject(r, false)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	req, err := h.body(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if s.free {
		h.compatibilityAnswer(w, r, h.freeCompatibility(r, s, req))
		return
	}
	refs, err := h.libRefs(req)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	doc := sqlstreams.SchemaRegistration{Stream: s.stream, Version: s.version, Type: schema.Type(req.SchemaType), Schema: []byte(req.Schema), References: refs}
	v := r.PathValue("version")
	switch {
	case v == "latest" || v == "-1":
		err = h.reg.CheckDocument(r.Context(), doc)
	case v == "":
		if _, err = h.revisions(r.Context(), s); err == nil {
			err = h.reg.CheckDocumentAgainst(r.Context(), doc, 0)
		}
	default:
		n, perr := strconv.Atoi(v)
		if perr != nil || n < 1 {
			h.fail(w, r, errorf(http.StatusUnprocessableEntity, codeInvalidVersion,
				"The specified version '%s' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\"", v))
			return
		}
		if _, err = h.revisions(r.Context(), s); err == nil {
			err = h.reg.CheckDocumentAgainst(r.Context(), doc, n)
		}
		if errors.Is(err, sqlstreams.ErrRevisionNotFound) {
			err = errorf(http.StatusNotFound, codeVersionNotFound, "Version %d not found for subject %q", n, s.name)
		}
	}
	h.compatibilityAnswer(w, r, err)
}

// compatibilityAnswer answers a compatibility check's outcome.
func (h *handler) compatibilityAnswer(w http.ResponseWriter, r *http.Request, err error) {
	// With verbose the list is always there, empty when compatible, as
	// Confluent's Java client reads it without a null check.
	verbose := r.URL.Query().Get("verbose") == "true"
	out := struct {
		Is       bool      `json:"is_compatible"`
		Messages *[]string `json:"messages,omitempty"`
	}{Is: true}
	if verbose {
		out.Messages = &[]string{}
	}
	var ie *sqlstreams.IncompatibleSchemaError
	switch {
	case errors.As(err, &ie):
		out.Is = false
		if verbose {
			msgs := problemMessages(ie)
			out.Messages = &msgs
		}
	case err != nil:
		h.fail(w, r, err)
		return
	}
	h.write(w, http.StatusOK, out)
}

// normalized is a document's canonical form, which normalize=true
// registers in place of the text sent (Protobuf's is binary: its text is
// kept).
func normalized(req request) ([]byte, error) {
	if req.SchemaType == string(schema.TypeJSON) {
		s, err := schema.Parse([]byte(req.Schema))
		if err != nil {
			return nil, errorf(http.StatusUnprocessableEntity, codeInvalidSchema, "Invalid schema: %v", err)
		}
		return s.Canonical(), nil
	}
	if req.SchemaType != string(schema.TypeAvro) {
		return []byte(req.Schema), nil
	}
	doc, err := avro.Parse([]byte(req.Schema))
	if err != nil {
		return nil, errorf(http.StatusUnprocessableEntity, codeInvalidSchema, "Invalid schema: %v", err)
	}
	return doc.Canonical(), nil
}
