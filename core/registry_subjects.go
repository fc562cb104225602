package sqlstreams

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// Free subjects: registry subjects named as Kafka clients name them
// ("orders-value", "shop.orders.OrderPlaced"), with versions 1..n of their
// own, each a global schema id, judged against the subject's earlier
// versions at the subject's level. No stream is bound to them: no Go
// producer records under them and no row of a log names them, which is why
// they can be deleted (docs/decisions.md, "Free subjects (issue #27)").

var (
	// ErrSubjectNotFound: the subject has no version (no live one, unless
	// deleted ones were asked for).
	ErrSubjectNotFound = errors.New("subject not found")
	// ErrSubjectVersionNotFound: the subject has no such version.
	ErrSubjectVersionNotFound = errors.New("subject version not found")
	// ErrNotSoftDeleted: a permanent deletion of a version (or subject)
	// that is not soft-deleted yet; delete it without permanent first.
	ErrNotSoftDeleted = errors.New("not soft-deleted first")
	// ErrReferenced: the version is referenced by another subject's
	// version; delete that one first.
	ErrReferenced = errors.New("schema version is referenced")
	// ErrNotEmpty: IMPORT mode was asked for where schemas are recorded
	// already, without force; ask with force if mixing histories is meant.
	ErrNotEmpty = errors.New("registry not empty")
	// ErrNoSubjects: the driver keeps no free subjects.
	ErrNoSubjects = errors.New("driver keeps no free subjects")
)

// MaxSubjectLength is the longest subject name, in bytes.
const MaxSubjectLength = 255

// ValidSubject checks a subject name: 1 to MaxSubjectLength bytes of UTF-8
// without control characters.
func ValidSubject(name string) error {
	switch {
	case name == "" || len(name) > MaxSubjectLength:
		return fmt.Errorf("%w: subject %q: a subject has 1 to %d bytes", ErrInvalidName, name, MaxSubjectLength)
	case !utf8.ValidString(name) || strings.ContainsFunc(name, unicode.IsControl):
		return fmt.Errorf("%w: subject %q: use printable UTF-8 without control characters", ErrInvalidName, name)
	}
	return nil
}

// SubjectReference binds a name a JSON Schema document uses as a "$ref"
// to a version of another free subject.
type SubjectReference struct {
	Name    string
	Subject string
	Version int // 0 or -1 on input: the latest live version
}

// SubjectRegistration is a document to record under a free subject.
type SubjectRegistration struct {
	Subject string
	// Type is the document's language; empty is JSON.
	Type   schema.Type
	Schema []byte
	// References bind a JSON Schema document's "$ref" names to versions of
	// other free subjects.
	References []SubjectReference
	// ID and Version ask for an explicit global id and version number, for
	// restoring a registry's history; both need IMPORT mode.
	ID      int64
	Version int
}

// SubjectVersion is one version of a free subject.
type SubjectVersion struct {
	Subject     string
	Version     int
	ID          int64 // the global schema id
	Fingerprint string
	Type        schema.Type
	Text        []byte         // as Revision.Text
	Schema      *schema.Schema // the parsed JSON Schema, nil for other types
	CreatedAt   time.Time
	Deleted     bool // soft-deleted: hidden unless asked for
	References  []SubjectReference
}

func (r *Registry) subjects() (driver.Subjects, error) {
	store, err := r.store()
	if err != nil {
		return nil, err
	}
	subjects, ok := store.(driver.Subjects)
	if !ok {
		return nil, fmt.Errorf("sqlstreams: %s: %w", r.client.drv.Name(), ErrNoSubjects)
	}
	return subjects, nil
}

