package ccompat

import (
	"errors"
	"net/http"
	"slices"
	"strconv"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// Free subjects: every valid subject name that is not a stream version
// (Options.ParseSubject) nor, with Options.ValueAlias, a "-value" alias is
// a subject of its own (sqlstreams.Registry.RegisterSubject), as Kafka
// clients name them with TopicNameStrategy, RecordNameStrategy or
// TopicRecordNameStrategy.

func (h *handler) freeSchema(v sqlstreams.SubjectVersion) subjectSchema {
	out := subjectSchema{Subject: v.Subject, Version: v.Version, ID: v.ID, SchemaType: string(v.Type), Schema: string(docText(v.Type, v.Schema, v.Text))}
	for _, f := range v.References {
		out.References = append(out.References, reference{Name: f.Name, Subject: f.Subject, Version: f.Version})
	}
	return out
}

// deletedToo: deleted=true (or deletedOnly=true) asks for soft-deleted
// versions and subjects too.
func deletedToo(r *http.Request) bool {
	return r.URL.Query().Get("deleted") == "true" || deletedOnly(r)
}

// deletedOnly: deletedOnly=true asks for the soft-deleted ones alone.
func deletedOnly(r *http.Request) bool { return r.URL.Query().Get("deletedOnly") == "true" }

func (h *handler) freeVersions(w http.ResponseWriter, r *http.Request, s subjectRef) {
	vs, err := h.reg.SubjectVersions(r.Context(), s.name, deletedToo(r))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := []int{}
	for _, v := range vs {
		if v.Deleted || !deletedOnly(r) {
			out = append(out, v.Version)
		}
	}
	h.write(w, http.StatusOK, out)
}

// freeOne resolves {version} of a free subject: a number (soft-deleted
// only with deleted=true), or "latest" / -1, the latest live version.
func (h *handler) freeOne(r *http.Request, s subjectRef) (sqlstreams.SubjectVersion, error) {
	v := r.PathValue("version")
	latest := v == "latest" || v == "-1"
	vs, err := h.reg.SubjectVersions(r.Context(), s.name, deletedToo(r) && !latest)
	if err != nil {
		return sqlstreams.SubjectVersion{}, err
	}
	if latest {
		return vs[len(vs)-1], nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return sqlstreams.SubjectVersion{}, errorf(http.StatusUnprocessableEntity, codeInvalidVersion,
			"The specified version '%s' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\"", v)
	}
	if i := slices.IndexFunc(vs, func(x sqlstreams.SubjectVersion) bool { return x.Version == n }); i >= 0 {
		return vs[i], nil
	}
	return sqlstreams.SubjectVersion{}, errorf(http.StatusNotFound, codeVersionNotFound, "Version %d not found for subject %q", n, s.name)
}

// freeRefs turns the body's references into free subject references; a
// free subject refers to free subjects only.
func (h *handler) freeRefs(req request) ([]sqlstreams.SubjectReference, error) {
	var out []sqlstreams.SubjectReference
	for _, f := range req.References {
		if _, _, ok := h.opts.ParseSubject(f.Subject); ok {
			return nil, errorf(http.StatusUnprocessableEntity, codeInvalidSchema,
				"Invalid schema: reference %q names %q, a stream version; a free subject's schema refers to other free subjects only", f.Name, f.Subject)
		}
		out = append(out, sqlstreams.SubjectReference{Name: f.Name, Subject: f.Subject, Version: f.Version})
	}
	return out, nil
}

func (h *handler) freeRegistration(r *http.Request, s subjectRef, req request, text []byte) (sqlstreams.SubjectRegistration, error) {
	refs, err := h.freeRefs(req)
	return sqlstreams.SubjectRegistration{Subject: s.name, Type: schema.Type(req.SchemaType), Schema: text, References: refs, ID: req.ID, Version: req.Version}, err
}

func (h *handler) freeRegister(w http.ResponseWriter, r *http.Request, s subjectRef, req request, text []byte) {
	p, err := h.freeRegistration(r, s, req, text)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	v, err := h.reg.RegisterSubject(r.Context(), p)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.write(w, http.StatusOK, struct {
		ID int64 `json:"id"`
	}{v.ID})
}

func (h *handler) freeLookup(w http.ResponseWriter, r *http.Request, s subjectRef, req request) {
	p, err := h.freeRegistration(r, s, req, []byte(req.Schema))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	v, err := h.reg.FindSubjectVersion(r.Context(), p, deletedToo(r))
	if errors.Is(err, sqlstreams.ErrSchemaNotFound) {
		err = errorf(http.StatusNotFound, codeSchemaNotFound, "Schema not found: subject %q has no version with this schema", s.name)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.write(w, http.StatusOK, h.freeSchema(v))
}

// freeReferencedBy lists the ids of the free subject versions whose
// references name the version.
func (h *handler) freeReferencedBy(w http.ResponseWriter, r *http.Request, s subjectRef) {
	target, err := h.freeOne(r, s)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	names, err := h.reg.FreeSubjects(r.Context(), true)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	ids := []int64{}
	for _, name := range names {
		vs, err := h.reg.SubjectVersions(r.Context(), name, false)
		if err != nil && !errors.Is(err, sqlstreams.ErrSubjectNotFound) {
			h.fail(w, r, err)
			return
		}
		for _, v := range vs {
			if slices.Contains(v.References, sqlstreams.SubjectReference{Name: refName(v.References, s.name, target.Version), Subject: s.name, Version: target.Version}) && !slices.Contains(ids, v.ID) {
				ids = append(ids, v.ID)
			}
		}
	}
	h.write(w, http.StatusOK, ids)
}

// refName is the name under which refs bind subject's version, if any.
func refName(refs []sqlstreams.SubjectReference, subject string, version int) string {
	for _, f := range refs {
		if f.Subject == subject && f.Version == version {
			return f.Name
		}
	}
	return ""
}

// freeDeleteSubject soft-deletes every live version of a subject, or,
// with permanent=true, removes its soft-deleted ones, with Confluent's
// codes for a deletion out of order.
func (h *handler) freeDeleteSubject(w http.ResponseWriter, r *http.Request, s subjectRef) {
	permanent := r.URL.Query().Get("permanent") == "true"
	all, err := h.reg.SubjectVersions(r.Context(), s.name, true)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	live := slices.ContainsFunc(all, func(v sqlstreams.SubjectVersion) bool { return !v.Deleted })
	if err := outOfOrder(s.name, 0, !live, permanent); err != nil {
		h.fail(w, r, err)
		return
	}
	done, err := h.reg.DeleteSubject(r.Context(), s.name, permanent)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.write(w, http.StatusOK, done)
}

// outOfOrder is Confluent's answer to a deletion out of order, of a whole
// subject (version 0) or of one version: soft-deleting what is
// soft-deleted already (40404, 40406), or deleting permanently what is not
// (40405, 40407). It is nil for a deletion in order.
func outOfOrder(subject string, version int, deleted, permanent bool) error {
	switch {
	case version == 0 && !permanent && deleted:
		return errorf(http.StatusNotFound, codeSubjectSoftDeleted, "Subject '%s' was soft deleted. Set permanent=true to delete permanently", subject)
	case version == 0 && permanent && !deleted:
		return errorf(http.StatusNotFound, codeSubjectNotSoftDeleted, "Subject '%s' was not deleted first before being permanently deleted", subject)
	case version != 0 && !permanent && deleted:
		return errorf(http.StatusNotFound, codeVersionSoftDeleted, "Subject '%s' Version %d was soft deleted. Set permanent=true to delete permanently", subject, version)
	case version != 0 && permanent && !deleted:
		return errorf(http.StatusNotFound, codeVersionNotSoftDeleted, "Subject '%s' Version %d was not deleted first before being permanently deleted", subject, version)
	}
	return nil
}

// freeDeleteVersion soft-deletes a version ("latest": the latest live
// one), or, with permanent=true, removes a soft-deleted one.
func (h *handler) freeDeleteVersion(w http.ResponseWriter, r *http.Request, s subjectRef) {
	permanent := r.URL.Query().Get("permanent") == "true"
	q := r.URL.Query()
	q.Set("deleted", "true")
	r.URL.RawQuery = q.Encode()
	v, err := h.freeOne(r, s)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if err := outOfOrder(s.name, v.Version, v.Deleted, permanent); err != nil {
		h.fail(w, r, err)
		return
	}
	n, err := h.reg.DeleteSubjectVersion(r.Context(), s.name, v.Version, permanent)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.write(w, http.StatusOK, n)
}

// freeCompatibility checks the body against "latest" (as a registration
// would), one version, or, without {version}, every live version.
func (h *handler) freeCompatibility(r *http.Request, s subjectRef, req request) error {
	p, err := h.freeRegistration(r, s, req, []byte(req.Schema))
	if err != nil {
		return err
	}
	v := r.PathValue("version")
	switch {
	case v == "latest" || v == "-1":
		return h.reg.CheckSubject(r.Context(), p)
	case v == "":
		vs, err := h.reg.SubjectVersions(r.Context(), s.name, false)
		if err != nil {
			return err
		}
		var all []int
		for _, x := range vs {
			all = append(all, x.Version)
		}
		return h.reg.CheckSubject(r.Context(), p, all...)
	}
	target, err := h.freeOne(r, s)
	if err != nil {
		return err
	}
	return h.reg.CheckSubject(r.Context(), p, target.Version)
}

// freeNames lists the free subjects for GET /subjects: with live
// versions, with deleted=true also those all soft-deleted, with
// deletedOnly=true those alone.
func (h *handler) freeNames(r *http.Request) ([]string, error) {
	names, err := h.reg.FreeSubjects(r.Context(), deletedToo(r))
	if err != nil || !deletedOnly(r) {
		return names, err
	}
	live, err := h.reg.FreeSubjects(r.Context(), false)
	return slices.DeleteFunc(names, func(n string) bool { return slices.Contains(live, n) }), err
}

// streamSubjects lists the stream versions with live revisions, with
// deleted=true also those whose revisions are all soft-deleted, with
// deletedOnly=true those alone.
func (h *handler) streamSubjects(r *http.Request) ([]sqlstreams.Subject, error) {
	if !deletedToo(r) {
		return h.reg.Subjects(r.Context())
	}
	all, err := h.reg.SubjectsWithDeleted(r.Context())
	if err != nil || !deletedOnly(r) {
		return all, err
	}
	live, err := h.reg.Subjects(r.Context())
	return slices.DeleteFunc(all, func(s sqlstreams.Subject) bool { return slices.Contains(live, s) }), err
}

// freeUsages are the free subject versions recorded with an id, the
// soft-deleted ones only with deleted=true.
func (h *handler) freeUsages(r *http.Request, id int64) ([]sqlstreams.SubjectVersion, error) {
	vs, err := h.reg.SubjectUsages(r.Context(), id)
	if err != nil {
		return nil, err
	}
	if !deletedToo(r) {
		vs = slices.DeleteFunc(vs, func(v sqlstreams.SubjectVersion) bool { return v.Deleted })
	}
	return vs, nil
}
