package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

var _ driver.Subjects = (*Driver)(nil)

const subjectVersionColumns = `SELECT v.subject, v.version, v.schema_id, v.deleted, v.created_at, i.fingerprint, i.schema_type, i.schema_json
	FROM subject_version v JOIN schema_id i ON i.id = v.schema_id `

func scanSubjectVersions(rows pgx.Rows, err error) ([]driver.SubjectVersion, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.SubjectVersion, error) {
		var v driver.SubjectVersion
		var doc string
		err := r.Scan(&v.Subject, &v.Version, &v.ID, &v.Deleted, &v.CreatedAt, &v.Fingerprint, &v.Type, &doc)
		v.Schema, v.CreatedAt = []byte(doc), v.CreatedAt.UTC()
		return v, err
	})
}

func subjectSettings(ctx context.Context, q querier, subject, lock string) (driver.RegistrySettings, error) {
	var s driver.RegistrySettings
	err := q.QueryRow(ctx, `SELECT level, mode FROM registry_subject WHERE name = $1::text `+lock, subject).Scan(&s.Level, &s.Mode)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, nil
	}
	return s, err
}

// lockSubject creates a subject's row if needed and locks it, so that
// writers of one subject take turns.
func lockSubject(ctx context.Context, tx pgx.Tx, subject string) (driver.RegistrySettings, error) {
	if _, err := tx.Exec(ctx, `INSERT INTO registry_subject (name, created_at) VALUES ($1::text, now()) ON CONFLICT (name) DO NOTHING`, subject); err != nil {
		return driver.RegistrySettings{}, err
	}
	return subjectSettings(ctx, tx, subject, "FOR UPDATE")
}

// SubjectSettings implements driver.Subjects.
func (d *Driver) SubjectSettings(ctx context.Context, p driver.SubjectParams) (driver.RegistrySettings, error) {
	var s driver.RegistrySettings
	err := d.read(ctx, func() error {
		var err error
		s, err = subjectSettings(ctx, d.pool, p.Subject, "")
		return err
	})
	return s, err
}

// UpdateSubjectSettings implements driver.Subjects.
func (d *Driver) UpdateSubjectSettings(ctx context.Context, p driver.UpdateSubjectSettingsParams) error {
	return d.inTx(ctx, func(tx pgx.Tx) error {
		s, err := lockSubject(ctx, tx, p.Subject)
		if err != nil {
			return err
		}
		if err := p.Update(&s); err != nil {
			return driver.CallerError{Err: err}
		}
		_, err = tx.Exec(ctx, `UPDATE registry_subject SET level = $1::text, mode = $2::text WHERE name = $3::text`, s.Level, s.Mode, p.Subject)
		return err
	})
}

func subjectVersions(ctx context.Context, q querier, p driver.SubjectVersionsParams) ([]driver.SubjectVersion, error) {
	out, err := scanSubjectVersions(q.Query(ctx, subjectVersionColumns+`WHERE v.subject = $1::text AND ($2::boolean OR NOT v.deleted) ORDER BY v.version`, p.Subject, p.Deleted))
	if err != nil || len(out) == 0 {
		return out, err
	}
	return out, withSubjectReferences(ctx, q, out, `SELECT subject, version, name, ref_subject, ref_version FROM subject_reference
		WHERE subject = $1::text ORDER BY version, position`, p.Subject)
}

// withSubjectReferences adds to each of out the references query (with
// arg) returns for it: rows of subject, version, name, ref_subject,
// ref_version in position order.
func withSubjectReferences(ctx context.Context, q querier, out []driver.SubjectVersion, query string, arg any) error {
	type key struct {
		subject string
		version int
	}
	at := map[key]int{}
	for i, v := range out {
		at[key{v.Subject, v.Version}] = i
	}
	rows, err := q.Query(ctx, query, arg)
	if err != nil {
		return err
	}
	var k key
	var ref driver.SubjectReference
	_, err = pgx.ForEachRow(rows, []any{&k.subject, &k.version, &ref.Name, &ref.Subject, &ref.Version}, func() error {
		if i, ok := at[k]; ok {
			out[i].References = append(out[i].References, ref)
		}
		return nil
	})
	return err
}

// RecordSubjectVersion implements driver.Subjects; the lock on the
// subject's row serializes registrations under one subject.
func (d *Driver) RecordSubjectVersion(ctx context.Context, p driver.RecordSubjectVersionParams) (driver.SubjectVersion, bool, error) {
	var out driver.SubjectVersion
	var created bool
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, created, err = driver.RecordSubjectVersionIn(ctx, subjectSteps{tx}, p)
		return err
	})
	return out, created, err
}

// subjectSteps are driver.SubjectSteps in tx.
type subjectSteps struct{ tx pgx.Tx }

func (s subjectSteps) LockSubject(ctx context.Context, subject string) (driver.RegistrySettings, error) {
	return lockSubject(ctx, s.tx, subject)
}

func (s subjectSteps) Versions(ctx context.Context, subject string) ([]driver.SubjectVersion, error) {
	return subjectVersions(ctx, s.tx, driver.SubjectVersionsParams{Subject: subject, Deleted: true})
}

func (s subjectSteps) GlobalSettings(ctx context.Context) (driver.RegistrySettings, error) {
	return readSettings(ctx, s.tx, 0, 0)
}

func (s subjectSteps) AssignID(ctx context.Context, rev driver.SchemaRevision) (int64, error) {
	return assignID(ctx, s.tx, rev)
}

