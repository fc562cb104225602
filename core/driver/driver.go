// Package driver is the contract between sqlstreams and a storage engine.
//
// A driver implements operations that carry meaning (append, claim, ack, fail,
// health, compact, retain, stream and group admin) rather than a query
// builder: every lock, transaction and SQL statement stays inside the driver,
// so each engine can use what it does best (SKIP LOCKED, RETURNING, a single
// writer) while the package sqlstreams keeps one meaning for all of them.
//
// The contracts every driver must honour are numbered in DESIGN.md (C1...)
// and proven by the conformance module, which each driver runs from its own
// tests. Drivers report failures with the sentinel errors of this package
// (wrapped freely); package sqlstreams re-exports them for users.
//
// Times are passed in by the caller (Now fields) instead of being read from
// the database clock, so that every engine agrees on what "due" means and
// stores times in UTC at microsecond precision.
package driver

import (
	"context"
	"errors"
	"time"
)

// Sentinel errors shared by all drivers. Package sqlstreams re-exports them.
var (
	ErrStreamNotFound = errors.New("stream not found")
	ErrStreamExists   = errors.New("stream already exists")
	ErrGroupNotFound  = errors.New("consumer group not found")
	ErrLeaseLost      = errors.New("lease lost")
	ErrClosed         = errors.New("client is closed")
	ErrForeignTx      = errors.New("transaction belongs to another driver")
)

// Driver is a storage engine. Implementations must be safe for concurrent use
// by many goroutines and by many processes sharing one database.
type Driver interface {
	// Name is a short engine name such as "sqlite" or "postgres", used in logs
	// and error messages.
	Name() string
	// Capabilities declares optional engine features.
	Capabilities() Capabilities
	// Migrate connects if needed and brings the schema up to date. It must be
	// idempotent and safe when several processes start at once.
	Migrate(ctx context.Context) error
	// Close releases connections. Calls after Close return ErrClosed.
	Close() error

	// CreateStream creates a stream and its log. It fails with ErrStreamExists
	// when the name is taken, and writes nothing in that case.
	CreateStream(ctx context.Context, cfg StreamConfig) (StreamConfig, error)
	// LookupStream finds a stream by name, or fails with ErrStreamNotFound.
	LookupStream(ctx context.Context, name string) (StreamConfig, error)
	// ListStreams returns every stream ordered by name.
	ListStreams(ctx context.Context) ([]StreamConfig, error)
	// RenameStream changes only the name; the id, rows, groups and cursors stay.
	// It fails with ErrStreamExists when newName is taken.
	RenameStream(ctx context.Context, streamID int64, newName string) error
	// DestroyStream removes the log, groups, cursors, exceptions and heads.
	DestroyStream(ctx context.Context, streamID int64) error

	// Append writes rows to a stream in one transaction, or inside tx when tx
	// is not nil (then the rows become visible when the caller commits). It
	// returns the new ids in input order. Ids are the order in which rows
	// become visible to cursors (C5): a cursor that has passed id n will never
	// later find a committed row with an id below n in the same partition.
	// On a compacted stream it also moves each key's head when the new row
	// wins by (schema_version, compaction_rank, id) (C11).
	Append(ctx context.Context, tx Tx, stream StreamConfig, rows []AppendRow) ([]int64, error)

	// RegisterGroup creates the group with one cursor per partition, or
	// returns the stored group when it exists. When the stored group has the
	// same SchemaVersion and AllVersions, its Bindings and ConvertsFrom are
	// replaced by cfg's; otherwise it is returned unchanged and the caller
	// refuses the registration.
	RegisterGroup(ctx context.Context, cfg GroupConfig) (GroupConfig, error)
	// ListGroups returns the stream's groups ordered by name.
	ListGroups(ctx context.Context, streamID int64) ([]GroupConfig, error)
	// DeleteGroup removes a group with its cursors, exceptions (dead ones
	// included) and registered reader schemas, or fails with
	// ErrGroupNotFound.
	DeleteGroup(ctx context.Context, streamID int64, group string) error

	// Claim is the main claim: it leases up to Limit rows after a partition's
	// cursor that are at one of the requested versions, match the request's
	// routing filter and, on compacted streams, are heads. It moves the cursor
	// past every row it inspected, claimable or not, and records a lease for
	// each claimed row with Attempt 1. Rows are returned in id order per
	// partition.
	Claim(ctx context.Context, req ClaimRequest) ([]Delivery, error)
	// ClaimExceptions leases deliveries that are due again: expired leases and
	// delayed retries whose due time has passed, at the requested versions,
	// incrementing Attempt. Exceptions whose row is no longer a head on a
	// compacted stream, or no longer exists, are resolved instead of returned.
	ClaimExceptions(ctx context.Context, req ClaimRequest) ([]Delivery, error)

	// Ack resolves leased deliveries. Every id must still be leased with
	// ref.Token; otherwise nothing changes and the error wraps ErrLeaseLost.
	Ack(ctx context.Context, ref LeaseRef) error
	// Fail records a failed attempt: the delivery becomes delayed until Due,
	// or dead when Dead is set. It requires the lease like Ack.
	Fail(ctx context.Context, ref LeaseRef, f Failure) error
	// Release gives leased deliveries back without counting the attempt: they
	// are due now with the attempt they had before the claim.
	Release(ctx context.Context, ref LeaseRef) error
	// Extend moves the lease expiry of held deliveries to until.
	Extend(ctx context.Context, ref LeaseRef, until time.Time) error

	// ListDead returns dead deliveries of a group with ids above afterID,
	// ordered by id.
	ListDead(ctx context.Context, streamID int64, group string, afterID int64, limit int) ([]DeadLetter, error)
	// Replay makes dead deliveries due at now with attempts reset. Nil ids
	// replays every dead delivery of the group. It returns how many changed.
	Replay(ctx context.Context, streamID int64, group string, ids []int64, now time.Time) (int64, error)
	// Discard resolves dead deliveries without processing them. Nil ids
	// discards every dead delivery of the group.
	Discard(ctx context.Context, streamID int64, group string, ids []int64) (int64, error)

	// Health gathers the raw figures behind the health read (C13).
	Health(ctx context.Context, streamID int64, now time.Time) (HealthStats, error)
	// Compact removes rows of a compacted stream that are no longer heads,
	// with their exceptions. It never removes a head (C11).
	Compact(ctx context.Context, streamID int64, limit int) (int64, error)
	// Retain applies the stream's retention limits (C14), removing at most
	// req.Limit rows.
	Retain(ctx context.Context, req RetainRequest) (RetainResult, error)
}

