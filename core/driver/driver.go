// Package driver is the contract between sqlstreams and a storage engine.
//
// A driver implements operations that carry meaning (append, claim, ack, fail,
// health, compact, retain, stream and group admin) rather than a query
// builder: every lock, transaction and SQL statement stays inside the driver,
// so each engine can use what it does best (SKIP LOCKED, RETURNING, a single
// writer) while the package sqlstreams keeps one meaning for all of them.
//
// The contracts every driver must honour are numbered in docs/contracts.md
// (C1..., D1...) and proven by the conformance module, which each driver
// runs from its own tests. Drivers report failures with the sentinel errors
// of this package (wrapped freely, see Error); package sqlstreams
// re-exports them for users.
//
// Every method takes a params struct, so that a field added to the contract
// later does not break drivers written against an earlier one: a new field's
// zero value always means what the contract meant before it existed.
//
// Times are passed in by the caller (Now fields) instead of being read from
// the database clock, so that every engine agrees on what "due" means and
// stores times in UTC at microsecond precision.
package driver

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"
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
	CreateStream(ctx context.Context, p CreateStreamParams) (StreamConfig, error)
	// LookupStream finds a stream by name, or fails with ErrStreamNotFound.
	LookupStream(ctx context.Context, p LookupStreamParams) (StreamConfig, error)
	// ListStreams returns every stream ordered by name.
	ListStreams(ctx context.Context, p ListStreamsParams) ([]StreamConfig, error)
	// RenameStream changes only the name; the id, rows, groups and cursors stay.
	// It fails with ErrStreamExists when the new name is taken.
	RenameStream(ctx context.Context, p RenameStreamParams) error
	// DestroyStream removes the log, groups, cursors, exceptions and heads.
	DestroyStream(ctx context.Context, p DestroyStreamParams) error

	// Append writes rows to a stream in one transaction, or inside p.Tx when
	// it is not nil (then the rows become visible when the caller commits). It
	// returns the new ids in input order. Ids are the order in which rows
	// become visible to cursors (C5): a cursor that has passed id n will never
	// later find a committed row with an id below n in the same partition.
	// On a compacted stream it also moves each key's head when the new row
	// wins by (schema_version, compaction_rank, id) (C11). A failure whose
	// outcome the driver cannot know (the connection dropped during COMMIT, the
	// context ended while the statement was in flight) wraps ErrOutcomeUnknown;
	// a wait for a partition lock is bounded and fails with ErrConflict.
	Append(ctx context.Context, p AppendParams) ([]int64, error)

	// RegisterGroup creates the group with one cursor per partition, or, when
	// it exists, locks its row, passes the stored configuration to p.Update
	// and stores what Update returns (bindings and converter versions only).
	// An error from Update aborts without writing and is returned. A change
	// to the stored configuration waits for claims in flight (it locks every
	// cursor of the group), so that no claim that started before the change
	// commits after it with the old configuration (C19).
	RegisterGroup(ctx context.Context, p RegisterGroupParams) (GroupConfig, error)
	// ListGroups returns the stream's groups ordered by name.
	ListGroups(ctx context.Context, p ListGroupsParams) ([]GroupConfig, error)
	// DeleteGroup removes a group with its cursors, exceptions (dead ones
	// included) and registered reader schemas, or fails with
	// ErrGroupNotFound.
	DeleteGroup(ctx context.Context, p DeleteGroupParams) error

	// Claim leases up to p.Limit deliveries of a group: first due exceptions
	// (expired leases and delayed retries, with Attempt incremented), then rows
	// after the partition cursors (Attempt 1), moving each cursor past every
	// row it inspected. It filters with the group's stored configuration as of
	// the claim (C19), read after the first cursor lock is taken: the stored
	// version (and converter versions) and the stored bindings through
	// p.Match. It fails with ErrGroupNotFound when the group is gone and with
	// ErrGroupVersion when it is now bound to another version than p.Member,
	// and moves no cursor then. Rows the group reads at a version the member
	// cannot decode (not in p.Decodes) are not leased to it: they become
	// exceptions due at once with their attempt unchanged, for a member that
	// can (ClaimResult.Deferred counts them). On a compacted stream only heads
	// are claimable; exceptions whose row is no longer a head, or is gone, are
	// resolved instead of returned. Rows are returned in id order per
	// partition. A claim that returns an error has leased nothing, unless the
	// error wraps ErrOutcomeUnknown: then release p.Token. With p.Acks it
	// first resolves those leases, in the same transaction.
	Claim(ctx context.Context, p ClaimParams) (ClaimResult, error)

	// Ack resolves leased deliveries. Each one is settled on its own: a
	// delivery that is no longer leased with its token is left as it is and
	// listed in SettleResult.Lost, and never changes another's outcome (C20).
	Ack(ctx context.Context, p AckParams) (SettleResult, error)
	// Fail records failed attempts: each delivery becomes delayed until its
	// Due, or dead when Dead is set. Like Ack, per delivery.
	Fail(ctx context.Context, p FailParams) (SettleResult, error)
	// Release gives leased deliveries back without counting the attempt: they
	// are due now with the attempt they had before the claim. Like Ack, per
	// delivery. With ClaimToken set it releases every delivery leased with
	// that token instead (a claim whose outcome is unknown), reporting none
	// as lost.
	Release(ctx context.Context, p ReleaseParams) (SettleResult, error)
	// Extend moves the lease expiry of held deliveries to p.Until. Like Ack,
	// per delivery: one lost lease never keeps the others from being extended.
	Extend(ctx context.Context, p ExtendParams) (SettleResult, error)

	// ListDead returns dead deliveries of a group with ids above p.AfterID,
	// ordered by id.
	ListDead(ctx context.Context, p ListDeadParams) ([]DeadLetter, error)
	// Replay makes dead deliveries due at p.Now with attempts reset. Nil IDs
	// replays every dead delivery of the group. It returns how many changed.
	Replay(ctx context.Context, p ReplayParams) (int64, error)
	// Discard resolves dead deliveries without processing them. Nil IDs
	// discards every dead delivery of the group.
	Discard(ctx context.Context, p DiscardParams) (int64, error)

	// Health gathers the raw figures behind the health read (C13).
	Health(ctx context.Context, p HealthParams) (HealthStats, error)
	// Compact removes rows of a compacted stream that are no longer heads,
	// with their exceptions. It never removes a head (C11), and it keeps the
	// partition's high-water mark where it was.
	Compact(ctx context.Context, p CompactParams) (int64, error)
	// Retain applies the stream's retention limits (C14), removing at most
	// p.Limit rows, and keeps the partitions' high-water marks where they were.
	Retain(ctx context.Context, p RetainParams) (RetainResult, error)

	// SetCursors moves a group's cursors (an operator's reset). It locks the
	// cursors first, so it waits for claims in flight, and fails with
	// ErrGroupNotFound when the group is gone. Deliveries already leased,
	// delayed or dead are not touched: a cursor moved back makes the main
	// claim pass over rows the group still has an exception for, and one
	// moved forward leaves those exceptions to the exception claim.
	SetCursors(ctx context.Context, p SetCursorsParams) error
	// ReadRows reads the log without claiming (an operator's browse),
	// examining at most p.MaxScan rows so that a filter matching little
	// cannot make one call scan millions.
	ReadRows(ctx context.Context, p ReadRowsParams) (ReadRowsResult, error)

	// Migrations returns the driver's schema migrations in version order,
	// with their SQL, for tools that apply them themselves.
	Migrations() ([]Migration, error)
	// AppliedMigrations lists the migrations the database has, in version
	// order; none when the driver's tables do not exist yet.
	AppliedMigrations(ctx context.Context, p AppliedMigrationsParams) ([]AppliedMigration, error)
	// ApplyMigration runs one migration up (or down) and records it, in one
	// transaction where the engine allows; it serializes with other
	// processes migrating the same database. Migrate is every pending one.
	// It refuses, with an error wrapping ErrDatabase, an up step already
	// applied or whose predecessor is not, and a down step that is not
	// applied, has no Down SQL or has later migrations applied.
	ApplyMigration(ctx context.Context, p ApplyMigrationParams) error
	// CheckPrivileges fails with an error wrapping ErrDatabase that names the
	// missing privilege when the connection's role cannot do what sqlstreams
	// does at run time (create and drop a stream's table).
	CheckPrivileges(ctx context.Context, p CheckPrivilegesParams) error
}

