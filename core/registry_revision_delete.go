package sqlstreams

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// ErrSchemaInUse: a schema revision cannot be deleted because the stream
// still needs it to be read: rows of its log were written with it, or a
// group's reader is registered at it. The message says which and what to
// do.
var ErrSchemaInUse = errors.New("schema revision still in use")

// DeleteRevision deletes one revision of a stream's schema version and
// returns its number. Without permanent the revision is soft-deleted:
// hidden from Revisions, lookups and the level's checks (so the version's
// latest rolls back to the revision before it), its global id still
// served and its number never given again; registering the same schema
// afterwards records a new revision. With permanent a soft-deleted
// revision is removed (ErrNotSoftDeleted when it was not soft-deleted
// first). A revision is refused with ErrReferenced while another revision
// references it, and with ErrSchemaInUse while rows of the log or a
// group's reader need it (docs/decisions.md, "Deleting stream revisions").
// A revision that is not there (for a soft deletion: or is soft-deleted
// already) fails with ErrRevisionNotFound; a driver that cannot delete
// revisions answers ErrUnsupported.
func (r *Registry) DeleteRevision(ctx context.Context, stream string, version, revision int, permanent bool) (int, error) {
	if version < 1 || revision < 1 {
		return 0, fmt.Errorf("%w: version %d revision %d; versions and revisions start at 1", ErrInvalidOption, version, revision)
	}
	done, err := r.deleteRevisions(ctx, stream, version, []int{revision}, permanent)
	if err != nil {
		return 0, err
	}
	return done[0], nil
}

// DeleteRevisions deletes every revision of a stream's schema version, as
// DeleteRevision deletes one, and returns their numbers; nothing is
// deleted when one of them may not be.
func (r *Registry) DeleteRevisions(ctx context.Context, stream string, version int, permanent bool) ([]int, error) {
	if version < 1 {
		return nil, fmt.Errorf("%w: version %d; versions start at 1", ErrInvalidOption, version)
	}
	return r.deleteRevisions(ctx, stream, version, nil, permanent)
}

func (r *Registry) deleteRevisions(ctx context.Context, stream string, version int, revisions []int, permanent bool) ([]int, error) {
	store, err := r.store()
	if err != nil {
		return nil, err
	}
	deleter, ok := store.(driver.RevisionDeleter)
	if !ok {
		return nil, fmt.Errorf("sqlstreams: delete revisions of %q: the %s driver cannot delete revisions: %w", stream, r.client.drv.Name(), ErrUnsupported)
	}
	id, err := r.scope(ctx, stream)
	if err != nil {
		return nil, err
	}
	// Names of the streams a referencing revision may belong to, read
	// before the driver's transaction: Decide runs inside it.
	streams, err := r.client.Streams(ctx)
	if err != nil {
		return nil, err
	}
	names := map[int64]string{}
	for _, s := range streams {
		names[s.ID] = s.Name
	}
	done, err := deleter.DeleteRevisions(ctx, driver.DeleteRevisionsParams{StreamID: id, Version: version, Revisions: revisions, Permanent: permanent,
		Decide: func(d driver.RevisionDeletion) error {
			return revisionDeletionRefused(stream, version, permanent, d, names)
		}})
	if err != nil {
		return nil, classify(err)
	}
	return done, nil
}

// revisionDeletionRefused says why a deletion of revisions may not
// happen, in the order Confluent answers: nothing to delete, a permanent
// deletion of a live revision, references, then what the stream needs.
func revisionDeletionRefused(stream string, version int, permanent bool, d driver.RevisionDeletion, names map[int64]string) error {
	what := fmt.Sprintf("stream %q version %d", stream, version)
	switch {
	case len(d.Missing) > 0:
		return fmt.Errorf("sqlstreams: %s: %w: revision %d (or it is soft-deleted already); list them with Revisions", what, ErrRevisionNotFound, d.Missing[0])
	case len(d.Targets) == 0:
		return fmt.Errorf("sqlstreams: %s: %w: no revision to delete (or they are soft-deleted already)", what, ErrRevisionNotFound)
	}
	if permanent {
		for _, t := range d.Targets {
			if !t.Deleted {
				return fmt.Errorf("sqlstreams: %s revision %d is %w; delete it without permanent first", what, t.Revision, ErrNotSoftDeleted)
			}
		}
	}
	if len(d.ReferencedBy) > 0 {
		users := make([]string, len(d.ReferencedBy))
		for i, u := range d.ReferencedBy {
			users[i] = fmt.Sprintf("stream %s version %d revision %d", names[u.StreamID], u.Version, u.Revision)
		}
		return fmt.Errorf("sqlstreams: %s: %w by %s; delete those first", what, ErrReferenced, strings.Join(users, ", "))
	}
	if len(d.InRows) > 0 {
		return fmt.Errorf("sqlstreams: %s revision %d: %w: rows still in the log were written with it and need it to be read; retention removes them, or delete the stream",
			what, d.InRows[0], ErrSchemaInUse)
	}
	if len(d.Readers) > 0 {
		rd := d.Readers[0]
		return fmt.Errorf("sqlstreams: %s revision %d: %w: group %q reads with it; register the group's reader at another revision, or delete the group",
			what, rd.Revision, ErrSchemaInUse, rd.Group)
	}
	return nil
}
