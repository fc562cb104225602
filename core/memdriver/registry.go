package memdriver

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// scopeKey names a settings scope as driver.RegistrySettingsParams does.
type scopeKey struct {
	stream  int64
	version int
}

// RegistrySettings implements driver.Registry.
func (d *Driver) RegistrySettings(ctx context.Context, p driver.RegistrySettingsParams) (driver.RegistrySettings, error) {
	var out driver.RegistrySettings
	err := d.read(ctx, func(b *db) error {
		out = b.settings[scopeKey{p.StreamID, p.Version}]
		return nil
	})
	return out, err
}

// UpdateRegistrySettings implements driver.Registry.
func (d *Driver) UpdateRegistrySettings(ctx context.Context, p driver.UpdateRegistrySettingsParams) error {
	return d.write(ctx, nil, func(b *db) error {
		k := scopeKey{p.StreamID, p.Version}
		s := b.settings[k]
		if err := p.Update(&s); err != nil {
			return err
		}
		b.settings[k] = s
		return nil
	})
}

// RecordSchema implements driver.Registry, with global schema ids and
// references (driver.SchemaIDs), by driver.RecordRevision over
// revisionSteps. It runs with the writer held, so calls for one stream are
// serialized; p.Decide runs with the data lock let go (Driver.decide).
func (d *Driver) RecordSchema(ctx context.Context, p driver.RecordSchemaParams) (driver.SchemaRevision, bool, error) {
	var out driver.SchemaRevision
	var created bool
	decide := p.Decide
	p.Decide = func(existing []driver.SchemaRevision, set driver.RevisionSettings) error {
		return d.decide(func() error { return decide(existing, set) })
	}
	err := d.write(ctx, nil, func(b *db) error {
		var err error
		out, created, err = driver.RecordRevision(ctx, revisionSteps{b}, p)
		err, _ = driver.FromCaller(err)
		return err
	})
	return out, created, err
}

// revisionSteps are driver.RevisionSteps over the store's data, with the
// writer already held.
type revisionSteps struct{ b *db }

func (s revisionSteps) LockStream(_ context.Context, streamID int64) (driver.RegistrySettings, error) {
	if _, err := s.b.stream(streamID); err != nil {
		return driver.RegistrySettings{}, err
	}
	return s.b.settings[scopeKey{streamID, 0}], nil
}

func (s revisionSteps) Revisions(_ context.Context, streamID int64, version int) ([]driver.SchemaRevision, error) {
	st, err := s.b.stream(streamID)
	if err != nil {
		return nil, err
	}
	return st.revisionsAt(s.b, version, true), nil
}

func (s revisionSteps) Settings(_ context.Context, streamID int64, version int) (driver.RegistrySettings, error) {
	return s.b.settings[scopeKey{streamID, version}], nil
}

func (s revisionSteps) AssignID(_ context.Context, rev driver.SchemaRevision) (int64, error) {
	return s.b.assignID(rev)
}

func (s revisionSteps) InsertRevision(_ context.Context, rev driver.SchemaRevision) error {
	st, err := s.b.writable(rev.StreamID)
	if err != nil {
		return err
	}
	rev.Schema, rev.References = slices.Clone(rev.Schema), slices.Clone(rev.References)
	st.revisions = append(st.revisions, rev)
	return nil
}

// assignID returns the global id of the revision's fingerprint, creating it
// (with the id asked for, in IMPORT mode) the first time any stream records
// the fingerprint. Its refusals are CallerErrors, as the SQL drivers'
// (driver.IDConflict, driver.IDOfOther); RecordSchema and
// RecordSubjectVersion hand back the error they carry.
func (b *db) assignID(rev driver.SchemaRevision) (int64, error) {
	if id, ok := b.byFingerprint[rev.Fingerprint]; ok {
		if err := driver.IDConflict(rev.ID, id); err != nil {
			return 0, err
		}
		return id, nil
	}
	id := rev.ID
	if id == 0 {
		id = b.nextDoc + 1
	} else if _, taken := b.docs[id]; taken {
		return 0, driver.IDOfOther(id)
	}
	b.nextDoc = max(b.nextDoc, id)
	b.docs[id] = driver.SchemaDocument{ID: id, Fingerprint: rev.Fingerprint, Type: rev.Type, Schema: slices.Clone(rev.Schema), CreatedAt: micro(rev.CreatedAt)}
	b.byFingerprint[rev.Fingerprint] = id
	return id, nil
}