// Capabilities describes optional features of an engine.
type Capabilities struct {
	// SkipLocked reports FOR UPDATE SKIP LOCKED, so concurrent claimers skip
	// each other's partitions instead of waiting.
	SkipLocked bool
	// Notify reports that Subscribe delivers wake-ups from other processes.
	Notify bool
	// SingleWriter reports an engine that serializes all writes (SQLite).
	SingleWriter bool
}

// Notifier is implemented by drivers that can wake consumers when rows are
// appended, across processes. A wake-up is only a hint: consumers keep polling.
type Notifier interface {
	// Subscribe calls wake (without blocking) whenever rows may have been
	// appended to the stream, until ctx ends.
	Subscribe(ctx context.Context, streamID int64, wake func()) error
}

// Tx is a transaction owned by the caller, adapted by the driver that created
// it (for example sqlite.Tx(*sql.Tx)). A driver given another driver's Tx
// fails with ErrForeignTx.
type Tx interface {
	// DriverName names the driver that adapted the transaction.
	DriverName() string
}

// Retention limits shared by all versions of a stream. Zero means unlimited.
type Retention struct {
	MaxAge  time.Duration
	MaxRows int64
	// Hard removes rows past the limits even when a group has not read them
	// or holds an unresolved exception for them. Health counts such rows as
	// removed unread.
	Hard bool
}

// StreamConfig is a stream's stored configuration.
type StreamConfig struct {
	ID         int64
	Name       string
	Partitions int
	Compacted  bool
	Retention  Retention
	CreatedAt  time.Time
}

// AppendRow is one message to write.
type AppendRow struct {
	Partition     int
	SchemaVersion int
	// SchemaRevision is the registry revision of the writer's schema at
	// SchemaVersion, or 0 when unknown (RawPayload). Drivers store it so the
	// registry knows which writer revisions the retained log still holds.
	SchemaRevision int
	Key            string
	HasKey         bool
	RoutingKey     string
	CompactionRank int
	Payload        []byte // JSON
	Headers        map[string]string
	ProducedAt     time.Time
}

// StartPosition says where a new group's cursors begin.
type StartPosition int

const (
	// StartEarliest begins at the start of the retained log.
	StartEarliest StartPosition = iota
	// StartLatest begins after the last row present at registration.
	StartLatest
)

// GroupConfig is a consumer group's stored configuration. A group is bound
// to one schema version (C3).
type GroupConfig struct {
	StreamID      int64
	Name          string
	SchemaVersion int
	// AllVersions marks a version-agnostic group (a RawPayload group).
	AllVersions bool
	// ConvertsFrom lists older versions the group also reads through
	// converters (R7); health counts their rows under the group.
	ConvertsFrom []int
	Bindings     []string
	Start        StartPosition
	CreatedAt    time.Time
}

// ClaimRequest asks for deliveries of one group.
type ClaimRequest struct {
	Stream StreamConfig
	Group  string
	// Versions lists the schema versions the group reads; nil means all.
	Versions []int
	// Match reports whether a routing key matches the group's bindings; nil
	// matches every key. It is evaluated by the driver in Go so that binding
	// semantics are identical on every engine.
	Match func(routingKey string) bool
	Limit int
	// Ordered makes a partition with a pending (leased or delayed) exception
	// unavailable to the main claim, and hands out only the lowest pending
	// exception of a partition, so a partition is processed one row at a time
	// in id order (C10).
	Ordered bool
	// Token identifies this claim's lease; Ack, Fail, Release and Extend must
	// present it.
	Token      string
	Now        time.Time
	LeaseUntil time.Time
	// MaxAttempts makes ClaimExceptions bury, instead of hand out, a delivery
	// whose expired lease already used the last attempt. Zero means no limit.
	MaxAttempts int
	// LastError is recorded on deliveries buried by MaxAttempts.
	LastError string
}

