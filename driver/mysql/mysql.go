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
// # Schema
//
// Migrate applies embedded, versioned SQL files. DDL commits on its own in
// MySQL, so each statement is idempotent (IF NOT EXISTS) and a migration that
// died half-way is simply run again; processes starting at once serialize on
// a named lock (GET_LOCK) scoped to the database. Each stream's rows live in
// their own table message_log_<id> (the numeric id: a stream name never
// enters SQL text) with a BIGINT AUTO_INCREMENT id. Payloads and headers are
// JSON held in LONGTEXT with a JSON_VALID check on both engines. That is
// what MariaDB's JSON type is; MySQL's native JSON type would re-encode the
// document (key order, spacing), and sqlstreams hands RawPayload bytes back
// exactly as they were produced. Message keys are VARBINARY(255) (byte
// comparison without the trailing-space padding of utf8mb4_bin), names
// VARCHAR(128) utf8mb4_bin. CreateStream and DestroyStream cannot be atomic
// (CREATE/DROP TABLE commit on their own): the config row is written first and
// a missing log table is re-created on first use; a destroyed stream's rows
// and config go in one transaction before its table is dropped.
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
// and MariaDB. The cost is that a partition has one writer at a time: a
// transaction passed to ProduceTx holds its partitions until the caller
// commits, and other producers of those partitions wait for it. Several
// ProduceTx calls in one transaction lock partitions in call order; produce
// them with one ProduceBatch to lock them in a fixed order.
//
// The ids of one multi-row INSERT are consecutive when
// innodb_autoinc_lock_mode is 0 or 1 (MariaDB's default); with 2 (MySQL 8's
// default) the driver reads its new ids back from the partitions it holds.
// Both engines persist the AUTO_INCREMENT counter across restarts (MySQL 8,
// MariaDB 10.2.4+), so ids are never reused below a cursor.
//
// # Claims
//
// Claims run in short transactions, never while a handler runs. The main
// claim locks a group's cursor row per partition with FOR UPDATE SKIP LOCKED,
// so consumers of a group spread over partitions without waiting; the
// exception claim locks due exception rows the same way. InnoDB deadlocks
// (1213) and lock wait timeouts (1205) roll back and re-run the whole
// transaction inside the driver, as does a connection lost before COMMIT
// was sent; only a transaction passed in by the caller cannot be re-run, so
// its error goes back to the caller. A connection lost during COMMIT is
// reported as an error whose outcome is unknown, never as success.
//
// # Differences between MySQL and MariaDB
//
// The driver uses SQL both accept. Where they differ it avoids the feature:
// no FOR UPDATE OF (MariaDB lacks it; exception rows and log rows are read in
// separate statements so only the exception rows are locked), no
// INSERT ... RETURNING (MySQL lacks it), no row alias in ON DUPLICATE KEY
// UPDATE (MariaDB lacks it), isolation set with SET SESSION TRANSACTION
// (the variable is transaction_isolation on MySQL 8 and tx_isolation on
// MariaDB before 11.1), and LONGTEXT+JSON_VALID instead of MySQL's JSON type.
// CHECK constraints are enforced from MySQL 8.0.16 and all MariaDB 10.6.
package mysql

