package driver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"
)

// Subjects is implemented by a Registry that also keeps free subjects
// (R12 in docs/contracts.md): named subjects of their own, as Kafka clients
// name them ("orders-value", "shop.orders.OrderPlaced"), with versions
// 1..n that each point at a global schema id (SchemaIDs), and their own
// level and mode. They are bound to no stream, so no row of a log names
// them. Package sqlstreams owns the rules (levels, modes, which deletes
// are allowed); the driver owns storage and the transaction that makes a
// check and the write it allows one atomic step. Every bundled driver
// implements it.
type Subjects interface {
	// SubjectSettings returns the level and mode set on a subject (empty
	// strings mean unset), also for a subject with no version yet.
	SubjectSettings(ctx context.Context, p SubjectParams) (RegistrySettings, error)
	// UpdateSubjectSettings reads a subject's settings, lets p.Update change
	// them and stores the result, in one transaction, creating the subject
	// when it has no row yet. An error from Update aborts without writing.
	UpdateSubjectSettings(ctx context.Context, p UpdateSubjectSettingsParams) error
	// RecordSubjectVersion records a version of a subject. When a live
	// (not deleted) version has the same fingerprint it is returned with
	// created=false and nothing is written. Otherwise p.Decide runs inside
	// the driver's transaction with the subject's live versions (oldest
	// first, documents included) and the subject's and registry-wide
	// settings; when it returns nil the version is written (number
	// p.Version.Version when not 0, else one after the highest ever
	// recorded) with the global id of its fingerprint, assigned as
	// RecordSchema assigns it. Concurrent calls for one subject serialize.
	RecordSubjectVersion(ctx context.Context, p RecordSubjectVersionParams) (recorded SubjectVersion, created bool, err error)
	// SubjectVersions lists a subject's versions in version order, the
	// soft-deleted ones too when p.Deleted.
	SubjectVersions(ctx context.Context, p SubjectVersionsParams) ([]SubjectVersion, error)
	// ListSubjects lists the subjects with at least one live version (with
	// p.Deleted: with any version) in name order.
	ListSubjects(ctx context.Context, p ListSubjectsParams) ([]string, error)
	// DeleteSubjectVersions deletes one version of a subject (p.Version),
	// or every version (p.Version 0): soft deletion marks them, permanent
	// deletion removes them (with their references). p.Decide runs first,
	// inside the transaction, with the versions the call would change and
	// the versions (of any subject) whose references name one of them; an
	// error from it aborts without writing. It returns the version numbers
	// changed. A permanent deletion of every version also forgets the
	// subject's settings.
	DeleteSubjectVersions(ctx context.Context, p DeleteSubjectVersionsParams) ([]int, error)
	// SubjectUsages lists the versions, of any subject, recorded with a
	// global id, soft-deleted ones included, ordered by subject and
	// version, each with its references.
	SubjectUsages(ctx context.Context, p SchemaUsagesParams) ([]SubjectVersion, error)
}

// SubjectParams names a subject.
type SubjectParams struct {
	Subject string
}

// UpdateSubjectSettingsParams changes a subject's settings.
type UpdateSubjectSettingsParams struct {
	Subject string
	Update  func(*RegistrySettings) error
}

// RecordSubjectVersionParams records a version, if Decide allows it.
type RecordSubjectVersionParams struct {
	Version SubjectVersion
	Decide  func(live []SubjectVersion, subject, global RegistrySettings) error
}

// SubjectVersionsParams names a subject; Deleted includes soft-deleted
// versions.
type SubjectVersionsParams struct {
	Subject string
	Deleted bool
}

// ListSubjectsParams: Deleted also lists subjects whose versions are all
// soft-deleted.
type ListSubjectsParams struct {
	Deleted bool
}

// DeleteSubjectVersionsParams deletes a version (or, with Version 0, every
// version) of a subject, softly or permanently.
type DeleteSubjectVersionsParams struct {
	Subject   string
	Version   int
	Permanent bool
	Decide    func(targets, referencedBy []SubjectVersion) error
}

// SubjectVersion is one version of a free subject.
type SubjectVersion struct {
	Subject     string
	Version     int
	ID          int64 // the global schema id; on input a non-zero ID asks for that id (IMPORT)
	Fingerprint string
	Type        string // as SchemaRevision.Type
	Schema      []byte // the document of the id, as SchemaDocument.Schema
	CreatedAt   time.Time
	Deleted     bool // soft-deleted
	// References are the subject versions the document refers to by name.
	References []SubjectReference
}

// SubjectReference binds a name a document uses to a subject version.
type SubjectReference struct {
	Name    string
	Subject string
	Version int
}