// revisionsAt returns the stream's revisions at version (every version for
// 0; soft-deleted ones too with deleted), ordered by version and revision,
// with their global ids.
func (s *streamData) revisionsAt(b *db, version int, deleted bool) []driver.SchemaRevision {
	var out []driver.SchemaRevision
	for _, r := range s.revisions {
		if (version == 0 || r.Version == version) && (deleted || !r.Deleted) {
			r.ID = b.byFingerprint[r.Fingerprint]
			out = append(out, r)
		}
	}
	slices.SortFunc(out, revisionOrder)
	return out
}

func revisionOrder(a, b driver.SchemaRevision) int {
	return cmp.Or(cmp.Compare(a.StreamID, b.StreamID), cmp.Compare(a.Version, b.Version), cmp.Compare(a.Revision, b.Revision))
}

// SchemaRevisions implements driver.Registry.
func (d *Driver) SchemaRevisions(ctx context.Context, p driver.SchemaRevisionsParams) ([]driver.SchemaRevision, error) {
	var out []driver.SchemaRevision
	err := d.read(ctx, func(b *db) error {
		if s, err := b.stream(p.StreamID); err == nil {
			out = s.revisionsAt(b, p.Version, p.Deleted)
		}
		return nil
	})
	return out, err
}

// SchemaByID implements driver.SchemaIDs.
func (d *Driver) SchemaByID(ctx context.Context, p driver.SchemaByIDParams) (driver.SchemaDocument, error) {
	var out driver.SchemaDocument
	err := d.read(ctx, func(b *db) error {
		doc, ok := b.docs[p.ID]
		if !ok {
			return fmt.Errorf("memdriver: schema id %d: %w", p.ID, driver.ErrSchemaNotFound)
		}
		out = doc
		return nil
	})
	return out, err
}

// SchemaUsages implements driver.SchemaIDs: live revisions, as listings
// hide soft-deleted ones, unless p.Deleted.
func (d *Driver) SchemaUsages(ctx context.Context, p driver.SchemaUsagesParams) ([]driver.SchemaRevision, error) {
	return d.revisionsWhere(ctx, func(b *db, r driver.SchemaRevision) bool {
		return (p.Deleted || !r.Deleted) && b.byFingerprint[r.Fingerprint] == p.ID
	})
}

// ReferencedBy implements driver.SchemaIDs: revisions whose references
// name the given revision, with its fingerprint as recorded.
func (d *Driver) ReferencedBy(ctx context.Context, p driver.ReferencedByParams) ([]driver.SchemaRevision, error) {
	var out []driver.SchemaRevision
	err := d.read(ctx, func(b *db) error {
		out = b.referencedBy(p)
		return nil
	})
	return out, err
}

func (b *db) referencedBy(p driver.ReferencedByParams) []driver.SchemaRevision {
	return b.revisionsWhere(func(b *db, r driver.SchemaRevision) bool {
		for _, ref := range r.References {
			if ref.StreamID == p.StreamID && ref.Version == p.Version && ref.Revision == p.Revision && b.hasRevision(ref) {
				return true
			}
		}
		return false
	})
}

// hasRevision reports whether the revision a reference names exists with
// the fingerprint it pins.
func (b *db) hasRevision(ref driver.SchemaReference) bool {
	s, err := b.stream(ref.StreamID)
	if err != nil {
		return false
	}
	for _, r := range s.revisions {
		if r.Version == ref.Version && r.Revision == ref.Revision && r.Fingerprint == ref.Fingerprint {
			return true
		}
	}
	return false
}

// revisionsWhere lists every stream's revisions, soft-deleted ones
// included, that keep holds for.
func (d *Driver) revisionsWhere(ctx context.Context, keep func(*db, driver.SchemaRevision) bool) ([]driver.SchemaRevision, error) {
	var out []driver.SchemaRevision
	err := d.read(ctx, func(b *db) error {
		out = b.revisionsWhere(keep)
		return nil
	})
	return out, err
}

