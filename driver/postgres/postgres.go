// Package postgres is the PostgreSQL sqlstreams driver, built on pgx/v5 and
// its connection pool.
//
//	client, err := sqlstreams.Open(ctx, postgres.Open("postgres://app@db/app"))
//
// Every table lives in the first schema of the connection's search_path (set
// it with the URL parameter search_path=...). Payloads and headers are
// jsonb, times timestamptz in UTC, ids bigint; each stream's rows live in a
// table message_log_<id>, so a stream name never enters SQL text.
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
// parallel.
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
// A transaction used with ProduceTx holds the partition lock from the
// produce until it commits or rolls back: other producers of that partition
// wait for it. Keep such transactions short, and produce last in them.
//
// # Claims
//
// The main claim locks one group cursor at a time with FOR UPDATE SKIP
// LOCKED, so consumers of a group claim different partitions at once and
// never wait for each other; the exception claim locks exception rows the
// same way. Claim transactions are short: they never span a handler.
// Serialization failures and deadlocks are retried inside the driver.
//
// # Wake-ups
//
// Append transactions send a NOTIFY on a channel derived from the schema and
// stream id, delivered at commit: every ProduceTx transaction, and the
// driver's own appends debounced to one per stream per 5ms with a trailing
// one after a burst (PostgreSQL serializes the commits of notifying
// transactions cluster-wide). The driver keeps one LISTEN connection per
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
// session of its own.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Driver is the PostgreSQL driver. Create it with Open.
type Driver struct {
	cfg    *pgxpool.Config
	listen *pgx.ConnConfig // the LISTEN connection's config
	pool   *pgxpool.Pool
	opened error
	closed atomic.Bool
	notify bool

	mu           sync.Mutex
	prefix       string // notification channel prefix, known after Migrate
	lis          *listener
	notifyStates sync.Map // stream id -> *notifyState
}

// Option configures Open.
type Option func(*options)

type options struct {
	simple    bool
	noNotify  bool
	listenURL string
	config    []func(*pgxpool.Config)
}

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

// WithPoolConfig lets fn adjust the pool configuration parsed from the URL
// (pool size, connection hooks, TLS) before the pool is created.
func WithPoolConfig(fn func(*pgxpool.Config)) Option {
	return func(o *options) { o.config = append(o.config, fn) }
}

// Open returns a driver for the database at url, a PostgreSQL URL or
// key=value connection string as pgx accepts it. It does not connect:
// connection errors (a wrong host, database or password) surface from
// sqlstreams.Open with the server's reason.
func Open(url string, opts ...Option) *Driver {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	d := &Driver{notify: !o.noNotify}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		d.opened = fmt.Errorf("postgres: %w", err)
		return d
	}
	if o.simple {
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	}
	for _, fn := range o.config {
		fn(cfg)
	}
	d.cfg, d.listen = cfg, cfg.ConnConfig
	if o.listenURL != "" {
		if d.listen, err = pgx.ParseConfig(o.listenURL); err != nil {
			d.opened = fmt.Errorf("postgres: listen URL: %w", err)
			return d
		}
	}
	d.pool, err = pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		d.opened = fmt.Errorf("postgres: %w", err)
	}
	return d
}

// Pool returns the connection pool, on which to begin transactions for
// ProduceTx. It is nil when the URL could not be parsed.
func (d *Driver) Pool() *pgxpool.Pool { return d.pool }

// Tx adapts a transaction for Producer.ProduceTx. The transaction must be on
// the database the driver uses (for example begun on Pool()).
func Tx(tx pgx.Tx) driver.Tx { return txAdapter{tx} }

type txAdapter struct{ tx pgx.Tx }

func (txAdapter) DriverName() string { return "postgres" }

// Name implements driver.Driver.
func (d *Driver) Name() string { return "postgres" }

