package driver

import (
	"cmp"
	"context"
	"fmt"
	"time"
)

// RevisionSteps are an engine's statements for recording a schema revision
// (Registry.RecordSchema), all run in the one transaction the driver opens
// around RecordRevision. The engine decides how it locks and what SQL it
// runs; RecordRevision decides what is recorded, so that every driver
// answers a registration alike.
type RevisionSteps interface {
	// LockStream serializes the recorders of one stream until the
	// transaction ends and returns the stream's settings.
	LockStream(ctx context.Context, streamID int64) (RegistrySettings, error)
	// Revisions returns the stream's revisions at version, oldest first,
	// with their global ids and references, the soft-deleted ones too.
	Revisions(ctx context.Context, streamID int64, version int) ([]SchemaRevision, error)
	// Settings returns a scope's settings (a stream version, version 0 for
	// the whole stream, stream 0 for registry-wide); none stored reads as
	// unset.
	Settings(ctx context.Context, streamID int64, version int) (RegistrySettings, error)
	// AssignID returns the global id of rev's fingerprint (see SchemaIDs).
	AssignID(ctx context.Context, rev SchemaRevision) (int64, error)
	// InsertRevision writes rev and its references.
	InsertRevision(ctx context.Context, rev SchemaRevision) error
}

// RecordRevision is RecordSchema's sequence over an engine's steps: lock
// the stream, return a live revision with the same fingerprint as it is
// (a soft-deleted one is not a match: the text is recorded anew), else
// let p.Decide judge the new one against the existing revisions and the
// version's, stream's and registry-wide settings, number it
// (NextRevision), give it its global id and write it.
// An error of Decide's, and a revision number or id that IMPORT asks for
// and cannot have, come back as CallerError: the driver rolls back and
// hands them to the caller unclassified.
func RecordRevision(ctx context.Context, s RevisionSteps, p RecordSchemaParams) (recorded SchemaRevision, created bool, err error) {
	in := p.Revision
	streamSet, err := s.LockStream(ctx, in.StreamID)
	if err != nil {
		return in, false, err
	}
	all, err := s.Revisions(ctx, in.StreamID, in.Version)
	if err != nil {
		return in, false, err
	}
	existing := Live(all)
	for _, e := range existing {
		if e.Fingerprint == in.Fingerprint {
			return e, false, nil
		}
	}
	set := RevisionSettings{Stream: streamSet}
	if set.Version, err = s.Settings(ctx, in.StreamID, in.Version); err != nil {
		return in, false, err
	}
	if set.Global, err = s.Settings(ctx, 0, 0); err != nil {
		return in, false, err
	}
	if err := p.Decide(existing, set); err != nil {
		return in, false, CallerError{Err: err}
	}
	out := in
	if out.Revision, err = NextRevision(all, in.Revision); err != nil {
		return in, false, CallerError{Err: err}
	}
	// Every engine keeps microseconds, so the revision returned is the one
	// a later read gives back.
	out.Type, out.CreatedAt = cmp.Or(in.Type, "JSON"), in.CreatedAt.UTC().Truncate(time.Microsecond)
	if out.ID, err = s.AssignID(ctx, out); err != nil {
		return in, false, err
	}
	if err := s.InsertRevision(ctx, out); err != nil {
		return in, false, err
	}
	return out, true, nil
}

// NextRevision numbers a new revision after existing (one version's
// revisions, oldest first, soft-deleted ones included so that a number
// never names two documents): one past the last, or 1 for the first. A
// wanted number (IMPORT mode, 0 for none) may skip numbers but not go
// back, since revisions of a version are ordered by number: an earlier one
// fails with ErrRevisionTaken.
func NextRevision(existing []SchemaRevision, wanted int) (int, error) {
	next := 1
	if len(existing) > 0 {
		next = existing[len(existing)-1].Revision + 1
	}
	switch {
	case wanted == 0:
		return next, nil
	case wanted < next:
		return 0, fmt.Errorf("%w: revision %d; the next revision is %d or later", ErrRevisionTaken, wanted, next)
	}
	return wanted, nil
}

// IDConflict checks an explicit global id (IMPORT mode) against the id the
// fingerprint has: asking for an id other than the schema's own fails with
// ErrSchemaIDTaken, as a CallerError.
func IDConflict(wanted, has int64) error {
	if wanted != 0 && wanted != has {
		return CallerError{Err: fmt.Errorf("%w: the schema already has id %d, not %d", ErrSchemaIDTaken, has, wanted)}
	}
	return nil
}

// IDOfOther is the error for an explicit global id that another
// fingerprint already has.
func IDOfOther(id int64) error {
	return CallerError{Err: fmt.Errorf("%w: id %d belongs to another schema", ErrSchemaIDTaken, id)}
}