import (
	"context"
	"crypto/sha1"
	"database/sql"
	sqldriver "database/sql/driver"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Pool sizes set by Open; change them through DB().
const (
	DefaultMaxOpenConns = 32
	DefaultMaxIdleConns = 8
)

// Driver is the MySQL/MariaDB driver. Create it with Open.
type Driver struct {
	db     *sql.DB
	where  string // user@addr/db, for messages (no password)
	closed atomic.Bool
	opened error

	// Set by Migrate from the server.
	autoincStep   atomic.Int64 // auto_increment_increment; 0 = read ids back
	forceReadBack bool         // tests: always read new ids back
}

// Open returns a driver for the database named by dsn, a go-sql-driver DSN
// such as "user:password@tcp(127.0.0.1:3306)/app". It does not connect:
// errors, including a DSN that does not parse, surface from sqlstreams.Open.
func Open(dsn string) *Driver {
	d := &Driver{}
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		d.opened = fmt.Errorf("mysql: parse DSN: %w; write it as user:password@tcp(host:3306)/dbname", err)
		return d
	}
	d.where = cfg.User + "@" + cfg.Addr + "/" + cfg.DBName
	if cfg.DBName == "" {
		d.opened = fmt.Errorf("mysql %s: the DSN names no database; end it with /dbname, as in user:password@tcp(host:3306)/app", d.where)
		return d
	}
	if err := configure(cfg, dsn); err != nil {
		d.opened = fmt.Errorf("mysql %s: %w", d.where, err)
		return d
	}
	conn, err := gomysql.NewConnector(cfg)
	if err != nil {
		d.opened = fmt.Errorf("mysql %s: %w", d.where, err)
		return d
	}
	d.db = sql.OpenDB(sessionConnector{conn})
	d.db.SetMaxOpenConns(DefaultMaxOpenConns)
	d.db.SetMaxIdleConns(DefaultMaxIdleConns)
	d.db.SetConnMaxLifetime(30 * time.Minute)
	d.db.SetConnMaxIdleTime(5 * time.Minute)
	return d
}

var interpolateOff = regexp.MustCompile(`[?&]interpolateParams=(false|0)(&|$)`)

// configure sets what the driver relies on, whatever the DSN said.
func configure(cfg *gomysql.Config, dsn string) error {
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.ClientFoundRows = true
	// Errors reach the caller, and Run logs them; the driver's own log
	// would repeat them on stderr.
	cfg.Logger = &gomysql.NopLogger{}
	cfg.InterpolateParams = !interpolateOff.MatchString(dsn)
	params := map[string]string{}
	for k, v := range cfg.Params {
		if !strings.EqualFold(k, "time_zone") {
			params[k] = v
		}
	}
	params["time_zone"] = "'+00:00'"
	cfg.Params = params
	collation := "utf8mb4_general_ci"
	if strings.HasPrefix(cfg.Collation, "utf8mb4_") {
		collation = cfg.Collation
	}
	return cfg.Apply(gomysql.Charset("utf8mb4", collation))
}

// sessionConnector sets the session isolation on every new connection.
type sessionConnector struct{ sqldriver.Connector }

