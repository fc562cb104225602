// Package postgres is the PostgreSQL sqlstreams driver, built on pgx/v5 and
// its connection pool.
//
//	client, err := sqlstreams.Open(ctx, postgres.Open("postgres://app@db/app"))
//
// Every table lives in the first schema of the connection's search_path (set
// it with the URL parameter search_path=...). Payloads are bytea, stored and
// returned byte for byte (RawPayload bytes round-trip exactly, the JSON
// escape \u0000 included); headers are jsonb, times timestamptz in UTC, ids
// and compaction ranks bigint, schema versions integer. Each stream's rows
// live in a table message_log_<id>, so a stream name never enters SQL text.
//
// # Commit order (C5)
//
// Ids come from a sequence before commit, so a plain "id > cursor" read
// could pass a row whose transaction commits late. The driver serializes
// appends per (stream, partition): an append first locks the rows of the
// partitions it writes in stream_partition (SELECT ... ORDER BY partition
// FOR NO KEY UPDATE), then takes ids, and holds the locks until it commits.
// Within a partition, ids are therefore taken and committed in the same
// order, and a cursor (one per partition) never passes a row that becomes
// visible later. Appends to different partitions or streams run in
// parallel. The lock statement checks that it found every partition it
// writes to, at the configuration generation the append was planned with;
// when it did not, nothing is written, and the append fails with
// ErrStreamNotFound (the stream was destroyed) or a
// *driver.StreamChangedError (it was altered: AlterStream updates the
// partition rows under the same locks).
//
// The alternative, storing pg_current_xact_id() in each row and reading
// only rows of transactions older than pg_snapshot_xmin(pg_current_snapshot()),
// lets producers of one partition commit in parallel, but it does not make
// ids the visibility order: a transaction that took its xid early (at its
// first write, say a business row) may take its id late, so a row with a
// lower xid can carry a higher id than a row still in flight. Cursors would
// have to become (xid, id) pairs, which breaks the contract's "ids are the
// order in which rows become visible", health's cursor distance and soft
// retention; and every reader would stall behind any long transaction in the
// database, not only behind producers. The row lock keeps ids meaningful and
// stalls only producers of the same partition.
//
// The price, measured with BenchmarkC5Mechanism (8 concurrent single-row
// producer transactions on one partition, one pipelined round trip each, on
// the project's 2-core test machine; docs/benchmarks/postgres.md): about 1.3k
// msgs/s with the row lock against 2.3k msgs/s without it, because the lock
// is held across each commit's WAL flush so that commits of one partition
// cannot share a flush. Batches (ProduceBatch: one lock per batch), more
// partitions, or fewer, larger transactions recover the difference; a
// single producer pays only the lock itself. A batch touching several
// partitions locks them in partition order, so appends never deadlock each
// other.
//
// # Lock waits and ProduceTx
//
// A transaction used with ProduceTx holds the partition lock from the
// produce until it commits or rolls back: other producers of that partition
// wait for it. Keep such transactions short, and produce last in them.
//
// Waiting for a partition lock is bounded by WithLockTimeout (10s by
// default): the append sets lock_timeout for its lock statement only and
// restores the previous value right after it, in the same pipelined batch,
// so a caller's transaction keeps its own setting. A wait that runs out fails
// with ErrConflict naming the partition, and is not retried: inside a
// caller's transaction, roll the transaction back and retry it whole. A
// deadlock or serialization failure in a caller's transaction is ErrConflict
// too; the driver retries those only in transactions of its own. Compaction
// and retention take the same partition locks, with the same bound, before
// they remove rows.
//
// # Claims
//
// One autocommit probe finds out whether anything is due or new and reads
// the group, so an idle claim costs one round trip. Otherwise the claim runs
// in one read committed transaction: it locks a group cursor with FOR UPDATE
// SKIP LOCKED and only then reads the group's stored configuration (C19),
// leases due exceptions (locked FOR UPDATE SKIP LOCKED, so concurrent
// claimers take different ones), and then rows past the cursors, one cursor
// at a time, so consumers of a group claim different partitions at once and
// never wait for each other. A registration that changes the group's
// bindings or converters locks every cursor of the group before it commits,
// so it waits for the claims in flight and every later claim sees the
// change. Claim transactions are short: they never span a handler. A claim
// right after one of the same group that took its limit skips the probe (a
// consumer working through a backlog): the transaction's first round trip
// begins it, locks a cursor, reads the group and finds out what is due;
// when the claim before took its Limit from one partition, it also read
// the rows past that cursor, and a claim that finds nothing changed (the
// cursor at that position and free, the group the same, nothing due, the
// rows still there) is one round trip from BEGIN to COMMIT. A claim that
// follows a notification for its stream (an idle consumer woken) skips the
// probe too, and its first round trip reads the rows past where the group's
// last claim here left its cursor (on a stream of up to 16 partitions, past
// every cursor) and whether any cursor but the one it locks has rows: two
// round trips from the wake-up to the commit on any stream, where the probe
// and a read of their own made four. A
// claim carrying acks (ClaimParams.Acks, Consumer.AckAndClaim) skips the
// probe as well and resolves them in that first round trip, before the
// statements that read, so that they commit with the claim: one commit per
// batch for a consumer that acks each batch as it claims the next.
//
// # Batch leases
//
// The main claim leases the rows it takes from a partition as one
// delivery_batch record (token, holder, lease expiry, and the ids still
// held, as a bigint[]). A batch stands for exactly the leased exception rows
// those deliveries would otherwise have: an ack removes its members from it,
// and an extension naming every remaining member moves its expiry, each in
// the settle's one statement; anything else (Fail, Release, an extension of
// some members, expiry, SetCursors, hard retention, compaction) first turns
// the members it needs into those leased exception rows ("rows of their
// own": attempt 1, due at the batch's lease_until, updated at its
// created_at), removing them from the batch, and then works on them. So a
// delivery a group has passed is resolved, a member of one batch (and then
// it has no exception row), or an exception row; and every member is at or
// below its partition's cursor, as SetCursors materializes the batches of
// the partitions it moves. Every operation reads both, so rows of their own
// that an older build wrote for every claimed delivery are settled, counted
// and expire as before (D12). The driver remembers the batch of each of its
// recent claims: an Ack naming exactly its members deletes it by primary key
// if its ids still compare equal, one small statement, and otherwise settles
// as described below.
//
// # Settling
//
// Ack, Fail, Release and Extend are each one autocommit round trip over
// the (id, token) pairs of the call (two for Fail, Release and a partial
// Extend of batch members, which are materialized first), passed as arrays
// (ids sorted, found with a binary search, so the plan is an index range
// scan whatever the planner knows) and ending in RETURNING msg_id: every delivery still leased with
// its own token is settled, the others are reported lost, and one lost lease
// never changes another's outcome (C20). Fail stores each failure's own due
// time and error, and appends it to the delivery's failure history (a jsonb
// array, with the lease's attempt and holder) in the same statement. Ack and
// Fail given a caller's transaction (postgres.Tx) run that statement in it
// instead (C21): the outcome shows when the caller commits, and the driver
// never commits, rolls back or retries it.
//
// A cursor moved back (SetCursors, under the cursors' locks) makes the main
// claim meet rows the group still has an exception for: its record of what
// it took skips them (one index probe finds whether there is any), so such
// rows keep their lease, retry or death and are not delivered again.
//
// # Migrations
//
// Migrate applies every pending migration in one transaction holding a
// per-schema advisory lock; ApplyMigration applies one, up or down, under
// the same lock, also in one transaction (PostgreSQL's DDL is
// transactional). CheckPrivileges checks USAGE and CREATE on the schema
// (creating and dropping a stream's table) and the use of the driver's
// tables, without creating anything.
//
// # Errors
//
// Every error carries one of the driver package's sentinels. Connection
// failures (refused, lost, server shutting down, TLS or authentication
// failures, the context's deadline while connecting) are ErrUnavailable;
// deadlocks, serialization failures and lock timeouts are ErrConflict; other
// server errors are ErrDatabase. A failure after a write or its COMMIT may
// have reached the server (the connection dropped, or the context ended,
// while it was in flight) is ErrOutcomeUnknown; an error the server sent
// means the transaction failed, except that the server ending the session
// while COMMIT was in flight leaves it unknown too. A call whose context
// ended before it sent anything (while it waited for a connection of the
// pool) returns the context's error. The driver runs its own statements and
// transactions again, a bounded number of times, after deadlocks,
// serialization failures and failures that certainly wrote nothing; never
// after a lock timeout or an unknown outcome. Passwords from the URL never appear in an error: the
// driver finds them in the URL or key=value string itself, also in one that
// does not parse, and scrubs them.
//
// # Wake-ups
//
// Appends wake consumers with a NOTIFY on a channel derived from the schema
// and stream id. The driver's own appends carry it, debounced to one per
// stream per 5ms (the first of a quiet spell at once) with a trailing one
// after a burst, sent once the burst's last append has committed
// (PostgreSQL serializes the commits of notifying transactions of a
// database). A ProduceTx transaction carries none, so that committers do
// not queue behind each other's NOTIFY: the append reports the
// transaction's id, and the driver sends one NOTIFY per stream, from a
// transaction of its own, once pg_xact_status says that transactions which
// produced to it have committed (checked a millisecond after the first of
// an idle spell, then at intervals doubling up to 5ms while any is open;
// PostgreSQL 13 or later). A NOTIFY sent from a transaction of its own
// commits without waiting for the WAL flush: it is only a hint. The driver keeps one LISTEN connection per
// process for all consumers and forwards notifications as hints,
// coalescing a burst into one wake-up. Consumers keep polling, so a lost notification or a
// lost listener connection only costs latency. The listener reconnects by
// itself.
//
// # PgBouncer
//
// Behind PgBouncer in transaction mode, use the simple protocol
// (WithSimpleProtocol, or default_query_exec_mode=simple_protocol in the URL),
// and either point the listener at the server or a session-mode pool with
// WithListenURL or turn wake-ups off with WithoutNotify: LISTEN needs a
// session of its own. PgBouncer 1.18 does not pass search_path from the URL
// to the server connections it shares: set it on the role or database
// (ALTER DATABASE ... SET search_path).
//
// # Failover and other engines
//
// A multi-host URL with target_session_attrs=read-write reconnects to
// whichever host is the primary after a failover; with a synchronous
// replica every reported commit survives it. Migrate refuses, with
// ErrUnsupportedServer naming what is missing, CockroachDB and YugabyteDB:
// their transaction ids are not one commit order, so the snapshot rule of
// commit order (C5) cannot hold there.
package postgres

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// The interfaces the driver implements, the optional ones included.
var (
	_ driver.Driver          = (*Driver)(nil)
	_ driver.Registry        = (*Driver)(nil)
	_ driver.Notifier        = (*Driver)(nil)
	_ driver.ClientDirectory = (*Driver)(nil)
	_ driver.GroupPauser     = (*Driver)(nil)
	_ driver.Alterer         = (*Driver)(nil)
	_ driver.RevisionDeleter = (*Driver)(nil)
	_ driver.SampleStore     = (*Driver)(nil)
)

