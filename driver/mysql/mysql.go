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
// most polls end there. The claim itself locks a group's cursor row per
// partition with FOR UPDATE SKIP LOCKED, so consumers of a group spread over
// partitions without waiting. It reads the group's stored configuration
// again after its first cursor lock, and RegisterGroup locks every cursor of
// the group before it changes the configuration, so a claim filters with
// the configuration it commits under (C19); a claim that finds every cursor
// taken by other claimers but exceptions due reads the group row with a
// shared lock instead. Due exceptions are locked FOR UPDATE SKIP LOCKED as
// well. InnoDB deadlocks (1213) re-run the
// driver's own transaction a few times, lock wait timeouts (1205) at most
// twice, a connection lost before COMMIT was sent twice; a transaction passed
// in by the caller is never re-run, so its error goes back to the caller.
//
// Ack, Fail, Release and Extend settle each delivery on its own and report
// exactly those no longer leased with their token (C20). One delivery is one
// statement whose matched-row count says whether it changed. Several are, on
// MariaDB, one DELETE ... RETURNING for Ack; the updates (and Ack on MySQL,
// which has no RETURNING) run in one transaction that first locks the
// deliveries still leased with their token (SELECT ... FOR UPDATE) and then
// changes exactly those.
//
// # Differences between MySQL and MariaDB
//
// Migrate tells the engines apart by VERSION(). The driver uses SQL both
// accept, except for FOR UPDATE WAIT n and DELETE ... RETURNING, which it
// uses on MariaDB only. Elsewhere it avoids what one of them lacks: no
// FOR UPDATE OF (MariaDB lacks it; exception rows and log rows are read in
// separate statements so only the exception rows are locked), no
// INSERT ... RETURNING (MySQL lacks it), no row alias in ON DUPLICATE KEY
// UPDATE (MariaDB lacks it), no ADD COLUMN IF NOT EXISTS (MySQL lacks it),
// isolation set with SET SESSION TRANSACTION (the variable is
// transaction_isolation on MySQL 8 and tx_isolation on MariaDB before 11.1),
// and LONGTEXT instead of MySQL's JSON type. CHECK constraints are enforced
// from MySQL 8.0.16 and all MariaDB 10.6.
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
	"net/url"
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

var (
	_ driver.Driver   = (*Driver)(nil)
	_ driver.Registry = (*Driver)(nil)
)

// Pool sizes set by Open; change them through DB().
const (
	DefaultMaxOpenConns = 32
	DefaultMaxIdleConns = 8
)

// DefaultLockTimeout is how long, by default, an append waits on MariaDB for
// the append lock of a partition that another transaction holds.
const DefaultLockTimeout = 10 * time.Second

// Driver is the MySQL/MariaDB driver. Create it with Open.
type Driver struct {
	db          *sql.DB
	where       string // user@addr/db, for messages (no password)
	secrets     []string
	lockTimeout time.Duration
	closed      atomic.Bool
	opened      error

	// Set by Migrate from the server.
	autoincStep atomic.Int64 // auto_increment_increment; 0 = read ids back
	mariadb     atomic.Bool  // FOR UPDATE WAIT n and DELETE ... RETURNING

	// Test hooks, set before Migrate.
	forceReadBack    bool // always read new ids back
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
		d.opened = d.unusable(fmt.Errorf("mysql: parse DSN: %s", driver.Scrub(err.Error(), d.secrets...)),
			"write the DSN as user:password@tcp(host:3306)/dbname (a go-sql-driver DSN, not a URL)")
		return d
	}
	d.secrets = nonEmpty(cfg.Passwd)
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