func (c sessionConnector) Connect(ctx context.Context) (sqldriver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	ex, ok := conn.(sqldriver.ExecerContext)
	if !ok {
		conn.Close()
		return nil, errors.New("mysql: connection cannot execute statements")
	}
	if _, err := ex.ExecContext(ctx, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", nil); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// DB returns the connection pool, on which to begin transactions for
// ProduceTx. Its connections run at READ COMMITTED with UTC times.
func (d *Driver) DB() *sql.DB { return d.db }

// Tx adapts a transaction for Producer.ProduceTx. Begin it on DB(), or on
// another pool connected to the same database; the rows become visible when
// the caller commits. While it is open the transaction holds the partitions
// it produced to (see the package documentation on commit order).
func Tx(tx *sql.Tx) driver.Tx { return txAdapter{tx} }

type txAdapter struct{ tx *sql.Tx }

func (txAdapter) DriverName() string { return "mysql" }

// Name implements driver.Driver.
func (d *Driver) Name() string { return "mysql" }

// Capabilities implements driver.Driver.
func (d *Driver) Capabilities() driver.Capabilities {
	return driver.Capabilities{SkipLocked: true}
}

// Close implements driver.Driver.
func (d *Driver) Close() error {
	if d.closed.Swap(true) {
		return driver.ErrClosed
	}
	if d.db != nil {
		return d.db.Close()
	}
	return nil
}

func (d *Driver) check() error {
	if d.closed.Load() {
		return fmt.Errorf("mysql %s: %w", d.where, driver.ErrClosed)
	}
	return d.opened
}

// Migrate implements driver.Driver. It holds a named lock scoped to the
// database while it checks and applies migrations, so processes starting at
// once apply each one exactly once.
func (d *Driver) Migrate(ctx context.Context) error {
	if err := d.check(); err != nil {
		return err
	}
	if err := d.migrate(ctx); err != nil {
		return fmt.Errorf("mysql %s: %w", d.where, err)
	}
	return nil
}

func (d *Driver) migrate(ctx context.Context) error {
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var (
		dbName                sql.NullString
		version               string
		lockMode, incr, offst int64
	)
	if err := conn.QueryRowContext(ctx, `SELECT DATABASE(), VERSION(), @@innodb_autoinc_lock_mode, @@auto_increment_increment, @@auto_increment_offset`).
		Scan(&dbName, &version, &lockMode, &incr, &offst); err != nil {
		return err
	}
	if !dbName.Valid {
		return errors.New("no database selected; end the DSN with /dbname")
	}
	if err := supported(version); err != nil {
		return err
	}
	if lockMode == 2 || incr < 1 || d.forceReadBack {
		d.autoincStep.Store(0)
	} else {
		d.autoincStep.Store(incr)
	}

	sum := sha1.Sum([]byte(dbName.String))
	lock := "sqlstreams.migrate." + hex.EncodeToString(sum[:16])
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, `SELECT GET_LOCK(?, 120)`, lock).Scan(&got); err != nil {
		return err
	}
	if !got.Valid || got.Int64 != 1 {
		return errors.New("another process has been migrating this database for 2 minutes (named lock " + lock + "); retry when it is done")
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT RELEASE_LOCK(?)`, lock)

	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS sqlstreams_migration (
		version    INT         NOT NULL PRIMARY KEY,
		applied_at DATETIME(6) NOT NULL
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`); err != nil {
		return err
	}
	applied := map[int]bool{}
	rows, err := conn.QueryContext(ctx, `SELECT version FROM sqlstreams_migration`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return err
		}
		applied[v] = true
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	ms, err := driver.ReadMigrations(migrations, "migrations")
	if err != nil {
		return err
	}
	for _, m := range ms {
		if applied[m.Version] {
			continue
		}
		for _, stmt := range splitStatements(m.SQL) {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("migration %s: %w", m.Name, err)
			}
		}
		if _, err := conn.ExecContext(ctx, `INSERT IGNORE INTO sqlstreams_migration (version, applied_at) VALUES (?, ?)`, m.Version, ts(time.Now())); err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
	}
	return nil
}

var serverVersion = regexp.MustCompile(`^(\d+)\.(\d+)\.(\d+)`)

// supported refuses servers without SKIP LOCKED or enforced CHECK constraints.
func supported(version string) error {
	m := serverVersion.FindStringSubmatch(version)
	if m == nil {
		return nil // unknown format: try anyway
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	patch, _ := strconv.Atoi(m[3])
	if strings.Contains(strings.ToLower(version), "mariadb") {
		if major < 10 || major == 10 && minor < 6 {
			return fmt.Errorf("server is MariaDB %s; sqlstreams needs MariaDB 10.6 or later (SKIP LOCKED)", version)
		}
		return nil
	}
	if major < 8 || major == 8 && minor == 0 && patch < 16 {
		return fmt.Errorf("server is MySQL %s; sqlstreams needs MySQL 8.0.16 or later (SKIP LOCKED, CHECK constraints)", version)
	}
	return nil
}

// splitStatements cuts a migration file at semicolons that end a line, after
// dropping comment lines.
func splitStatements(body string) []string {
	var out []string
	var cur strings.Builder
	for line := range strings.SplitSeq(body, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "--") || trimmed == "" {
			continue
		}
		cur.WriteString(line)
		cur.WriteString("\n")
		if strings.HasSuffix(trimmed, ";") {
			s := strings.TrimSuffix(strings.TrimSpace(cur.String()), ";")
			out = append(out, s)
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}

// maxAttempts bounds how often a transaction is re-run after a deadlock,
// lock wait timeout or a connection lost before commit.
const maxAttempts = 12

// inTx runs fn in the caller's transaction when tx is not nil, or in a new
// transaction that commits when fn succeeds. A new transaction that fails
// with a deadlock, a lock wait timeout or a lost connection before COMMIT is
// rolled back and run again; fn must reset anything it accumulates.
func (d *Driver) inTx(ctx context.Context, tx driver.Tx, fn func(*sql.Tx) error) error {
	if err := d.check(); err != nil {
		return err
	}
	if tx != nil {
		a, ok := tx.(txAdapter)
		if !ok {
			return fmt.Errorf("mysql: %w: got a %s transaction; wrap a *sql.Tx from this driver's DB() with mysql.Tx", driver.ErrForeignTx, tx.DriverName())
		}
		if a.tx == nil {
			return fmt.Errorf("mysql: %w: mysql.Tx was given a nil *sql.Tx", driver.ErrForeignTx)
		}
		return fn(a.tx)
	}
	for attempt := 1; ; attempt++ {
		committing, err := d.tryTx(ctx, fn)
		if err == nil {
			return nil
		}
		if committing && isConnError(err) {
			return fmt.Errorf("mysql: the connection was lost while committing, so the outcome is unknown; the transaction may or may not have been applied: %w", err)
		}
		if attempt >= maxAttempts || !retryable(err) || ctx.Err() != nil {
			return err
		}
		if err := sleep(ctx, backoff(attempt)); err != nil {
			return err
		}
	}
}

func (d *Driver) tryTx(ctx context.Context, fn func(*sql.Tx) error) (committing bool, err error) {
	t, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	if err := fn(t); err != nil {
		_ = t.Rollback()
		return false, err
	}
	return true, t.Commit()
}

// autocommit runs one statement outside a transaction, re-running it on the
// errors inTx re-runs. Only for statements that are atomic on their own.
func (d *Driver) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		res, err := d.db.ExecContext(ctx, query, args...)
		if err == nil || attempt >= maxAttempts || !retryableStatement(err) || ctx.Err() != nil {
			return res, err
		}
		if err := sleep(ctx, backoff(attempt)); err != nil {
			return nil, err
		}
	}
}

