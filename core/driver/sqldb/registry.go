package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Registry is driver.Registry's and driver.SchemaIDs' storage as every
// SQL engine does it alike, run on a transaction (or connection) the
// driver opens, through a Runner: the driver keeps its transactions,
// retries and error classification, and passes the few statements whose
// text differs. T is how the engine stores a time (SQLite: microseconds,
// MySQL: DATETIME(6), PostgreSQL: timestamptz).
type Registry[T any] struct {
	// Name starts the messages of errors the registry makes ("mysql").
	Name string
	// Lock follows a read that must hold its rows until the transaction
	// ends ("FOR UPDATE"; empty for SQLite's single writer).
	Lock string
	// IDLock follows AssignID's reads of schema_id, which must see the
	// row of a concurrent writer of the same fingerprint once it commits:
	// MySQL's plain reads see the transaction's first snapshot, its
	// locking reads ("FOR UPDATE") the latest rows. Empty where each
	// statement sees the latest rows (PostgreSQL's read committed,
	// SQLite's single writer).
	IDLock string
	// LockStream, if set, is the locking read of the stream's own row
	// (argument: stream id) that serializes its registrations and
	// revision deletes, and finds no row for a stream that is gone
	// (driver.ErrStreamNotFound); otherwise the stream's settings row is
	// read with Lock.
	LockStream string
	// SaveSettings stores a scope's settings (arguments: level, mode,
	// stream id, version).
	SaveSettings string
	// InsertID and InsertNewID insert a schema_id row unless its id or
	// fingerprint is taken (arguments: [id,] fingerprint, schema_type,
	// schema_json, created_at).
	InsertID, InsertNewID string
	// SaveReader inserts or replaces a group's reader (arguments: stream
	// id, group, version, revision, registered_at).
	SaveReader string
	// Time turns a time into the stored value, At reads one back.
	Time func(time.Time) any
	At   func(T) time.Time
}

// revisionColumns reads a revision with its global id (r: schema_revision,
// i: schema_id joined on the fingerprint).
const revisionColumns = `r.stream_id, r.version, r.revision, r.fingerprint, r.schema_type, r.schema_json, r.created_at, r.deleted, COALESCE(i.id, 0)
	FROM schema_revision r LEFT JOIN schema_id i ON i.fingerprint = r.fingerprint `

func (g Registry[T]) scanRevision(r driver.RowScanner) (driver.SchemaRevision, error) {
	var rev driver.SchemaRevision
	var doc string
	var created T
	err := r.Scan(&rev.StreamID, &rev.Version, &rev.Revision, &rev.Fingerprint, &rev.Type, &doc, &created, &rev.Deleted, &rev.ID)
	rev.Schema, rev.CreatedAt = []byte(doc), g.At(created)
	return rev, err
}

// Settings implements driver.Registry.RegistrySettings on q.
func (g Registry[T]) Settings(ctx context.Context, q Runner, p driver.RegistrySettingsParams) (driver.RegistrySettings, error) {
	return g.settings(ctx, q, p.StreamID, p.Version, "")
}

// settings reads a scope's settings; no row reads as unset.
func (g Registry[T]) settings(ctx context.Context, q Runner, streamID int64, version int, lock string) (driver.RegistrySettings, error) {
	var s driver.RegistrySettings
	_, err := scanRow(ctx, q, `SELECT level, mode FROM registry_setting WHERE stream_id = ? AND version = ? `+lock, []any{streamID, version}, &s.Level, &s.Mode)
	return s, err
}

// UpdateSettings implements driver.Registry.UpdateRegistrySettings in tx.
// On MySQL the scope's row must exist before tx begins, so that the
// locking read has a row to lock.
func (g Registry[T]) UpdateSettings(ctx context.Context, tx Runner, p driver.UpdateRegistrySettingsParams) error {
	s, err := g.settings(ctx, tx, p.StreamID, p.Version, g.Lock)
	if err != nil {
		return err
	}
	if err := p.Update(&s); err != nil {
		return driver.CallerError{Err: err}
	}
	_, err = tx.Exec(ctx, g.SaveSettings, s.Level, s.Mode, p.StreamID, p.Version)
	return err
}

