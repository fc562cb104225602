package mysql

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

func readSettings(ctx context.Context, q querier, streamID int64, lock bool) (driver.RegistrySettings, error) {
	var s driver.RegistrySettings
	query := `SELECT level, mode FROM registry_setting WHERE stream_id = ?`
	if lock {
		query += ` FOR UPDATE`
	}
	err := q.QueryRowContext(ctx, query, streamID).Scan(&s.Level, &s.Mode)
	if errors.Is(err, sql.ErrNoRows) {
		return s, nil
	}
	return s, err
}

// ensureScope makes sure a scope's settings row exists (empty strings mean
// unset, as a missing row does), so that a locking read of it serializes
// read-modify-write of the scope: at READ COMMITTED a locking read of a
// missing row locks nothing.
func (d *Driver) ensureScope(ctx context.Context, streamID int64) error {
	_, err := d.exec(ctx, `INSERT IGNORE INTO registry_setting (stream_id) VALUES (?)`, streamID)
	return err
}

// RegistrySettings implements driver.Registry.
func (d *Driver) RegistrySettings(ctx context.Context, p driver.RegistrySettingsParams) (driver.RegistrySettings, error) {
	if err := d.check(); err != nil {
		return driver.RegistrySettings{}, err
	}
	s, err := readSettings(ctx, d.db, p.StreamID, false)
	return s, d.wrap(ctx, err, opRead)
}

// UpdateRegistrySettings implements driver.Registry.
func (d *Driver) UpdateRegistrySettings(ctx context.Context, p driver.UpdateRegistrySettingsParams) error {
	streamID, update := p.StreamID, p.Update
	if err := d.check(); err != nil {
		return err
	}
	if err := d.ensureScope(ctx, streamID); err != nil {
		return err
	}
	return d.inTx(ctx, nil, func(tx querier) error {
		s, err := readSettings(ctx, tx, streamID, true)
		if err != nil {
			return err
		}
		if err := update(&s); err != nil {
			return driver.CallerError{Err: err}
		}
		_, err = tx.ExecContext(ctx, `UPDATE registry_setting SET level = ?, mode = ? WHERE stream_id = ?`, s.Level, s.Mode, streamID)
		return err
	})
}

// revisionColumns reads a revision with its global id (r: schema_revision,
// i: schema_id joined on the fingerprint).
const revisionColumns = `r.stream_id, r.version, r.revision, r.fingerprint, r.schema_type, r.schema_json, r.created_at, COALESCE(i.id, 0)`

const revisionFrom = ` FROM schema_revision r LEFT JOIN schema_id i ON i.fingerprint = r.fingerprint `

func scanRevision(r scanner) (driver.SchemaRevision, error) {
	var rev driver.SchemaRevision
	var doc string
	var created time.Time
	err := r.Scan(&rev.StreamID, &rev.Version, &rev.Revision, &rev.Fingerprint, &rev.Type, &doc, &created, &rev.ID)
	rev.Schema, rev.CreatedAt = []byte(doc), utc(created)
	return rev, err
}