// RegisterSubject records a document as the next version of a free
// subject, or returns the live version that already holds the same schema
// (nothing is written then). A new version must pass the subject's level
// (its own, else the registry-wide one, else BACKWARD) against the
// subject's live versions: the latest, or all of them at a transitive
// level. The subject's mode (else the registry-wide one) decides as for
// streams: READONLY refuses, IMPORT records unchecked and accepts an
// explicit id and version.
func (r *Registry) RegisterSubject(ctx context.Context, p SubjectRegistration) (SubjectVersion, error) {
	store, err := r.subjects()
	if err != nil {
		return SubjectVersion{}, err
	}
	if err := ValidSubject(p.Subject); err != nil {
		return SubjectVersion{}, err
	}
	if p.ID < 0 || p.Version < 0 {
		return SubjectVersion{}, fmt.Errorf("%w: id %d, version %d; explicit ones must be positive", ErrInvalidOption, p.ID, p.Version)
	}
	reg, err := r.subjectDocument(ctx, store, p)
	if err != nil {
		return SubjectVersion{}, err
	}
	rv, _, err := store.RecordSubjectVersion(ctx, driver.RecordSubjectVersionParams{
		Version: driver.SubjectVersion{Subject: p.Subject, Version: p.Version, ID: p.ID, Fingerprint: reg.fingerprint(), Type: string(reg.docType()),
			Schema: reg.stored(), CreatedAt: time.Now().UTC(), References: reg.subjectRefs},
		Decide: func(live []driver.SubjectVersion, subjectSet, global driver.RegistrySettings) error {
			mode, scope := effectiveMode(subjectSet, global)
			switch {
			case mode == ModeReadOnly:
				return subjectReadOnly(p.Subject, scope, "record a new version")
			case mode != ModeImport && (p.ID != 0 || p.Version != 0):
				return fmt.Errorf("%w: an explicit schema id or version needs IMPORT mode (the mode is %s, set %s)", ErrInvalidOption, mode, subjectScope(scope))
			case mode == ModeImport || len(live) == 0:
				return nil
			}
			level, _ := effectiveLevel(subjectSet, global)
			return r.judgeSubject(ctx, store, reg, level, live)
		}})
	if err != nil {
		return SubjectVersion{}, r.subjectError(p.Subject, "record a version of", err)
	}
	return r.publicSubjectVersion(rv)
}

// subjectError keeps the library's sentinels and classifies the rest.
func (r *Registry) subjectError(subject, what string, err error) error {
	for _, s := range []error{ErrIncompatibleSchema, ErrReadOnly, ErrInvalidOption, ErrInvalidName, ErrSubjectNotFound, ErrSubjectVersionNotFound, ErrNotSoftDeleted, ErrReferenced} {
		if errors.Is(err, s) {
			return err
		}
	}
	if errors.Is(err, driver.ErrSchemaIDTaken) || errors.Is(err, driver.ErrVersionTaken) {
		return fmt.Errorf("sqlstreams: %s subject %q: %w: %w", what, subject, ErrInvalidOption, unwrapDriver(err))
	}
	return fmt.Errorf("sqlstreams: %s subject %q: %w", what, subject, classify(err))
}

func subjectScope(scope string) string {
	if scope == "stream" {
		return "on the subject"
	}
	return scope
}

func subjectReadOnly(subject, scope, what string) error {
	where := "registry-wide"
	if scope == "stream" {
		where = fmt.Sprintf("on subject %q", subject)
	}
	return fmt.Errorf("sqlstreams: cannot %s of subject %q: %w (mode READONLY set %s); set the mode to READWRITE first", what, subject, ErrReadOnly, where)
}

// subjectDocument parses a free subject's document and binds its
// references; the result is a registration without a stream.
func (r *Registry) subjectDocument(ctx context.Context, store driver.Subjects, p SubjectRegistration) (registration, error) {
	if t, err := schema.ParseType(string(p.Type)); err == nil && t != schema.TypeJSON && len(p.References) > 0 {
		return r.referencingDocument(ctx, store, p, t)
	}
	reg, err := r.document(ctx, nil, SchemaRegistration{Type: p.Type, Schema: p.Schema, Version: 1})
	if err != nil {
		return reg, err
	}
	reg.typ = strings.Replace(reg.typ, "schema document", "document under subject "+fmt.Sprintf("%q", p.Subject), 1)
	reg.subject = p.Subject
	if len(p.References) == 0 {
		return reg, nil
	}
	return reg, r.bindSubjectRefs(ctx, store, &reg, schema.TypeJSON, p.References)
}

// referencingDocument parses a free subject's document of type t (not JSON
// Schema) that uses types other subjects' documents define: its references
// are bound first, and it is parsed with the documents they reach.
func (r *Registry) referencingDocument(ctx context.Context, store driver.Subjects, p SubjectRegistration, t schema.Type) (registration, error) {
	reg := registration{typ: fmt.Sprintf("%s document under subject %q", strings.ToLower(string(t)), p.Subject), version: 1,
		policy: r.client.docPolicy, subject: p.Subject, text: slices.Clone(p.Schema)}
	if _, ok := r.formats[t]; !ok {
		return reg, fmt.Errorf("%w: schema type %s is not enabled; enable it with sqlstreams.WithFormats (%s)", ErrInvalidOption, t, r.typeList())
	}
	if err := r.bindSubjectRefs(ctx, store, &reg, t, p.References); err != nil {
		return reg, err
	}
	doc, err := r.parseWithRefs(ctx, store, t, p.Schema, reg.subjectRefs)
	if err != nil {
		if errors.Is(err, ErrInvalidOption) {
			return reg, err
		}
		return reg, fmt.Errorf("%w: %s schema document: %v", ErrInvalidOption, t, err)
	}
	reg.doc = doc
	return reg, nil
}