// Record implements driver.Registry.RecordSchema in tx, by
// driver.RecordRevision over this engine's steps. On MySQL the stream's
// settings row must exist before tx begins, as for UpdateSettings.
func (g Registry[T]) Record(ctx context.Context, tx Runner, p driver.RecordSchemaParams) (driver.SchemaRevision, bool, error) {
	return driver.RecordRevision(ctx, revisionSteps[T]{g: g, tx: tx}, p)
}

// Revisions implements driver.Registry.SchemaRevisions on q (a snapshot,
// so that the references match the revisions).
func (g Registry[T]) Revisions(ctx context.Context, q Runner, p driver.SchemaRevisionsParams) ([]driver.SchemaRevision, error) {
	out, err := collectOn(ctx, q, `SELECT `+revisionColumns+`WHERE r.stream_id = ? AND (? = 0 OR r.version = ?) AND (? OR NOT r.deleted)
		ORDER BY r.version, r.revision`, []any{p.StreamID, p.Version, p.Version, p.Deleted}, g.scanRevision)
	if err != nil || len(out) == 0 {
		return out, err
	}
	return out, withReferences(ctx, q, p.StreamID, out)
}

// withReferences fills the References of revisions of one stream.
func withReferences(ctx context.Context, q Runner, streamID int64, revs []driver.SchemaRevision) error {
	at := map[[2]int]int{}
	for i, r := range revs {
		at[[2]int{r.Version, r.Revision}] = i
	}
	return eachRowOn(ctx, q, `SELECT version, revision, name, ref_stream_id, ref_version, ref_revision, ref_fingerprint
		FROM schema_reference WHERE stream_id = ? ORDER BY version, revision, position`, []any{streamID}, never, func(r Rows) error {
		var version, revision int
		var ref driver.SchemaReference
		if err := r.Scan(&version, &revision, &ref.Name, &ref.StreamID, &ref.Version, &ref.Revision, &ref.Fingerprint); err != nil {
			return err
		}
		if i, ok := at[[2]int{version, revision}]; ok {
			revs[i].References = append(revs[i].References, ref)
		}
		return nil
	})
}

// AssignID returns the global id of a fingerprint, creating it (with the
// wanted id when not 0) the first time any stream records it. It looks
// before it inserts, since an insert that meets a taken fingerprint may
// still use up an id (an auto-increment, PostgreSQL's identity sequence)
// and ids are meant to be dense. Two streams recording one new fingerprint
// at once meet on its unique key: the second insert waits for the first
// to commit and adds nothing, and the read after it (IDLock) sees the
// winner's row.
func (g Registry[T]) AssignID(ctx context.Context, tx Runner, rev driver.SchemaRevision) (int64, error) {
	if id, found, err := g.idOf(ctx, tx, rev.Fingerprint); err != nil || found {
		if err != nil {
			return 0, err
		}
		return id, driver.IDConflict(rev.ID, id)
	}
	doc := []any{rev.Fingerprint, rev.Type, string(rev.Schema), g.Time(rev.CreatedAt)}
	if rev.ID != 0 {
		var fp string
		taken, err := scanRow(ctx, tx, `SELECT fingerprint FROM schema_id WHERE id = ? `+g.IDLock, []any{rev.ID}, &fp)
		switch {
		case err != nil:
			return 0, err
		case taken && fp != rev.Fingerprint:
			return 0, driver.IDOfOther(rev.ID)
		}
		if _, err := tx.Exec(ctx, g.InsertID, append([]any{rev.ID}, doc...)...); err != nil {
			return 0, err
		}
	} else if _, err := tx.Exec(ctx, g.InsertNewID, doc...); err != nil {
		return 0, err
	}
	id, found, err := g.idOf(ctx, tx, rev.Fingerprint)
	if err == nil && !found {
		err = fmt.Errorf("%s: schema id of fingerprint %s: %w", g.Name, rev.Fingerprint, sql.ErrNoRows)
	}
	if err != nil {
		return 0, err
	}
	return id, driver.IDConflict(rev.ID, id)
}

// idOf reads the global id of a fingerprint, if it has one.
func (g Registry[T]) idOf(ctx context.Context, tx Runner, fingerprint string) (id int64, found bool, err error) {
	found, err = scanRow(ctx, tx, `SELECT id FROM schema_id WHERE fingerprint = ? `+g.IDLock, []any{fingerprint}, &id)
	return id, found, err
}

