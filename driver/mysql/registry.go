package mysql

import (
	"context"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// registry is the schema registry's storage, shared with SQLite; locking
// reads of a scope's settings row serialize the writers of the scope.
var registry = sqldb.Registry[time.Time]{
	Name:         "mysql",
	Lock:         `FOR UPDATE`,
	IDLock:       `FOR UPDATE`,
	SaveSettings: `UPDATE registry_setting SET level = ?, mode = ? WHERE stream_id = ? AND version = ?`,
	InsertID:     `INSERT IGNORE INTO schema_id (id, fingerprint, schema_type, schema_json, created_at) VALUES (?, ?, ?, ?, ?)`,
	InsertNewID:  `INSERT IGNORE INTO schema_id (fingerprint, schema_type, schema_json, created_at) VALUES (?, ?, ?, ?)`,
	// VALUES() is the spelling both engines accept in ON DUPLICATE KEY UPDATE.
	SaveReader: `INSERT INTO schema_reader (stream_id, group_name, version, revision, registered_at) VALUES (?, ?, ?, ?, ?)
		ON DUPLICATE KEY UPDATE revision = VALUES(revision), registered_at = VALUES(registered_at)`,
	Time: func(t time.Time) any { return ts(t) },
	At:   utc,
}

// subjects is the free subjects' storage, shared with SQLite; a locking
// read of the subject's row serializes writers of one subject.
var subjects = sqldb.Subjects[time.Time]{
	EnsureSubject: `INSERT IGNORE INTO registry_subject (name, created_at) VALUES (?, ?)`,
	Lock:          `FOR UPDATE`,
	Time:          func(t time.Time) any { return ts(t) },
	At:            utc,
	AssignID:      registry.AssignID,
}

var (
	_ driver.Registry  = (*Driver)(nil)
	_ driver.SchemaIDs = (*Driver)(nil)
	_ driver.Subjects  = (*Driver)(nil)
)

// newTx is inTx without a caller's transaction: the registry's scope.
func (d *Driver) newTx(ctx context.Context, run func(querier) error) error {
	return d.inTx(ctx, nil, run)
}

// ensureScope makes sure a scope's settings row exists (empty strings mean
// unset, as a missing row does), so that a locking read of it serializes
// read-modify-write of the scope: at READ COMMITTED a locking read of a
// missing row locks nothing. It runs before the transaction that locks
// the row: inserting it there would take a shared lock first, and two
// writers upgrading theirs would deadlock.
func (d *Driver) ensureScope(ctx context.Context, streamID int64, version int) error {
	if err := d.check(); err != nil {
		return err
	}
	_, err := d.exec(ctx, `INSERT IGNORE INTO registry_setting (stream_id, version) VALUES (?, ?)`, streamID, version)
	return err
}

// RegistrySettings implements driver.Registry.
func (d *Driver) RegistrySettings(ctx context.Context, p driver.RegistrySettingsParams) (driver.RegistrySettings, error) {
	return sqldb.In(ctx, sqldb.Over(d.read), registry.Settings, p)
}

// UpdateRegistrySettings implements driver.Registry.
func (d *Driver) UpdateRegistrySettings(ctx context.Context, p driver.UpdateRegistrySettingsParams) error {
	if err := d.ensureScope(ctx, p.StreamID, p.Version); err != nil {
		return err
	}
	return d.inTx(ctx, nil, func(tx querier) error { return registry.UpdateSettings(ctx, sqldb.On(tx), p) })
}

// RecordSchema implements driver.Registry and, with the global id and the
// references, driver.SchemaIDs. Registrations of one stream are serialized
// by locking the stream's settings row.
func (d *Driver) RecordSchema(ctx context.Context, p driver.RecordSchemaParams) (driver.SchemaRevision, bool, error) {
	if err := d.ensureScope(ctx, p.Revision.StreamID, 0); err != nil {
		return p.Revision, false, err
	}
	return registry.RecordIn(ctx, sqldb.Over(d.newTx), p)
}

// SchemaRevisions implements driver.Registry, in a transaction so that the
// references match the revisions.
func (d *Driver) SchemaRevisions(ctx context.Context, p driver.SchemaRevisionsParams) ([]driver.SchemaRevision, error) {
	return sqldb.In(ctx, sqldb.Over(d.newTx), registry.Revisions, p)
}

// DeleteRevisions implements driver.RevisionDeleter, serialized with the
// stream's registrations by the lock RecordSchema takes.
func (d *Driver) DeleteRevisions(ctx context.Context, p driver.DeleteRevisionsParams) ([]int, error) {
	if err := d.ensureScope(ctx, p.StreamID, 0); err != nil {
		return nil, err
	}
	return sqldb.Within(ctx, sqldb.Over(d.newTx), func(tx sqldb.Runner) ([]int, error) {
		return registry.DeleteRevisions(ctx, tx, logTable(p.StreamID), p)
	})
}

// SchemaByID implements driver.SchemaIDs.
func (d *Driver) SchemaByID(ctx context.Context, p driver.SchemaByIDParams) (driver.SchemaDocument, error) {
	return sqldb.Within(ctx, sqldb.Over(d.read), func(q sqldb.Runner) (driver.SchemaDocument, error) { return registry.ByID(ctx, q, p.ID) })
}

// SchemaUsages implements driver.SchemaIDs.
func (d *Driver) SchemaUsages(ctx context.Context, p driver.SchemaUsagesParams) ([]driver.SchemaRevision, error) {
	return sqldb.In(ctx, sqldb.Over(d.read), registry.Usages, p)
}

// ReferencedBy implements driver.SchemaIDs.
func (d *Driver) ReferencedBy(ctx context.Context, p driver.ReferencedByParams) ([]driver.SchemaRevision, error) {
	return sqldb.In(ctx, sqldb.Over(d.read), registry.ReferencedBy, p)
}

// RecordReader implements driver.Registry.
func (d *Driver) RecordReader(ctx context.Context, p driver.RecordReaderParams) error {
	return d.autocommit(ctx, func(q querier) error { return registry.RecordReader(ctx, sqldb.On(q), p.Reader) })
}

// Readers implements driver.Registry.
func (d *Driver) Readers(ctx context.Context, p driver.ReadersParams) ([]driver.Reader, error) {
	return sqldb.In(ctx, sqldb.Over(d.read), registry.Readers, p)
}

// LiveRevisions implements driver.Registry. The log's (schema_version,
// schema_revision) index makes this a short index scan; a log table lost
// to a crash mid-DDL is healed and read again.
func (d *Driver) LiveRevisions(ctx context.Context, p driver.LiveRevisionsParams) ([]int, error) {
	return sqldb.Within(ctx, sqldb.Over(d.read), func(q sqldb.Runner) (out []int, err error) {
		err = d.withLog(ctx, p.StreamID, func() error {
			out, err = registry.LiveRevisions(ctx, q, logTable(p.StreamID), p)
			return err
		})
		return out, err
	})
}

// SubjectSettings implements driver.Subjects.
func (d *Driver) SubjectSettings(ctx context.Context, p driver.SubjectParams) (driver.RegistrySettings, error) {
	return sqldb.Within(ctx, sqldb.Over(d.read), func(q sqldb.Runner) (driver.RegistrySettings, error) { return subjects.Settings(ctx, q, p.Subject) })
}

// UpdateSubjectSettings implements driver.Subjects.
func (d *Driver) UpdateSubjectSettings(ctx context.Context, p driver.UpdateSubjectSettingsParams) error {
	return d.inTx(ctx, nil, func(tx querier) error { return subjects.UpdateSettings(ctx, sqldb.On(tx), p) })
}

// RecordSubjectVersion implements driver.Subjects.
func (d *Driver) RecordSubjectVersion(ctx context.Context, p driver.RecordSubjectVersionParams) (driver.SubjectVersion, bool, error) {
	return subjects.RecordIn(ctx, sqldb.Over(d.newTx), p)
}

// SubjectVersions implements driver.Subjects.
func (d *Driver) SubjectVersions(ctx context.Context, p driver.SubjectVersionsParams) ([]driver.SubjectVersion, error) {
	return sqldb.In(ctx, sqldb.Over(d.read), subjects.Versions, p)
}

// ListSubjects implements driver.Subjects.
func (d *Driver) ListSubjects(ctx context.Context, p driver.ListSubjectsParams) ([]string, error) {
	return sqldb.In(ctx, sqldb.Over(d.read), subjects.List, p)
}

// DeleteSubjectVersions implements driver.Subjects.
func (d *Driver) DeleteSubjectVersions(ctx context.Context, p driver.DeleteSubjectVersionsParams) ([]int, error) {
	return sqldb.In(ctx, sqldb.Over(d.newTx), subjects.Delete, p)
}

// SubjectUsages implements driver.Subjects.
func (d *Driver) SubjectUsages(ctx context.Context, p driver.SchemaUsagesParams) ([]driver.SubjectVersion, error) {
	return sqldb.In(ctx, sqldb.Over(d.read), subjects.Usages, p)
}