func (s subjectSteps) InsertVersion(ctx context.Context, v driver.SubjectVersion) (driver.SubjectVersion, error) {
	if _, err := s.tx.Exec(ctx, `INSERT INTO subject_version (subject, version, schema_id, created_at) VALUES ($1::text, $2::integer, $3::bigint, $4::timestamptz)`,
		v.Subject, v.Version, v.ID, v.CreatedAt); err != nil {
		return v, err
	}
	for i, ref := range v.References {
		if _, err := s.tx.Exec(ctx, `INSERT INTO subject_reference (subject, version, position, name, ref_subject, ref_version)
			VALUES ($1::text, $2::integer, $3::integer, $4::text, $5::text, $6::integer)`, v.Subject, v.Version, i, ref.Name, ref.Subject, ref.Version); err != nil {
			return v, err
		}
	}
	// The stored document is the id's: the first text of its fingerprint.
	var doc string
	err := s.tx.QueryRow(ctx, `SELECT schema_json FROM schema_id WHERE id = $1::bigint`, v.ID).Scan(&doc)
	v.Schema = []byte(doc)
	return v, err
}

// SubjectVersions implements driver.Subjects.
func (d *Driver) SubjectVersions(ctx context.Context, p driver.SubjectVersionsParams) ([]driver.SubjectVersion, error) {
	var out []driver.SubjectVersion
	err := d.read(ctx, func() error {
		var err error
		out, err = subjectVersions(ctx, d.pool, p)
		return err
	})
	return out, err
}

// ListSubjects implements driver.Subjects.
func (d *Driver) ListSubjects(ctx context.Context, p driver.ListSubjectsParams) ([]string, error) {
	var out []string
	err := d.read(ctx, func() error {
		rows, err := d.pool.Query(ctx, `SELECT DISTINCT subject FROM subject_version WHERE $1::boolean OR NOT deleted ORDER BY subject`, p.Deleted)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	return out, err
}

// SubjectUsages implements driver.Subjects.
func (d *Driver) SubjectUsages(ctx context.Context, p driver.SchemaUsagesParams) ([]driver.SubjectVersion, error) {
	var out []driver.SubjectVersion
	err := d.read(ctx, func() error {
		var err error
		out, err = scanSubjectVersions(d.pool.Query(ctx, subjectVersionColumns+`WHERE v.schema_id = $1::bigint ORDER BY v.subject, v.version`, p.ID))
		if err != nil || len(out) == 0 {
			return err
		}
		return withSubjectReferences(ctx, d.pool, out, `SELECT r.subject, r.version, r.name, r.ref_subject, r.ref_version FROM subject_reference r
			JOIN subject_version v ON v.subject = r.subject AND v.version = r.version WHERE v.schema_id = $1::bigint ORDER BY r.subject, r.version, r.position`, p.ID)
	})
	return out, err
}

// DeleteSubjectVersions implements driver.Subjects. The versions that
// reference a target come with subject, version and deleted.
func (d *Driver) DeleteSubjectVersions(ctx context.Context, p driver.DeleteSubjectVersionsParams) ([]int, error) {
	var out []int
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = deleteSubjectVersions(ctx, tx, p)
		return err
	})
	return out, err
}

func deleteSubjectVersions(ctx context.Context, tx pgx.Tx, p driver.DeleteSubjectVersionsParams) ([]int, error) {
	if _, err := subjectSettings(ctx, tx, p.Subject, "FOR UPDATE"); err != nil {
		return nil, err
	}
	all, err := subjectVersions(ctx, tx, driver.SubjectVersionsParams{Subject: p.Subject, Deleted: true})
	if err != nil {
		return nil, err
	}
	targets := driver.DeletionTargets(all, p.Version, p.Permanent)
	numbers := make([]int32, len(targets))
	out := make([]int, len(targets))
	for i, t := range targets {
		numbers[i], out[i] = int32(t.Version), t.Version
	}
	rows, err := tx.Query(ctx, `SELECT DISTINCT v.subject, v.version, v.deleted FROM subject_reference f
		JOIN subject_version v ON v.subject = f.subject AND v.version = f.version
		WHERE f.ref_subject = $1::text AND f.ref_version = ANY($2::integer[]) ORDER BY v.subject, v.version`, p.Subject, numbers)
	if err != nil {
		return nil, err
	}
	users, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.SubjectVersion, error) {
		var v driver.SubjectVersion
		err := r.Scan(&v.Subject, &v.Version, &v.Deleted)
		return v, err
	})
	if err != nil {
		return nil, err
	}
	if err := p.Decide(targets, users); err != nil {
		return nil, driver.CallerError{Err: err}
	}
	if len(out) == 0 {
		return nil, nil
	}
	if !p.Permanent {
		_, err := tx.Exec(ctx, `UPDATE subject_version SET deleted = true WHERE subject = $1::text AND version = ANY($2::integer[])`, p.Subject, numbers)
		return out, err
	}
	for _, table := range []string{"subject_version", "subject_reference"} {
		if _, err := tx.Exec(ctx, `DELETE FROM `+table+` WHERE subject = $1::text AND version = ANY($2::integer[])`, p.Subject, numbers); err != nil {
			return nil, err
		}
	}
	if p.Version == 0 {
		_, err = tx.Exec(ctx, `DELETE FROM registry_subject WHERE name = $1::text`, p.Subject)
	}
	return out, err
}