// ByID implements driver.SchemaIDs.SchemaByID on q.
func (g Registry[T]) ByID(ctx context.Context, q Runner, id int64) (driver.SchemaDocument, error) {
	doc := driver.SchemaDocument{ID: id}
	var text string
	var created T
	found, err := scanRow(ctx, q, `SELECT fingerprint, schema_type, schema_json, created_at FROM schema_id WHERE id = ?`, []any{id}, &doc.Fingerprint, &doc.Type, &text, &created)
	if err == nil && !found {
		return doc, fmt.Errorf("%s: schema id %d: %w", g.Name, id, driver.ErrSchemaNotFound)
	}
	doc.Schema, doc.CreatedAt = []byte(text), g.At(created)
	return doc, err
}

// Usages implements driver.SchemaIDs.SchemaUsages on q: live revisions,
// as listings hide soft-deleted ones, unless p.Deleted.
func (g Registry[T]) Usages(ctx context.Context, q Runner, p driver.SchemaUsagesParams) ([]driver.SchemaRevision, error) {
	return collectOn(ctx, q, `SELECT `+revisionColumns+`WHERE i.id = ? AND (? OR NOT r.deleted) ORDER BY r.stream_id, r.version, r.revision`,
		[]any{p.ID, p.Deleted}, g.scanRevision)
}

// ReferencedBy implements driver.SchemaIDs.ReferencedBy on q. Only
// references whose pinned fingerprint is the revision's own count.
func (g Registry[T]) ReferencedBy(ctx context.Context, q Runner, p driver.ReferencedByParams) ([]driver.SchemaRevision, error) {
	return collectOn(ctx, q, `SELECT DISTINCT `+revisionColumns+`
		JOIN schema_reference f ON f.stream_id = r.stream_id AND f.version = r.version AND f.revision = r.revision
		JOIN schema_revision t ON t.stream_id = f.ref_stream_id AND t.version = f.ref_version AND t.revision = f.ref_revision AND t.fingerprint = f.ref_fingerprint
		WHERE f.ref_stream_id = ? AND f.ref_version = ? AND f.ref_revision = ?
		ORDER BY r.stream_id, r.version, r.revision`, []any{p.StreamID, p.Version, p.Revision}, g.scanRevision)
}

// RecordReader implements driver.Registry.RecordReader on q.
func (g Registry[T]) RecordReader(ctx context.Context, q Runner, r driver.Reader) error {
	_, err := q.Exec(ctx, g.SaveReader, r.StreamID, r.Group, r.Version, r.Revision, g.Time(r.RegisteredAt))
	return err
}

// Readers implements driver.Registry.Readers on q.
func (g Registry[T]) Readers(ctx context.Context, q Runner, p driver.ReadersParams) ([]driver.Reader, error) {
	return collectOn(ctx, q, `SELECT stream_id, group_name, version, revision, registered_at FROM schema_reader
		WHERE stream_id = ? ORDER BY group_name, version`, []any{p.StreamID}, func(row driver.RowScanner) (driver.Reader, error) {
		var r driver.Reader
		var at T
		err := row.Scan(&r.StreamID, &r.Group, &r.Version, &r.Revision, &at)
		r.RegisteredAt = g.At(at)
		return r, err
	})
}

// DeleteRevisions implements driver.RevisionDeleter.DeleteRevisions in tx,
// by driver.DeleteRevisionsIn over this engine's steps; logTable is the
// stream's log. On MySQL the stream's settings row must exist before tx
// begins, as for Record.
func (g Registry[T]) DeleteRevisions(ctx context.Context, tx Runner, logTable string, p driver.DeleteRevisionsParams) ([]int, error) {
	return driver.DeleteRevisionsIn(ctx, deletionSteps[T]{revisionSteps[T]{g: g, tx: tx}, logTable}, p)
}

// deletionSteps are driver.DeletionSteps on one transaction.
type deletionSteps[T any] struct {
	revisionSteps[T]
	logTable string
}

func (s deletionSteps[T]) InRows(ctx context.Context, _ int64, version, revision int) (bool, error) {
	var one int
	return scanRow(ctx, s.tx, `SELECT 1 FROM `+s.logTable+` WHERE schema_version = ? AND schema_revision = ? LIMIT 1`, []any{version, revision}, &one)
}

func (s deletionSteps[T]) Readers(ctx context.Context, streamID int64) ([]driver.Reader, error) {
	return s.g.Readers(ctx, s.tx, driver.ReadersParams{StreamID: streamID})
}