func (b *db) revisionsWhere(keep func(*db, driver.SchemaRevision) bool) []driver.SchemaRevision {
	var out []driver.SchemaRevision
	for _, s := range b.streams {
		for _, r := range s.revisionsAt(b, 0, true) {
			if keep(b, r) {
				out = append(out, r)
			}
		}
	}
	slices.SortFunc(out, revisionOrder)
	return out
}

// RecordReader implements driver.Registry.
func (d *Driver) RecordReader(ctx context.Context, p driver.RecordReaderParams) error {
	r := p.Reader
	r.RegisteredAt = micro(r.RegisteredAt)
	return d.write(ctx, nil, func(b *db) error {
		s, err := b.writable(r.StreamID)
		if err != nil {
			return err
		}
		s.readers[readerKey{r.Group, r.Version}] = r
		return nil
	})
}

// Readers implements driver.Registry.
func (d *Driver) Readers(ctx context.Context, p driver.ReadersParams) ([]driver.Reader, error) {
	var out []driver.Reader
	err := d.read(ctx, func(b *db) error {
		out = b.readers(p.StreamID)
		return nil
	})
	return out, err
}

func (b *db) readers(streamID int64) []driver.Reader {
	var out []driver.Reader
	if s, err := b.stream(streamID); err == nil {
		for _, r := range s.readers {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b driver.Reader) int {
		return cmp.Or(strings.Compare(a.Group, b.Group), cmp.Compare(a.Version, b.Version))
	})
	return out
}

var _ driver.RevisionDeleter = (*Driver)(nil)

// DeleteRevisions implements driver.RevisionDeleter with the writer held,
// so registrations, appends and readers wait for it.
func (d *Driver) DeleteRevisions(ctx context.Context, p driver.DeleteRevisionsParams) ([]int, error) {
	var out []int
	decide := p.Decide
	p.Decide = func(del driver.RevisionDeletion) error { return d.decide(func() error { return decide(del) }) }
	err := d.write(ctx, nil, func(b *db) error {
		var err error
		out, err = driver.DeleteRevisionsIn(ctx, deletionSteps{revisionSteps{b}}, p)
		return err
	})
	return out, err
}

// deletionSteps are driver.DeletionSteps on the held writer's state; the
// stream lock and its revisions are revisionSteps'.
type deletionSteps struct{ revisionSteps }

func (s deletionSteps) InRows(_ context.Context, streamID int64, version, revision int) (bool, error) {
	st, err := s.b.stream(streamID)
	if err != nil {
		return false, err
	}
	for _, r := range st.rows {
		if r.SchemaVersion == version && r.revision == revision {
			return true, nil
		}
	}
	return false, nil
}

func (s deletionSteps) Readers(_ context.Context, streamID int64) ([]driver.Reader, error) {
	return s.b.readers(streamID), nil
}

func (s deletionSteps) ReferencedBy(_ context.Context, p driver.ReferencedByParams) ([]driver.SchemaRevision, error) {
	return s.b.referencedBy(p), nil
}

func (s deletionSteps) Remove(_ context.Context, streamID int64, version int, revisions []int, permanent bool) error {
	st, err := s.b.writable(streamID)
	if err != nil {
		return err
	}
	st.revisions = slices.DeleteFunc(st.revisions, func(r driver.SchemaRevision) bool {
		return permanent && r.Version == version && slices.Contains(revisions, r.Revision)
	})
	for i, r := range st.revisions {
		if r.Version == version && slices.Contains(revisions, r.Revision) {
			st.revisions[i].Deleted = true
		}
	}
	return nil
}

func (s deletionSteps) ForgetSettings(_ context.Context, streamID int64, version int) error {
	delete(s.b.settings, scopeKey{streamID, version})
	return nil
}

// LiveRevisions implements driver.Registry.
func (d *Driver) LiveRevisions(ctx context.Context, p driver.LiveRevisionsParams) ([]int, error) {
	var out []int
	err := d.read(ctx, func(b *db) error {
		s, err := b.stream(p.StreamID)
		if err != nil {
			return err
		}
		seen := map[int]bool{}
		for _, r := range s.rows {
			if r.SchemaVersion == p.Version && !seen[r.revision] {
				seen[r.revision] = true
				out = append(out, r.revision)
			}
		}
		slices.Sort(out)
		return nil
	})
	return out, err
}