// Capabilities describes what an engine does that changes what callers and
// the conformance suite may expect of it; each field is a promise the suite
// checks or a difference it allows for.
type Capabilities struct {
	// Notify reports that Subscribe delivers wake-ups from other processes
	// (D13_WakeUps). A driver may implement Notifier without it, as
	// PostgreSQL does WithoutNotify: its Subscribe only waits.
	Notify bool
	// SingleWriter reports an engine that serializes all writes (SQLite):
	// a caller's open transaction then delays every other write, which C14
	// and C16 allow for.
	SingleWriter bool
	// InProcess reports an engine that runs inside this process (SQLite):
	// a claim's cost is CPU that the handlers share rather than a wait on a
	// server, so Run claims at most half its budget at a time, and the next
	// claim runs while the handlers work through the last.
	InProcess bool
}

// Notifier is implemented by drivers that can wake consumers when rows are
// appended, across processes. A wake-up is only a hint: consumers keep polling.
type Notifier interface {
	// Subscribe calls wake (without blocking) whenever rows may have been
	// appended to the stream, until ctx ends.
	Subscribe(ctx context.Context, p SubscribeParams) error
}

// SubscribeParams names the stream whose appends wake the subscriber.
type SubscribeParams struct {
	StreamID int64
	Wake     func()
	// PollInterval is how often the subscriber polls anyway (the consumer's
	// PollInterval; zero when unknown). A driver that must itself poll to
	// see appends (MySQL) reads a few times per interval, so that its
	// wake-ups come sooner than the poll at a cost in proportion to it.
	PollInterval time.Duration
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
	// Generation counts the changes AlterStream made (0 for a stream never
	// altered). Appends and claims carry the configuration they planned
	// with; a driver that implements Alterer refuses one of another
	// generation (StreamChangedError).
	Generation int64
}