// directory is the client directory and the samples, sqldb's on this
// driver's scopes.
type directory = sqldb.Directory[time.Time]

// Driver is the PostgreSQL driver. Create it with Open.
type Driver struct {
	directory   // RecordClient, ListClients, ..., PruneSamples
	cfg         *pgxpool.Config
	listen      *pgx.ConnConfig // the LISTEN connection's config
	pool        *pgxpool.Pool
	opened      error
	closed      atomic.Bool
	notify      bool
	lockTimeout time.Duration
	secrets     []string // passwords to scrub from error text
	// settleMode is how settles run (settleQuery): planned for their own
	// arguments at each run, never from a cached generic plan.
	settleMode pgx.QueryExecMode

	server serverCheck // the engine was checked (capabilities.go)

	mu           sync.Mutex
	prefix       string // notification channel prefix, known after Migrate
	lis          *listener
	notifyStates sync.Map // stream id -> *notifyState
	// What the group's last claim here left for the next one (claim.go):
	// where it left its cursor, when it took its Limit, and the window it
	// read past it (fastclaim.go).
	busyGroups driver.NextClaim[busyState]
	windows    driver.NextClaim[*window]
	claimed    driver.ClaimMemo[claimedBatch] // the batches of recent claims (batch.go)
	wakes      wakeNotes                      // notifications received, for the claims they wake (wakeclaim.go)
	txWakes    txWakes                        // wake-ups for rows of callers' transactions (notify.go)
}