// judgeSubject checks a candidate against a subject's live versions at a
// level (Judge takes the latest, or all at a transitive level).
func (r *Registry) judgeSubject(ctx context.Context, store driver.Subjects, reg registration, level schema.Level, live []driver.SubjectVersion) error {
	candidate, err := r.subjectCandidate(ctx, store, reg)
	if err != nil {
		return err
	}
	docs := make([]schema.Document, len(live))
	for i, v := range live {
		if docs[i], err = r.subjectDoc(ctx, store, v, reg.policy); err != nil {
			return err
		}
	}
	var problems []SchemaProblem
	for _, p := range schema.Judge(level, docs, candidate).Problems {
		problems = append(problems, SchemaProblem{Against: fmt.Sprintf("version %d", live[p.Against].Version), Problem: p})
	}
	if len(problems) == 0 {
		return nil
	}
	return &IncompatibleSchemaError{Subject: reg.subject, Type: reg.typ, Level: level, Problems: problems}
}

// subjectDoc is a stored version as the judge reads it.
func (r *Registry) subjectDoc(ctx context.Context, store driver.Subjects, v driver.SubjectVersion, policy schema.Policy) (schema.Document, error) {
	t := docType(v.Type)
	if t == schema.TypeJSON {
		s, err := schema.Parse(v.Schema)
		if err != nil {
			return nil, fmt.Errorf("sqlstreams: stored schema of subject %q version %d: %w", v.Subject, v.Version, err)
		}
		if s, err = r.bundleSubject(ctx, store, s, v.References); err != nil {
			return nil, err
		}
		return schema.JSONDocument(s, policy), nil
	}
	f, ok := r.formats[t]
	if !ok {
		return schema.Opaque(t, v.Schema), nil
	}
	var d schema.Document
	var err error
	if len(v.References) > 0 {
		d, err = r.parseWithRefs(ctx, store, t, v.Schema, v.References)
	} else {
		d, err = f.Parse(v.Schema)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstreams: stored %s schema of subject %q version %d: %w", t, v.Subject, v.Version, err)
	}
	return d, nil
}

// subjectCandidate is a registration's document with its subject
// references bundled in.
func (r *Registry) subjectCandidate(ctx context.Context, store driver.Subjects, reg registration) (schema.Document, error) {
	if reg.doc != nil {
		return reg.doc, nil
	}
	s, err := r.bundleSubject(ctx, store, reg.schema, reg.subjectRefs)
	if err != nil {
		return nil, err
	}
	return schema.JSONDocument(s, reg.policy), nil
}

// CheckSubject is the dry run of RegisterSubject: without versions it
// checks p as a registration would (the subject's level against its live
// versions); with versions, against each of those in the level's
// directions. It records nothing. A subject without live versions accepts
// any document.
func (r *Registry) CheckSubject(ctx context.Context, p SubjectRegistration, versions ...int) error {
	store, err := r.subjects()
	if err != nil {
		return err
	}
	reg, err := r.subjectDocument(ctx, store, p)
	if err != nil {
		return err
	}
	live, err := r.liveVersions(ctx, store, p.Subject)
	if err != nil {
		return err
	}
	subjectSet, global, err := r.subjectSettings(ctx, store, p.Subject)
	if err != nil {
		return err
	}
	level, _ := effectiveLevel(subjectSet, global)
	if len(versions) > 0 {
		var chosen []driver.SubjectVersion
		for _, n := range versions {
			i := slices.IndexFunc(live, func(v driver.SubjectVersion) bool { return v.Version == n })
			if i < 0 {
				return fmt.Errorf("sqlstreams: subject %q: %w: version %d", p.Subject, ErrSubjectVersionNotFound, n)
			}
			chosen = append(chosen, live[i])
		}
		live, level = chosen, transitive(level)
	}
	return r.judgeSubject(ctx, store, reg, level, live)
}

func (r *Registry) liveVersions(ctx context.Context, store driver.Subjects, subject string) ([]driver.SubjectVersion, error) {
	vs, err := store.SubjectVersions(ctx, driver.SubjectVersionsParams{Subject: subject})
	if err != nil {
		return nil, fmt.Errorf("sqlstreams: versions of subject %q: %w", subject, classify(err))
	}
	return vs, nil
}