// CreateStreamParams is the stream to create; ID is assigned by the driver.
type CreateStreamParams struct {
	Config StreamConfig
}

// LookupStreamParams names the stream to find.
type LookupStreamParams struct {
	Name string
}

// ListStreamsParams is empty; it exists so that filters can be added.
type ListStreamsParams struct{}

// RenameStreamParams renames a stream.
type RenameStreamParams struct {
	StreamID int64
	NewName  string
}

// DestroyStreamParams names the stream to destroy.
type DestroyStreamParams struct {
	StreamID int64
}

// MaxSchemaVersion is the greatest schema version every driver stores (a
// 32-bit column); package sqlstreams refuses greater ones with
// ErrInvalidMessage before they reach a driver.
const MaxSchemaVersion = 1<<31 - 1

// AppendParams asks for rows to be written to a stream.
type AppendParams struct {
	Stream StreamConfig
	// Tx is the caller's transaction, or nil for one of the driver's own.
	Tx   Tx
	Rows []AppendRow
}

// AppendRow is one message to write.
type AppendRow struct {
	Partition int
	// SchemaVersion is between 1 and MaxSchemaVersion.
	SchemaVersion int
	// SchemaRevision is the registry revision of the writer's schema at
	// SchemaVersion, or 0 when unknown (RawPayload). Drivers store it so the
	// registry knows which writer revisions the retained log still holds.
	SchemaRevision int
	Key            string
	HasKey         bool
	RoutingKey     string
	CompactionRank int64
	// Payload is valid UTF-8 JSON, stored and returned byte for byte.
	Payload    []byte
	Headers    map[string]string
	ProducedAt time.Time
}

// SharesValues reports whether rows agree on every value but partition, key
// and payload: schema version and revision, routing key, rank, headers and
// production time (to the microsecond, the precision every driver stores).
// One ProduceBatch of one producer usually does, and an append may then bind
// those values once instead of once per row.
func SharesValues(rows []AppendRow) bool {
	for _, r := range rows[min(1, len(rows)):] {
		f := rows[0]
		if r.SchemaVersion != f.SchemaVersion || r.SchemaRevision != f.SchemaRevision || r.RoutingKey != f.RoutingKey ||
			r.CompactionRank != f.CompactionRank || r.ProducedAt.UnixMicro() != f.ProducedAt.UnixMicro() || !maps.Equal(r.Headers, f.Headers) {
			return false
		}
	}
	return true
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
	// Bindings select routing keys; none means every key.
	Bindings  []string
	Start     StartPosition
	CreatedAt time.Time
	// PausedAt is when an operator paused the group (GroupPauser); zero
	// while it runs. Claims of a paused group fail with ErrGroupPaused
	// (PlanClaim) and lease nothing.
	PausedAt time.Time
}

// Versions returns the versions the group reads, or nil for every version.
func (g GroupConfig) Versions() []int {
	if g.AllVersions {
		return nil
	}
	return append([]int{g.SchemaVersion}, g.ConvertsFrom...)
}

// Member is what a consumer registered as: the group's version it expects.
type Member struct {
	SchemaVersion int
	AllVersions   bool
}

