package driver

import (
	"context"
	"errors"
	"time"
)

// ErrSchemaNotFound: no schema has the requested global id.
var ErrSchemaNotFound = errors.New("schema not found")

// ErrSchemaIDTaken: an explicit id (IMPORT mode) is already another
// schema's, or the schema already has another id.
var ErrSchemaIDTaken = errors.New("schema id already assigned")

// SchemaIDs is implemented by a Registry that also keeps global schema ids
// and references between revisions. Every bundled driver implements it.
//
// A global id belongs to a fingerprint, not to a stream: RecordSchema
// assigns it inside its transaction the first time any stream records the
// fingerprint, and every later revision with that fingerprint, in any
// stream, shares it. Ids are never reused, including after a stream is
// deleted (the id row, with its document, stays).
//
// RecordSchema of a driver that implements SchemaIDs stores the returned
// revision's ID and its References, and when Revision.ID or
// Revision.Revision are non-zero on input, uses them (failing with
// ErrSchemaIDTaken, or a Decide-style caller error, when they conflict).
type SchemaIDs interface {
	// SchemaByID returns the document of a global id, or ErrSchemaNotFound.
	SchemaByID(ctx context.Context, p SchemaByIDParams) (SchemaDocument, error)
	// SchemaUsages lists the revisions (of any stream) recorded with the
	// id's fingerprint, ordered by stream id, version, revision.
	SchemaUsages(ctx context.Context, p SchemaUsagesParams) ([]SchemaRevision, error)
	// ReferencedBy lists the revisions whose references name the given
	// revision, ordered by stream id, version, revision.
	ReferencedBy(ctx context.Context, p ReferencedByParams) ([]SchemaRevision, error)
}

// SchemaByIDParams names a global schema id.
type SchemaByIDParams struct {
	ID int64
}

// SchemaUsagesParams names a global schema id. Deleted asks
// SchemaUsages for the soft-deleted revisions too (marked Deleted);
// Subjects.SubjectUsages lists soft-deleted versions, marked, either way.
type SchemaUsagesParams struct {
	ID      int64
	Deleted bool
}

// ReferencedByParams names a revision.
type ReferencedByParams struct {
	StreamID int64
	Version  int
	Revision int
}

// SchemaDocument is a global id's schema.
type SchemaDocument struct {
	ID          int64
	Fingerprint string
	Type        string // as SchemaRevision.Type
	Schema      []byte // as SchemaRevision.Schema
	CreatedAt   time.Time
}

// SchemaReference names the revision a document refers to as Name (the
// value of its "$ref"). Fingerprint is that revision's, which pins the
// content referenced.
type SchemaReference struct {
	Name        string
	StreamID    int64
	Version     int
	Revision    int
	Fingerprint string
}

// ErrRevisionTaken: an explicit revision number (IMPORT mode) is not after
// the last revision of its version.
var ErrRevisionTaken = errors.New("schema revision number already used")
