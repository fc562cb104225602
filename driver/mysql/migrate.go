package mysql

import (
	"context"
	"crypto/sha1"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// Migrate implements driver.Driver: driver.MigratePending holding a named
// lock scoped to the database, so processes starting at once apply each
// migration exactly once.
func (d *Driver) Migrate(ctx context.Context) error {
	return d.migrateTo(ctx, 0)
}

// migrateTo applies the pending migrations up to version last (0: all of
// them).
func (d *Driver) migrateTo(ctx context.Context, last int) error {
	return d.migrating(ctx, func(s *migrationSteps, ms []driver.Migration) error {
		return driver.MigratePending(ctx, s, driver.MigratePendingParams{Migrations: ms, Through: last})
	})
}

// migrationTable is the table of applied migrations.
var migrationTable = sqldb.MigrationTable{
	Create: `CREATE TABLE IF NOT EXISTS sqlstreams_migration (
    version    INT         NOT NULL PRIMARY KEY,
    applied_at DATETIME(6) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
	Insert: "INSERT IGNORE", Now: "UTC_TIMESTAMP(6)", At: func(t time.Time) any { return ts(t) },
}

// Migrations implements driver.Driver. Up and Down are the embedded files'
// text: statements each ending with a semicolon at the end of a line, and
// the driver's directives as comments ("-- @unless-column TABLE COLUMN" and
// the like, see parseMigration), which a tool that runs the statements
// itself may ignore on a database that does not have the migration yet.
// Record creates sqlstreams_migration when missing and records the version
// at the server's UTC time; it does nothing when the version is recorded.
func (d *Driver) Migrations() ([]driver.Migration, error) {
	ms, err := migrationTable.Migrations(migrations)
	if err != nil {
		return nil, fmt.Errorf("mysql: %w", err)
	}
	return ms, nil
}

// AppliedMigrations implements driver.Driver.
func (d *Driver) AppliedMigrations(ctx context.Context, _ driver.AppliedMigrationsParams) ([]driver.AppliedMigration, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	out, err := sqldb.AppliedMigrations(ctx, sqldb.On(d.db), utc)
	if mysqlErrno(err) == errNoSuchTable {
		return nil, nil
	}
	if err != nil {
		return nil, d.wrap(ctx, fmt.Errorf("mysql %s: applied migrations: %w", d.where, err), opRead)
	}
	return out, nil
}

// ApplyMigration implements driver.Driver: driver.ApplyOne under the named
// lock Migrate holds. DDL commits on its own in MySQL, so a migration is
// not one transaction: its statements are idempotent (or guarded by
// directives) and its record is written after them (removed after them,
// going down), so that one that died half-way is simply run again.
func (d *Driver) ApplyMigration(ctx context.Context, p driver.ApplyMigrationParams) error {
	return d.migrating(ctx, func(s *migrationSteps, ms []driver.Migration) error { return driver.ApplyOne(ctx, s, ms, p) })
}

// migrating runs fn with the driver's migrations and the steps on a
// connection of the driver's own, after reading the server's kind and
// settings.
func (d *Driver) migrating(ctx context.Context, fn func(s *migrationSteps, ms []driver.Migration) error) error {
	if err := d.check(); err != nil {
		return err
	}
	if err := d.onMigrationConn(ctx, fn); err != nil {
		if driver.Classified(err) {
			return fmt.Errorf("mysql %s: %w", d.where, err)
		}
		return d.wrap(ctx, fmt.Errorf("mysql %s: %w", d.where, err), opRead)
	}
	return nil
}

func (d *Driver) onMigrationConn(ctx context.Context, fn func(s *migrationSteps, ms []driver.Migration) error) error {
	ms, err := d.Migrations()
	if err != nil {
		return err
	}
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
		return serverError(err)
	}
	d.setServer(mariadb, lockMode, incr)
	return fn(&migrationSteps{sqldb.MigrationRecords{Table: migrationTable, Runner: sqldb.On(conn)}, d, conn, dbName.String}, ms)
}

// migrationSteps are MySQL's driver.MigrationSteps on the connection conn
// to database.
type migrationSteps struct {
	sqldb.MigrationRecords
	d        *Driver
	conn     *sql.Conn
	database string
}

// Lock takes the database's named lock, waiting up to 2 minutes; on Galera,
// where GET_LOCK is node-local, a lock row instead (galera.go).
func (s *migrationSteps) Lock(ctx context.Context) (func(), error) {
	if s.d.gal.on.Load() {
		return s.d.clusterMigrationLock(ctx, s.conn, 2*time.Minute)
	}
	sum := sha1.Sum([]byte(s.database))
	lock := "sqlstreams.migrate." + hex.EncodeToString(sum[:16])
	var got sql.NullInt64
	if err := s.conn.QueryRowContext(ctx, `SELECT GET_LOCK(?, 120)`, lock).Scan(&got); err != nil {
		return nil, err
	}
	if !got.Valid || got.Int64 != 1 {
		return nil, &driver.Error{Kind: driver.ErrConflict, Err: errors.New("another process has been migrating this database for 2 minutes (named lock " + lock + ")"),
			Advice: "retry when it is done"}
	}
	return func() { _, _ = s.conn.ExecContext(context.WithoutCancel(ctx), `SELECT RELEASE_LOCK(?)`, lock) }, nil
}

// Exec runs a migration file statement by statement, with its directives
// (parseMigration).
func (s *migrationSteps) Exec(ctx context.Context, body string) error {
	steps, err := parseMigration(body)
	if err != nil {
		return err
	}
	for _, st := range steps {
		if err := s.d.runStep(ctx, s.conn, st); err != nil {
			return err
		}
	}
	return nil
}

var serverVersion = regexp.MustCompile(`^(\d+)\.(\d+)\.(\d+)`)

// supported reports whether the server is MariaDB, and refuses servers
// without SKIP LOCKED or enforced CHECK constraints, and engines that lack
// what the driver needs (capabilities.go).
func supported(version string) (mariadb bool, err error) {
	mariadb = strings.Contains(strings.ToLower(version), "mariadb")
	if err := engines.Refuse(version); err != nil {
		return mariadb, err
	}
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
// the end of a line; comment lines are dropped. Comment lines starting with
// "-- @" (or "--@", the spelling of earlier releases) are directives:
//
//	-- @unless-column TABLE COLUMN
//	    run the next statement only when TABLE has no column COLUMN
//	-- @if-column TABLE COLUMN
//	    run the next statement only when TABLE has a column COLUMN
//	-- @drop-checks TABLE COLUMN DEFINITION...
//	    drop every CHECK constraint of TABLE whose clause names COLUMN; a
//	    MariaDB column-level one is dropped by redefining the column as
//	    "COLUMN DEFINITION..."
//
// A statement or directive naming the table {log} runs once per existing
// stream log, with {log} replaced by message_log_<id> and {stream}, if the
// statement has it, by <id>.
type step struct {
	sql       string
	guard     []string // unless-column or if-column: table, column
	guardHas  bool     // run when the column exists (if-column)
	dropCheck []string // drop-checks: table, column, definition
}

const (
	logToken    = "{log}"
	streamToken = "{stream}"
)

func directive(trimmed string) (string, bool) {
	if d, ok := strings.CutPrefix(trimmed, "--@"); ok {
		return d, true
	}
	return strings.CutPrefix(trimmed, "-- @")
}

func parseMigration(body string) ([]step, error) {
	var out []step
	var guard []string
	var guardHas bool
	var cur strings.Builder
	for line := range strings.SplitSeq(body, "\n") {
		trimmed := strings.TrimSpace(line)
		if d, ok := directive(trimmed); ok {
			f := strings.Fields(d)
			switch {
			case len(f) == 3 && (f[0] == "unless-column" || f[0] == "if-column"):
				guard, guardHas = f[1:], f[0] == "if-column"
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
			out = append(out, step{sql: strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"), guard: guard, guardHas: guardHas})
			guard, guardHas = nil, false
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, step{sql: s, guard: guard, guardHas: guardHas})
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
		expand := func(v string) string {
			return strings.ReplaceAll(strings.ReplaceAll(v, logToken, table), streamToken, strings.TrimPrefix(table, "message_log_"))
		}
		switch {
		case s.dropCheck != nil:
			if err := d.dropChecks(ctx, conn, expand(s.dropCheck[0]), s.dropCheck[1], s.dropCheck[2]); err != nil {
				return err
			}
		default:
			if s.guard != nil {
				has, err := hasColumn(ctx, conn, expand(s.guard[0]), s.guard[1])
				if err != nil {
					return err
				}
				if has != s.guardHas {
					continue
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
	if err := sqldb.Mark(ctx, conn, `SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'message\_log\_%'`, nil,
		tables); err != nil {
		return nil, err
	}
	var out []string
	err := sqldb.EachRow(ctx, conn, `SELECT id FROM stream_config ORDER BY id`, nil, func(r *sql.Rows) error {
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
		err = sqldb.EachRow(ctx, conn, `SELECT CONSTRAINT_NAME, CHECK_CLAUSE, LEVEL FROM information_schema.CHECK_CONSTRAINTS
			WHERE CONSTRAINT_SCHEMA = DATABASE() AND TABLE_NAME = ?`, []any{table}, scan)
	} else {
		err = sqldb.EachRow(ctx, conn, `SELECT tc.CONSTRAINT_NAME, cc.CHECK_CLAUSE, 'Table' FROM information_schema.TABLE_CONSTRAINTS tc
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
