package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// readSettings reads a scope's settings: a stream version, a whole stream
// (version 0) or registry-wide (stream 0, version 0).
func readSettings(ctx context.Context, q querier, streamID int64, version int) (driver.RegistrySettings, error) {
	var s driver.RegistrySettings
	err := q.QueryRow(ctx, `SELECT level, mode FROM registry_setting WHERE stream_id = $1::bigint AND version = $2::integer`, streamID, int32(version)).Scan(&s.Level, &s.Mode)
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
		s, err = readSettings(ctx, d.pool, p.StreamID, p.Version)
		return err
	})
	return s, err
}

// UpdateRegistrySettings implements driver.Registry. The scope's row is
// created first and locked, so concurrent updates of a scope serialize.
func (d *Driver) UpdateRegistrySettings(ctx context.Context, p driver.UpdateRegistrySettingsParams) error {
	streamID, version := p.StreamID, int32(p.Version)
	return d.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO registry_setting (stream_id, version) VALUES ($1::bigint, $2::integer) ON CONFLICT (stream_id, version) DO NOTHING`, streamID, version); err != nil {
			return err
		}
		var s driver.RegistrySettings
		if err := tx.QueryRow(ctx, `SELECT level, mode FROM registry_setting WHERE stream_id = $1::bigint AND version = $2::integer FOR UPDATE`, streamID, version).Scan(&s.Level, &s.Mode); err != nil {
			return err
		}
		if err := p.Update(&s); err != nil {
			return driver.CallerError{Err: err}
		}
		_, err := tx.Exec(ctx, `UPDATE registry_setting SET level = $1::text, mode = $2::text WHERE stream_id = $3::bigint AND version = $4::integer`, s.Level, s.Mode, streamID, version)
		return err
	})
}

// revisionColumns reads a revision with its global id (r: schema_revision,
// i: schema_id joined on the fingerprint).
const revisionColumns = `r.stream_id, r.version, r.revision, r.fingerprint, r.schema_type, r.schema_json, r.created_at, r.deleted, COALESCE(i.id, 0)`

const revisionFrom = ` FROM schema_revision r LEFT JOIN schema_id i ON i.fingerprint = r.fingerprint `

func scanRevisions(rows pgx.Rows) ([]driver.SchemaRevision, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.SchemaRevision, error) {
		var rev driver.SchemaRevision
		var version, revision int32
		var doc string
		err := r.Scan(&rev.StreamID, &version, &revision, &rev.Fingerprint, &rev.Type, &doc, &rev.CreatedAt, &rev.Deleted, &rev.ID)
		rev.Version, rev.Revision, rev.Schema, rev.CreatedAt = int(version), int(revision), []byte(doc), rev.CreatedAt.UTC()
		return rev, err
	})
}

// withReferences fills the References of revisions of one stream.
func withReferences(ctx context.Context, q querier, streamID int64, revs []driver.SchemaRevision) error {
	if len(revs) == 0 {
		return nil
	}
	rows, err := q.Query(ctx, `SELECT version, revision, name, ref_stream_id, ref_version, ref_revision, ref_fingerprint
		FROM schema_reference WHERE stream_id = $1::bigint ORDER BY version, revision, position`, streamID)
	if err != nil {
		return err
	}
	at := map[[2]int]int{}
	for i, r := range revs {
		at[[2]int{r.Version, r.Revision}] = i
	}
	var version, revision, refVersion, refRevision int32
	var ref driver.SchemaReference
	_, err = pgx.ForEachRow(rows, []any{&version, &revision, &ref.Name, &ref.StreamID, &refVersion, &refRevision, &ref.Fingerprint}, func() error {
		ref.Version, ref.Revision = int(refVersion), int(refRevision)
		if i, ok := at[[2]int{int(version), int(revision)}]; ok {
			revs[i].References = append(revs[i].References, ref)
		}
		return nil
	})
	return err
}

// assignID returns the global id of a fingerprint, creating it (with the
// wanted id when not 0) the first time any stream records it. Two streams
// recording one new fingerprint at once meet on its UNIQUE constraint: the
// second waits for the first and then reads its id.
func assignID(ctx context.Context, tx pgx.Tx, rev driver.SchemaRevision) (int64, error) {
	var id int64
	// Look first, as sqldb.Registry does: an insert that meets a stored
	// fingerprint uses up a sequence value, and ids would skip.
	err := tx.QueryRow(ctx, `SELECT id FROM schema_id WHERE fingerprint = $1::text`, rev.Fingerprint).Scan(&id)
	switch {
	case err == nil:
		return id, driver.IDConflict(rev.ID, id)
	case !errors.Is(err, pgx.ErrNoRows):
		return 0, err
	}
	if rev.ID != 0 {
		var fp string
		err := tx.QueryRow(ctx, `SELECT fingerprint FROM schema_id WHERE id = $1::bigint`, rev.ID).Scan(&fp)
		switch {
		case err == nil && fp != rev.Fingerprint:
			return 0, driver.IDOfOther(rev.ID)
		case err != nil && !errors.Is(err, pgx.ErrNoRows):
			return 0, err
		}
	}
	if rev.ID != 0 {
		err = tx.QueryRow(ctx, `INSERT INTO schema_id (id, fingerprint, schema_type, schema_json, created_at) VALUES ($1::bigint, $2::text, $3::text, $4::text, $5::timestamptz)
			ON CONFLICT DO NOTHING RETURNING id`, rev.ID, rev.Fingerprint, rev.Type, string(rev.Schema), rev.CreatedAt).Scan(&id)
		if err == nil {
			// An identity column does not follow explicit ids by itself.
			_, err = tx.Exec(ctx, `SELECT setval(pg_get_serial_sequence('schema_id', 'id'), (SELECT MAX(id) FROM schema_id))`)
			return id, err
		}
	} else {
		err = tx.QueryRow(ctx, `INSERT INTO schema_id (fingerprint, schema_type, schema_json, created_at) VALUES ($1::text, $2::text, $3::text, $4::timestamptz)
			ON CONFLICT (fingerprint) DO NOTHING RETURNING id`, rev.Fingerprint, rev.Type, string(rev.Schema), rev.CreatedAt).Scan(&id)
		if err == nil {
			return id, nil
		}
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return 0, err
	}
	if err := tx.QueryRow(ctx, `SELECT id FROM schema_id WHERE fingerprint = $1::text`, rev.Fingerprint).Scan(&id); err != nil {
		return 0, err
	}
	return id, driver.IDConflict(rev.ID, id)
}

// RecordSchema implements driver.Registry and, with the global id and the
// references, driver.SchemaIDs, by driver.RecordRevision over revisionSteps.
func (d *Driver) RecordSchema(ctx context.Context, p driver.RecordSchemaParams) (driver.SchemaRevision, bool, error) {
	var out driver.SchemaRevision
	var created bool
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, created, err = driver.RecordRevision(ctx, revisionSteps{tx}, p)
		return err
	})
	return out, created, err
}

// revisionSteps are driver.RevisionSteps in one transaction.
type revisionSteps struct{ tx pgx.Tx }

// LockStream locks the stream's config row for the transaction, so
// registrations on one stream serialize.
func (s revisionSteps) LockStream(ctx context.Context, streamID int64) (driver.RegistrySettings, error) {
	var one int
	err := s.tx.QueryRow(ctx, `SELECT 1 FROM stream_config WHERE id = $1::bigint FOR NO KEY UPDATE`, streamID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return driver.RegistrySettings{}, driver.ErrStreamNotFound
	}
	if err != nil {
		return driver.RegistrySettings{}, err
	}
	return readSettings(ctx, s.tx, streamID, 0)
}

func (s revisionSteps) Revisions(ctx context.Context, streamID int64, version int) ([]driver.SchemaRevision, error) {
	return revisionsAt(ctx, s.tx, driver.SchemaRevisionsParams{StreamID: streamID, Version: version, Deleted: true})
}

func (s revisionSteps) Settings(ctx context.Context, streamID int64, version int) (driver.RegistrySettings, error) {
	return readSettings(ctx, s.tx, streamID, version)
}

func (s revisionSteps) AssignID(ctx context.Context, rev driver.SchemaRevision) (int64, error) {
	return assignID(ctx, s.tx, rev)
}

func (s revisionSteps) InsertRevision(ctx context.Context, rev driver.SchemaRevision) error {
	if _, err := s.tx.Exec(ctx, `INSERT INTO schema_revision (stream_id, version, revision, fingerprint, schema_type, schema_json, created_at)
		VALUES ($1::bigint, $2::integer, $3::integer, $4::text, $5::text, $6::text, $7::timestamptz)`,
		rev.StreamID, int32(rev.Version), int32(rev.Revision), rev.Fingerprint, rev.Type, string(rev.Schema), rev.CreatedAt); err != nil {
		return err
	}
	for i, ref := range rev.References {
		if _, err := s.tx.Exec(ctx, `INSERT INTO schema_reference (stream_id, version, revision, position, name, ref_stream_id, ref_version, ref_revision, ref_fingerprint)
			VALUES ($1::bigint, $2::integer, $3::integer, $4::integer, $5::text, $6::bigint, $7::integer, $8::integer, $9::text)`,
			rev.StreamID, int32(rev.Version), int32(rev.Revision), int32(i), ref.Name, ref.StreamID, int32(ref.Version), int32(ref.Revision), ref.Fingerprint); err != nil {
			return err
		}
	}
	return nil
}

// revisionsAt reads a stream's revisions at p.Version (every version for
// 0; soft-deleted ones with p.Deleted) with their references; q should be
// a transaction, so that the references match the revisions.
func revisionsAt(ctx context.Context, q querier, p driver.SchemaRevisionsParams) ([]driver.SchemaRevision, error) {
	rows, err := q.Query(ctx, `SELECT `+revisionColumns+revisionFrom+`WHERE r.stream_id = $1::bigint AND ($2::integer = 0 OR r.version = $2::integer)
		AND ($3::boolean OR NOT r.deleted) ORDER BY r.version, r.revision`, p.StreamID, int32(p.Version), p.Deleted)
	if err != nil {
		return nil, err
	}
	out, err := scanRevisions(rows)
	if err != nil {
		return nil, err
	}
	return out, withReferences(ctx, q, p.StreamID, out)
}

// SchemaRevisions implements driver.Registry.
func (d *Driver) SchemaRevisions(ctx context.Context, p driver.SchemaRevisionsParams) ([]driver.SchemaRevision, error) {
	var out []driver.SchemaRevision
	err := d.readTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = revisionsAt(ctx, tx, p)
		return err
	})
	return out, err
}

var _ driver.SchemaIDs = (*Driver)(nil)

// SchemaByID implements driver.SchemaIDs.
func (d *Driver) SchemaByID(ctx context.Context, p driver.SchemaByIDParams) (driver.SchemaDocument, error) {
	doc := driver.SchemaDocument{ID: p.ID}
	err := d.read(ctx, func() error {
		var text string
		err := d.pool.QueryRow(ctx, `SELECT fingerprint, schema_type, schema_json, created_at FROM schema_id WHERE id = $1::bigint`, p.ID).Scan(&doc.Fingerprint, &doc.Type, &text, &doc.CreatedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return driver.CallerError{Err: fmt.Errorf("postgres: schema id %d: %w", p.ID, driver.ErrSchemaNotFound)}
		}
		doc.Schema, doc.CreatedAt = []byte(text), doc.CreatedAt.UTC()
		return err
	})
	return doc, err
}

// SchemaUsages implements driver.SchemaIDs: live revisions, as listings
// hide soft-deleted ones, unless p.Deleted.
func (d *Driver) SchemaUsages(ctx context.Context, p driver.SchemaUsagesParams) ([]driver.SchemaRevision, error) {
	var out []driver.SchemaRevision
	err := d.read(ctx, func() error {
		rows, err := d.pool.Query(ctx, `SELECT `+revisionColumns+revisionFrom+`WHERE i.id = $1::bigint AND ($2::boolean OR NOT r.deleted)
			ORDER BY r.stream_id, r.version, r.revision`, p.ID, p.Deleted)
		if err != nil {
			return err
		}
		out, err = scanRevisions(rows)
		return err
	})
	return out, err
}

// ReferencedBy implements driver.SchemaIDs. Only references whose pinned
// fingerprint is the revision's own count.
func (d *Driver) ReferencedBy(ctx context.Context, p driver.ReferencedByParams) ([]driver.SchemaRevision, error) {
	var out []driver.SchemaRevision
	err := d.read(ctx, func() error {
		var err error
		out, err = referencedBy(ctx, d.pool, p)
		return err
	})
	return out, err
}

func referencedBy(ctx context.Context, q querier, p driver.ReferencedByParams) ([]driver.SchemaRevision, error) {
	rows, err := q.Query(ctx, `SELECT DISTINCT `+revisionColumns+revisionFrom+`
		JOIN schema_reference f ON f.stream_id = r.stream_id AND f.version = r.version AND f.revision = r.revision
		JOIN schema_revision t ON t.stream_id = f.ref_stream_id AND t.version = f.ref_version AND t.revision = f.ref_revision AND t.fingerprint = f.ref_fingerprint
		WHERE f.ref_stream_id = $1::bigint AND f.ref_version = $2::integer AND f.ref_revision = $3::integer
		ORDER BY r.stream_id, r.version, r.revision`, p.StreamID, int32(p.Version), int32(p.Revision))
	if err != nil {
		return nil, err
	}
	return scanRevisions(rows)
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
		var err error
		out, err = readers(ctx, d.pool, p.StreamID)
		return err
	})
	return out, err
}

func readers(ctx context.Context, q querier, streamID int64) ([]driver.Reader, error) {
	rows, err := q.Query(ctx, `SELECT stream_id, group_name, version, revision, registered_at FROM schema_reader
		WHERE stream_id = $1::bigint ORDER BY group_name, version`, streamID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (driver.Reader, error) {
		var r driver.Reader
		var version, revision int32
		err := row.Scan(&r.StreamID, &r.Group, &version, &revision, &r.RegisteredAt)
		r.Version, r.Revision, r.RegisteredAt = int(version), int(revision), r.RegisteredAt.UTC()
		return r, err
	})
}

// DeleteRevisions implements driver.RevisionDeleter, serialized with the
// stream's registrations by the lock RecordSchema takes.
func (d *Driver) DeleteRevisions(ctx context.Context, p driver.DeleteRevisionsParams) ([]int, error) {
	var out []int
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = driver.DeleteRevisionsIn(ctx, deletionSteps{revisionSteps{tx}}, p)
		return err
	})
	return out, err
}

// deletionSteps are driver.DeletionSteps in one transaction.
type deletionSteps struct{ revisionSteps }

func (s deletionSteps) InRows(ctx context.Context, streamID int64, version, revision int) (bool, error) {
	var used bool
	err := s.tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+logTable(streamID)+` WHERE schema_version = $1::integer AND schema_revision = $2::integer)`,
		int32(version), int32(revision)).Scan(&used)
	return used, err
}

func (s deletionSteps) Readers(ctx context.Context, streamID int64) ([]driver.Reader, error) {
	return readers(ctx, s.tx, streamID)
}

func (s deletionSteps) ReferencedBy(ctx context.Context, p driver.ReferencedByParams) ([]driver.SchemaRevision, error) {
	return referencedBy(ctx, s.tx, p)
}

func (s deletionSteps) Remove(ctx context.Context, streamID int64, version int, revisions []int, permanent bool) error {
	const where = ` WHERE stream_id = $1::bigint AND version = $2::integer AND revision = ANY($3::integer[])`
	nums := make([]int32, len(revisions))
	for i, n := range revisions {
		nums[i] = int32(n)
	}
	if !permanent {
		_, err := s.tx.Exec(ctx, `UPDATE schema_revision SET deleted = true`+where, streamID, int32(version), nums)
		return err
	}
	for _, table := range []string{"schema_revision", "schema_reference"} {
		if _, err := s.tx.Exec(ctx, `DELETE FROM `+table+where, streamID, int32(version), nums); err != nil {
			return err
		}
	}
	return nil
}

func (s deletionSteps) ForgetSettings(ctx context.Context, streamID int64, version int) error {
	_, err := s.tx.Exec(ctx, `UPDATE registry_setting SET level = '', mode = '' WHERE stream_id = $1::bigint AND version = $2::integer`, streamID, int32(version))
	return err
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
