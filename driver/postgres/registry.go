package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
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

// onPool runs one of the registry's reads on the pool, outside any
// transaction, retried and classified as reads are.
func onPool[T any](ctx context.Context, d *Driver, read func(sqldb.Runner) (T, error)) (T, error) {
	var out T
	err := d.read(ctx, func() error {
		var err error
		out, err = read(runner{d.pool})
		return err
	})
	return out, err
}

// inOwnTx runs fn in a transaction of the driver's own, as run (inTx, or
// readTx for one snapshot) begins, retries and classifies it, and returns
// what its last run gave.
func inOwnTx[T any](ctx context.Context, run func(context.Context, func(pgx.Tx) error) error, fn func(sqldb.Runner) (T, error)) (T, error) {
	var out T
	err := run(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = fn(runner{tx})
		return err
	})
	return out, err
}

// RegistrySettings implements driver.Registry.
func (d *Driver) RegistrySettings(ctx context.Context, p driver.RegistrySettingsParams) (driver.RegistrySettings, error) {
	return onPool(ctx, d, func(q sqldb.Runner) (driver.RegistrySettings, error) { return registry.Settings(ctx, q, p) })
}

// UpdateRegistrySettings implements driver.Registry. The scope's row is
// created first, in the transaction, so that the locking read has a row to
// lock: a concurrent update's insert waits for this one to commit, and
// updates of a scope serialize.
func (d *Driver) UpdateRegistrySettings(ctx context.Context, p driver.UpdateRegistrySettingsParams) error {
	return d.inTx(ctx, func(tx pgx.Tx) error {
		q := runner{tx}
		if _, err := q.Exec(ctx, `INSERT INTO registry_setting (stream_id, version) VALUES (?, ?) ON CONFLICT (stream_id, version) DO NOTHING`, p.StreamID, p.Version); err != nil {
			return err
		}
		return registry.UpdateSettings(ctx, q, p)
	})
}

// RecordSchema implements driver.Registry and, with the global id and the
// references, driver.SchemaIDs.
func (d *Driver) RecordSchema(ctx context.Context, p driver.RecordSchemaParams) (driver.SchemaRevision, bool, error) {
	var created bool
	out, err := inOwnTx(ctx, d.inTx, func(tx sqldb.Runner) (driver.SchemaRevision, error) {
		out, c, err := registry.Record(ctx, tx, p)
		created = c
		return out, err
	})
	return out, created, err
}

// SchemaRevisions implements driver.Registry, in one snapshot so that the
// references match the revisions.
func (d *Driver) SchemaRevisions(ctx context.Context, p driver.SchemaRevisionsParams) ([]driver.SchemaRevision, error) {
	return inOwnTx(ctx, d.readTx, func(tx sqldb.Runner) ([]driver.SchemaRevision, error) { return registry.Revisions(ctx, tx, p) })
}

// DeleteRevisions implements driver.RevisionDeleter, serialized with the
// stream's registrations by the lock RecordSchema takes.
func (d *Driver) DeleteRevisions(ctx context.Context, p driver.DeleteRevisionsParams) ([]int, error) {
	return inOwnTx(ctx, d.inTx, func(tx sqldb.Runner) ([]int, error) {
		return registry.DeleteRevisions(ctx, tx, logTable(p.StreamID), p)
	})
}

// SchemaByID implements driver.SchemaIDs. A missing id is an answer: it
// goes back as it is, neither retried nor classified.
func (d *Driver) SchemaByID(ctx context.Context, p driver.SchemaByIDParams) (driver.SchemaDocument, error) {
	return onPool(ctx, d, func(q sqldb.Runner) (driver.SchemaDocument, error) {
		doc, err := registry.ByID(ctx, q, p.ID)
		if errors.Is(err, driver.ErrSchemaNotFound) {
			err = driver.CallerError{Err: err}
		}
		return doc, err
	})
}

// SchemaUsages implements driver.SchemaIDs.
func (d *Driver) SchemaUsages(ctx context.Context, p driver.SchemaUsagesParams) ([]driver.SchemaRevision, error) {
	return onPool(ctx, d, func(q sqldb.Runner) ([]driver.SchemaRevision, error) { return registry.Usages(ctx, q, p) })
}

// ReferencedBy implements driver.SchemaIDs.
func (d *Driver) ReferencedBy(ctx context.Context, p driver.ReferencedByParams) ([]driver.SchemaRevision, error) {
	return onPool(ctx, d, func(q sqldb.Runner) ([]driver.SchemaRevision, error) { return registry.ReferencedBy(ctx, q, p) })
}

// RecordReader implements driver.Registry.
func (d *Driver) RecordReader(ctx context.Context, p driver.RecordReaderParams) error {
	return d.write(ctx, func(c *pgxpool.Conn) error { return registry.RecordReader(ctx, runner{c}, p.Reader) })
}

// Readers implements driver.Registry.
func (d *Driver) Readers(ctx context.Context, p driver.ReadersParams) ([]driver.Reader, error) {
	return onPool(ctx, d, func(q sqldb.Runner) ([]driver.Reader, error) { return registry.Readers(ctx, q, p) })
}

// LiveRevisions implements driver.Registry.
func (d *Driver) LiveRevisions(ctx context.Context, p driver.LiveRevisionsParams) ([]int, error) {
	return onPool(ctx, d, func(q sqldb.Runner) ([]int, error) { return registry.LiveRevisions(ctx, q, logTable(p.StreamID), p) })
}
