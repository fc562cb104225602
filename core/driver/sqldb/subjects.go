package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Subjects is driver.Subjects' storage as MySQL and SQLite do it alike,
// run on a transaction (or connection) the driver opens: the driver keeps
// its transactions, retries and error classification. T is how the
// engine stores a time (SQLite: microseconds, MySQL: DATETIME(6)).
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
	AssignID func(ctx context.Context, q Querier, rev driver.SchemaRevision) (int64, error)
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
func (s Subjects[T]) Settings(ctx context.Context, q Querier, subject string) (driver.RegistrySettings, error) {
	return s.settings(ctx, q, subject, "")
}

func (s Subjects[T]) settings(ctx context.Context, q Querier, subject, lock string) (driver.RegistrySettings, error) {
	var set driver.RegistrySettings
	err := q.QueryRowContext(ctx, `SELECT level, mode FROM registry_subject WHERE name = ? `+lock, subject).Scan(&set.Level, &set.Mode)
	if errors.Is(err, sql.ErrNoRows) {
		return set, nil
	}
	return set, err
}

// lockSubject creates a subject's row if needed and locks it, so that
// writers of one subject take turns; it returns the subject's settings.
func (s Subjects[T]) lockSubject(ctx context.Context, tx Querier, subject string) (driver.RegistrySettings, error) {
	if _, err := tx.ExecContext(ctx, s.EnsureSubject, subject, s.Time(time.Now().UTC())); err != nil {
		return driver.RegistrySettings{}, err
	}
	return s.settings(ctx, tx, subject, s.Lock)
}

// UpdateSettings implements driver.Subjects.UpdateSubjectSettings in tx.
func (s Subjects[T]) UpdateSettings(ctx context.Context, tx Querier, p driver.UpdateSubjectSettingsParams) error {
	set, err := s.lockSubject(ctx, tx, p.Subject)
	if err != nil {
		return err
	}
	if err := p.Update(&set); err != nil {
		return driver.CallerError{Err: err}
	}
	_, err = tx.ExecContext(ctx, `UPDATE registry_subject SET level = ?, mode = ? WHERE name = ?`, set.Level, set.Mode, p.Subject)
	return err
}

// Versions implements driver.Subjects.SubjectVersions on q.
func (s Subjects[T]) Versions(ctx context.Context, q Querier, p driver.SubjectVersionsParams) ([]driver.SubjectVersion, error) {
	out, err := Collect(ctx, q, subjectVersionColumns+`WHERE v.subject = ? AND (? = 1 OR v.deleted = 0) ORDER BY v.version`,
		[]any{p.Subject, boolArg(p.Deleted)}, s.scanVersion)
	if err != nil || len(out) == 0 {
		return out, err
	}
	return out, withSubjectReferences(ctx, q, out, `SELECT subject, version, name, ref_subject, ref_version FROM subject_reference
		WHERE subject = ? ORDER BY version, position`, p.Subject)
}

