// Package mysql is the sqlstreams driver for MySQL 8.0.16+ and MariaDB 10.6+,
// built on github.com/go-sql-driver/mysql.
//
//	client, err := sqlstreams.Open(ctx, mysql.Open("app:secret@tcp(db:3306)/app"))
//
// How the driver's SQL keeps the contracts (commit order, claims, batch
// leases, settling, the differences between MySQL and MariaDB, Galera) is in
// docs/internals.md, "Invariants per engine".
//
// # Connection
//
// Open takes a go-sql-driver DSN that names a database. The driver adjusts
// the parsed configuration so that stored times are right whatever the DSN
// and the server say: parseTime=true and loc=UTC (every time is stored as a
// UTC DATETIME(6) and read back as UTC), time_zone='+00:00' for the session,
// clientFoundRows=true (an UPDATE reports the rows it matched, which lease
// checks count), utf8mb4, and interpolateParams=true unless the DSN sets it
// to false (one round trip per statement instead of prepare+execute).
// multiStatements is not needed. Every connection of the pool runs at READ
// COMMITTED, the isolation queue workloads want on InnoDB (no gap locks, so
// producers and claimers on different partitions do not block each other);
// transactions begun on DB() inherit it unless sql.TxOptions asks for
// another level. A DSN that cannot be parsed, names no database or reaches
// an unsupported server fails at sqlstreams.Open with the reason.
//
// # Errors
//
// Every error carries a sentinel of package driver (re-exported by
// sqlstreams). A server that cannot be reached, refuses the login or the TLS
// handshake, is shutting down or does not answer before the context's
// deadline gives ErrUnavailable; a deadlock or a lock wait timeout gives
// ErrConflict; any other refusal by the server gives ErrDatabase, with the
// server's error inside (errors.As finds the *mysql.MySQLError). A write whose
// COMMIT, or whose statement that commits on its own, was sent but not
// answered (the connection dropped, the context ended meanwhile) gives
// ErrOutcomeUnknown: it may or may not have been applied. A failure before
// COMMIT was sent has written nothing, since the server rolls back an open
// transaction whose connection goes away. COMMIT is sent as a statement of
// its own on the transaction's connection, so that the context bounds it too
// (database/sql's Tx.Commit would wait for the server without end). The
// driver runs its own transactions again after deadlocks, lock wait
// timeouts and connections lost before COMMIT, a bounded number of times; a
// transaction passed in by the caller is never re-run. The password of the
// DSN never appears in an error, also from the parser's messages about a
// malformed DSN.
//
// # Schema
//
// Migrate applies embedded, versioned SQL files. DDL commits on its own in
// MySQL, so each statement is idempotent and a migration that died half-way
// is simply run again; processes starting at once serialize on a named lock
// (GET_LOCK) scoped to the database. Each stream's rows live in their own
// table message_log_<id> (the numeric id: a stream name never enters SQL
// text) with a BIGINT AUTO_INCREMENT id. Payloads are stored in LONGTEXT
// utf8mb4_bin, byte for byte: sqlstreams hands RawPayload bytes back exactly
// as they were produced. Headers are JSON in LONGTEXT with a JSON_VALID
// check. Compaction ranks are BIGINT, schema versions INT. Message keys are
// VARBINARY(255) (byte comparison without the trailing-space padding of
// utf8mb4_bin), names VARCHAR(128) utf8mb4_bin.
//
// Migrations, ApplyMigration and AppliedMigrations serve tools and teams
// that run migrations themselves. ApplyMigration runs one migration up or
// down under the lock Migrate holds, and refuses an Up already applied or
// whose predecessor is not, and a Down not applied, without down SQL, or
// under later applied migrations (0002, the registry, and 0004, the failure
// history, can go down; 0001 and 0003 cannot; 0007 down writes every batch
// lease back as the leased exception rows it stands for before it drops
// delivery_batch). The SQL Migrations returns is the files' text; the
// driver's directives in it are comments ("-- @unless-column ..."), so
// another tool may run the statements as they are on a database that lacks
// the migration, and then Record, which writes sqlstreams_migration. Without
// Migrate (sqlstreams.WithoutMigrate) the driver learns what the server is
// from its first connection.
//
// CheckPrivileges finds out whether the user may create and drop tables in
// the database, without creating anything, and names the GRANT to run.
//
// # Commit order (C5)
//
// An append locks the stream_partition rows of the partitions it writes
// (SELECT ... FOR UPDATE, in partition order) before it inserts, and holds
// them until commit, so a partition's ids commit in increasing order and a
// cursor never passes a row that commits later. Writers of different
// partitions run in parallel; a batch spanning partitions locks them in
// ascending order, so two batches cannot deadlock on each other.
//
// # ProduceTx and lock waits
//
// The cost of commit order is that a partition has one writer at a time: a
// transaction passed to ProduceTx holds the append lock of its partitions
// until the caller commits, and other producers of those partitions wait for
// it. The wait is bounded: on MariaDB the lock is taken with FOR UPDATE WAIT
// n, n being WithLockTimeout (default 10s) rounded up to whole seconds; on
// MySQL 8, which has no WAIT clause, by the session's
// innodb_lock_wait_timeout (50s unless the server or the DSN says otherwise,
// for example ?innodb_lock_wait_timeout=10). A wait that ends fails with
// ErrConflict naming the partition, and the driver does not retry it.
// Several ProduceTx calls in one transaction lock partitions in call order,
// so two such transactions can deadlock: InnoDB then rolls one back, which
// fails with ErrConflict; roll that transaction back and run it again, or
// produce with one ProduceBatch, which locks partitions in a fixed order.
// Compact or Retain removing the newest row of a partition (which records
// the partition's high-water mark on its lock row), Retain on a compacted
// stream, registering a group at StartLatest and DestroyStream wait for the
// same locks, as long.
//
// # Claims and settling
//
// Claims run in short transactions, never while a handler runs; most idle
// polls end after one query without a transaction. Consumers of a group
// spread over partitions without waiting (SKIP LOCKED). Ack, Fail, Release
// and Extend settle each delivery on its own and report exactly those no
// longer leased with their token (C20). Ack and Fail given the caller's
// transaction (C21) neither commit nor roll it back: the settled deliveries
// stay locked until the caller ends it. Every failure is appended to the
// delivery's failure history, its error cut to driver.MaxHistoryError bytes
// there and kept whole as the last error.
//
// # Galera Cluster
//
// On a MariaDB Galera Cluster node (wsrep_on, detected by the first
// connection; Server reports it) every transaction is certified at COMMIT
// against those committed meanwhile on other nodes. The driver orders
// appends cluster-wide by also writing its partitions' lock rows, relies on
// certification for claims and settles, and sets wsrep_sync_wait = 1 on
// each session unless the DSN sets wsrep_sync_wait. A conflict fails the
// later commit with 1213: the driver runs its own transaction again, and a
// ProduceTx transaction fails at the caller's COMMIT, to be run again. 1047
// (a node outside the primary component) is ErrUnavailable, 1180 at COMMIT
// ErrOutcomeUnknown.
//
// Requirements: binlog_format=ROW, InnoDB, innodb_autoinc_lock_mode=2
// (Galera's own). Keep wsrep_auto_increment_control ON, Galera's default:
// inserts through different nodes then never pick one id, and only appends
// to the same partition conflict; Health's cursor distance (a raw id
// difference, C13) can then reach the cluster's size times the rows behind.
// With the control OFF and auto_increment_increment=1, concurrent appends
// conflict cluster-wide whatever their partitions, and fail with
// ErrConflict once the driver's retries run out. Migrate takes a lock row
// (sqlstreams_migration_lock) instead of GET_LOCK, which is node-local.
// Appends to one partition through several nodes conflict by design; spread
// partitions' writers over nodes, or write through one node, to keep
// retries rare.
//
// # Other MySQL-wire engines
//
// Migrate refuses, with ErrUnsupportedServer naming what is missing, TiDB
// (SKIP LOCKED does not skip; AUTO_INCREMENT is not in commit order across
// TiDB servers) and Vitess's vtgate (ids from sequences across shards).
package mysql

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"sync/atomic"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// The interfaces the driver implements, the optional ones included.
var (
	_ driver.Driver          = (*Driver)(nil)
	_ driver.Registry        = (*Driver)(nil)
	_ driver.ClientDirectory = (*Driver)(nil)
	_ driver.GroupPauser     = (*Driver)(nil)
	_ driver.Alterer         = (*Driver)(nil)
	_ driver.RevisionDeleter = (*Driver)(nil)
	_ driver.SampleStore     = (*Driver)(nil)
)