func backoff(attempt int) time.Duration {
	base := time.Duration(min(attempt, 6)) * 5 * time.Millisecond
	return base/2 + rand.N(base)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// MySQL and MariaDB error numbers the driver handles.
const (
	errDupEntry        = 1062
	errNoSuchTable     = 1146
	errLockWaitTimeout = 1205
	errDeadlock        = 1213
	errTableDefChanged = 1412
	errRecordChanged   = 1020 // MariaDB with innodb_snapshot_isolation
)

func mysqlErrno(err error) uint16 {
	var me *gomysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// retryable reports errors after which re-running a whole transaction of
// the driver's own is safe and expected to succeed.
func retryable(err error) bool {
	switch mysqlErrno(err) {
	case errDeadlock, errLockWaitTimeout, errTableDefChanged, errRecordChanged:
		return true
	}
	// A connection lost before COMMIT: the server rolled the transaction back.
	return isConnError(err)
}

// retryableStatement reports errors after which re-running a single
// autocommit statement is safe: the statement did not take effect. A
// connection lost mid-statement is not: the statement may have committed.
func retryableStatement(err error) bool {
	switch mysqlErrno(err) {
	case errDeadlock, errLockWaitTimeout, errTableDefChanged, errRecordChanged:
		return true
	}
	return errors.Is(err, sqldriver.ErrBadConn)
}

func isConnError(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, sqldriver.ErrBadConn) || errors.Is(err, gomysql.ErrInvalidConn) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, sql.ErrConnDone) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe)
}

func isUnique(err error) bool { return mysqlErrno(err) == errDupEntry }

// timeLayout is how times are written: UTC, microseconds. Writing strings
// rather than time.Time keeps stored times independent of the loc setting of
// whichever connection (the caller's, for ProduceTx) carries them.
const timeLayout = "2006-01-02 15:04:05.000000"

func ts(t time.Time) string { return t.UTC().Truncate(time.Microsecond).Format(timeLayout) }

// utc reads a DATETIME(6) written by ts.
func utc(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

func logTable(streamID int64) string { return "message_log_" + strconv.FormatInt(streamID, 10) }

// placeholders returns "?, ?, ?" for n values.
func placeholders(n int) string {
	if n == 0 {
		return ""
	}
	return strings.Repeat("?, ", n-1) + "?"
}

func int64sToArgs(ids []int64) []any {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return args
}

func dedupe(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}
