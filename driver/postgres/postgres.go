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
// How the driver's SQL keeps the contracts (commit order, claims, batch
// leases, settling, wake-ups) is in docs/internals.md, "Invariants per
// engine".
//
// # Commit order (C5)
//
// An append locks the rows of the partitions it writes in stream_partition
// before it takes ids, and holds them until it commits, so a cursor never
// passes a row that commits later. Appends to different partitions or
// streams run in parallel; producers of one partition commit one at a time
// (about 1.3k single-row transactions a second on the project's test
// machine, 2.3k without the lock): batches (ProduceBatch), more partitions
// or fewer, larger transactions recover the difference.
//
// # Lock waits and ProduceTx
//
// A transaction used with ProduceTx holds the partition lock from the
// produce until it commits or rolls back: other producers of that partition
// wait for it. Keep such transactions short, and produce last in them.
//
// Waiting for a partition lock is bounded by WithLockTimeout (10s by
// default), set for the lock statement only, so a caller's transaction
// keeps its own lock_timeout. A wait that runs out fails with ErrConflict
// naming the partition, and is not retried: inside a caller's transaction,
// roll the transaction back and retry it whole. A deadlock or serialization
// failure in a caller's transaction is ErrConflict too; the driver retries
// those only in transactions of its own. Compaction and retention take the
// same partition locks, with the same bound, before they remove rows.
//
// # Claims
//
// An idle claim costs one autocommit round trip; a claim of a backlog, of a
// consumer woken by a notification or of one that acks as it claims
// (Consumer.AckAndClaim) one or two. Claims run in short transactions,
// never across a handler, and consumers of a group take different
// partitions (SKIP LOCKED) without waiting for each other. Ack, Fail,
// Release and Extend are each one or two autocommit round trips; given a
// caller's transaction (postgres.Tx), Ack and Fail run in it (C21), and the
// driver never commits, rolls back or retries it.
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
// after a lock timeout or an unknown outcome. Passwords from the URL never
// appear in an error, also from one that does not parse.
//
// # Wake-ups
//
// Appends wake consumers with LISTEN/NOTIFY (PostgreSQL 13 or later): the
// driver's own appends carry a NOTIFY, debounced per stream; a ProduceTx
// transaction carries none, and the driver notifies for it once it has
// committed. One LISTEN connection per process serves every consumer and
// reconnects by itself. Notifications are hints: consumers keep polling, so
// a lost one only costs latency.
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
// their transaction ids are not one commit order, so commit order (C5)
// cannot be kept there.
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

// directory is the client directory, the samples and the dead letters
// (ListDead, Replay, Discard), sqldb's on this driver's scopes.
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
	claimed    driver.BatchMemo // the batches of recent claims (batch.go)
	wakes      wakeNotes        // notifications received, for the claims they wake (wakeclaim.go)
	txWakes    txWakes          // wake-ups for rows of callers' transactions (notifysend.go)
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
	d.txWakes.Close()
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

// logTable names a stream's log table.
var logTable = sqldb.LogTable

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