// Pool sizes set by Open; change them through DB().
const (
	DefaultMaxOpenConns = 32
	DefaultMaxIdleConns = 8
)

// DefaultLockTimeout is how long, by default, an append waits on MariaDB for
// the append lock of a partition that another transaction holds.
const DefaultLockTimeout = 10 * time.Second

// directory is the client directory, the samples and the dead letters
// (ListDead, Replay, Discard), sqldb's on this driver's scopes.
type directory = sqldb.Directory[time.Time]

// Driver is the MySQL/MariaDB driver. Create it with Open.
type Driver struct {
	directory   // RecordClient, ListClients, ..., PruneSamples
	db          *sql.DB
	where       string // user@addr/db, for messages (no password)
	secrets     []string
	lockTimeout time.Duration
	closed      atomic.Bool
	opened      error

	// Read from the server by the first connection and by Migrate.
	autoincStep atomic.Int64 // auto_increment_increment; 0 = read ids back
	mariadb     atomic.Bool  // FOR UPDATE WAIT n and DELETE ... RETURNING
	detected    atomic.Bool  // the two above are set

	privilegeProbes atomic.Int64 // CheckPrivileges that asked the server with DDL

	gal galeraState // Galera Cluster (galera.go)

	batches batchCache // the batches this driver's claims wrote (batchcache.go)
	// next notes, per group, the partition whose new rows filled the
	// driver's last claim of it (claimHot).
	next driver.NextClaim[driver.Streak]
	// watching are the readers of each subscribed stream's newest id that
	// wake its consumers (notify.go).
	watching watches

	// Test hooks, set before Migrate.
	forceReadBack    bool // always read new ids back
	forceAppendTx    bool // append in a transaction, never in one statement
	forceNoReturning bool // settle as on MySQL, without RETURNING
}