// Matches reports whether the stored group is still bound to what the
// member registered with.
func (m Member) Matches(g GroupConfig) bool {
	return g.AllVersions == m.AllVersions && (m.AllVersions || g.SchemaVersion == m.SchemaVersion)
}

// RegisterGroupParams creates a group or updates an existing one.
type RegisterGroupParams struct {
	// Group is the configuration of a group that does not exist yet.
	Group GroupConfig
	// Update computes the stored configuration of an existing group from the
	// stored one; only Bindings and ConvertsFrom are taken from its result.
	// Nil keeps the stored configuration.
	Update func(stored GroupConfig) (GroupConfig, error)
}

// ListGroupsParams names the stream whose groups to list.
type ListGroupsParams struct {
	StreamID int64
}

// DeleteGroupParams names the group to delete.
type DeleteGroupParams struct {
	StreamID int64
	Group    string
}

// ClaimParams asks for deliveries of one group.
type ClaimParams struct {
	Stream StreamConfig
	Group  string
	// Member is what the claiming consumer registered as; the claim fails with
	// ErrGroupVersion when the stored group no longer matches it.
	Member Member
	// Decodes lists the versions the member can decode; nil means every
	// version. Rows the group reads at other versions are deferred to a
	// member that can decode them.
	Decodes []int
	// Match builds the routing filter from the group's stored bindings; it is
	// evaluated by the driver in Go so that binding semantics are identical on
	// every engine. Nil matches every key.
	Match func(bindings []string) func(routingKey string) bool
	Limit int
	// Ordered makes a partition with a pending (leased or delayed) exception
	// unavailable to the main claim, and hands out only the lowest pending
	// exception of a partition, so a partition is processed one row at a time
	// in id order (C10).
	Ordered bool
	// Token identifies this claim's leases; settling a delivery must present
	// it.
	Token string
	// Holder names the client taking the leases, for operators.
	Holder     string
	Now        time.Time
	LeaseUntil time.Time
	// MaxAttempts makes the claim bury, instead of hand out, a delivery whose
	// expired lease already used the last attempt. Zero means no limit.
	MaxAttempts int
	// LastError is recorded on deliveries buried by MaxAttempts.
	LastError string
	// Acks, when not empty, are leases of the group to resolve as Ack
	// resolves them, in the claim's transaction and before it reads
	// anything: a consumer that acks one batch while claiming the next
	// commits once per batch. An ack frees what it resolves for this very
	// claim (an ordered partition whose pending rows it resolves is
	// claimable again). Each is settled on its own, and ClaimResult.Lost
	// names those that were not leased with their token (C20). A claim
	// that returns an error resolved none of them, unless the error is
	// ErrOutcomeUnknown. The driver resolves them even when nothing is
	// left to claim.
	Acks []Lease
}

// ClaimResult is what a claim leased, and the configuration it used.
type ClaimResult struct {
	// Lost lists the ids of ClaimParams.Acks that were not leased with
	// their token: nothing changed for them.
	Lost       []int64
	Deliveries []Delivery
	// Group is the stored group configuration the claim filtered with.
	Group GroupConfig
	// Deferred counts rows left as due exceptions for members that can decode
	// their version.
	Deferred int
}