// Capabilities implements driver.Driver.
func (d *Driver) Capabilities() driver.Capabilities {
	return driver.Capabilities{SkipLocked: true, Notify: d.notify}
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

// migrationLock is the advisory lock key space for migrations; the key
// also depends on the schema, so that schemas migrate independently.
const migrationLock = "sqlstreams.migrate."

// Migrate implements driver.Driver. All pending migrations run in one
// transaction that first takes a transaction-level advisory lock, so
// processes starting at once apply each migration exactly once.
func (d *Driver) Migrate(ctx context.Context) error {
	if err := d.check(); err != nil {
		return err
	}
	ms, err := driver.ReadMigrations(migrations, "migrations")
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	var schema, database string
	err = d.inTx(ctx, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT current_database(), COALESCE(current_schema(), '')`).Scan(&database, &schema); err != nil {
			return err
		}
		if schema == "" {
			return noSchema(ctx, tx)
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1::text, 0))`, migrationLock+schema); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS sqlstreams_migration (version integer PRIMARY KEY, applied_at timestamptz NOT NULL)`); err != nil {
			return err
		}
		for _, m := range ms {
			var applied bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sqlstreams_migration WHERE version = $1::integer)`, m.Version).Scan(&applied); err != nil {
				return err
			}
			if applied {
				continue
			}
			if _, err := tx.Conn().PgConn().Exec(ctx, m.SQL).ReadAll(); err != nil {
				return fmt.Errorf("migration %s: %w", m.Name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO sqlstreams_migration (version, applied_at) VALUES ($1::integer, $2::timestamptz)`, m.Version, ts(time.Now())); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	h := fnv.New64a()
	h.Write([]byte(database + "\x00" + schema))
	d.mu.Lock()
	d.prefix = fmt.Sprintf("sqlstreams_%016x_", h.Sum64())
	d.mu.Unlock()
	return nil
}

// noSchema explains why the search_path yields no schema to create tables in.
func noSchema(ctx context.Context, tx pgx.Tx) error {
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

// maxRetries bounds how often a transaction is retried after a serialization
// failure, a deadlock or a connection that failed before anything was sent.
const maxRetries = 20

// retryable reports errors after which running the whole transaction again
// is safe and likely to succeed.
func retryable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "40001", "40P01": // serialization_failure, deadlock_detected
			return true
		}
		return false
	}
	return pgconn.SafeToRetry(err)
}

// retry runs fn until it succeeds, fails for good, or ctx ends.
func (d *Driver) retry(ctx context.Context, fn func() error) error {
	if err := d.check(); err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		err := fn()
		if err == nil || attempt >= maxRetries || !retryable(err) || ctx.Err() != nil {
			if err != nil && d.closed.Load() {
				return fmt.Errorf("postgres: %w (%v)", driver.ErrClosed, err)
			}
			return err
		}
		backoff := time.Duration(1+rand.IntN(1<<min(attempt, 6))) * time.Millisecond
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
	}
}

// inTx runs fn in a new read committed transaction that commits when fn
// succeeds, retrying the whole transaction after serialization failures and
// deadlocks.
func (d *Driver) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return d.retry(ctx, func() error { return pgx.BeginFunc(ctx, d.pool, fn) })
}

// claimTx is inTx for the main claim. It turns bitmap scans off for the
// transaction: on a log whose statistics are missing or stale (a new stream,
// before autovacuum's first analyze) the planner would otherwise read every
// row past the cursor and sort them instead of walking the (partition, id)
// index for the few rows it needs. The setting travels with BEGIN: no extra
// round trip.
func (d *Driver) claimTx(ctx context.Context, fn func(pgx.Tx) error) error {
	opts := pgx.TxOptions{BeginQuery: "BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL enable_bitmapscan = off"}
	return d.retry(ctx, func() error { return pgx.BeginTxFunc(ctx, d.pool, opts, fn) })
}

// readTx runs fn in a read-only repeatable read transaction: one snapshot.
func (d *Driver) readTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return d.retry(ctx, func() error {
		return pgx.BeginTxFunc(ctx, d.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
	})
}

// ts is the form in which times are stored: UTC at microsecond precision.
func ts(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func logTable(streamID int64) string { return "message_log_" + strconv.FormatInt(streamID, 10) }

func isUnique(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

func dedupe(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}

// versionFilter returns an SQL predicate on col for the request's versions
// ("TRUE" when every version is read) and the argument it needs, if any, as
// parameter $n.
func versionFilter(col string, versions []int, n int) (string, []any) {
	if versions == nil {
		return "TRUE", nil
	}
	vs := make([]int32, len(versions))
	for i, v := range versions {
		vs[i] = int32(v)
	}
	return col + " = ANY($" + strconv.Itoa(n) + "::integer[])", []any{vs}
}

// headExpr is true when row m is claimable: on a compacted stream, only a head.
func headExpr(stream driver.StreamConfig) string {
	if !stream.Compacted {
		return "TRUE"
	}
	return `EXISTS (SELECT 1 FROM compaction_head h WHERE h.stream_id = ` + strconv.FormatInt(stream.ID, 10) + ` AND h.msg_key = m.msg_key AND h.head_id = m.id)`
}
