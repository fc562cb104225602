package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// registry is the schema registry's storage, shared with MySQL and SQLite
// and run on pgx through runner. A stream's registrations and revision
// deletes lock its configuration row (FOR NO KEY UPDATE, which group
// registrations' FOR KEY SHARE does not wait for), so that a stream that
// is gone refuses them; a scope's settings update locks the scope's row.
var registry = sqldb.Registry[time.Time]{
	Name:         "postgres",
	Lock:         `FOR UPDATE`,
	LockStream:   `SELECT 1 FROM stream_config WHERE id = ? FOR NO KEY UPDATE`,
	SaveSettings: `UPDATE registry_setting SET level = ?, mode = ? WHERE stream_id = ? AND version = ?`,
	// An identity column does not follow explicit ids by itself; the
	// statement's own snapshot does not see the row it adds.
	InsertID: `WITH added AS (INSERT INTO schema_id (id, fingerprint, schema_type, schema_json, created_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT DO NOTHING RETURNING id)
		SELECT setval(pg_get_serial_sequence('schema_id', 'id'), GREATEST(added.id, (SELECT MAX(id) FROM schema_id))) FROM added`,
	InsertNewID: `INSERT INTO schema_id (fingerprint, schema_type, schema_json, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (fingerprint) DO NOTHING`,
	SaveReader: `INSERT INTO schema_reader (stream_id, group_name, version, revision, registered_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (stream_id, group_name, version) DO UPDATE SET revision = excluded.revision, registered_at = excluded.registered_at`,
	Time: func(t time.Time) any { return ts(t) },
	At:   time.Time.UTC,
}

var (
	_ driver.Registry        = (*Driver)(nil)
	_ driver.SchemaIDs       = (*Driver)(nil)
	_ driver.RevisionDeleter = (*Driver)(nil)
)

// RegistrySettings implements driver.Registry.
func (d *Driver) RegistrySettings(ctx context.Context, p driver.RegistrySettingsParams) (driver.RegistrySettings, error) {
	return sqldb.In(ctx, d.pooled, registry.Settings, p)
}

// UpdateRegistrySettings implements driver.Registry. The scope's row is
// created first, in the transaction, so that the locking read has a row to
// lock: a concurrent update's insert waits for this one to commit, and
// updates of a scope serialize.
func (d *Driver) UpdateRegistrySettings(ctx context.Context, p driver.UpdateRegistrySettingsParams) error {
	return d.writing(ctx, func(q sqldb.Runner) error {
		if _, err := q.Exec(ctx, `INSERT INTO registry_setting (stream_id, version) VALUES (?, ?) ON CONFLICT (stream_id, version) DO NOTHING`, p.StreamID, p.Version); err != nil {
			return err
		}
		return registry.UpdateSettings(ctx, q, p)
	})
}

// RecordSchema implements driver.Registry and, with the global id and the
// references, driver.SchemaIDs.
func (d *Driver) RecordSchema(ctx context.Context, p driver.RecordSchemaParams) (driver.SchemaRevision, bool, error) {
	return registry.RecordIn(ctx, d.writing, p)
}

// SchemaRevisions implements driver.Registry, in one snapshot so that the
// references match the revisions.
func (d *Driver) SchemaRevisions(ctx context.Context, p driver.SchemaRevisionsParams) ([]driver.SchemaRevision, error) {
	return sqldb.In(ctx, d.reading, registry.Revisions, p)
}

// DeleteRevisions implements driver.RevisionDeleter, serialized with the
// stream's registrations by the lock RecordSchema takes.
func (d *Driver) DeleteRevisions(ctx context.Context, p driver.DeleteRevisionsParams) ([]int, error) {
	return sqldb.Within(ctx, d.writing, func(tx sqldb.Runner) ([]int, error) {
		return registry.DeleteRevisions(ctx, tx, logTable(p.StreamID), p)
	})
}

// SchemaByID implements driver.SchemaIDs. A missing id is an answer: it
// goes back as it is, neither retried nor classified.
func (d *Driver) SchemaByID(ctx context.Context, p driver.SchemaByIDParams) (driver.SchemaDocument, error) {
	return sqldb.Within(ctx, d.pooled, func(q sqldb.Runner) (driver.SchemaDocument, error) {
		doc, err := registry.ByID(ctx, q, p.ID)
		if errors.Is(err, driver.ErrSchemaNotFound) {
			err = driver.CallerError{Err: err}
		}
		return doc, err
	})
}

// SchemaUsages implements driver.SchemaIDs.
func (d *Driver) SchemaUsages(ctx context.Context, p driver.SchemaUsagesParams) ([]driver.SchemaRevision, error) {
	return sqldb.In(ctx, d.pooled, registry.Usages, p)
}

// ReferencedBy implements driver.SchemaIDs.
func (d *Driver) ReferencedBy(ctx context.Context, p driver.ReferencedByParams) ([]driver.SchemaRevision, error) {
	return sqldb.In(ctx, d.pooled, registry.ReferencedBy, p)
}

// RecordReader implements driver.Registry.
func (d *Driver) RecordReader(ctx context.Context, p driver.RecordReaderParams) error {
	return d.autocommit(ctx, func(q sqldb.Runner) error { return registry.RecordReader(ctx, q, p.Reader) })
}

// Readers implements driver.Registry.
func (d *Driver) Readers(ctx context.Context, p driver.ReadersParams) ([]driver.Reader, error) {
	return sqldb.In(ctx, d.pooled, registry.Readers, p)
}

// LiveRevisions implements driver.Registry.
func (d *Driver) LiveRevisions(ctx context.Context, p driver.LiveRevisionsParams) ([]int, error) {
	return sqldb.Within(ctx, d.pooled, func(q sqldb.Runner) ([]int, error) { return registry.LiveRevisions(ctx, q, logTable(p.StreamID), p) })
}
