package driver

import (
	"context"
	"time"
)

// Registry stores the schema registry next to the streams it describes
// (DESIGN.md §6). Package sqlstreams owns the rules (levels, modes, the
// diff engine); the driver owns storage and the transaction that makes a
// check and the write it allows one atomic step.
type Registry interface {
	// RegistrySettings returns the level and mode set for one stream
	// (streamID > 0) or registry-wide (streamID 0). Empty strings mean unset.
	RegistrySettings(ctx context.Context, streamID int64) (RegistrySettings, error)
	// UpdateRegistrySettings reads the settings of a scope, lets update
	// change them and stores the result, in one transaction. Empty strings
	// unset a value. An error from update aborts without writing.
	UpdateRegistrySettings(ctx context.Context, streamID int64, update func(*RegistrySettings) error) error
	// RecordSchema records a schema revision for (stream, version). When a
	// revision with the same fingerprint exists it is returned with
	// created=false and nothing is written. Otherwise decide runs inside the
	// driver's transaction with the existing revisions of the version (oldest
	// first) and the stream's and registry-wide settings; when it returns nil
	// the next revision number is written, else nothing is written and its
	// error is returned. Concurrent calls for one stream are serialized.
	RecordSchema(ctx context.Context, rev SchemaRevision, decide func(existing []SchemaRevision, stream, global RegistrySettings) error) (recorded SchemaRevision, created bool, err error)
	// SchemaRevisions lists a stream's revisions at version, or at every
	// version when version is 0, ordered by version then revision.
	SchemaRevisions(ctx context.Context, streamID int64, version int) ([]SchemaRevision, error)
	// RecordReader stores which revision a group reads at a version,
	// replacing the group's previous reader at that version.
	RecordReader(ctx context.Context, r Reader) error
	// Readers lists a stream's registered readers ordered by group.
	Readers(ctx context.Context, streamID int64) ([]Reader, error)
	// LiveRevisions lists the distinct writer revisions of rows still in the
	// stream's log at version (0 stands for rows written without one).
	LiveRevisions(ctx context.Context, streamID int64, version int) ([]int, error)
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
	Schema      []byte // canonical JSON
	CreatedAt   time.Time
}

// Reader is a group's registered reader schema at a version.
type Reader struct {
	StreamID     int64
	Group        string
	Version      int
	Revision     int
	RegisteredAt time.Time
}