// ErrVersionTaken: an explicit version number (IMPORT mode) is already a
// version of the subject.
var ErrVersionTaken = errors.New("subject version number already used")

// NextSubjectVersion is the number a new version of a subject gets: the
// one asked for (IMPORT), which must be free, else one after the highest
// ever recorded, deleted ones included, so that a number never names two
// documents while either is visible.
func NextSubjectVersion(all []SubjectVersion, asked int) (int, error) {
	highest := 0
	for _, v := range all {
		if asked != 0 && v.Version == asked {
			return 0, fmt.Errorf("%w: version %d of subject %q exists", ErrVersionTaken, asked, v.Subject)
		}
		highest = max(highest, v.Version)
	}
	if asked != 0 {
		return asked, nil
	}
	return highest + 1, nil
}

// softDeleted is a registry record that a soft deletion hides: a
// SubjectVersion or a SchemaRevision.
type softDeleted interface{ softDeleted() bool }

func (v SubjectVersion) softDeleted() bool { return v.Deleted }
func (r SchemaRevision) softDeleted() bool { return r.Deleted }

// Live are the records (subject versions or schema revisions) not
// soft-deleted, in the order given.
func Live[T softDeleted](all []T) []T {
	var out []T
	for _, r := range all {
		if !r.softDeleted() {
			out = append(out, r)
		}
	}
	return out
}

// DeletionTargets are the versions a deletion changes: version (every
// version when 0); a soft deletion skips the ones already soft-deleted.
func DeletionTargets(all []SubjectVersion, version int, permanent bool) []SubjectVersion {
	var out []SubjectVersion
	for _, v := range all {
		if (version == 0 || v.Version == version) && (permanent || !v.Deleted) {
			out = append(out, v)
		}
	}
	return out
}

// SubjectSteps are an engine's statements for recording a subject version
// (Subjects.RecordSubjectVersion), all run in the one transaction the
// driver opens around RecordSubjectVersionIn. The engine decides how it
// locks and what SQL it runs; RecordSubjectVersionIn decides what is
// recorded, so that every driver answers a registration alike.
type SubjectSteps interface {
	// LockSubject serializes the recorders of one subject until the
	// transaction ends and returns the subject's settings.
	LockSubject(ctx context.Context, subject string) (RegistrySettings, error)
	// Versions returns the subject's versions, soft-deleted ones included,
	// ordered by version.
	Versions(ctx context.Context, subject string) ([]SubjectVersion, error)
	// GlobalSettings returns the registry-wide settings; none stored reads
	// as unset.
	GlobalSettings(ctx context.Context) (RegistrySettings, error)
	// AssignID returns the global id of rev's fingerprint (see SchemaIDs).
	AssignID(ctx context.Context, rev SchemaRevision) (int64, error)
	// InsertVersion writes v and its references and returns it as stored,
	// with its id's document (the first text of its fingerprint).
	InsertVersion(ctx context.Context, v SubjectVersion) (SubjectVersion, error)
}

// RecordSubjectVersionIn is RecordSubjectVersion's sequence over an
// engine's steps: lock the subject, return a live version with the same
// fingerprint as it is, else let p.Decide judge the new one against the
// live versions and the subject's and registry-wide settings, number it
// (NextSubjectVersion), give it its global id and write it. An error of
// Decide's, and a version number that IMPORT asks for and cannot have,
// come back as CallerError.
func RecordSubjectVersionIn(ctx context.Context, s SubjectSteps, p RecordSubjectVersionParams) (SubjectVersion, bool, error) {
	in := p.Version
	subjectSet, err := s.LockSubject(ctx, in.Subject)
	if err != nil {
		return in, false, err
	}
	all, err := s.Versions(ctx, in.Subject)
	if err != nil {
		return in, false, err
	}
	live := Live(all)
	for _, v := range live {
		if v.Fingerprint == in.Fingerprint {
			return v, false, nil
		}
	}
	global, err := s.GlobalSettings(ctx)
	if err != nil {
		return in, false, err
	}
	if err := p.Decide(live, subjectSet, global); err != nil {
		return in, false, CallerError{Err: err}
	}
	out := in
	if out.Version, err = NextSubjectVersion(all, in.Version); err != nil {
		return in, false, CallerError{Err: err}
	}
	out.Type, out.CreatedAt = cmp.Or(in.Type, "JSON"), in.CreatedAt.UTC().Truncate(time.Microsecond)
	if out.ID, err = s.AssignID(ctx, SchemaRevision{Fingerprint: out.Fingerprint, Type: out.Type, Schema: out.Schema, CreatedAt: out.CreatedAt, ID: in.ID}); err != nil {
		return in, false, err
	}
	if out, err = s.InsertVersion(ctx, out); err != nil {
		return in, false, err
	}
	return out, true, nil
}
