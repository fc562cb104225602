package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// registry is the schema registry's storage, shared with MySQL; SQLite's
// single writer serializes the writers of a scope, so no read locks.
var registry = sqldb.Registry[int64]{
	Name: "sqlite",
	SaveSettings: `INSERT INTO registry_setting (level, mode, stream_id, version) VALUES (?, ?, ?, ?)
		ON CONFLICT (stream_id, version) DO UPDATE SET level = excluded.level, mode = excluded.mode`,
	InsertID:    `INSERT INTO schema_id (id, fingerprint, schema_type, schema_json, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
	InsertNewID: `INSERT INTO schema_id (fingerprint, schema_type, schema_json, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`,
	SaveReader: `INSERT INTO schema_reader (stream_id, group_name, version, revision, registered_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (stream_id, group_name, version) DO UPDATE SET revision = excluded.revision, registered_at = excluded.registered_at`,
	Time: func(t time.Time) any { return micros(t) },
	At:   fromMicros,
}

// subjects is the free subjects' storage, shared with MySQL.
var subjects = sqldb.Subjects[int64]{
	EnsureSubject: `INSERT INTO registry_subject (name, created_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`,
	Time:          func(t time.Time) any { return micros(t) },
	At:            fromMicros,
	AssignID:      registry.AssignID,
}

var (
	_ driver.Registry  = (*Driver)(nil)
	_ driver.SchemaIDs = (*Driver)(nil)
	_ driver.Subjects  = (*Driver)(nil)
)

// onReader runs one of the registry's reads on the readers' pool, outside
// any transaction, and classifies its error.
func onReader[T any](d *Driver, read func(sqldb.Runner) (T, error)) (T, error) {
	if err := d.check(); err != nil {
		var zero T
		return zero, err
	}
	out, err := read(sqldb.On(d.read))
	return out, d.wrap(err)
}

// RegistrySettings implements driver.Registry.
func (d *Driver) RegistrySettings(ctx context.Context, p driver.RegistrySettingsParams) (driver.RegistrySettings, error) {
	return onReader(d, func(q sqldb.Runner) (driver.RegistrySettings, error) { return registry.Settings(ctx, q, p) })
}

// UpdateRegistrySettings implements driver.Registry.
func (d *Driver) UpdateRegistrySettings(ctx context.Context, p driver.UpdateRegistrySettingsParams) error {
	return d.inTx(ctx, nil, func(tx *sql.Tx) error { return registry.UpdateSettings(ctx, sqldb.On(tx), p) })
}

// RecordSchema implements driver.Registry and, with the global id and the
// references, driver.SchemaIDs. SQLite's single writer serializes
// concurrent registrations.
func (d *Driver) RecordSchema(ctx context.Context, p driver.RecordSchemaParams) (driver.SchemaRevision, bool, error) {
	return registry.RecordIn(ctx, sqldb.Over(d.writing), p)
}

// SchemaRevisions implements driver.Registry, in a read transaction so
// that the references match the revisions.
func (d *Driver) SchemaRevisions(ctx context.Context, p driver.SchemaRevisionsParams) ([]driver.SchemaRevision, error) {
	return sqldb.In(ctx, sqldb.Over(d.reading), registry.Revisions, p)
}

// DeleteRevisions implements driver.RevisionDeleter; SQLite's single
// writer keeps registrations, appends and readers out until it commits.
func (d *Driver) DeleteRevisions(ctx context.Context, p driver.DeleteRevisionsParams) ([]int, error) {
	return sqldb.Within(ctx, sqldb.Over(d.writing), func(tx sqldb.Runner) ([]int, error) {
		return registry.DeleteRevisions(ctx, tx, logTable(p.StreamID), p)
	})
}

// SchemaByID implements driver.SchemaIDs.
func (d *Driver) SchemaByID(ctx context.Context, p driver.SchemaByIDParams) (driver.SchemaDocument, error) {
	return onReader(d, func(q sqldb.Runner) (driver.SchemaDocument, error) { return registry.ByID(ctx, q, p.ID) })
}

// SchemaUsages implements driver.SchemaIDs.
func (d *Driver) SchemaUsages(ctx context.Context, p driver.SchemaUsagesParams) ([]driver.SchemaRevision, error) {
	return onReader(d, func(q sqldb.Runner) ([]driver.SchemaRevision, error) { return registry.Usages(ctx, q, p) })
}

// ReferencedBy implements driver.SchemaIDs.
func (d *Driver) ReferencedBy(ctx context.Context, p driver.ReferencedByParams) ([]driver.SchemaRevision, error) {
	return onReader(d, func(q sqldb.Runner) ([]driver.SchemaRevision, error) { return registry.ReferencedBy(ctx, q, p) })
}

// RecordReader implements driver.Registry.
func (d *Driver) RecordReader(ctx context.Context, p driver.RecordReaderParams) error {
	return d.inTx(ctx, nil, func(tx *sql.Tx) error { return registry.RecordReader(ctx, sqldb.On(tx), p.Reader) })
}

// Readers implements driver.Registry.
func (d *Driver) Readers(ctx context.Context, p driver.ReadersParams) ([]driver.Reader, error) {
	return onReader(d, func(q sqldb.Runner) ([]driver.Reader, error) { return registry.Readers(ctx, q, p) })
}

// LiveRevisions implements driver.Registry.
func (d *Driver) LiveRevisions(ctx context.Context, p driver.LiveRevisionsParams) ([]int, error) {
	return onReader(d, func(q sqldb.Runner) ([]int, error) { return registry.LiveRevisions(ctx, q, logTable(p.StreamID), p) })
}

// SubjectSettings implements driver.Subjects.
func (d *Driver) SubjectSettings(ctx context.Context, p driver.SubjectParams) (driver.RegistrySettings, error) {
	return onReader(d, func(q sqldb.Runner) (driver.RegistrySettings, error) { return subjects.Settings(ctx, q, p.Subject) })
}

// UpdateSubjectSettings implements driver.Subjects.
func (d *Driver) UpdateSubjectSettings(ctx context.Context, p driver.UpdateSubjectSettingsParams) error {
	return d.inTx(ctx, nil, func(tx *sql.Tx) error { return subjects.UpdateSettings(ctx, sqldb.On(tx), p) })
}

// RecordSubjectVersion implements driver.Subjects; SQLite's single writer
// serializes registrations.
func (d *Driver) RecordSubjectVersion(ctx context.Context, p driver.RecordSubjectVersionParams) (driver.SubjectVersion, bool, error) {
	return subjects.RecordIn(ctx, sqldb.Over(d.writing), p)
}

// SubjectVersions implements driver.Subjects.
func (d *Driver) SubjectVersions(ctx context.Context, p driver.SubjectVersionsParams) ([]driver.SubjectVersion, error) {
	return sqldb.In(ctx, sqldb.Over(d.reading), subjects.Versions, p)
}

// ListSubjects implements driver.Subjects.
func (d *Driver) ListSubjects(ctx context.Context, p driver.ListSubjectsParams) ([]string, error) {
	return onReader(d, func(q sqldb.Runner) ([]string, error) { return subjects.List(ctx, q, p) })
}

// DeleteSubjectVersions implements driver.Subjects.
func (d *Driver) DeleteSubjectVersions(ctx context.Context, p driver.DeleteSubjectVersionsParams) ([]int, error) {
	return sqldb.In(ctx, sqldb.Over(d.writing), subjects.Delete, p)
}

// SubjectUsages implements driver.Subjects.
func (d *Driver) SubjectUsages(ctx context.Context, p driver.SchemaUsagesParams) ([]driver.SubjectVersion, error) {
	return onReader(d, func(q sqldb.Runner) ([]driver.SubjectVersion, error) { return subjects.Usages(ctx, q, p) })
}