// Option configures Open.
type Option func(*Driver)

// WithLockTimeout sets how long an append waits for the append lock of a
// partition that another transaction holds (an open ProduceTx transaction)
// before it fails with ErrConflict. The default is DefaultLockTimeout; zero
// or less restores it. MariaDB counts whole seconds, so d is rounded up to
// one; MySQL 8 ignores it and waits innodb_lock_wait_timeout (see the
// package documentation).
func WithLockTimeout(d time.Duration) Option { return func(drv *Driver) { drv.lockTimeout = d } }

// Open returns a driver for the database named by dsn, a go-sql-driver DSN
// such as "user:password@tcp(127.0.0.1:3306)/app". It does not connect:
// errors, including a DSN that does not parse, surface from sqlstreams.Open.
func Open(dsn string, opts ...Option) *Driver {
	d := &Driver{lockTimeout: DefaultLockTimeout}
	d.directory = directory{Store: store, Write: sqldb.Over(d.autocommit), Read: sqldb.Over(d.read)}
	for _, o := range opts {
		o(d)
	}
	if d.lockTimeout <= 0 {
		d.lockTimeout = DefaultLockTimeout
	}
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		// The parser's message may quote pieces of the DSN: keep only a
		// scrubbed copy, so that no unwrapped error shows the password.
		d.secrets = dsnSecrets(dsn)
		d.opened = d.unusable(fmt.Errorf("mysql: parse DSN: %s", driver.ScrubEverywhere(err.Error(), d.secrets...)),
			"write the DSN as user:password@tcp(host:3306)/dbname (a go-sql-driver DSN, not a URL)")
		return d
	}
	d.secrets = driver.Secrets(cfg.Passwd)
	d.gal.dsnSyncWait = dsnSetsParam(cfg.Params, "wsrep_sync_wait")
	d.where = cfg.User + "@" + cfg.Addr + "/" + cfg.DBName
	if cfg.DBName == "" {
		d.opened = d.unusable(fmt.Errorf("mysql %s: the DSN names no database", d.where), "end the DSN with /dbname, as in user:password@tcp(host:3306)/app")
		return d
	}
	if err := configure(cfg, dsn); err != nil {
		d.opened = d.unusable(fmt.Errorf("mysql %s: %w", d.where, err), "fix the DSN's parameters")
		return d
	}
	conn, err := gomysql.NewConnector(cfg)
	if err != nil {
		d.opened = d.unusable(fmt.Errorf("mysql %s: %w", d.where, err), "fix the DSN's parameters")
		return d
	}
	d.db = sql.OpenDB(&connector{Connector: conn, d: d})
	d.db.SetMaxOpenConns(DefaultMaxOpenConns)
	d.db.SetMaxIdleConns(DefaultMaxIdleConns)
	d.db.SetConnMaxLifetime(30 * time.Minute)
	d.db.SetConnMaxIdleTime(5 * time.Minute)
	return d
}

// unusable is the error of a driver that cannot be used at all.
func (d *Driver) unusable(err error, advice string) error {
	return &driver.Error{Kind: driver.ErrUnavailable, Advice: "the database cannot be opened: " + advice, Err: driver.Redact(err, d.secrets...)}
}

// DB returns the connection pool, on which to begin transactions for
// ProduceTx. Its connections run at READ COMMITTED with UTC times.
func (d *Driver) DB() *sql.DB { return d.db }

// driverName is the driver's name: Name, and the adapter of a caller's
// transaction (driver.AdaptedTx).
const driverName = "mysql"

// Name implements driver.Driver.
func (d *Driver) Name() string { return driverName }

// Capabilities implements driver.Driver.
func (d *Driver) Capabilities() driver.Capabilities {
	// Notify: Subscribe wakes consumers when another process appends
	// (notify.go), as NOTIFY does on PostgreSQL.
	return driver.Capabilities{Notify: true}
}

// Close implements driver.Driver.
func (d *Driver) Close() error {
	if d.closed.Swap(true) {
		return driver.ErrClosed
	}
	if d.db != nil {
		return d.wrap(context.Background(), d.db.Close(), opRead)
	}
	return nil
}

func (d *Driver) check() error {
	if d.closed.Load() {
		return fmt.Errorf("mysql %s: %w", d.where, driver.ErrClosed)
	}
	return d.opened
}

// timeLayout is how times are written: UTC, microseconds. Writing strings
// rather than time.Time keeps stored times independent of the loc setting of
// whichever connection (the caller's, for ProduceTx) carries them.
const timeLayout = "2006-01-02 15:04:05.000000"

func ts(t time.Time) string { return t.UTC().Truncate(time.Microsecond).Format(timeLayout) }

// utc reads a DATETIME(6) written by ts.
func utc(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// logTable names a stream's log table.
var logTable = sqldb.LogTable

// idChunk bounds the ids (or keys) one statement names.
const idChunk = 500