// Row is a stored message.
type Row struct {
	ID             int64
	Partition      int
	SchemaVersion  int
	Key            string
	HasKey         bool
	RoutingKey     string
	CompactionRank int
	Payload        []byte
	Headers        map[string]string
	ProducedAt     time.Time
}

// Delivery is a leased row.
type Delivery struct {
	Row
	Attempt    int
	LeaseUntil time.Time
}

// LeaseRef names leased deliveries of a group.
type LeaseRef struct {
	StreamID int64
	Group    string
	Token    string
	IDs      []int64
}

// Failure is the outcome of a failed attempt.
type Failure struct {
	Error string
	// Dead buries the delivery; otherwise it is retried at Due.
	Dead bool
	Due  time.Time
	Now  time.Time
}

// DeadLetter is a delivery that will not be claimed again until replayed.
type DeadLetter struct {
	Row
	Attempt     int
	Error       string
	FirstFailed time.Time
	DiedAt      time.Time
}

// ExceptionState is the state of an unresolved delivery.
type ExceptionState string

const (
	StateLeased  ExceptionState = "leased"
	StateDelayed ExceptionState = "delayed"
	StateDead    ExceptionState = "dead"
)

// HealthStats are the raw figures for a stream's health read. Package
// sqlstreams applies bindings and writes the verdicts.
type HealthStats struct {
	// HighWater is the greatest id ever assigned in the stream, per partition
	// (index = partition); 0 for an empty partition.
	HighWater []int64
	// Versions lists each schema version present in the log.
	Versions []VersionStats
	// Unread counts rows past each group's cursors per (group, version,
	// routing key) that are claimable (heads on compacted streams), at every
	// version: package sqlstreams keeps those the group reads.
	Unread []UnreadCount
	// Exceptions counts unresolved deliveries per (group, version, state).
	Exceptions []ExceptionCount
	// Groups carries each group's cursors and counters.
	Groups []GroupStats
}

// VersionStats counts rows and heads at one version.
type VersionStats struct {
	Version int
	Rows    int64
	Heads   int64
}

// UnreadCount is a count of unread rows sharing group, version and routing key.
type UnreadCount struct {
	Group      string
	Version    int
	RoutingKey string
	Rows       int64
}

// ExceptionCount counts a group's unresolved deliveries in one state.
type ExceptionCount struct {
	Group   string
	Version int
	State   ExceptionState
	Count   int64
}

// GroupStats are per-group figures.
type GroupStats struct {
	GroupConfig
	// Cursors holds the last passed id per partition (index = partition).
	Cursors []int64
	// RemovedUnread counts rows a hard retention limit removed before the
	// group read them.
	RemovedUnread int64
}

// RetainRequest asks a driver to apply a stream's retention limits.
type RetainRequest struct {
	StreamID int64
	Now      time.Time
	Limit    int
	// Match reports whether a group with bindings reads a routing key; the
	// driver uses it to count rows a hard limit removed unread.
	Match func(bindings []string, routingKey string) bool
}

// RetainResult reports what retention removed.
type RetainResult struct {
	Removed int64
	// RemovedUnread counts, per group, removed rows the group had not
	// resolved (only a hard limit removes those).
	RemovedUnread map[string]int64
}

// RetainCandidate is a row that retention is about to remove.
type RetainCandidate struct {
	ID         int64
	Partition  int
	Version    int
	RoutingKey string
}

// CountRemovedUnread counts, per group, the candidates a hard retention
// limit removes before the group resolved them: rows past the group's cursor
// that it reads (its version, its converter versions, its bindings through
// match) and rows it holds an exception for (held[group][id]). Drivers call
// it inside the transaction that removes the rows, so that every engine
// counts alike; groups with nothing removed unread are left out.
func CountRemovedUnread(groups []GroupStats, rows []RetainCandidate, held map[string]map[int64]bool,
	match func(bindings []string, routingKey string) bool) map[string]int64 {
	out := map[string]int64{}
	for _, g := range groups {
		reads := map[int]bool{g.SchemaVersion: true}
		for _, v := range g.ConvertsFrom {
			reads[v] = true
		}
		var n int64
		for _, r := range rows {
			past := r.Partition < len(g.Cursors) && r.ID > g.Cursors[r.Partition]
			unread := past && (g.AllVersions || reads[r.Version]) && (match == nil || match(g.Bindings, r.RoutingKey))
			if unread || held[g.Name][r.ID] {
				n++
			}
		}
		if n > 0 {
			out[g.Name] = n
		}
	}
	return out
}
