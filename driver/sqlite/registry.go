package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

var _ driver.Registry = (*Driver)(nil)

func readSettings(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, streamID int64) (driver.RegistrySettings, error) {
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

const revisionColumns = `stream_id, version, revision, fingerprint, schema_json, created_at`

func scanRevisions(rows *sql.Rows) ([]driver.SchemaRevision, error) {
	defer rows.Close()
	var out []driver.SchemaRevision
	for rows.Next() {
		var r driver.SchemaRevision
		var doc string
		var created int64
		if err := rows.Scan(&r.StreamID, &r.Version, &r.Revision, &r.Fingerprint, &doc, &created); err != nil {
			return nil, err
		}
		r.Schema, r.CreatedAt = []byte(doc), fromMicros(created)
		out = append(out, r)
	}
	return out, rows.Err()
}

// RecordSchema implements driver.Registry. SQLite's single writer
// serializes concurrent registrations.
func (d *Driver) RecordSchema(ctx context.Context, p driver.RecordSchemaParams) (driver.SchemaRevision, bool, error) {
	rev, decide := p.Revision, p.Decide
	var out driver.SchemaRevision
	var created bool
	err := d.inTx(ctx, nil, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+revisionColumns+` FROM schema_revision WHERE stream_id = ? AND version = ? ORDER BY revision`, rev.StreamID, rev.Version)
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
		if err := decide(existing, streamSet, global); err != nil {
			return err
		}
		out = rev
		out.Revision = len(existing) + 1
		if len(existing) > 0 {
			out.Revision = existing[len(existing)-1].Revision + 1
		}
		out.CreatedAt = fromMicros(micros(rev.CreatedAt))
		_, err = tx.ExecContext(ctx, `INSERT INTO schema_revision (`+revisionColumns+`) VALUES (?, ?, ?, ?, ?, ?)`,
			out.StreamID, out.Version, out.Revision, out.Fingerprint, string(out.Schema), micros(out.CreatedAt))
		created = err == nil
		return err
	})
	return out, created, err
}

// SchemaRevisions implements driver.Registry.
func (d *Driver) SchemaRevisions(ctx context.Context, p driver.SchemaRevisionsParams) ([]driver.SchemaRevision, error) {
	streamID, version := p.StreamID, p.Version
	if err := d.check(); err != nil {
		return nil, err
	}
	rows, err := d.read.QueryContext(ctx, `SELECT `+revisionColumns+` FROM schema_revision WHERE stream_id = ? AND (? = 0 OR version = ?)
		ORDER BY version, revision`, streamID, version, version)
	if err != nil {
		return nil, err
	}
	return scanRevisions(rows)
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
	streamID := p.StreamID
	if err := d.check(); err != nil {
		return nil, err
	}
	rows, err := d.read.QueryContext(ctx, `SELECT stream_id, group_name, version, revision, registered_at FROM schema_reader
		WHERE stream_id = ? ORDER BY group_name, version`, streamID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.Reader
	for rows.Next() {
		var r driver.Reader
		var at int64
		if err := rows.Scan(&r.StreamID, &r.Group, &r.Version, &r.Revision, &at); err != nil {
			return nil, err
		}
		r.RegisteredAt = fromMicros(at)
		out = append(out, r)
	}
	return out, rows.Err()
}

// LiveRevisions implements driver.Registry.
func (d *Driver) LiveRevisions(ctx context.Context, p driver.LiveRevisionsParams) ([]int, error) {
	streamID, version := p.StreamID, p.Version
	if err := d.check(); err != nil {
		return nil, err
	}
	rows, err := d.read.QueryContext(ctx, `SELECT DISTINCT schema_revision FROM `+logTable(streamID)+` WHERE schema_version = ? ORDER BY 1`, version)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var r int
		if err := rows.Scan(&r); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
