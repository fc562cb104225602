package driver

import (
	"context"
	"slices"
)

// RevisionDeleter is implemented by a Registry that can delete a stream's
// schema revisions (R13 in docs/contracts.md), as Confluent deletes the
// versions of a subject: softly (hidden, number kept), then permanently.
// Package sqlstreams owns the rules (what may be deleted, the errors); the
// driver gathers, under the lock RecordSchema takes, what still needs the
// revisions, so that no registration, row or reader slips in between the
// check and the write. A driver without it cannot delete revisions.
type RevisionDeleter interface {
	// DeleteRevisions deletes revisions of one version of a stream: soft
	// deletion marks them, permanent deletion removes them with the
	// references they make. p.Decide runs first, inside the transaction,
	// with what the deletion would change and what needs it; an error from
	// it aborts without writing. It returns the revision numbers changed.
	DeleteRevisions(ctx context.Context, p DeleteRevisionsParams) ([]int, error)
}

// DeleteRevisionsParams names the revisions to delete: Revisions of
// Version (nil: every revision of it) of a stream.
type DeleteRevisionsParams struct {
	StreamID  int64
	Version   int
	Revisions []int
	Permanent bool
	Decide    func(RevisionDeletion) error
}

// RevisionDeletion is what a deletion of revisions would change and what
// still needs them, for DeleteRevisionsParams.Decide.
type RevisionDeletion struct {
	// Targets are the revisions the call changes: a soft deletion skips
	// the ones soft-deleted already, a permanent one takes live ones too
	// (for Decide to refuse).
	Targets []SchemaRevision
	// Missing are asked-for revision numbers that are not targets (absent,
	// or soft-deleted already for a soft deletion).
	Missing []int
	// InRows are the target revision numbers a row of the log was written
	// with.
	InRows []int
	// Readers are the groups' readers registered at a target.
	Readers []Reader
	// ReferencedBy are the revisions, of any stream, soft-deleted or not,
	// whose references name a target.
	ReferencedBy []SchemaRevision
}

// DeletionSteps are an engine's statements for DeleteRevisions, all run in
// the one transaction the driver opens around DeleteRevisionsIn.
type DeletionSteps interface {
	// LockStream takes RevisionSteps.LockStream's lock.
	LockStream(ctx context.Context, streamID int64) (RegistrySettings, error)
	// Revisions returns the stream's revisions at version, soft-deleted
	// ones included, oldest first.
	Revisions(ctx context.Context, streamID int64, version int) ([]SchemaRevision, error)
	// InRows reports whether a row of the stream's log was written with
	// (version, revision): a probe for one row, not a count.
	InRows(ctx context.Context, streamID int64, version, revision int) (bool, error)
	// Readers returns the stream's registered readers.
	Readers(ctx context.Context, streamID int64) ([]Reader, error)
	// ReferencedBy returns the revisions whose references name the given
	// revision with its fingerprint.
	ReferencedBy(ctx context.Context, p ReferencedByParams) ([]SchemaRevision, error)
	// Remove marks revisions of a version soft-deleted, or with permanent
	// removes them and the references they make.
	Remove(ctx context.Context, streamID int64, version int, revisions []int, permanent bool) error
	// ForgetSettings unsets a stream version's own level and mode.
	ForgetSettings(ctx context.Context, streamID int64, version int) error
}

// DeleteRevisionsIn is DeleteRevisions' sequence over an engine's steps:
// lock the stream, pick the targets, gather what needs them, let p.Decide
// judge, and write. A permanent deletion of the whole version also forgets
// the version's own level and mode, as a free subject's does: a version
// registered again later starts from the stream's settings. An error of
// Decide's comes back as CallerError.
func DeleteRevisionsIn(ctx context.Context, s DeletionSteps, p DeleteRevisionsParams) ([]int, error) {
	if _, err := s.LockStream(ctx, p.StreamID); err != nil {
		return nil, err
	}
	all, err := s.Revisions(ctx, p.StreamID, p.Version)
	if err != nil {
		return nil, err
	}
	d := RevisionDeletion{Targets: RevisionTargets(all, p.Revisions, p.Permanent)}
	numbers := make([]int, len(d.Targets))
	for i, t := range d.Targets {
		numbers[i] = t.Revision
	}
	for _, n := range p.Revisions {
		if !slices.Contains(numbers, n) {
			d.Missing = append(d.Missing, n)
		}
	}
	if err := needs(ctx, s, p, numbers, &d); err != nil {
		return nil, err
	}
	if err := p.Decide(d); err != nil {
		return nil, CallerError{Err: err}
	}
	if len(numbers) == 0 {
		return nil, nil
	}
	if err := s.Remove(ctx, p.StreamID, p.Version, numbers, p.Permanent); err != nil {
		return nil, err
	}
	if p.Permanent && p.Revisions == nil {
		return numbers, s.ForgetSettings(ctx, p.StreamID, p.Version)
	}
	return numbers, nil
}

// needs fills in what still needs the targets: rows, readers, references.
func needs(ctx context.Context, s DeletionSteps, p DeleteRevisionsParams, numbers []int, d *RevisionDeletion) error {
	if len(numbers) == 0 {
		return nil
	}
	readers, err := s.Readers(ctx, p.StreamID)
	if err != nil {
		return err
	}
	for _, rd := range readers {
		if rd.Version == p.Version && slices.Contains(numbers, rd.Revision) {
			d.Readers = append(d.Readers, rd)
		}
	}
	for _, n := range numbers {
		used, err := s.InRows(ctx, p.StreamID, p.Version, n)
		if err != nil {
			return err
		}
		if used {
			d.InRows = append(d.InRows, n)
		}
		users, err := s.ReferencedBy(ctx, ReferencedByParams{StreamID: p.StreamID, Version: p.Version, Revision: n})
		if err != nil {
			return err
		}
		d.ReferencedBy = append(d.ReferencedBy, users...)
	}
	return nil
}

// RevisionTargets are the revisions a deletion changes: the ones asked
// for (every one for nil); a soft deletion skips the ones soft-deleted
// already.
func RevisionTargets(all []SchemaRevision, asked []int, permanent bool) []SchemaRevision {
	var out []SchemaRevision
	for _, r := range all {
		if (asked == nil || slices.Contains(asked, r.Revision)) && (permanent || !r.Deleted) {
			out = append(out, r)
		}
	}
	return out
}
