package driver

import (
	"context"
	"time"
)

// Registry stores the schema registry next to the streams it describes
// (R1–R10 in docs/contracts.md). Package sqlstreams owns the rules (levels,
// modes, the diff engine); the driver owns storage and the transaction that
// makes a check and the write it allows one atomic step.
type Registry interface {
	// RegistrySettings returns the level and mode set for one scope: a
	// stream version (StreamID and Version > 0), a whole stream (Version
	// 0) or registry-wide (both 0). Empty strings mean unset; a scope
	// holds only its own values, never a fallback's.
	RegistrySettings(ctx context.Context, p RegistrySettingsParams) (RegistrySettings, error)
	// UpdateRegistrySettings reads the settings of a scope, lets p.Update
	// change them and stores the result, in one transaction. Empty strings
	// unset a value. An error from Update aborts without writing.
	UpdateRegistrySettings(ctx context.Context, p UpdateRegistrySettingsParams) error
	// RecordSchema records a schema revision for (stream, version). When a
	// revision with the same fingerprint exists it is returned with
	// created=false and nothing is written. Otherwise p.Decide runs inside the
	// driver's transaction with the existing revisions of the version (oldest
	// first) and the version's, the stream's and the registry-wide
	// settings; when it returns nil
	// the next revision number is written, else nothing is written and its
	// error is returned. Concurrent calls for one stream are serialized.
	RecordSchema(ctx context.Context, p RecordSchemaParams) (recorded SchemaRevision, created bool, err error)
	// SchemaRevisions lists a stream's revisions at p.Version, or at every
	// version when it is 0, ordered by version then revision: the live ones,
	// and the soft-deleted ones too when p.Deleted.
	SchemaRevisions(ctx context.Context, p SchemaRevisionsParams) ([]SchemaRevision, error)
	// RecordReader stores which revision a group reads at a version,
	// replacing the group's previous reader at that version.
	RecordReader(ctx context.Context, p RecordReaderParams) error
	// Readers lists a stream's registered readers ordered by group.
	Readers(ctx context.Context, p ReadersParams) ([]Reader, error)
	// LiveRevisions lists the distinct writer revisions of rows still in the
	// stream's log at p.Version (0 stands for rows written without one).
	LiveRevisions(ctx context.Context, p LiveRevisionsParams) ([]int, error)
}

// RegistrySettingsParams names a scope: a stream version (StreamID and
// Version), a whole stream (Version 0), or registry-wide (both 0).
type RegistrySettingsParams struct {
	StreamID int64
	Version  int
}

// UpdateRegistrySettingsParams changes a scope's settings, named as in
// RegistrySettingsParams.
type UpdateRegistrySettingsParams struct {
	StreamID int64
	Version  int
	Update   func(*RegistrySettings) error
}

// RecordSchemaParams records a revision, if Decide allows it.
type RecordSchemaParams struct {
	Revision SchemaRevision
	Decide   func(existing []SchemaRevision, set RevisionSettings) error
}

// RevisionSettings are the scopes whose settings decide a stream
// version's revisions, nearest first: a value set on the version wins
// over the stream's, which wins over the registry-wide one.
type RevisionSettings struct {
	Version, Stream, Global RegistrySettings
}

// SchemaRevisionsParams names a stream and a version (0 for every
// version); Deleted includes soft-deleted revisions.
type SchemaRevisionsParams struct {
	StreamID int64
	Version  int
	Deleted  bool
}

// RecordReaderParams is the reader to store.
type RecordReaderParams struct {
	Reader Reader
}

// ReadersParams names the stream whose readers to list.
type ReadersParams struct {
	StreamID int64
}

// LiveRevisionsParams names a stream and a version.
type LiveRevisionsParams struct {
	StreamID int64
	Version  int
}

// RegistrySettings are a scope's compatibility level and mode, by name
// ("BACKWARD", "READONLY", ...); empty means unset.
type RegistrySettings struct {
	Level string
	Mode  string
}

// SchemaRevision is one recorded schema of a stream at a version.
type SchemaRevision struct {
	StreamID    int64
	Version     int
	Revision    int
	Fingerprint string
	// Type is the document's language ("JSON", "AVRO", ...); empty on
	// input means JSON. Every revision recorded before types existed is
	// JSON.
	Type      string
	Schema    []byte // the document: canonical JSON for JSON, the registered text otherwise
	CreatedAt time.Time
	// ID is the global schema id of Fingerprint (see SchemaIDs). On
	// RecordSchema's input a non-zero ID asks for that id (IMPORT mode) and
	// a non-zero Revision for that revision number.
	ID int64
	// References are the other revisions this one's document refers to by
	// name, in the order given.
	References []SchemaReference
	// Deleted marks a soft-deleted revision (RevisionDeleter): listed only
	// when asked for, never a match for a new registration, and its number
	// never given again.
	Deleted bool
}

// Reader is a group's registered reader schema at a version.
type Reader struct {
	StreamID     int64
	Group        string
	Version      int
	Revision     int
	RegisteredAt time.Time
}
