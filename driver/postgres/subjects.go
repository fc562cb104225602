package postgres

import (
	"context"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// subjects is the free subjects' storage, shared with MySQL and SQLite; the
// lock on a subject's row serializes the writers of one subject.
var subjects = sqldb.Subjects[time.Time]{
	EnsureSubject: `INSERT INTO registry_subject (name, created_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`,
	Lock:          `FOR UPDATE`,
	Time:          registry.Time,
	At:            registry.At,
	AssignID:      registry.AssignID,
}

var _ driver.Subjects = (*Driver)(nil)

// SubjectSettings implements driver.Subjects.
func (d *Driver) SubjectSettings(ctx context.Context, p driver.SubjectParams) (driver.RegistrySettings, error) {
	return sqldb.Within(ctx, d.pooled, func(q sqldb.Runner) (driver.RegistrySettings, error) { return subjects.Settings(ctx, q, p.Subject) })
}

// UpdateSubjectSettings implements driver.Subjects.
func (d *Driver) UpdateSubjectSettings(ctx context.Context, p driver.UpdateSubjectSettingsParams) error {
	return d.writing(ctx, func(tx sqldb.Runner) error { return subjects.UpdateSettings(ctx, tx, p) })
}

// RecordSubjectVersion implements driver.Subjects.
func (d *Driver) RecordSubjectVersion(ctx context.Context, p driver.RecordSubjectVersionParams) (driver.SubjectVersion, bool, error) {
	return subjects.RecordIn(ctx, d.writing, p)
}

// SubjectVersions implements driver.Subjects.
func (d *Driver) SubjectVersions(ctx context.Context, p driver.SubjectVersionsParams) ([]driver.SubjectVersion, error) {
	return sqldb.In(ctx, d.pooled, subjects.Versions, p)
}

// ListSubjects implements driver.Subjects.
func (d *Driver) ListSubjects(ctx context.Context, p driver.ListSubjectsParams) ([]string, error) {
	return sqldb.In(ctx, d.pooled, subjects.List, p)
}

// DeleteSubjectVersions implements driver.Subjects.
func (d *Driver) DeleteSubjectVersions(ctx context.Context, p driver.DeleteSubjectVersionsParams) ([]int, error) {
	return sqldb.In(ctx, d.writing, subjects.Delete, p)
}

// SubjectUsages implements driver.Subjects.
func (d *Driver) SubjectUsages(ctx context.Context, p driver.SchemaUsagesParams) ([]driver.SubjectVersion, error) {
	return sqldb.In(ctx, d.pooled, subjects.Usages, p)
}