func (s deletionSteps[T]) ReferencedBy(ctx context.Context, p driver.ReferencedByParams) ([]driver.SchemaRevision, error) {
	return s.g.ReferencedBy(ctx, s.tx, p)
}

func (s deletionSteps[T]) Remove(ctx context.Context, streamID int64, version int, revisions []int, permanent bool) error {
	in, args := ` WHERE stream_id = ? AND version = ? AND revision IN (`+Placeholders(len(revisions))+`)`, append([]any{streamID, version}, Args(revisions)...)
	if !permanent {
		_, err := s.tx.Exec(ctx, `UPDATE schema_revision SET deleted = TRUE`+in, args...)
		return err
	}
	for _, table := range []string{"schema_revision", "schema_reference"} {
		if _, err := s.tx.Exec(ctx, `DELETE FROM `+table+in, args...); err != nil {
			return err
		}
	}
	return nil
}

// ForgetSettings unsets the version's own settings, keeping the row: on
// MySQL a settings update may hold it between its insert and its locking
// read.
func (s deletionSteps[T]) ForgetSettings(ctx context.Context, streamID int64, version int) error {
	_, err := s.tx.Exec(ctx, `UPDATE registry_setting SET level = '', mode = '' WHERE stream_id = ? AND version = ?`, streamID, version)
	return err
}

// LiveRevisions implements driver.Registry.LiveRevisions on q, reading the
// stream's log table logTable.
func (g Registry[T]) LiveRevisions(ctx context.Context, q Runner, logTable string, p driver.LiveRevisionsParams) ([]int, error) {
	return collectOn(ctx, q, `SELECT DISTINCT schema_revision FROM `+logTable+` WHERE schema_version = ? ORDER BY 1`, []any{p.Version}, Column[int])
}

// revisionSteps are driver.RevisionSteps on one transaction.
type revisionSteps[T any] struct {
	g  Registry[T]
	tx Runner
}

func (s revisionSteps[T]) LockStream(ctx context.Context, streamID int64) (driver.RegistrySettings, error) {
	if s.g.LockStream == "" {
		return s.g.settings(ctx, s.tx, streamID, 0, s.g.Lock)
	}
	var one int
	found, err := scanRow(ctx, s.tx, s.g.LockStream, []any{streamID}, &one)
	switch {
	case err != nil:
		return driver.RegistrySettings{}, err
	case !found:
		return driver.RegistrySettings{}, driver.ErrStreamNotFound
	}
	return s.g.settings(ctx, s.tx, streamID, 0, "")
}

func (s revisionSteps[T]) Revisions(ctx context.Context, streamID int64, version int) ([]driver.SchemaRevision, error) {
	return s.g.Revisions(ctx, s.tx, driver.SchemaRevisionsParams{StreamID: streamID, Version: version, Deleted: true})
}

func (s revisionSteps[T]) Settings(ctx context.Context, streamID int64, version int) (driver.RegistrySettings, error) {
	return s.g.settings(ctx, s.tx, streamID, version, "")
}

func (s revisionSteps[T]) AssignID(ctx context.Context, rev driver.SchemaRevision) (int64, error) {
	return s.g.AssignID(ctx, s.tx, rev)
}

// InsertRevision first removes reference rows left by a deleted stream
// whose id was reused.
func (s revisionSteps[T]) InsertRevision(ctx context.Context, rev driver.SchemaRevision) error {
	if _, err := s.tx.Exec(ctx, `INSERT INTO schema_revision (stream_id, version, revision, fingerprint, schema_type, schema_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		rev.StreamID, rev.Version, rev.Revision, rev.Fingerprint, rev.Type, string(rev.Schema), s.g.Time(rev.CreatedAt)); err != nil {
		return err
	}
	if _, err := s.tx.Exec(ctx, `DELETE FROM schema_reference WHERE stream_id = ? AND version = ? AND revision = ?`, rev.StreamID, rev.Version, rev.Revision); err != nil {
		return err
	}
	for i, ref := range rev.References {
		if _, err := s.tx.Exec(ctx, `INSERT INTO schema_reference (stream_id, version, revision, position, name, ref_stream_id, ref_version, ref_revision, ref_fingerprint)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, rev.StreamID, rev.Version, rev.Revision, i, ref.Name, ref.StreamID, ref.Version, ref.Revision, ref.Fingerprint); err != nil {
			return err
		}
	}
	return nil
}
