// Package mysql is the sqlstreams driver for MySQL 8.0+ and MariaDB 10.6+,
// built on github.com/go-sql-driver/mysql.
//
//	client, err := sqlstreams.Open(ctx, mysql.Open("app:secret@tcp(db:3306)/app"))
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
// password of the DSN never appears in an error: the driver scrubs it, also
// from the parser's messages about a malformed DSN.
//
// # Schema
//
// Migrate applies embedded, versioned SQL files. DDL commits on its own in
// MySQL, so each statement is idempotent (IF NOT EXISTS, or a guard that
// looks at information_schema first) and a migration that died half-way is
// simply run again; processes starting at once serialize on a named lock
// (GET_LOCK) scoped to the database. Each stream's rows live in their own
// table message_log_<id> (the numeric id: a stream name never enters SQL
// text) with a BIGINT AUTO_INCREMENT id. Payloads are stored in LONGTEXT
// utf8mb4_bin, byte for byte: sqlstreams hands RawPayload bytes back exactly
// as they were produced, and checks before writing that a payload is valid
// UTF-8 JSON, so the log has no JSON check of its own (MariaDB's JSON_VALID
// refuses valid documents nested deeper than 32; MySQL's JSON type would
// re-encode the document). Headers are JSON in LONGTEXT with a JSON_VALID
// check. Compaction ranks are BIGINT, schema versions INT. Message keys are
// VARBINARY(255) (byte comparison without the trailing-space padding of
// utf8mb4_bin), names VARCHAR(128) utf8mb4_bin. CreateStream and
// DestroyStream cannot be atomic (CREATE/DROP TABLE commit on their own): the
// config row is written first and a missing log table is re-created on first
// use; a destroyed stream's rows and config go in one transaction before its
// table is dropped.
//
// Migrations, ApplyMigration and AppliedMigrations serve tools and teams
// that run migrations themselves. ApplyMigration runs one migration up or
// down under the lock Migrate holds, and refuses an Up already applied or
// whose predecessor is not, and a Down not applied, without down SQL, or
// under later applied migrations (0002, the registry, and 0004, the failure
// history, can go down; 0001 and 0003 cannot; 0007 down writes every batch
// lease back as the leased exception rows it stands for before it drops
// delivery_batch). A migration is not one
// transaction (DDL commits on its own) but each of its statements is
// idempotent, so one that died half-way is run again. The SQL Migrations
// returns is the files' text; the driver's directives in it are comments
// ("-- @unless-column ..."), so another tool may run the statements as they
// are on a database that lacks the migration, and then Record, which
// writes sqlstreams_migration. Without Migrate (sqlstreams.WithoutMigrate)
// the driver learns what the server is from its first connection.
//
// CheckPrivileges finds out whether the user may create and drop tables in
// the database, without creating anything. information_schema answers when
// it shows the user's own CREATE and DROP, global or granted on exactly
// this database. Otherwise (privileges through a role or a pattern, which
// it does not resolve, or none) the server itself decides: CREATE TABLE p
// LIKE q and DROP TABLE q for names that do not exist fail on the missing
// privilege when it is missing (the server checks privileges first) and on
// the missing table otherwise, which follows the server's own precedence
// between grants. The error names the GRANT to run.
//
// # Commit order (C5)
//
// AUTO_INCREMENT values are handed out when a row is inserted, not when its
// transaction commits, and neither engine offers a snapshot function like
// Postgres's pg_snapshot_xmin. So Append serializes writers per (stream,
// partition): before inserting it locks the stream_partition rows of the
// partitions it writes with SELECT ... ORDER BY partition FOR UPDATE and
// holds them until commit. A writer to a partition therefore takes its ids
// only after the previous writer of that partition has committed, ids of a
// partition are committed in increasing order, and a claim that reads
// "id > cursor" at any instant sees a gap-free prefix of the partition: it can
// never pass a row that commits later. Writers of different partitions run in
// parallel (cursors are per partition). A batch spanning partitions locks
// them in ascending order, so two batches cannot deadlock on each other.
// This was chosen over assigning ids from a per-stream counter row (which
// would serialize every partition of a stream) and works the same on MySQL
// and MariaDB.
//
// On MariaDB an append of the driver's own that fits one INSERT (not
// ProduceTx, not Galera, not a compacted stream) is that INSERT alone, in
// autocommit: the first row's partition is a scalar subquery that takes the
// same locks, FOR UPDATE WAIT n, and fails the statement when a lock row is
// missing. The server evaluates it before it inserts the first row, which
// is when a simple INSERT takes its AUTO_INCREMENT values, and the locks
// are held until the statement commits: the same order, in one round trip
// instead of four. A connection lost after that INSERT was sent gives
// ErrOutcomeUnknown, as a lost COMMIT does.
//
// The ids of one multi-row INSERT are consecutive when
// innodb_autoinc_lock_mode is 0 or 1 (MariaDB's default); with 2 (MySQL 8's
// default) the driver reads its new ids back from the partitions it holds.
// Both engines persist the AUTO_INCREMENT counter across restarts (MySQL 8,
// MariaDB 10.2.4+), so ids are never reused below a cursor.
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
// Claims run in short transactions, never while a handler runs. A claim
// first reads, in one query without a transaction, the group, whether
// anything is due for it and which partitions have rows past its cursors;
// most polls end there. A claim that follows one which filled its limit
// from a partition's new rows (a backlog) skips that read: it locks that
// partition's cursor at once, in a statement that also finds out whether
// anything is due. Cursor rows and due exceptions are locked FOR UPDATE
// SKIP LOCKED, so consumers of a group spread over partitions without
// waiting. A claim reads the group's configuration again after its first
// cursor lock (or, when other claimers hold every cursor, with a shared
// lock on the group row), and RegisterGroup locks every cursor before it
// changes the configuration, so a claim filters with the configuration it
// commits under (C19). InnoDB deadlocks (1213) re-run the driver's own
// transaction a few times, lock wait timeouts (1205) at most twice, a
// connection lost before COMMIT was sent twice; a transaction passed in by
// the caller is never re-run, so its error goes back to the caller.
//
// The main claim leases the rows it takes from a partition as one
// delivery_batch row listing their ids (a JSON array in text), written in
// the transaction that moves the cursor. A batch stands for exactly the
// leased exception rows, one per delivery, that it replaces: whatever is not
// a fast path first writes those rows for the members it names
// ("materializes" them) and removes them from the batch, then runs the
// per-delivery statements. The fast paths: an Ack removes members from their
// batch (deleting it when none is left), an Extend naming every remaining
// member moves the batch's lease; for a batch this driver claimed that is one
// statement naming the batch and the ids the driver expects it to hold,
// compared as text. A claim explodes the group's expired batches (up to 100,
// FOR UPDATE SKIP LOCKED) into leased exception rows before its exception
// pass. Ordered groups count a batch as a pending exception of its
// partition; Health counts members as leased exceptions at their rows'
// versions; soft retention keeps every row from a stream's lowest batch
// member on; hard retention, compaction and SetCursors materialize the
// batches they reach first. A delivery failed, released or extended alone
// has an exception row of its own, which every path reads (and so are the
// rows an older release leased: docs/decisions.md, "One lease model").
//
// Ack, Fail, Release and Extend settle each delivery on its own and report
// exactly those no longer leased with their token (C20). On exception rows,
// one delivery is one statement whose matched-row count says whether it
// changed; several are, on MariaDB, one DELETE ... RETURNING for Ack, else
// one transaction that first locks the batches of the tokens named and the
// deliveries' rows (SELECT ... FOR UPDATE) and then changes exactly those
// still leased with their token. Leases a statement left unchanged are
// looked for in batches before they are reported lost. Ack and Fail given
// the caller's transaction (C21) materialize their batch members in a
// transaction of the driver's own, then take the locking path in the
// caller's, whatever the engine and the pool it came from, and neither
// commit nor roll it back: the settled deliveries stay locked until the
// caller ends it.
//
// Every failure, and the claim's burying of a lease that expired on the last
// attempt, appends {"attempt", "error", "at", "holder"} to the delivery's
// failure history (a JSON array in LONGTEXT) with JSON_ARRAY_APPEND, in the
// statement that records it; the error is cut to driver.MaxHistoryError
// bytes there, and kept whole as the last error.
//
// SetCursors locks every cursor of the group as RegisterGroup does, waiting
// for claims in flight (bounded like an append's wait). A cursor moved back
// makes the main claim meet rows the group already has an exception for: it
// passes over them (looking rows up only where the group's newest exception
// lies past the cursor) and goes on reading to fill the limit. ReadRows
// reads the log in bounded windows along the (partition, id) index or the
// primary key, returning payloads only for the rows its filter keeps.
//
// # Differences between MySQL and MariaDB
//
// The first connection and Migrate tell the engines apart by VERSION(). The
// driver uses SQL both accept, except for FOR UPDATE WAIT n and DELETE ...
// RETURNING, which it uses on MariaDB only. Elsewhere it avoids what one of them lacks: no
// FOR UPDATE OF (MariaDB lacks it; exception rows and log rows are read in
// separate statements so only the exception rows are locked), no
// INSERT ... RETURNING (MySQL lacks it), no row alias in ON DUPLICATE KEY
// UPDATE (MariaDB lacks it), no ADD COLUMN IF NOT EXISTS (MySQL lacks it),
// isolation set with SET SESSION TRANSACTION (the variable is
// transaction_isolation on MySQL 8 and tx_isolation on MariaDB before 11.1),
// and LONGTEXT instead of MySQL's JSON type. CHECK constraints are enforced
// from MySQL 8.0.16 and all MariaDB 10.6.
//
// # Galera Cluster
//
// On a MariaDB Galera Cluster node (wsrep_on, detected by the first
// connection; Server reports it) every transaction is certified at COMMIT
// against those committed meanwhile on other nodes, by the rows it wrote,
// not the rows it locked. Locks are node-local. The driver therefore:
//
//   - orders appends cluster-wide: an append also writes its partitions'
//     lock rows (stream_partition.high_water, the highest id the partition
//     has had, raised to the new newest id), so of two appends to one
//     partition through different nodes the later to commit fails
//     certification and rolls back whole. The driver runs its own
//     transaction again; a ProduceTx transaction fails at the caller's
//     COMMIT with error 1213, to be run again. A committed row's id is thus
//     above every id its partition committed before it, and a claim on any
//     node sees a gap-free prefix (C5);
//   - relies on certification for claims and settles: two nodes leasing
//     past one cursor, or settling and re-leasing one delivery, write the
//     same row, and the later fails with 1213 and is run again, so a lease
//     is never held twice;
//   - sets wsrep_sync_wait = 1 on each session (unless the DSN sets
//     wsrep_sync_wait), so a read sees every transaction committed anywhere
//     before it began: a group registered through one node is found by a
//     claim through another;
//   - maps 1047 (a node outside the primary component) to ErrUnavailable,
//     and 1180 at COMMIT (the node failed while committing; the others may
//     have applied it) to ErrOutcomeUnknown.
//
// Requirements: binlog_format=ROW, InnoDB, innodb_autoinc_lock_mode=2
// (Galera's own). The driver reads new ids back on a Galera node whatever
// the lock mode. Keep wsrep_auto_increment_control ON, Galera's default:
// each node then takes ids stepped by the cluster's size from an offset of
// its own (node 1 takes 1, 4, 7 in a 3-node cluster, until it sees a
// higher id), so inserts through different nodes never pick one id and
// only appends to the same partition conflict. Nothing in sqlstreams needs
// dense ids: ids increase in commit order per partition (C5), cursors are
// ids, and Health's counts (unread rows, a group's lag) count rows. Its
// cursor distance is, as on every driver, the high-water id minus the
// cursor (C13): a raw figure, which already spans the ids of a stream's
// other partitions and on Galera also the ids the step leaves out, so it
// can reach the cluster's size times the rows behind. With the control OFF
// and auto_increment_increment=1 every node counts from the same value:
// inserts through two nodes at once take one id, one fails certification
// (or on the primary key) and is run again, or fails with ErrConflict once
// the driver's retries run out: concurrent appends conflict cluster-wide,
// whatever their partitions. GET_LOCK is node-local, so Migrate's lock is
// a row instead (sqlstreams_migration_lock, in the migrated database):
// members starting through several nodes at once migrate once. Appends to
// one partition through several nodes conflict by design; spread
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

// directory is the client directory and the samples, sqldb's on this
// driver's scopes.
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