func nonEmpty(s ...string) []string {
	var out []string
	for _, v := range s {
		if v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// dsnSecrets guesses the password of a DSN that does not parse, so that it
// can be scrubbed from the parser's messages (which may quote a database
// name or a parameter that a misplaced '/', '?' or '@' cut out of it): the
// password as go-sql-driver would read it (after the first ':' before the
// last '@' before the last '/'), the widest reading (from the first ':' to
// the last '@'), its pieces between the characters the parser splits at,
// and the password of a URL.
func dsnSecrets(dsn string) []string {
	var out []string
	add := func(s string) {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	left := dsn
	if i := strings.LastIndex(dsn, "/"); i >= 0 {
		left = dsn[:i]
	}
	if j := strings.LastIndex(left, "@"); j >= 0 {
		if k := strings.Index(left[:j], ":"); k >= 0 {
			add(left[k+1 : j])
		}
	}
	if j := strings.LastIndex(dsn, "@"); j >= 0 {
		if k := strings.Index(dsn[:j], ":"); k >= 0 {
			wide := dsn[k+1 : j]
			add(wide)
			for _, piece := range strings.FieldsFunc(wide, func(r rune) bool { return strings.ContainsRune("/?&=@:(),", r) }) {
				add(piece)
			}
		}
	}
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok {
			add(p)
		}
	}
	return out
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

// connector sets the session isolation on every new connection and gives
// failures to connect their sentinel, scrubbed of the password.
type connector struct {
	sqldriver.Connector
	d *Driver
}

func (c *connector) Connect(ctx context.Context) (sqldriver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, c.d.connectError(ctx, err)
	}
	ex, ok := conn.(sqldriver.ExecerContext)
	if !ok {
		conn.Close()
		return nil, c.d.connectError(ctx, errors.New("connection cannot execute statements"))
	}
	if _, err := ex.ExecContext(ctx, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", nil); err != nil {
		conn.Close()
		return nil, c.d.connectError(ctx, err)
	}
	return conn, nil
}

// DB returns the connection pool, on which to begin transactions for
// ProduceTx. Its connections run at READ COMMITTED with UTC times.
func (d *Driver) DB() *sql.DB { return d.db }

// Tx adapts a transaction for Producer.ProduceTx. Begin it on DB(), or on
// another pool connected to the same database; the rows become visible when
// the caller commits. While it is open the transaction holds the append lock
// of the partitions it produced to (see the package documentation).
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

// Migrate implements driver.Driver. It holds a named lock scoped to the
// database while it checks and applies migrations, so processes starting at
// once apply each one exactly once.
func (d *Driver) Migrate(ctx context.Context) error {
	return d.migrateTo(ctx, 0)
}

// migrateTo applies migrations up to version last (0: all of them).
func (d *Driver) migrateTo(ctx context.Context, last int) error {
	if err := d.check(); err != nil {
		return err
	}
	if err := d.migrate(ctx, last); err != nil {
		if driver.Classified(err) {
			return fmt.Errorf("mysql %s: %w", d.where, err)
		}
		return d.wrap(ctx, fmt.Errorf("mysql %s: %w", d.where, err), opRead)
	}
	return nil
}

func (d *Driver) migrate(ctx context.Context, last int) error {
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
	mariadb, err := supported(version)
	if err != nil {
		return &driver.Error{Kind: driver.ErrDatabase, Advice: "upgrade the server", Err: err}
	}
	d.mariadb.Store(mariadb)
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
		return &driver.Error{Kind: driver.ErrConflict, Err: errors.New("another process has been migrating this database for 2 minutes (named lock " + lock + ")"),
			Advice: "retry when it is done"}
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT RELEASE_LOCK(?)`, lock)

	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS sqlstreams_migration (
		version    INT         NOT NULL PRIMARY KEY,
		applied_at DATETIME(6) NOT NULL
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`); err != nil {
		return err
	}
	applied := map[int]bool{}
	if err := eachRow(ctx, conn, `SELECT version FROM sqlstreams_migration`, nil, func(r *sql.Rows) error {
		var v int
		err := r.Scan(&v)
		applied[v] = true
		return err
	}); err != nil {
		return err
	}
	ms, err := driver.ReadMigrations(migrations, "migrations")
	if err != nil {
		return err
	}
	for _, m := range ms {
		if applied[m.Version] || (last > 0 && m.Version > last) {
			continue
		}
		steps, err := parseMigration(m.SQL)
		if err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
		for _, s := range steps {
			if err := d.runStep(ctx, conn, s); err != nil {
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

// supported reports whether the server is MariaDB, and refuses servers
// without SKIP LOCKED or enforced CHECK constraints.
func supported(version string) (mariadb bool, err error) {
	mariadb = strings.Contains(strings.ToLower(version), "mariadb")
	m := serverVersion.FindStringSubmatch(version)
	if m == nil {
		return mariadb, nil // unknown format: try anyway
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	patch, _ := strconv.Atoi(m[3])
	if mariadb {
		if major < 10 || major == 10 && minor < 6 {
			return true, fmt.Errorf("server is MariaDB %s; sqlstreams needs MariaDB 10.6 or later (SKIP LOCKED)", version)
		}
		return true, nil
	}
	if major < 8 || major == 8 && minor == 0 && patch < 16 {
		return false, fmt.Errorf("server is MySQL %s; sqlstreams needs MySQL 8.0.16 or later (SKIP LOCKED, CHECK constraints)", version)
	}
	return false, nil
}

// A migration file is a list of statements, each ending with a semicolon at
// the end of a line; comment lines are dropped. Lines starting with "--@"
// are directives:
//
//	--@ unless-column TABLE COLUMN
//	    run the next statement only when TABLE has no column COLUMN
//	--@ drop-checks TABLE COLUMN DEFINITION...
//	    drop every CHECK constraint of TABLE whose clause names COLUMN; a
//	    MariaDB column-level one is dropped by redefining the column as
//	    "COLUMN DEFINITION..."
//
// A statement or directive naming the table {log} runs once per existing
// stream log, with {log} replaced by message_log_<id>.
type step struct {
	sql       string
	guard     []string // unless-column: table, column
	dropCheck []string // drop-checks: table, column, definition
}

const logToken = "{log}"

func parseMigration(body string) ([]step, error) {
	var out []step
	var guard []string
	var cur strings.Builder
	for line := range strings.SplitSeq(body, "\n") {
		trimmed := strings.TrimSpace(line)
		if d, ok := strings.CutPrefix(trimmed, "--@"); ok {
			f := strings.Fields(d)
			switch {
			case len(f) == 3 && f[0] == "unless-column":
				guard = f[1:]
			case len(f) >= 4 && f[0] == "drop-checks":
				out = append(out, step{dropCheck: []string{f[1], f[2], strings.Join(f[3:], " ")}})
			default:
				return nil, fmt.Errorf("unknown directive %q", trimmed)
			}
			continue
		}
		if strings.HasPrefix(trimmed, "--") || trimmed == "" {
			continue
		}
		cur.WriteString(line)
		cur.WriteString("\n")
		if strings.HasSuffix(trimmed, ";") {
			out = append(out, step{sql: strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"), guard: guard})
			guard = nil
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, step{sql: s, guard: guard})
	}
	return out, nil
}

// runStep runs one step of a migration, once per stream log when it names
// {log}.
func (d *Driver) runStep(ctx context.Context, conn *sql.Conn, s step) error {
	names := []string{""}
	if strings.Contains(s.sql, logToken) || slices.Contains(s.guard, logToken) || slices.Contains(s.dropCheck, logToken) {
		var err error
		if names, err = streamLogs(ctx, conn); err != nil {
			return err
		}
	}
	for _, table := range names {
		expand := func(v string) string { return strings.ReplaceAll(v, logToken, table) }
		switch {
		case s.dropCheck != nil:
			if err := d.dropChecks(ctx, conn, expand(s.dropCheck[0]), s.dropCheck[1], s.dropCheck[2]); err != nil {
				return err
			}
		default:
			if s.guard != nil {
				has, err := hasColumn(ctx, conn, expand(s.guard[0]), s.guard[1])
				if err != nil || has {
					return err
				}
			}
			if _, err := conn.ExecContext(ctx, expand(s.sql)); err != nil {
				return err
			}
		}
	}
	return nil
}

// streamLogs lists the log tables of existing streams.
func streamLogs(ctx context.Context, conn *sql.Conn) ([]string, error) {
	tables := map[string]bool{}
	if err := eachRow(ctx, conn, `SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'message\_log\_%'`, nil,
		func(r *sql.Rows) error {
			var name string
			err := r.Scan(&name)
			tables[name] = true
			return err
		}); err != nil {
		return nil, err
	}
	var out []string
	err := eachRow(ctx, conn, `SELECT id FROM stream_config ORDER BY id`, nil, func(r *sql.Rows) error {
		var id int64
		if err := r.Scan(&id); err != nil {
			return err
		}
		if name := logTable(id); tables[name] {
			out = append(out, name)
		}
		return nil
	})
	return out, err
}

func hasColumn(ctx context.Context, conn *sql.Conn, table, column string) (bool, error) {
	var n int
	err := conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ?`,
		table, column).Scan(&n)
	return n > 0, err
}

// dropChecks drops the CHECK constraints of table that name column. MariaDB
// lists them with the table and a level; a column-level constraint there is
// part of the column's definition, which MODIFY COLUMN replaces. MySQL names
// constraints per schema and drops them with DROP CHECK.
func (d *Driver) dropChecks(ctx context.Context, conn *sql.Conn, table, column, definition string) error {
	type check struct {
		name        string
		columnLevel bool
	}
	var checks []check
	scan := func(r *sql.Rows) error {
		var c check
		var clause, level string
		if err := r.Scan(&c.name, &clause, &level); err != nil {
			return err
		}
		c.columnLevel = strings.EqualFold(level, "Column")
		if strings.Contains(strings.ToLower(clause), "`"+strings.ToLower(column)+"`") {
			checks = append(checks, c)
		}
		return nil
	}
	var err error
	if d.mariadb.Load() {
		err = eachRow(ctx, conn, `SELECT CONSTRAINT_NAME, CHECK_CLAUSE, LEVEL FROM information_schema.CHECK_CONSTRAINTS
			WHERE CONSTRAINT_SCHEMA = DATABASE() AND TABLE_NAME = ?`, []any{table}, scan)
	} else {
		err = eachRow(ctx, conn, `SELECT tc.CONSTRAINT_NAME, cc.CHECK_CLAUSE, 'Table' FROM information_schema.TABLE_CONSTRAINTS tc
			JOIN information_schema.CHECK_CONSTRAINTS cc ON cc.CONSTRAINT_SCHEMA = tc.CONSTRAINT_SCHEMA AND cc.CONSTRAINT_NAME = tc.CONSTRAINT_NAME
			WHERE tc.TABLE_SCHEMA = DATABASE() AND tc.TABLE_NAME = ? AND tc.CONSTRAINT_TYPE = 'CHECK'`, []any{table}, scan)
	}
	if err != nil {
		return err
	}
	for _, c := range checks {
		var stmt string
		switch {
		case c.columnLevel:
			stmt = "ALTER TABLE " + table + " MODIFY COLUMN " + column + " " + definition
		case d.mariadb.Load():
			stmt = "ALTER TABLE " + table + " DROP CONSTRAINT " + quoteName(c.name)
		default:
			stmt = "ALTER TABLE " + table + " DROP CHECK " + quoteName(c.name)
		}
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	return nil
}

func quoteName(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

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

func intsToArgs(vs []int) []any {
	args := make([]any, len(vs))
	for i, v := range vs {
		args[i] = v
	}
	return args
}

func dedupe(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}
