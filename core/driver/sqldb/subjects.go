package sqldb

import (
	"context"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Subjects is driver.Subjects' storage as every SQL engine does it alike,
// run on a transaction (or connection) the driver opens, through a
// Runner: the driver keeps its transactions, retries and error
// classification. T is how the engine stores a time, as for Registry.
type Subjects[T any] struct {
	// EnsureSubject inserts a subject's row (arguments: name, created_at)
	// unless it exists.
	EnsureSubject string
	// Lock follows the read of a subject's row that serializes writers of
	// one subject ("FOR UPDATE"; empty for SQLite's single writer).
	Lock string
	// Time turns a time into the stored value, At reads one back.
	Time func(time.Time) any
	At   func(T) time.Time
	// AssignID returns the global id of a document, as the driver's
	// RecordSchema assigns it.
	AssignID func(ctx context.Context, q Runner, rev driver.SchemaRevision) (int64, error)
}

const subjectVersionColumns = `SELECT v.subject, v.version, v.schema_id, v.deleted, v.created_at, i.fingerprint, i.schema_type, i.schema_json
	FROM subject_version v JOIN schema_id i ON i.id = v.schema_id `

func (s Subjects[T]) scanVersion(r driver.RowScanner) (driver.SubjectVersion, error) {
	var v driver.SubjectVersion
	var created T
	var doc string
	err := r.Scan(&v.Subject, &v.Version, &v.ID, &v.Deleted, &created, &v.Fingerprint, &v.Type, &doc)
	v.CreatedAt, v.Schema = s.At(created), []byte(doc)
	return v, err
}

// Settings reads a subject's level and mode; no row reads as unset.
func (s Subjects[T]) Settings(ctx context.Context, q Runner, subject string) (driver.RegistrySettings, error) {
	return s.settings(ctx, q, subject, "")
}

func (s Subjects[T]) settings(ctx context.Context, q Runner, subject, lock string) (driver.RegistrySettings, error) {
	var set driver.RegistrySettings
	_, err := scanRow(ctx, q, `SELECT level, mode FROM registry_subject WHERE name = ? `+lock, []any{subject}, &set.Level, &set.Mode)
	return set, err
}

// lockSubject creates a subject's row if needed and locks it, so that
// writers of one subject take turns; it returns the subject's settings.
func (s Subjects[T]) lockSubject(ctx context.Context, tx Runner, subject string) (driver.RegistrySettings, error) {
	if _, err := tx.Exec(ctx, s.EnsureSubject, subject, s.Time(time.Now().UTC())); err != nil {
		return driver.RegistrySettings{}, err
	}
	return s.settings(ctx, tx, subject, s.Lock)
}

// UpdateSettings implements driver.Subjects.UpdateSubjectSettings in tx.
func (s Subjects[T]) UpdateSettings(ctx context.Context, tx Runner, p driver.UpdateSubjectSettingsParams) error {
	set, err := s.lockSubject(ctx, tx, p.Subject)
	if err != nil {
		return err
	}
	if err := p.Update(&set); err != nil {
		return driver.CallerError{Err: err}
	}
	_, err = tx.Exec(ctx, `UPDATE registry_subject SET level = ?, mode = ? WHERE name = ?`, set.Level, set.Mode, p.Subject)
	return err
}

// Versions implements driver.Subjects.SubjectVersions on q.
func (s Subjects[T]) Versions(ctx context.Context, q Runner, p driver.SubjectVersionsParams) ([]driver.SubjectVersion, error) {
	out, err := collectOn(ctx, q, subjectVersionColumns+`WHERE v.subject = ? AND (? OR NOT v.deleted) ORDER BY v.version`,
		[]any{p.Subject, p.Deleted}, s.scanVersion)
	if err != nil || len(out) == 0 {
		return out, err
	}
	return out, withSubjectReferences(ctx, q, out, `SELECT subject, version, name, ref_subject, ref_version FROM subject_reference
		WHERE subject = ? ORDER BY version, position`, p.Subject)
}

// withSubjectReferences adds to each of out the references query (with
// arg) returns for it: rows of subject, version, name, ref_subject,
// ref_version in position order.
func withSubjectReferences(ctx context.Context, q Runner, out []driver.SubjectVersion, query string, arg any) error {
	type key struct {
		subject string
		version int
	}
	at := map[key]int{}
	for i, v := range out {
		at[key{v.Subject, v.Version}] = i
	}
	return eachRowOn(ctx, q, query, []any{arg}, never, func(r Rows) error {
		var k key
		var ref driver.SubjectReference
		if err := r.Scan(&k.subject, &k.version, &ref.Name, &ref.Subject, &ref.Version); err != nil {
			return err
		}
		if i, ok := at[k]; ok {
			out[i].References = append(out[i].References, ref)
		}
		return nil
	})
}

// Record implements driver.Subjects.RecordSubjectVersion in tx, by
// driver.RecordSubjectVersionIn over this engine's steps.
func (s Subjects[T]) Record(ctx context.Context, tx Runner, p driver.RecordSubjectVersionParams) (driver.SubjectVersion, bool, error) {
	return driver.RecordSubjectVersionIn(ctx, subjectSteps[T]{s: s, tx: tx}, p)
}

// subjectSteps are driver.SubjectSteps in tx.
type subjectSteps[T any] struct {
	s  Subjects[T]
	tx Runner
}

func (st subjectSteps[T]) LockSubject(ctx context.Context, subject string) (driver.RegistrySettings, error) {
	return st.s.lockSubject(ctx, st.tx, subject)
}

func (st subjectSteps[T]) Versions(ctx context.Context, subject string) ([]driver.SubjectVersion, error) {
	return st.s.Versions(ctx, st.tx, driver.SubjectVersionsParams{Subject: subject, Deleted: true})
}

func (st subjectSteps[T]) GlobalSettings(ctx context.Context) (driver.RegistrySettings, error) {
	var global driver.RegistrySettings
	_, err := scanRow(ctx, st.tx, `SELECT level, mode FROM registry_setting WHERE stream_id = 0 AND version = 0`, nil, &global.Level, &global.Mode)
	return global, err
}

func (st subjectSteps[T]) AssignID(ctx context.Context, rev driver.SchemaRevision) (int64, error) {
	return st.s.AssignID(ctx, st.tx, rev)
}

func (st subjectSteps[T]) InsertVersion(ctx context.Context, v driver.SubjectVersion) (driver.SubjectVersion, error) {
	if _, err := st.tx.Exec(ctx, `INSERT INTO subject_version (subject, version, schema_id, deleted, created_at) VALUES (?, ?, ?, FALSE, ?)`,
		v.Subject, v.Version, v.ID, st.s.Time(v.CreatedAt)); err != nil {
		return v, err
	}
	for i, ref := range v.References {
		if _, err := st.tx.Exec(ctx, `INSERT INTO subject_reference (subject, version, position, name, ref_subject, ref_version) VALUES (?, ?, ?, ?, ?, ?)`,
			v.Subject, v.Version, i, ref.Name, ref.Subject, ref.Version); err != nil {
			return v, err
		}
	}
	// The stored document is the id's: the first text of its fingerprint.
	var doc string
	_, err := scanRow(ctx, st.tx, `SELECT schema_json FROM schema_id WHERE id = ?`, []any{v.ID}, &doc)
	v.Schema = []byte(doc)
	return v, err
}

// List implements driver.Subjects.ListSubjects on q.
func (s Subjects[T]) List(ctx context.Context, q Runner, p driver.ListSubjectsParams) ([]string, error) {
	return collectOn(ctx, q, `SELECT DISTINCT subject FROM subject_version WHERE ? OR NOT deleted ORDER BY subject`,
		[]any{p.Deleted}, Column[string])
}

// Usages implements driver.Subjects.SubjectUsages on q.
func (s Subjects[T]) Usages(ctx context.Context, q Runner, p driver.SchemaUsagesParams) ([]driver.SubjectVersion, error) {
	out, err := collectOn(ctx, q, subjectVersionColumns+`WHERE v.schema_id = ? ORDER BY v.subject, v.version`, []any{p.ID}, s.scanVersion)
	if err != nil || len(out) == 0 {
		return out, err
	}
	return out, withSubjectReferences(ctx, q, out, `SELECT r.subject, r.version, r.name, r.ref_subject, r.ref_version FROM subject_reference r
		JOIN subject_version v ON v.subject = r.subject AND v.version = r.version WHERE v.schema_id = ? ORDER BY r.subject, r.version, r.position`, p.ID)
}

// Delete implements driver.Subjects.DeleteSubjectVersions in tx. The
// versions that reference a target come with subject, version and
// deleted.
func (s Subjects[T]) Delete(ctx context.Context, tx Runner, p driver.DeleteSubjectVersionsParams) ([]int, error) {
	if _, err := s.settings(ctx, tx, p.Subject, s.Lock); err != nil {
		return nil, err
	}
	all, err := s.Versions(ctx, tx, driver.SubjectVersionsParams{Subject: p.Subject, Deleted: true})
	if err != nil {
		return nil, err
	}
	targets := driver.DeletionTargets(all, p.Version, p.Permanent)
	numbers := make([]int, len(targets))
	for i, t := range targets {
		numbers[i] = t.Version
	}
	var users []driver.SubjectVersion
	if len(numbers) > 0 {
		users, err = collectOn(ctx, tx, `SELECT DISTINCT v.subject, v.version, v.deleted FROM subject_reference f
			JOIN subject_version v ON v.subject = f.subject AND v.version = f.version
			WHERE f.ref_subject = ? AND f.ref_version IN (`+Placeholders(len(numbers))+`) ORDER BY v.subject, v.version`,
			append([]any{p.Subject}, Args(numbers)...), func(r driver.RowScanner) (driver.SubjectVersion, error) {
				var v driver.SubjectVersion
				err := r.Scan(&v.Subject, &v.Version, &v.Deleted)
				return v, err
			})
		if err != nil {
			return nil, err
		}
	}
	if err := p.Decide(targets, users); err != nil {
		return nil, driver.CallerError{Err: err}
	}
	if len(numbers) == 0 {
		return nil, nil
	}
	in, args := ` AND version IN (`+Placeholders(len(numbers))+`)`, append([]any{p.Subject}, Args(numbers)...)
	if !p.Permanent {
		_, err := tx.Exec(ctx, `UPDATE subject_version SET deleted = TRUE WHERE subject = ?`+in, args...)
		return numbers, err
	}
	for _, table := range []string{"subject_version", "subject_reference"} {
		if _, err := tx.Exec(ctx, `DELETE FROM `+table+` WHERE subject = ?`+in, args...); err != nil {
			return nil, err
		}
	}
	if p.Version == 0 {
		_, err = tx.Exec(ctx, `DELETE FROM registry_subject WHERE name = ?`, p.Subject)
	}
	return numbers, err
}