// Row is a stored message.
type Row struct {
	ID             int64
	Partition      int
	SchemaVersion  int
	Key            string
	HasKey         bool
	RoutingKey     string
	CompactionRank int64
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

// Lease names one leased delivery: its row id and the token of the claim
// that leased it.
type Lease struct {
	ID    int64
	Token string
}

// AckParams names leased deliveries to resolve.
type AckParams struct {
	StreamID int64
	Group    string
	Leases   []Lease
	Now      time.Time
	// Tx, when not nil, is the caller's transaction: the outcome is
	// recorded in it, committed when the caller commits and undone when it
	// rolls back (C21). Lost leases are reported as usual; the caller's
	// transaction is not changed for them.
	Tx Tx
}

// Failure is the outcome of one failed attempt.
type Failure struct {
	Lease Lease
	Error string
	// Dead buries the delivery; otherwise it is retried at Due.
	Dead bool
	Due  time.Time
}

// FailParams records failed attempts. Each failure is also appended to the
// delivery's failure history (DeadLetter.History), with the lease's holder.
type FailParams struct {
	StreamID int64
	Group    string
	Failures []Failure
	Now      time.Time
	// Tx, when not nil, is the caller's transaction, as for AckParams.
	Tx Tx
}

// MaxHistoryError bounds the error text kept per entry of a delivery's
// failure history (the last error is kept whole, up to core's own bound).
const MaxHistoryError = 1000

// ReleaseParams names leased deliveries to give back unstarted.
type ReleaseParams struct {
	StreamID int64
	Group    string
	Leases   []Lease
	// ClaimToken, when set, releases every delivery leased with it (Leases
	// is then ignored).
	ClaimToken string
	Now        time.Time
}

// ExtendParams moves leases' expiry.
type ExtendParams struct {
	StreamID int64
	Group    string
	Leases   []Lease
	Until    time.Time
	Now      time.Time
}

// SettleResult reports deliveries a settle could not apply to.
type SettleResult struct {
	// Lost lists the ids that were not leased with their token: nothing
	// changed for them.
	Lost []int64
}

// ListDeadParams pages through a group's dead deliveries.
type ListDeadParams struct {
	StreamID int64
	Group    string
	AfterID  int64
	Limit    int
	// History fills DeadLetter.History.
	History bool
}

// ReplayParams names dead deliveries to make due again.
type ReplayParams struct {
	StreamID int64
	Group    string
	// IDs to replay; nil replays every dead delivery of the group.
	IDs []int64
	Now time.Time
}

// DiscardParams names dead deliveries to resolve unprocessed.
type DiscardParams struct {
	StreamID int64
	Group    string
	// IDs to discard; nil discards every dead delivery of the group.
	IDs []int64
}

// DeadLetter is a delivery that will not be claimed again until replayed.
type DeadLetter struct {
	Row
	Attempt     int
	Error       string
	FirstFailed time.Time
	DiedAt      time.Time
	// Holder is the client that held the last lease.
	Holder string
	// History lists every recorded failure, oldest first (only with
	// ListDeadParams.History).
	History []FailureRecord
}

// FailureRecord is one failed attempt of a delivery.
type FailureRecord struct {
	Attempt int
	// Error is the attempt's error, cut to MaxHistoryError bytes.
	Error  string
	At     time.Time
	Holder string
}

// ExceptionState is the state of an unresolved delivery.
type ExceptionState string

const (
	StateLeased  ExceptionState = "leased"
	StateDelayed ExceptionState = "delayed"
	StateDead    ExceptionState = "dead"
)

// HealthParams names the stream to read.
type HealthParams struct {
	StreamID int64
	Now      time.Time
}

// HealthStats are the raw figures for a stream's health read. Package
// sqlstreams applies bindings and writes the verdicts.
type HealthStats struct {
	// HighWater is the greatest id ever assigned in the stream, per partition
	// (index = partition); 0 for a partition that never had a row. It never
	// goes down: compaction and retention keep it.
	HighWater []int64
	// Versions lists each schema version present in the log.
	Versions []VersionStats
	// Unread counts rows past each group's cursors per (group, partition,
	// version, routing key) that are claimable (heads on compacted streams)
	// and that the group has no exception for (a cursor moved back passes
	// over those; they count as exceptions), at every version: package
	// sqlstreams keeps those the group reads.
	Unread []UnreadCount
	// Exceptions counts unresolved deliveries per (group, version, state).
	Exceptions []ExceptionCount
	// Groups carries each group's cursors and counters.
	Groups []GroupStats
	// Holders counts leases per (group, holder).
	Holders []HolderCount
}

// VersionStats counts rows and heads at one version.
type VersionStats struct {
	Version int
	Rows    int64
	Heads   int64
}

// UnreadCount is a count of unread rows sharing group, partition, version
// and routing key.
type UnreadCount struct {
	Group      string
	Partition  int
	Version    int
	RoutingKey string
	Rows       int64
}

// HolderCount is how many leases of a group one client holds.
type HolderCount struct {
	Group  string
	Holder string
	Leases int64
	// Until is when the last of those leases expires.
	Until time.Time
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

// CompactParams asks for superseded rows of a compacted stream to go.
type CompactParams struct {
	StreamID int64
	Limit    int
}

// RetainParams asks a driver to apply a stream's retention limits.
type RetainParams struct {
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

// SetCursorsParams moves cursors of a group: Positions maps a partition to
// the last id the main claim has passed there.
type SetCursorsParams struct {
	StreamID  int64
	Group     string
	Positions map[int]int64
}

// ReadRowsParams selects log rows to read, in id order (descending with
// Descending).
type ReadRowsParams struct {
	StreamID int64
	// Partition selects one partition; -1 reads all.
	Partition int
	// AfterID reads ids above it (ascending) ; BeforeID, when above 0, ids
	// below it.
	AfterID, BeforeID int64
	Descending        bool
	// Versions keeps rows at these versions; nil keeps all.
	Versions []int
	// Key, with HasKey, keeps rows with that key.
	Key    string
	HasKey bool
	Limit  int
	// MaxScan bounds how many rows the call examines; 0 means Limit.
	MaxScan int
}

// ReadRowsResult is what ReadRows found.
type ReadRowsResult struct {
	Rows []Row
	// Last is the last id examined (the place to continue from when a
	// filter stopped the scan early), 0 when nothing was examined.
	Last int64
	// Done reports that no row past Last is left to examine.
	Done bool
}

// Migration is one versioned schema change, with its SQL.
type Migration struct {
	Version int
	Name    string
	// Up and Down are the SQL, as the driver runs it; Down is empty where
	// going back would lose data.
	Up, Down string
	// Record is the SQL that records the migration as applied (creating the
	// sqlstreams_migration table when missing), for tools that run Up
	// themselves.
	Record string
}

// AppliedMigration is a migration the database has.
type AppliedMigration struct {
	Version   int
	AppliedAt time.Time
}

// AppliedMigrationsParams is empty; it exists so that fields can be added.
type AppliedMigrationsParams struct{}

// ApplyMigrationParams names one migration to run.
type ApplyMigrationParams struct {
	Version int
	// Down runs the migration's Down SQL and removes its record.
	Down bool
}

// CheckPrivilegesParams is empty; it exists so that fields can be added.
type CheckPrivilegesParams struct{}

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

// Lost returns the ids of leases that are not in settled, in lease order:
// drivers that learn which rows a statement changed report the rest with it.
func Lost(leases []Lease, settled map[int64]bool) []int64 {
	var lost []int64
	for _, l := range leases {
		if !settled[l.ID] {
			lost = append(lost, l.ID)
		}
	}
	return lost
}

// DistinctIDs returns ids sorted, each once, leaving ids as they are: a
// statement naming rows by id names each once.
func DistinctIDs(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}

// ClaimPlan is what a claim filters with, taken from the group's stored
// configuration and the claiming member (C19).
type ClaimPlan struct {
	Group GroupConfig
	// Versions the group reads (nil: every version) and, of those, the ones
	// the member decodes (nil: every version). A row at a version in
	// Versions but not in Decodable is deferred, not leased.
	Versions, Decodable []int
	// Match reports whether the group's bindings select a routing key; nil
	// selects every key.
	Match func(routingKey string) bool
}

// PlanClaim checks the stored group g against the member of p and returns
// what the claim filters with. Drivers call it with the group row they read
// inside the claim's transaction. It fails with ErrGroupPaused when the
// group is paused, and with ErrGroupVersion when the group is now bound to
// another version than the member registered with.
func PlanClaim(g GroupConfig, p ClaimParams) (ClaimPlan, error) {
	if !g.PausedAt.IsZero() {
		return ClaimPlan{}, fmt.Errorf("group %q was paused at %s: %w", g.Name, g.PausedAt.Format(time.RFC3339), ErrGroupPaused)
	}
	if !p.Member.Matches(g) {
		bound := "every version"
		if !g.AllVersions {
			bound = fmt.Sprintf("schema version %d", g.SchemaVersion)
		}
		return ClaimPlan{}, fmt.Errorf("group %q is now bound to %s, not to the version this member registered with: %w",
			g.Name, bound, ErrGroupVersion)
	}
	plan := ClaimPlan{Group: g, Versions: g.Versions()}
	switch {
	case plan.Versions == nil:
		plan.Decodable = p.Decodes
	case p.Decodes == nil:
		plan.Decodable = plan.Versions
	default:
		plan.Decodable = []int{}
		for _, v := range plan.Versions {
			if slices.Contains(p.Decodes, v) {
				plan.Decodable = append(plan.Decodable, v)
			}
		}
	}
	if p.Match != nil {
		plan.Match = p.Match(g.Bindings)
	}
	return plan, nil
}

// Reads reports whether the group reads rows at version.
func (p ClaimPlan) Reads(version int) bool {
	return p.Versions == nil || slices.Contains(p.Versions, version)
}

// Decodes reports whether the member can decode a row at version.
func (p ClaimPlan) Decodes(version int) bool {
	return p.Decodable == nil || slices.Contains(p.Decodable, version)
}

// Matches reports whether the group's bindings select routingKey.
func (p ClaimPlan) Matches(routingKey string) bool { return p.Match == nil || p.Match(routingKey) }