// withSubjectReferences adds to each of out the references query (with
// arg) returns for it: rows of subject, version, name, ref_subject,
// ref_version in position order.
func withSubjectReferences(ctx context.Context, q Querier, out []driver.SubjectVersion, query string, arg any) error {
	type key struct {
		subject string
		version int
	}
	at := map[key]int{}
	for i, v := range out {
		at[key{v.Subject, v.Version}] = i
	}
	return EachRow(ctx, q, query, []any{arg}, func(r *sql.Rows) error {
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

func boolArg(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Record implements driver.Subjects.RecordSubjectVersion in tx, by
// driver.RecordSubjectVersionIn over this engine's steps.
func (s Subjects[T]) Record(ctx context.Context, tx Querier, p driver.RecordSubjectVersionParams) (driver.SubjectVersion, bool, error) {
	return driver.RecordSubjectVersionIn(ctx, subjectSteps[T]{s: s, tx: tx}, p)
}

// subjectSteps are driver.SubjectSteps in tx.
type subjectSteps[T any] struct {
	s  Subjects[T]
	tx Querier
}

func (st subjectSteps[T]) LockSubject(ctx context.Context, subject string) (driver.RegistrySettings, error) {
	return st.s.lockSubject(ctx, st.tx, subject)
}

func (st subjectSteps[T]) Versions(ctx context.Context, subject string) ([]driver.SubjectVersion, error) {
	return st.s.Versions(ctx, st.tx, driver.SubjectVersionsParams{Subject: subject, Deleted: true})
}

func (st subjectSteps[T]) GlobalSettings(ctx context.Context) (driver.RegistrySettings, error) {
	var global driver.RegistrySettings
	err := st.tx.QueryRowContext(ctx, `SELECT level, mode FROM registry_setting WHERE stream_id = 0 AND version = 0`).Scan(&global.Level, &global.Mode)
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	return global, err
}

func (st subjectSteps[T]) AssignID(ctx context.Context, rev driver.SchemaRevision) (int64, error) {
	return st.s.AssignID(ctx, st.tx, rev)
}

func (st subjectSteps[T]) InsertVersion(ctx context.Context, v driver.SubjectVersion) (driver.SubjectVersion, error) {
	if _, err := st.tx.ExecContext(ctx, `INSERT INTO subject_version (subject, version, schema_id, deleted, created_at) VALUES (?, ?, ?, 0, ?)`,
		v.Subject, v.Version, v.ID, st.s.Time(v.CreatedAt)); err != nil {
		return v, err
	}
	for i, ref := range v.References {
		if _, err := st.tx.ExecContext(ctx, `INSERT INTO subject_reference (subject, version, position, name, ref_subject, ref_version) VALUES (?, ?, ?, ?, ?, ?)`,
			v.Subject, v.Version, i, ref.Name, ref.Subject, ref.Version); err != nil {
			return v, err
		}
	}
	// The stored document is the id's: the first text of its fingerprint.
	err := st.tx.QueryRowContext(ctx, `SELECT schema_json FROM schema_id WHERE id = ?`, v.ID).Scan(&v.Schema)
	return v, err
}

// List implements driver.Subjects.ListSubjects on q.
func (s Subjects[T]) List(ctx context.Context, q Querier, p driver.ListSubjectsParams) ([]string, error) {
	return Collect(ctx, q, `SELECT DISTINCT subject FROM subject_version WHERE (? = 1 OR deleted = 0) ORDER BY subject`,
		[]any{boolArg(p.Deleted)}, Column[string])
}

// Usages implements driver.Subjects.SubjectUsages on q.
func (s Subjects[T]) Usages(ctx context.Context, q Querier, p driver.SchemaUsagesParams) ([]driver.SubjectVersion, error) {
	out, err := Collect(ctx, q, subjectVersionColumns+`WHERE v.schema_id = ? ORDER BY v.subject, v.version`, []any{p.ID}, s.scanVersion)
	if err != nil || len(out) == 0 {
		return out, err
	}
	return out, withSubjectReferences(ctx, q, out, `SELECT r.subject, r.version, r.name, r.ref_subject, r.ref_version FROM subject_reference r
		JOIN subject_version v ON v.subject = r.subject AND v.version = r.version WHERE v.schema_id = ? ORDER BY r.subject, r.version, r.position`, p.ID)
}

// Delete implements driver.Subjects.DeleteSubjectVersions in tx. The
// versions that reference a target come with subject, version and
// deleted.
func (s Subjects[T]) Delete(ctx context.Context, tx Querier, p driver.DeleteSubjectVersionsParams) ([]int, error) {
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
		users, err = Collect(ctx, tx, `SELECT DISTINCT v.subject, v.version, v.deleted FROM subject_reference f
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
		_, err := tx.ExecContext(ctx, `UPDATE subject_version SET deleted = 1 WHERE subject = ?`+in, args...)
		return numbers, err
	}
	for _, table := range []string{"subject_version", "subject_reference"} {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE subject = ?`+in, args...); err != nil {
			return nil, err
		}
	}
	if p.Version == 0 {
		_, err = tx.ExecContext(ctx, `DELETE FROM registry_subject WHERE name = ?`, p.Subject)
	}
	return numbers, err
}
