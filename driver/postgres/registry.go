package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func readSettings(ctx context.Context, q querier, streamID int64) (driver.RegistrySettings, error) {
	var s driver.RegistrySettings
	err := q.QueryRow(ctx, `SELECT level, mode FROM registry_setting WHERE stream_id = $1::bigint`, streamID).Scan(&s.Level, &s.Mode)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, nil
	}
	return s, err
}

// RegistrySettings implements driver.Registry.
func (d *Driver) RegistrySettings(ctx context.Context, p driver.RegistrySettingsParams) (driver.RegistrySettings, error) {
	var s driver.RegistrySettings
	err := d.read(ctx, func() error {
		var err error
		s, err = readSettings(ctx, d.pool, p.StreamID)
		return err
	})
	return s, err
}

// UpdateRegistrySettings implements driver.Registry. The scope's row is
// created first and locked, so concurrent updates of a scope serialize.
func (d *Driver) UpdateRegistrySettings(ctx context.Context, p driver.UpdateRegistrySettingsParams) error {
	streamID := p.StreamID
	return d.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO registry_setting (stream_id) VALUES ($1::bigint) ON CONFLICT (stream_id) DO NOTHING`, streamID); err != nil {
			return err
		}
		var s driver.RegistrySettings
		if err := tx.QueryRow(ctx, `SELECT level, mode FROM registry_setting WHERE stream_id = $1::bigint FOR UPDATE`, streamID).Scan(&s.Level, &s.Mode); err != nil {
			return err
		}
		if err := p.Update(&s); err != nil {
			return callback(err)
		}
		_, err := tx.Exec(ctx, `UPDATE registry_setting SET level = $1::text, mode = $2::text WHERE stream_id = $3::bigint`, s.Level, s.Mode, streamID)
		return err
	})
}

const revisionColumns = `stream_id, version, revision, fingerprint, schema_json, created_at`

func scanRevisions(rows pgx.Rows) ([]driver.SchemaRevision, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.SchemaRevision, error) {
		var rev driver.SchemaRevision
		var version, revision int32
		var doc string
		err := r.Scan(&rev.StreamID, &version, &revision, &rev.Fingerprint, &doc, &rev.CreatedAt)
		rev.Version, rev.Revision, rev.Schema, rev.CreatedAt = int(version), int(revision), []byte(doc), rev.CreatedAt.UTC()
		return rev, err
	})
}

// RecordSchema implements driver.Registry. The stream's config row is
// locked for the transaction, so registrations on one stream serialize.
func (d *Driver) RecordSchema(ctx context.Context, p driver.RecordSchemaParams) (driver.SchemaRevision, bool, error) {
	rev := p.Revision
	var out driver.SchemaRevision
	var created bool
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		created = false
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM stream_config WHERE id = $1::bigint FOR NO KEY UPDATE`, rev.StreamID).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return driver.ErrStreamNotFound
		}
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+revisionColumns+` FROM schema_revision WHERE stream_id = $1::bigint AND version = $2::integer ORDER BY revision`,
			rev.StreamID, int32(rev.Version))
		if err != nil {
			return err
		}
		existing, err := scanRevisions(rows)
		if err != nil {
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
		if err := p.Decide(existing, streamSet, global); err != nil {
			return callback(err)
		}
		out = rev
		out.Revision = 1
		if len(existing) > 0 {
			out.Revision = existing[len(existing)-1].Revision + 1
		}
		out.CreatedAt = ts(rev.CreatedAt)
		_, err = tx.Exec(ctx, `INSERT INTO schema_revision (`+revisionColumns+`) VALUES ($1::bigint, $2::integer, $3::integer, $4::text, $5::text, $6::timestamptz)`,
			out.StreamID, int32(out.Version), int32(out.Revision), out.Fingerprint, string(out.Schema), out.CreatedAt)
		created = err == nil
		return err
	})
	return out, created, err
}

// SchemaRevisions implements driver.Registry.
func (d *Driver) SchemaRevisions(ctx context.Context, p driver.SchemaRevisionsParams) ([]driver.SchemaRevision, error) {
	var out []driver.SchemaRevision
	err := d.read(ctx, func() error {
		rows, err := d.pool.Query(ctx, `SELECT `+revisionColumns+` FROM schema_revision WHERE stream_id = $1::bigint AND ($2::integer = 0 OR version = $2::integer)
			ORDER BY version, revision`, p.StreamID, int32(p.Version))
		if err != nil {
			return err
		}
		out, err = scanRevisions(rows)
		return err
	})
	return out, err
}

// RecordReader implements driver.Registry.
func (d *Driver) RecordReader(ctx context.Context, p driver.RecordReaderParams) error {
	r := p.Reader
	return d.write(ctx, func(c *pgxpool.Conn) error {
		_, err := c.Exec(ctx, `INSERT INTO schema_reader (stream_id, group_name, version, revision, registered_at)
			VALUES ($1::bigint, $2::text, $3::integer, $4::integer, $5::timestamptz)
			ON CONFLICT (stream_id, group_name, version) DO UPDATE SET revision = excluded.revision, registered_at = excluded.registered_at`,
			r.StreamID, r.Group, int32(r.Version), int32(r.Revision), ts(r.RegisteredAt))
		return err
	})
}

// Readers implements driver.Registry.
func (d *Driver) Readers(ctx context.Context, p driver.ReadersParams) ([]driver.Reader, error) {
	var out []driver.Reader
	err := d.read(ctx, func() error {
		rows, err := d.pool.Query(ctx, `SELECT stream_id, group_name, version, revision, registered_at FROM schema_reader
			WHERE stream_id = $1::bigint ORDER BY group_name, version`, p.StreamID)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (driver.Reader, error) {
			var r driver.Reader
			var version, revision int32
			err := row.Scan(&r.StreamID, &r.Group, &version, &revision, &r.RegisteredAt)
			r.Version, r.Revision, r.RegisteredAt = int(version), int(revision), r.RegisteredAt.UTC()
			return r, err
		})
		return err
	})
	return out, err
}

// LiveRevisions implements driver.Registry.
func (d *Driver) LiveRevisions(ctx context.Context, p driver.LiveRevisionsParams) ([]int, error) {
	var out []int
	err := d.read(ctx, func() error {
		rows, err := d.pool.Query(ctx, `SELECT DISTINCT schema_revision FROM `+logTable(p.StreamID)+` WHERE schema_version = $1::integer ORDER BY 1`, int32(p.Version))
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (int, error) {
			var r int32
			err := row.Scan(&r)
			return int(r), err
		})
		return err
	})
	return out, err
}