func (r *Registry) subjectSettings(ctx context.Context, store driver.Subjects, subject string) (subjectSet, global driver.RegistrySettings, err error) {
	if subjectSet, err = store.SubjectSettings(ctx, driver.SubjectParams{Subject: subject}); err != nil {
		return subjectSet, global, fmt.Errorf("sqlstreams: settings of subject %q: %w", subject, classify(err))
	}
	if global, err = r.client.drv.(driver.Registry).RegistrySettings(ctx, driver.RegistrySettingsParams{}); err != nil {
		return subjectSet, global, fmt.Errorf("sqlstreams: registry settings: %w", classify(err))
	}
	return subjectSet, global, nil
}

// SubjectVersions lists a free subject's versions in version order (the
// soft-deleted ones too when deleted is true); a subject without any is
// ErrSubjectNotFound.
func (r *Registry) SubjectVersions(ctx context.Context, subject string, deleted bool) ([]SubjectVersion, error) {
	store, err := r.subjects()
	if err != nil {
		return nil, err
	}
	vs, err := store.SubjectVersions(ctx, driver.SubjectVersionsParams{Subject: subject, Deleted: deleted})
	if err != nil {
		return nil, fmt.Errorf("sqlstreams: versions of subject %q: %w", subject, classify(err))
	}
	if len(vs) == 0 {
		return nil, fmt.Errorf("sqlstreams: subject %q: %w; register a schema under it first", subject, ErrSubjectNotFound)
	}
	out := make([]SubjectVersion, len(vs))
	for i, v := range vs {
		if out[i], err = r.publicSubjectVersion(v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// FreeSubjects lists the free subjects with a live version (with deleted,
// also those whose versions are all soft-deleted), by name.
func (r *Registry) FreeSubjects(ctx context.Context, deleted bool) ([]string, error) {
	store, err := r.subjects()
	if err != nil {
		return nil, err
	}
	names, err := store.ListSubjects(ctx, driver.ListSubjectsParams{Deleted: deleted})
	if err != nil {
		return nil, fmt.Errorf("sqlstreams: list subjects: %w", classify(err))
	}
	return names, nil
}

// SubjectUsages lists the free subject versions recorded with a global
// id, soft-deleted ones included (Deleted says which), by subject and
// version.
func (r *Registry) SubjectUsages(ctx context.Context, id int64) ([]SubjectVersion, error) {
	store, err := r.subjects()
	if err != nil {
		return nil, err
	}
	vs, err := store.SubjectUsages(ctx, driver.SchemaUsagesParams{ID: id})
	if err != nil {
		return nil, fmt.Errorf("sqlstreams: subjects of schema id %d: %w", id, classify(err))
	}
	out := make([]SubjectVersion, len(vs))
	for i, v := range vs {
		if out[i], err = r.publicSubjectVersion(v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (r *Registry) publicSubjectVersion(v driver.SubjectVersion) (SubjectVersion, error) {
	out := SubjectVersion{Subject: v.Subject, Version: v.Version, ID: v.ID, Fingerprint: v.Fingerprint, Type: docType(v.Type), Text: v.Schema,
		CreatedAt: v.CreatedAt, Deleted: v.Deleted}
	for _, f := range v.References {
		out.References = append(out.References, SubjectReference(f))
	}
	if out.Type == schema.TypeJSON {
		var err error
		if out.Schema, err = schema.Parse(v.Schema); err != nil {
			return SubjectVersion{}, fmt.Errorf("sqlstreams: stored schema of subject %q version %d: %w", v.Subject, v.Version, err)
		}
	}
	return out, nil
}

// FindSubjectVersion returns the version of a free subject that holds
// p's document bound to the same references (soft-deleted versions too
// when deleted is true): ErrSubjectNotFound when the subject has no
// version, ErrSchemaNotFound when none holds the document.
func (r *Registry) FindSubjectVersion(ctx context.Context, p SubjectRegistration, deleted bool) (SubjectVersion, error) {
	store, err := r.subjects()
	if err != nil {
		return SubjectVersion{}, err
	}
	reg, err := r.subjectDocument(ctx, store, p)
	if err != nil {
		return SubjectVersion{}, err
	}
	vs, err := r.SubjectVersions(ctx, p.Subject, deleted)
	if err != nil {
		return SubjectVersion{}, err
	}
	fp := reg.fingerprint()
	for i := len(vs) - 1; i >= 0; i-- {
		if vs[i].Fingerprint == fp {
			return vs[i], nil
		}
	}
	return SubjectVersion{}, fmt.Errorf("sqlstreams: subject %q: %w: no version holds this document", p.Subject, ErrSchemaNotFound)
}
