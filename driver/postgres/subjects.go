package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
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
	return onPool(ctx, d, func(q sqldb.Runner) (driver.RegistrySettings, error) { return subjects.Settings(ctx, q, p.Subject) })
}

// UpdateSubjectSettings implements driver.Subjects.
func (d *Driver) UpdateSubjectSettings(ctx context.Context, p driver.UpdateSubjectSettingsParams) error {
	return d.inTx(ctx, func(tx pgx.Tx) error { return subjects.UpdateSettings(ctx, runner{tx}, p) })
}

// RecordSubjectVersion implements driver.Subjects.
func (d *Driver) RecordSubjectVersion(ctx context.Context, p driver.RecordSubjectVersionParams) (driver.SubjectVersion, bool, error) {
	return subjects.RecordIn(ctx, d.writing, p)
}

// SubjectVersions implements driver.Subjects.
func (d *Driver) SubjectVersions(ctx context.Context, p driver.SubjectVersionsParams) ([]driver.SubjectVersion, error) {
	return onPool(ctx, d, func(q sqldb.Runner) ([]driver.SubjectVersion, error) { return subjects.Versions(ctx, q, p) })
}

// ListSubjects implements driver.Subjects.
func (d *Driver) ListSubjects(ctx context.Context, p driver.ListSubjectsParams) ([]string, error) {
	return onPool(ctx, d, func(q sqldb.Runner) ([]string, error) { return subjects.List(ctx, q, p) })
}

// DeleteSubjectVersions implements driver.Subjects.
func (d *Driver) DeleteSubjectVersions(ctx context.Context, p driver.DeleteSubjectVersionsParams) ([]int, error) {
	return inOwnTx(ctx, d.inTx, func(tx sqldb.Runner) ([]int, error) { return subjects.Delete(ctx, tx, p) })
}

// SubjectUsages implements driver.Subjects.
func (d *Driver) SubjectUsages(ctx context.Context, p driver.SchemaUsagesParams) ([]driver.SubjectVersion, error) {
	return onPool(ctx, d, func(q sqldb.Runner) ([]driver.SubjectVersion, error) { return subjects.Usages(ctx, q, p) })
}