func revisions(ctx context.Context, q querier, query string, args ...any) ([]driver.SchemaRevision, error) {
	var out []driver.SchemaRevision
	err := eachRow(ctx, q, query, args, func(r *sql.Rows) error {
		rev, err := scanRevision(r)
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
		FROM schema_reference WHERE stream_id = ? ORDER BY version, revision, position`, []any{streamID}, func(rows *sql.Rows) error {
		var version, revision int
		var ref driver.SchemaReference
		if err := rows.Scan(&version, &revision, &ref.Name, &ref.StreamID, &ref.Version, &ref.Revision, &ref.Fingerprint); err != nil {
			return err
		}
		if i, ok := at[[2]int{version, revision}]; ok {
			revs[i].References = append(revs[i].References, ref)
		}
		return nil
	})
}

// assignID returns the global id of a fingerprint, creating it (with the
// wanted id when not 0) the first time any stream records it. Two streams
// recording one new fingerprint at once meet on its unique key; the
// locking read sees the winner's committed row.
func assignID(ctx context.Context, tx querier, rev driver.SchemaRevision) (int64, error) {
	if rev.ID != 0 {
		var fp string
		err := tx.QueryRowContext(ctx, `SELECT fingerprint FROM schema_id WHERE id = ? FOR UPDATE`, rev.ID).Scan(&fp)
		switch {
		case err == nil && fp != rev.Fingerprint:
			return 0, driver.CallerError{Err: fmt.Errorf("%w: id %d belongs to another schema", driver.ErrSchemaIDTaken, rev.ID)}
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return 0, err
		}
		if _, err := tx.ExecContext(ctx, `INSERT IGNORE INTO schema_id (id, fingerprint, schema_type, schema_json, created_at) VALUES (?, ?, ?, ?, ?)`,
			rev.ID, rev.Fingerprint, rev.Type, string(rev.Schema), ts(rev.CreatedAt)); err != nil {
			return 0, err
		}
	} else if _, err := tx.ExecContext(ctx, `INSERT IGNORE INTO schema_id (fingerprint, schema_type, schema_json, created_at) VALUES (?, ?, ?, ?)`,
		rev.Fingerprint, rev.Type, string(rev.Schema), ts(rev.CreatedAt)); err != nil {
		return 0, err
	}
	var id int64
	if err := tx.QueryRowContext(ctx, `SELECT id FROM schema_id WHERE fingerprint = ? FOR UPDATE`, rev.Fingerprint).Scan(&id); err != nil {
		return 0, err
	}
	if rev.ID != 0 && rev.ID != id {
		return 0, driver.CallerError{Err: fmt.Errorf("%w: the schema already has id %d, not %d", driver.ErrSchemaIDTaken, id, rev.ID)}
	}
	return id, nil
}

// RecordSchema implements driver.Registry and, with the global id and the
// references, driver.SchemaIDs. Registrations of one stream are serialized
// by locking the stream's settings row.
func (d *Driver) RecordSchema(ctx context.Context, p driver.RecordSchemaParams) (driver.SchemaRevision, bool, error) {
	rev, decide := p.Revision, p.Decide
	if err := d.check(); err != nil {
		return rev, false, err
	}
	if err := d.ensureScope(ctx, rev.StreamID); err != nil {
		return rev, false, err
	}
	var out driver.SchemaRevision
	var created bool
	err := d.inTx(ctx, nil, func(tx querier) error {
		created = false
		streamSet, err := readSettings(ctx, tx, rev.StreamID, true)
		if err != nil {
			return err
		}
		existing, err := revisions(ctx, tx, `SELECT `+revisionColumns+revisionFrom+`WHERE r.stream_id = ? AND r.version = ? ORDER BY r.revision`, rev.StreamID, rev.Version)
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
		global, err := readSettings(ctx, tx, 0, false)
		if err != nil {
			return err
		}
		if err := decide(existing, streamSet, global); err != nil {
			return driver.CallerError{Err: err}
		}
		out = rev
		out.Type = cmp.Or(rev.Type, "JSON")
		out.Revision = 1
		if len(existing) > 0 {
			out.Revision = existing[len(existing)-1].Revision + 1
		}
		if rev.Revision != 0 {
			if rev.Revision < out.Revision {
				return driver.CallerError{Err: fmt.Errorf("%w: revision %d; the next revision is %d or later", driver.ErrRevisionTaken, rev.Revision, out.Revision)}
			}
			out.Revision = rev.Revision
		}
		out.CreatedAt = rev.CreatedAt.UTC().Truncate(time.Microsecond)
		if out.ID, err = assignID(ctx, tx, out); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_revision (stream_id, version, revision, fingerprint, schema_type, schema_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			out.StreamID, out.Version, out.Revision, out.Fingerprint, out.Type, string(out.Schema), ts(out.CreatedAt)); err != nil {
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
	if err := d.check(); err != nil {
		return nil, err
	}
	var out []driver.SchemaRevision
	err := d.inTx(ctx, nil, func(tx querier) error {
		var err error
		out, err = revisions(ctx, tx, `SELECT `+revisionColumns+revisionFrom+`WHERE r.stream_id = ? AND (? = 0 OR r.version = ?)
			ORDER BY r.version, r.revision`, streamID, version, version)
		if err != nil {
			return err
		}
		return withReferences(ctx, tx, streamID, out)
	})
	return out, d.wrap(ctx, err, opRead)
}

var _ driver.SchemaIDs = (*Driver)(nil)

// SchemaByID implements driver.SchemaIDs.
func (d *Driver) SchemaByID(ctx context.Context, p driver.SchemaByIDParams) (driver.SchemaDocument, error) {
	if err := d.check(); err != nil {
		return driver.SchemaDocument{}, err
	}
	doc := driver.SchemaDocument{ID: p.ID}
	var text string
	var created time.Time
	err := d.db.QueryRowContext(ctx, `SELECT fingerprint, schema_type, schema_json, created_at FROM schema_id WHERE id = ?`, p.ID).Scan(&doc.Fingerprint, &doc.Type, &text, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return doc, fmt.Errorf("mysql: schema id %d: %w", p.ID, driver.ErrSchemaNotFound)
	}
	doc.Schema, doc.CreatedAt = []byte(text), utc(created)
	return doc, d.wrap(ctx, err, opRead)
}

// SchemaUsages implements driver.SchemaIDs.
func (d *Driver) SchemaUsages(ctx context.Context, p driver.SchemaUsagesParams) ([]driver.SchemaRevision, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	out, err := revisions(ctx, d.db, `SELECT `+revisionColumns+revisionFrom+`WHERE i.id = ? ORDER BY r.stream_id, r.version, r.revision`, p.ID)
	return out, d.wrap(ctx, err, opRead)
}

// ReferencedBy implements driver.SchemaIDs. Only references whose pinned
// fingerprint is the revision's own count.
func (d *Driver) ReferencedBy(ctx context.Context, p driver.ReferencedByParams) ([]driver.SchemaRevision, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	out, err := revisions(ctx, d.db, `SELECT DISTINCT `+revisionColumns+revisionFrom+`
		JOIN schema_reference f ON f.stream_id = r.stream_id AND f.version = r.version AND f.revision = r.revision
		JOIN schema_revision t ON t.stream_id = f.ref_stream_id AND t.version = f.ref_version AND t.revision = f.ref_revision AND t.fingerprint = f.ref_fingerprint
		WHERE f.ref_stream_id = ? AND f.ref_version = ? AND f.ref_revision = ?
		ORDER BY r.stream_id, r.version, r.revision`, p.StreamID, p.Version, p.Revision)
	return out, d.wrap(ctx, err, opRead)
}

// RecordReader implements driver.Registry.
func (d *Driver) RecordReader(ctx context.Context, p driver.RecordReaderParams) error {
	r := p.Reader
	// VALUES() is the spelling both engines accept in ON DUPLICATE KEY UPDATE.
	_, err := d.exec(ctx, `INSERT INTO schema_reader (stream_id, group_name, version, revision, registered_at) VALUES (?, ?, ?, ?, ?)
		ON DUPLICATE KEY UPDATE revision = VALUES(revision), registered_at = VALUES(registered_at)`,
		r.StreamID, r.Group, r.Version, r.Revision, ts(r.RegisteredAt))
	return err
}

// Readers implements driver.Registry.
func (d *Driver) Readers(ctx context.Context, p driver.ReadersParams) ([]driver.Reader, error) {
	streamID := p.StreamID
	if err := d.check(); err != nil {
		return nil, err
	}
	var out []driver.Reader
	err := eachRow(ctx, d.db, `SELECT stream_id, group_name, version, revision, registered_at FROM schema_reader
		WHERE stream_id = ? ORDER BY group_name, version`, []any{streamID}, func(rows *sql.Rows) error {
		var r driver.Reader
		var at time.Time
		err := rows.Scan(&r.StreamID, &r.Group, &r.Version, &r.Revision, &at)
		r.RegisteredAt = utc(at)
		out = append(out, r)
		return err
	})
	return out, d.wrap(ctx, err, opRead)
}

// LiveRevisions implements driver.Registry. The log's (schema_version,
// schema_revision) index makes this a short index scan.
func (d *Driver) LiveRevisions(ctx context.Context, p driver.LiveRevisionsParams) ([]int, error) {
	streamID, version := p.StreamID, p.Version
	if err := d.check(); err != nil {
		return nil, err
	}
	var out []int
	err := d.withLog(ctx, streamID, func() error {
		out = out[:0]
		return eachRow(ctx, d.db, `SELECT DISTINCT schema_revision FROM `+logTable(streamID)+` WHERE schema_version = ? ORDER BY 1`,
			[]any{version}, func(r *sql.Rows) error {
				var rev int
				err := r.Scan(&rev)
				out = append(out, rev)
				return err
			})
	})
	return out, d.wrap(ctx, err, opRead)
}

var _ driver.Subjects = (*Driver)(nil)

// subjects is the free subjects' storage, shared with SQLite; a locking
// read of the subject's row serializes writers of one subject.
var subjects = sqldb.Subjects[time.Time]{
	EnsureSubject: `INSERT IGNORE INTO registry_subject (name, created_at) VALUES (?, ?)`,
	Lock:          `FOR UPDATE`,
	Time:          func(t time.Time) any { return ts(t) },
	At:            utc,
	AssignID:      assignID,
}

// SubjectSettings implements driver.Subjects.
func (d *Driver) SubjectSettings(ctx context.Context, p driver.SubjectParams) (driver.RegistrySettings, error) {
	if err := d.check(); err != nil {
		return driver.RegistrySettings{}, err
	}
	s, err := subjects.Settings(ctx, d.db, p.Subject)
	return s, d.wrap(ctx, err, opRead)
}

// UpdateSubjectSettings implements driver.Subjects.
func (d *Driver) UpdateSubjectSettings(ctx context.Context, p driver.UpdateSubjectSettingsParams) error {
	return d.inTx(ctx, nil, func(tx querier) error { return subjects.UpdateSettings(ctx, tx, p) })
}

// RecordSubjectVersion implements driver.Subjects.
func (d *Driver) RecordSubjectVersion(ctx context.Context, p driver.RecordSubjectVersionParams) (driver.SubjectVersion, bool, error) {
	var out driver.SubjectVersion
	var created bool
	err := d.inTx(ctx, nil, func(tx querier) error {
		var err error
		out, created, err = subjects.Record(ctx, tx, p)
		return err
	})
	return out, created, err
}

// SubjectVersions implements driver.Subjects.
func (d *Driver) SubjectVersions(ctx context.Context, p driver.SubjectVersionsParams) ([]driver.SubjectVersion, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	out, err := subjects.Versions(ctx, d.db, p)
	return out, d.wrap(ctx, err, opRead)
}

// ListSubjects implements driver.Subjects.
func (d *Driver) ListSubjects(ctx context.Context, p driver.ListSubjectsParams) ([]string, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	out, err := subjects.List(ctx, d.db, p)
	return out, d.wrap(ctx, err, opRead)
}

// DeleteSubjectVersions implements driver.Subjects.
func (d *Driver) DeleteSubjectVersions(ctx context.Context, p driver.DeleteSubjectVersionsParams) ([]int, error) {
	var out []int
	err := d.inTx(ctx, nil, func(tx querier) error {
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
	out, err := subjects.Usages(ctx, d.db, p)
	return out, d.wrap(ctx, err, opRead)
}
