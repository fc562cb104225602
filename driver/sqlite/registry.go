package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

var _ driver.Registry = (*Driver)(nil)

// readSettings reads the registry settings of a stream (0: the global
// ones); none stored reads as the zero settings.
func readSettings(ctx context.Context, q querier, streamID int64) (driver.RegistrySettings, error) {
	var s driver.RegistrySettings
	err := q.QueryRowContext(ctx, `SELECT level, mode FROM registry_setting WHERE stream_id = ?`, streamID).Scan(&s.Level, &s.Mode)
	if errors.Is(err, sql.ErrNoRows) {
		return s, nil
	}
	return s, err
}

// RegistrySettings implements driver.Registry.
func (d *Driver) RegistrySettings(ctx context.Context, p driver.RegistrySettingsParams) (driver.RegistrySettings, error) {
	streamID := p.StreamID
	if err := d.check(); err != nil {
		return driver.RegistrySettings{}, err
	}
	return readSettings(ctx, d.read, streamID)
}

// UpdateRegistrySettings implements driver.Registry.
func (d *Driver) UpdateRegistrySettings(ctx context.Context, p driver.UpdateRegistrySettingsParams) error {
	streamID, update := p.StreamID, p.Update
	return d.inTx(ctx, nil, func(tx *sql.Tx) error {
		s, err := readSettings(ctx, tx, streamID)
		if err != nil {
			return err
		}
		if err := update(&s); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO registry_setting (stream_id, level, mode) VALUES (?, ?, ?)
			ON CONFLICT (stream_id) DO UPDATE SET level = excluded.level, mode = excluded.mode`, streamID, s.Level, s.Mode)
		return err
	})
}

// revisionColumns reads a revision with its global id (r: schema_revision,
// i: schema_id joined on the fingerprint).
const revisionColumns = `r.stream_id, r.version, r.revision, r.fingerprint, r.schema_type, r.schema_json, r.created_at, COALESCE(i.id, 0)`

const revisionFrom = ` FROM schema_revision r LEFT JOIN schema_id i ON i.fingerprint = r.fingerprint `

// queryRevisions reads the revisions query selects (revisionColumns).
func queryRevisions(ctx context.Context, q querier, query string, args ...any) ([]driver.SchemaRevision, error) {
	var out []driver.SchemaRevision
	err := eachRow(ctx, q, query, args, func(r *sql.Rows) error {
		var rev driver.SchemaRevision
		var doc string
		var created int64
		err := r.Scan(&rev.StreamID, &rev.Version, &rev.Revision, &rev.Fingerprint, &rev.Type, &doc, &created, &rev.ID)
		rev.Schema, rev.CreatedAt = []byte(doc), fromMicros(created)
		out = append(out, rev)
		return err
	})
	return out, err
}

// withReferences fills the References of revisions of one stream.
func withReferences(ctx context.Context, q querier, streamID int64, revs []driver.SchemaRevision) error {
	if len(revs) == 0 {
		return nil
	}
	at := map[[2]int]int{}
	for i, r := range revs {
		at[[2]int{r.Version, r.Revision}] = i
	}
	return eachRow(ctx, q, `SELECT version, revision, name, ref_stream_id, ref_version, ref_revision, ref_fingerprint
		FROM schema_reference WHERE stream_id = ? ORDER BY version, revision, position`, []any{streamID}, func(r *sql.Rows) error {
		var version, revision int
		var ref driver.SchemaReference
		if err := r.Scan(&version, &revision, &ref.Name, &ref.StreamID, &ref.Version, &ref.Revision, &ref.Fingerprint); err != nil {
			return err
		}
		if i, ok := at[[2]int{version, revision}]; ok {
			revs[i].References = append(revs[i].References, ref)
		}
		return nil
	})
}

// assignID returns the global id of a fingerprint, creating it (with the
// wanted id when not 0) the first time any stream records it.
func assignID(ctx context.Context, tx querier, rev driver.SchemaRevision) (int64, error) {
	var id int64
	err := tx.QueryRowContext(ctx, `SELECT id FROM schema_id WHERE fingerprint = ?`, rev.Fingerprint).Scan(&id)
	switch {
	case err == nil:
		if rev.ID != 0 && rev.ID != id {
			return 0, fmt.Errorf("%w: the schema already has id %d, not %d", driver.ErrSchemaIDTaken, id, rev.ID)
		}
		return id, nil
	case !errors.Is(err, sql.ErrNoRows):
		return 0, err
	}
	if rev.ID != 0 {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_id WHERE id = ?`, rev.ID).Scan(&n); err != nil {
			return 0, err
		}
		if n > 0 {
			return 0, fmt.Errorf("%w: id %d belongs to another schema", driver.ErrSchemaIDTaken, rev.ID)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO schema_id (id, fingerprint, schema_type, schema_json, created_at) VALUES (?, ?, ?, ?, ?)`,
			rev.ID, rev.Fingerprint, rev.Type, string(rev.Schema), micros(rev.CreatedAt))
		return rev.ID, err
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO schema_id (fingerprint, schema_type, schema_json, created_at) VALUES (?, ?, ?, ?)`,
		rev.Fingerprint, rev.Type, string(rev.Schema), micros(rev.CreatedAt))
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// RecordSchema implements driver.Registry and, with the global id and the
// references, driver.SchemaIDs. SQLite's single writer serializes
// concurrent registrations.
func (d *Driver) RecordSchema(ctx context.Context, p driver.RecordSchemaParams) (driver.SchemaRevision, bool, error) {
	rev, decide := p.Revision, p.Decide
	var out driver.SchemaRevision
	var created bool
	err := d.inTx(ctx, nil, func(tx *sql.Tx) error {
		created = false
		existing, err := queryRevisions(ctx, tx, `SELECT `+revisionColumns+revisionFrom+`WHERE r.stream_id = ? AND r.version = ? ORDER BY r.revision`, rev.StreamID, rev.Version)
		if err != nil {
			return err
		}
		if err := withReferences(ctx, tx, rev.StreamID, existing); err != nil {
			return err
		}
		for _, e := range existing {
			if e.Fingerprint == rev.Fingerprint {
				out = e
				return nil
			}
		}
		streamSet, err := readSettings(ctx, tx, rev.StreamID)
		if err != nil {
			return err
		}
		global, err := readSettings(ctx, tx, 0)
		if err != nil {
			return err
		}
		if err := decide(existing, streamSet, global); err != nil {
			return err
		}
		out = rev
		out.Type = cmp.Or(rev.Type, "JSON")
		out.Revision = 1
		if len(existing) > 0 {
			out.Revision = existing[len(existing)-1].Revision + 1
		}
		if rev.Revision != 0 {
			if rev.Revision < out.Revision {
				return fmt.Errorf("%w: revision %d; the next revision is %d or later", driver.ErrRevisionTaken, rev.Revision, out.Revision)
			}
			out.Revision = rev.Revision
		}
		out.CreatedAt = fromMicros(micros(rev.CreatedAt))
		if out.ID, err = assignID(ctx, tx, out); err != nil {
			return err
		}
		if _, err = tx.ExecContext(ctx, `INSERT INTO schema_revision (stream_id, version, revision, fingerprint, schema_type, schema_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			out.StreamID, out.Version, out.Revision, out.Fingerprint, out.Type, string(out.Schema), micros(out.CreatedAt)); err != nil {
			return err
		}
		// Rows left by a deleted stream whose id was reused go first.
		if _, err := tx.ExecContext(ctx, `DELETE FROM schema_reference WHERE stream_id = ? AND version = ? AND revision = ?`, out.StreamID, out.Version, out.Revision); err != nil {
			return err
		}
		for i, ref := range out.References {
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_reference (stream_id, version, revision, position, name, ref_stream_id, ref_version, ref_revision, ref_fingerprint)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, out.StreamID, out.Version, out.Revision, i, ref.Name, ref.StreamID, ref.Version, ref.Revision, ref.Fingerprint); err != nil {
				return err
			}
		}
		created = true
		return nil
	})
	return out, created, err
}

// SchemaRevisions implements driver.Registry.
func (d *Driver) SchemaRevisions(ctx context.Context, p driver.SchemaRevisionsParams) ([]driver.SchemaRevision, error) {
	streamID, version := p.StreamID, p.Version
	var out []driver.SchemaRevision
	err := d.readTx(ctx, func(tx *sql.Tx) error {
		var err error
		if out, err = queryRevisions(ctx, tx, `SELECT `+revisionColumns+revisionFrom+`WHERE r.stream_id = ? AND (? = 0 OR r.version = ?)
			ORDER BY r.version, r.revision`, streamID, version, version); err != nil {
			return err
		}
		return withReferences(ctx, tx, streamID, out)
	})
	return out, err
}

var _ driver.SchemaIDs = (*Driver)(nil)

// SchemaByID implements driver.SchemaIDs.
func (d *Driver) SchemaByID(ctx context.Context, p driver.SchemaByIDParams) (driver.SchemaDocument, error) {
	if err := d.check(); err != nil {
		return driver.SchemaDocument{}, err
	}
	doc := driver.SchemaDocument{ID: p.ID}
	var text string
	var created int64
	err := d.read.QueryRowContext(ctx, `SELECT fingerprint, schema_type, schema_json, created_at FROM schema_id WHERE id = ?`, p.ID).Scan(&doc.Fingerprint, &doc.Type, &text, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return doc, fmt.Errorf("sqlite: schema id %d: %w", p.ID, driver.ErrSchemaNotFound)
	}
	doc.Schema, doc.CreatedAt = []byte(text), fromMicros(created)
	return doc, d.wrap(err)
}

// SchemaUsages implements driver.SchemaIDs.
func (d *Driver) SchemaUsages(ctx context.Context, p driver.SchemaUsagesParams) ([]driver.SchemaRevision, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	out, err := queryRevisions(ctx, d.read, `SELECT `+revisionColumns+revisionFrom+`WHERE i.id = ? ORDER BY r.stream_id, r.version, r.revision`, p.ID)
	return out, d.wrap(err)
}

// ReferencedBy implements driver.SchemaIDs. Only references whose pinned
// fingerprint is the revision's own count.
func (d *Driver) ReferencedBy(ctx context.Context, p driver.ReferencedByParams) ([]driver.SchemaRevision, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	out, err := queryRevisions(ctx, d.read, `SELECT DISTINCT `+revisionColumns+revisionFrom+`
		JOIN schema_reference f ON f.stream_id = r.stream_id AND f.version = r.version AND f.revision = r.revision
		JOIN schema_revision t ON t.stream_id = f.ref_stream_id AND t.version = f.ref_version AND t.revision = f.ref_revision AND t.fingerprint = f.ref_fingerprint
		WHERE f.ref_stream_id = ? AND f.ref_version = ? AND f.ref_revision = ?
		ORDER BY r.stream_id, r.version, r.revision`, p.StreamID, p.Version, p.Revision)
	return out, d.wrap(err)
}

// RecordReader implements driver.Registry.
func (d *Driver) RecordReader(ctx context.Context, p driver.RecordReaderParams) error {
	r := p.Reader
	return d.inTx(ctx, nil, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO schema_reader (stream_id, group_name, version, revision, registered_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (stream_id, group_name, version) DO UPDATE SET revision = excluded.revision, registered_at = excluded.registered_at`,
			r.StreamID, r.Group, r.Version, r.Revision, micros(r.RegisteredAt))
		return err
	})
}

// Readers implements driver.Registry.
func (d *Driver) Readers(ctx context.Context, p driver.ReadersParams) ([]driver.Reader, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	var out []driver.Reader
	err := eachRow(ctx, d.read, `SELECT stream_id, group_name, version, revision, registered_at FROM schema_reader
		WHERE stream_id = ? ORDER BY group_name, version`, []any{p.StreamID}, func(r *sql.Rows) error {
		var rd driver.Reader
		var at int64
		err := r.Scan(&rd.StreamID, &rd.Group, &rd.Version, &rd.Revision, &at)
		rd.RegisteredAt = fromMicros(at)
		out = append(out, rd)
		return err
	})
	return out, d.wrap(err)
}

// LiveRevisions implements driver.Registry.
func (d *Driver) LiveRevisions(ctx context.Context, p driver.LiveRevisionsParams) ([]int, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	var out []int
	err := eachRow(ctx, d.read, `SELECT DISTINCT schema_revision FROM `+logTable(p.StreamID)+` WHERE schema_version = ? ORDER BY 1`, []any{p.Version}, func(r *sql.Rows) error {
		var rev int
		err := r.Scan(&rev)
		out = append(out, rev)
		return err
	})
	return out, d.wrap(err)
}

var _ driver.Subjects = (*Driver)(nil)

// subjects is the free subjects' storage, shared with MySQL.
var subjects = sqldb.Subjects[int64]{
	EnsureSubject: `INSERT INTO registry_subject (name, created_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`,
	Time:          func(t time.Time) any { return micros(t) },
	At:            fromMicros,
	AssignID:      assignID,
}

// SubjectSettings implements driver.Subjects.
func (d *Driver) SubjectSettings(ctx context.Context, p driver.SubjectParams) (driver.RegistrySettings, error) {
	if err := d.check(); err != nil {
		return driver.RegistrySettings{}, err
	}
	s, err := subjects.Settings(ctx, d.read, p.Subject)
	return s, d.wrap(err)
}

// UpdateSubjectSettings implements driver.Subjects.
func (d *Driver) UpdateSubjectSettings(ctx context.Context, p driver.UpdateSubjectSettingsParams) error {
	return d.inTx(ctx, nil, func(tx *sql.Tx) error { return subjects.UpdateSettings(ctx, tx, p) })
}

// RecordSubjectVersion implements driver.Subjects; SQLite's single writer
// serializes registrations.
func (d *Driver) RecordSubjectVersion(ctx context.Context, p driver.RecordSubjectVersionParams) (driver.SubjectVersion, bool, error) {
	var out driver.SubjectVersion
	var created bool
	err := d.inTx(ctx, nil, func(tx *sql.Tx) error {
		var err error
		out, created, err = subjects.Record(ctx, tx, p)
		return err
	})
	return out, created, err
}

// SubjectVersions implements driver.Subjects.
func (d *Driver) SubjectVersions(ctx context.Context, p driver.SubjectVersionsParams) ([]driver.SubjectVersion, error) {
	var out []driver.SubjectVersion
	err := d.readTx(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = subjects.Versions(ctx, tx, p)
		return err
	})
	return out, err
}

// ListSubjects implements driver.Subjects.
func (d *Driver) ListSubjects(ctx context.Context, p driver.ListSubjectsParams) ([]string, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	out, err := subjects.List(ctx, d.read, p)
	return out, d.wrap(err)
}

// DeleteSubjectVersions implements driver.Subjects.
func (d *Driver) DeleteSubjectVersions(ctx context.Context, p driver.DeleteSubjectVersionsParams) ([]int, error) {
	var out []int
	err := d.inTx(ctx, nil, func(tx *sql.Tx) error {
		var err error
		out, err = subjects.Delete(ctx, tx, p)
		return err
	})
	return out, err
}

// SubjectUsages implements driver.Subjects.
func (d *Driver) SubjectUsages(ctx context.Context, p driver.SchemaUsagesParams) ([]driver.SubjectVersion, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	out, err := subjects.Usages(ctx, d.read, p)
	return out, d.wrap(err)
}