// Option configures Open.
type Option func(*options)

type options struct {
	simple      bool
	noNotify    bool
	listenURL   string
	lockTimeout time.Duration
	config      []func(*pgxpool.Config)
}

// DefaultLockTimeout bounds an append's wait for its partition lock unless
// WithLockTimeout says otherwise.
const DefaultLockTimeout = 10 * time.Second

// WithSimpleProtocol sends every statement with the simple query protocol
// (pgx.QueryExecModeSimpleProtocol), as PgBouncer in transaction mode needs.
// The URL parameter default_query_exec_mode=simple_protocol does the same.
func WithSimpleProtocol() Option { return func(o *options) { o.simple = true } }

// WithoutNotify turns LISTEN/NOTIFY off: appends send no notifications and
// consumers rely on polling alone.
func WithoutNotify() Option { return func(o *options) { o.noNotify = true } }

// WithListenURL connects the LISTEN connection to url instead of the
// driver's URL, for example to the server behind a transaction-mode pooler.
func WithListenURL(url string) Option { return func(o *options) { o.listenURL = url } }

// WithLockTimeout bounds how long an append (or compaction and retention)
// waits for a partition lock that another transaction holds, such as an open
// ProduceTx transaction; the wait then fails with ErrConflict. The default is
// DefaultLockTimeout. Zero or less leaves the wait to the session's own
// lock_timeout and the call's context.
func WithLockTimeout(d time.Duration) Option { return func(o *options) { o.lockTimeout = d } }

