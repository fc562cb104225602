package mysql

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
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
			return callerError{err}
		}
		_, err = tx.ExecContext(ctx, `UPDATE registry_setting SET level = ?, mode = ? WHERE stream_id = ?`, s.Level, s.Mode, streamID)
		return err
	})
}

const revisionColumns = `stream_id, version, revision, fingerprint, schema_json, created_at`

func scanRevision(r scanner) (driver.SchemaRevision, error) {
	var rev driver.SchemaRevision
	var doc string
	var created time.Time
	err := r.Scan(&rev.StreamID, &rev.Version, &rev.Revision, &rev.Fingerprint, &doc, &created)
	rev.Schema, rev.CreatedAt = []byte(doc), utc(created)
	return rev, err
}

// RecordSchema implements driver.Registry. Registrations of one stream are
// serialized by locking the stream's settings row.
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
		var existing []driver.SchemaRevision
		if err := eachRow(ctx, tx, `SELECT `+revisionColumns+` FROM schema_revision WHERE stream_id = ? AND version = ? ORDER BY revision`,
			[]any{rev.StreamID, rev.Version}, func(r *sql.Rows) error {
				e, err := scanRevision(r)
				existing = append(existing, e)
				return err
			}); err != nil {
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
			return callerError{err}
		}
		out = rev
		out.Revision = 1
		if len(existing) > 0 {
			out.Revision = existing[len(existing)-1].Revision + 1
		}
		out.CreatedAt = rev.CreatedAt.UTC().Truncate(time.Microsecond)
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_revision (`+revisionColumns+`) VALUES (?, ?, ?, ?, ?, ?)`,
			out.StreamID, out.Version, out.Revision, out.Fingerprint, string(out.Schema), ts(out.CreatedAt)); err != nil {
			return err
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
	err := eachRow(ctx, d.db, `SELECT `+revisionColumns+` FROM schema_revision WHERE stream_id = ? AND (? = 0 OR version = ?)
		ORDER BY version, revision`, []any{streamID, version, version}, func(r *sql.Rows) error {
		rev, err := scanRevision(r)
		out = append(out, rev)
		return err
	})
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