// WithPoolConfig lets fn adjust the pool configuration parsed from the URL
// (pool size, connection hooks, TLS) before the pool is created.
func WithPoolConfig(fn func(*pgxpool.Config)) Option {
	return func(o *options) { o.config = append(o.config, fn) }
}

// Open returns a driver for the database at url, a PostgreSQL URL or
// key=value connection string as pgx accepts it. It does not connect:
// connection errors (a wrong host, database or password) surface from
// sqlstreams.Open with the server's reason, and without the password.
func Open(url string, opts ...Option) *Driver {
	o := options{lockTimeout: DefaultLockTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	d := &Driver{notify: !o.noNotify, lockTimeout: o.lockTimeout}
	d.directory = directory{Store: store, Write: d.autocommit, Read: d.pooled}
	d.secrets = connSecrets(url)
	if o.listenURL != "" {
		d.secrets = driver.Secrets(append(d.secrets, connSecrets(o.listenURL)...)...)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		d.opened = d.parseError("", err)
		return d
	}
	d.addSecret(cfg.ConnConfig.Password) // also from PGPASSWORD or a passfile
	if o.simple {
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	}
	for _, fn := range o.config {
		fn(cfg)
	}
	d.settleMode = cfg.ConnConfig.DefaultQueryExecMode
	if d.settleMode == pgx.QueryExecModeCacheStatement {
		d.settleMode = pgx.QueryExecModeCacheDescribe
	}
	d.cfg, d.listen = cfg, cfg.ConnConfig
	if o.listenURL != "" {
		if d.listen, err = pgx.ParseConfig(o.listenURL); err != nil {
			d.opened = d.parseError("listen URL: ", err)
			return d
		}
		d.addSecret(d.listen.Password)
	}
	d.pool, err = pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		d.opened = d.wrap(context.Background(), err, stageRead)
	}
	return d
}

// parseError reports a connection string pgx could not parse, in pgx's
// words but none of the string's: where a string does not parse, no reading
// of it can say where its password ends (`postgres://u:p@ss@host` has two),
// and pgx's text quotes the string, its pieces and values (`forbidden value
// %00 in ... password`). So the error is built from constants only: the
// first of pgx's fixed reasons its text holds, and its detail when that is
// one of pgx's fixed texts. FuzzOpenURL found each of the leaks this closes.
func (d *Driver) parseError(what string, err error) error {
	reason := "the connection string is malformed"
	var pce *pgconn.ParseConfigError
	if errors.As(err, &pce) {
		text := pce.Error()
		for _, r := range parseReasons {
			if strings.Contains(text, r.stem) {
				reason = cmp.Or(r.say, r.stem)
				break
			}
		}
		if inner := pce.Unwrap(); inner != nil && slices.Contains(parseDetails, inner.Error()) {
			reason += " (" + inner.Error() + ")"
		}
	}
	return &driver.Error{Kind: driver.ErrUnavailable,
		Advice: "the connection URL cannot be parsed; fix it (see the PostgreSQL connection URL and key=value formats)",
		Err:    errors.New("postgres: " + what + "cannot parse the connection string: " + reason)}
}

// parseReasons are the fixed stems of pgx's reasons for refusing a
// connection string (with what to say where the stem alone reads badly);
// parseDetails are its details that hold nothing of the string.
var (
	parseReasons = []struct{ stem, say string }{{"failed to parse as URL", ""}, {"failed to parse as keyword/value", ""},
		{"failed to read service", ""}, {"invalid sslcertmode", ""}, {"invalid connect_timeout", ""}, {"invalid port", ""},
		{"failed to configure TLS", ""}, {"min_protocol_version cannot be greater than max_protocol_version", ""},
		{"invalid require_auth", ""}, {"is not in ConnStringAllowedKeys", "a key is not in ConnStringAllowedKeys"},
		{"port numbers to", "the port numbers do not match the hosts"}, {"unknown target_session_attrs value", ""},
		{"invalid min_protocol_version", ""}, {"invalid max_protocol_version", ""}, {"unknown channel_binding value", ""}}
	parseDetails = []string{"invalid keyword/value", "unterminated quoted string in connection info string",
		"forbidden NUL byte in connection string", "sslmode is invalid", `both "sslcert" and "sslkey" are required`,
		"outside range", "negative timeout"}
)

func (d *Driver) addSecret(s string) {
	d.secrets = driver.Secrets(append(d.secrets, s)...)
}

// Pool returns the connection pool, on which to begin transactions for
// ProduceTx. It is nil when the URL could not be parsed.
func (d *Driver) Pool() *pgxpool.Pool { return d.pool }

// Tx adapts a transaction for Producer.ProduceTx, and for settling
// deliveries inside it (AckParams.Tx, FailParams.Tx). The transaction must be
// on the database the driver uses (for example begun on Pool()).
func Tx(tx pgx.Tx) driver.Tx { return driver.AdaptedTx[pgx.Tx]{Native: tx, Driver: driverName} }

// UnwrapTx returns the transaction Tx adapted, and false for a transaction
// another driver adapted (or nil).
func UnwrapTx(tx driver.Tx) (pgx.Tx, bool) { return driver.Unwrap[pgx.Tx](tx, driverName) }

// callerTx returns the caller's transaction tx adapted for this driver, or
// ErrForeignTx.
func callerTx(tx driver.Tx) (pgx.Tx, error) {
	if native, ok := UnwrapTx(tx); ok {
		return native, nil
	}
	return nil, driver.ForeignTx(driverName, tx, "wrap a pgx.Tx with postgres.Tx")
}

// driverName is the driver's name: Name, and the adapter of a caller's
// transaction (driver.AdaptedTx).
const driverName = "postgres"

// Name implements driver.Driver.
func (d *Driver) Name() string { return driverName }

// Capabilities implements driver.Driver.
func (d *Driver) Capabilities() driver.Capabilities {
	return driver.Capabilities{Notify: d.notify}
}

// Close implements driver.Driver.
func (d *Driver) Close() error {
	if d.closed.Swap(true) {
		return driver.ErrClosed
	}
	d.mu.Lock()
	lis := d.lis
	d.lis = nil
	d.mu.Unlock()
	if lis != nil {
		lis.stop()
	}
	d.closeTxWakes()
	if d.pool != nil {
		d.pool.Close()
	}
	return nil
}

func (d *Driver) check() error {
	if d.closed.Load() {
		return fmt.Errorf("postgres: %w", driver.ErrClosed)
	}
	return d.opened
}

// noSchema explains why the search_path yields no schema to create tables in.
func noSchema(ctx context.Context, tx querier) error {
	var path, role string
	var denied []string
	if err := tx.QueryRow(ctx, `SELECT current_setting('search_path'), current_user::text,
		COALESCE(array_agg(n.nspname::text) FILTER (WHERE NOT has_schema_privilege(n.oid, 'USAGE')), '{}')
		FROM pg_namespace n WHERE n.nspname = ANY(string_to_array(replace(current_setting('search_path'), ' ', ''), ','))`).Scan(&path, &role, &denied); err != nil {
		return err
	}
	if len(denied) > 0 {
		return fmt.Errorf("permission denied for schema %s: role %q has no USAGE on it (GRANT USAGE, CREATE ON SCHEMA %s TO %s)",
			denied[0], role, denied[0], role)
	}
	return fmt.Errorf("no schema to create tables in: no schema on search_path %q exists; create it or fix search_path in the URL", path)
}

// channel is the notification channel of a stream, "" before Migrate.
func (d *Driver) channel(streamID int64) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.notify || d.prefix == "" {
		return ""
	}
	return d.prefix + strconv.FormatInt(streamID, 10)
}

// ts is the form in which times are stored: UTC at microsecond precision.
func ts(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func logTable(streamID int64) string { return "message_log_" + strconv.FormatInt(streamID, 10) }

// versionFilter returns an SQL predicate on col for versions ("TRUE" when
// every version is read, nil) and the argument it needs, if any, as
// parameter $n.
func versionFilter(col string, versions []int, n int) (string, []any) {
	if versions == nil {
		return "TRUE", nil
	}
	return col + " = ANY($" + strconv.Itoa(n) + "::integer[])", []any{int32s(versions)}
}

func int32s(vs []int) []int32 {
	out := make([]int32, len(vs))
	for i, v := range vs {
		out[i] = int32(v)
	}
	return out
}

// headExpr is true when row m is claimable: on a compacted stream, only a head.
func headExpr(stream driver.StreamConfig) string {
	if !stream.Compacted {
		return "TRUE"
	}
	return `EXISTS (SELECT 1 FROM compaction_head h WHERE h.stream_id = ` + strconv.FormatInt(stream.ID, 10) + ` AND h.msg_key = m.msg_key AND h.head_id = m.id)`
}
