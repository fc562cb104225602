// Package mysqltest gives tests a MySQL/MariaDB namespace of their own: a
// fresh database per test on the server at SQLSTREAMS_MYSQL_DSN, emptied or
// dropped afterwards, and the statements tests run beside the driver's.
package mysqltest

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/drivertest"
	"github.com/sqlstreams/sqlstreams/driver/mysql"
)

// AdminDSN is the server the tests use: SQLSTREAMS_MYSQL_DSN, or the local
// MariaDB/MySQL with user root and no password.
func AdminDSN() string {
	return cmp.Or(os.Getenv("SQLSTREAMS_MYSQL_DSN"), "root@tcp(127.0.0.1:3306)/test")
}

// admin is the admin connection, kept for the process and opened again
// when SQLSTREAMS_MYSQL_DSN names another server (the scale-out tests point
// it at a cluster of their own, a new one on new ports at each -count).
var admin struct {
	mu  sync.Mutex
	dsn string
	db  *sql.DB
	cfg *gomysql.Config
	err error
}

func AdminDB(tb testing.TB) (*sql.DB, *gomysql.Config) {
	tb.Helper()
	dsn := AdminDSN()
	admin.mu.Lock()
	defer admin.mu.Unlock()
	if admin.dsn != dsn || admin.db == nil && admin.err == nil {
		if admin.db != nil {
			_ = admin.db.Close()
		}
		admin.dsn, admin.db, admin.err = dsn, nil, nil
		admin.cfg, admin.err = gomysql.ParseDSN(dsn)
		if admin.err == nil {
			admin.db, admin.err = sql.Open("mysql", dsn)
		}
		if admin.err == nil {
			admin.db.SetMaxOpenConns(4)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			admin.err = admin.db.PingContext(ctx)
			cancel()
		}
	}
	if admin.err != nil {
		tb.Fatalf("mysql server at %s is not reachable (set SQLSTREAMS_MYSQL_DSN): %v", dsn, admin.err)
	}
	return admin.db, admin.cfg
}

// NewDatabase creates a fresh database, dropped at cleanup, and returns a
// DSN that names it.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	db, cfg := AdminDB(tb)
	name := drivertest.RandomName("t_", 6)
	if _, err := db.Exec("CREATE DATABASE " + name + " CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		tb.Fatalf("create database %s: %v", name, err)
	}
	tb.Cleanup(func() {
		if _, err := db.Exec("DROP DATABASE IF EXISTS " + name); err != nil {
			tb.Errorf("drop database %s: %v", name, err)
		}
	})
	c := cfg.Clone()
	c.DBName = name
	return c.FormatDSN()
}

// ddl matches statements after which MySQL commits the open transaction on
// its own.
var ddl = regexp.MustCompile(`(?i)^\s*(CREATE|ALTER|DROP|RENAME|TRUNCATE)\b`)

// ExecTx runs query in the transaction tx adapted by mysql.Tx, or on drv's
// pool when tx is nil. MySQL commits a transaction implicitly before DDL,
// which would end the caller's transaction behind its back, so DDL inside
// tx is refused: run it with tx nil.
func ExecTx(ctx context.Context, drv driver.Driver, tx driver.Tx, query string) error {
	if tx != nil && ddl.MatchString(query) {
		return fmt.Errorf("mysqltest: %q inside a transaction: MySQL would commit the transaction implicitly before it; run DDL with tx nil", query)
	}
	return kit.ExecTx(ctx, drv, tx, query)
}

// QueryInt runs a query returning one integer (NULL is 0) on drv's pool.
func QueryInt(ctx context.Context, drv driver.Driver, query string) (int64, error) {
	return kit.QueryInt(ctx, drv, query)
}

// kit is the conformance hooks of a database/sql driver, over mysql's.
var kit = drivertest.SQLKit[*mysql.Driver]{Name: "mysqltest", DB: (*mysql.Driver).DB, Adapt: mysql.Tx, Unwrap: mysql.UnwrapTx}

// sqlstreamsTables are the tables of the driver's migrations; ResetNamespace
// empties them (but the migration records) and drops every other table.
var sqlstreamsTables = []string{"stream_config", "stream_partition", "consumer_group", "group_cursor", "delivery_exception", "delivery_batch",
	"compaction_head", "registry_setting", "schema_revision", "schema_reader", "schema_id", "schema_reference", "row_count", "row_count_mark",
	"registry_subject", "subject_version", "subject_reference",
	"client_heartbeat", "stream_sample"}

// resetLockWait bounds ResetNamespace's waits for locks a client left
// behind (an open transaction), which then fails it.
const resetLockWait = 10

// ResetNamespace makes a database a test used look freshly migrated: it
// drops every table but the driver's own (stream logs, conformance_marker
// and any other a test made) and every view, deletes every row of the
// driver's tables but the migration records, runs Migrate (which brings
// back what a test undid with ApplyMigration Down), and then checks that
// the tables, columns, indexes and checks are exactly those of a freshly
// migrated database and that no row is left. Stream ids keep growing. It
// fails when any of this fails, also when a lock is held past
// resetLockWait seconds or the migration records name a version this
// driver does not have.
func ResetNamespace(ns string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg, err := gomysql.ParseDSN(ns)
	if err != nil {
		return err
	}
	name := cfg.DBName
	drv := mysql.Open(ns)
	defer drv.Close()
	if err := reset(ctx, drv, name); err != nil {
		return fmt.Errorf("mysqltest: reset database %s: %w", name, err)
	}
	return nil
}

func reset(ctx context.Context, drv *mysql.Driver, name string) error {
	conn, err := drv.DB().Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, stmt := range []string{
		fmt.Sprintf("SET SESSION lock_wait_timeout = %d", resetLockWait),
		fmt.Sprintf("SET SESSION innodb_lock_wait_timeout = %d", resetLockWait),
	} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	type table struct{ name, kind string }
	var tables []table
	rows, err := conn.QueryContext(ctx, `SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var t table
		if err := rows.Scan(&t.name, &t.kind); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, t)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	for _, t := range tables {
		var stmt string
		switch {
		case t.name == "sqlstreams_migration":
			continue
		case t.kind == "VIEW":
			stmt = "DROP VIEW IF EXISTS " + quote(t.name)
		case slices.Contains(sqlstreamsTables, t.name):
			stmt = "DELETE FROM " + quote(t.name)
		default:
			stmt = "DROP TABLE IF EXISTS " + quote(t.name)
		}
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	if err := drv.Migrate(ctx); err != nil {
		return err
	}
	ms, err := drv.Migrations()
	if err != nil {
		return err
	}
	applied, err := drv.AppliedMigrations(ctx, driver.AppliedMigrationsParams{})
	if err != nil {
		return err
	}
	if len(applied) != len(ms) {
		return fmt.Errorf("%d migrations recorded; the driver has %d (a test recorded a version this driver does not know?)", len(applied), len(ms))
	}
	for i, m := range ms {
		if applied[i].Version != m.Version {
			return fmt.Errorf("migration records %v do not match the driver's migrations", applied)
		}
	}
	for _, t := range sqlstreamsTables {
		var n int64
		if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+quote(t)).Scan(&n); err != nil {
			return err
		}
		if n != 0 {
			return fmt.Errorf("table %s still has %d rows", t, n)
		}
	}
	got, err := schemaOf(ctx, conn)
	if err != nil {
		return err
	}
	want, err := freshSchema(ctx)
	if err != nil {
		return fmt.Errorf("the schema of a freshly migrated database: %w", err)
	}
	if got != want {
		return fmt.Errorf("the schema differs from a freshly migrated one:\n%s", diffLines(want, got))
	}
	return nil
}

func quote(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

// schemaOf describes the tables, columns, indexes and checks of the
// connection's database, one line each, in a stable order.
func schemaOf(ctx context.Context, conn *sql.Conn) (string, error) {
	var lines []string
	for _, q := range []string{
		`SELECT CONCAT_WS('|', 'column', TABLE_NAME, ORDINAL_POSITION, COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COALESCE(COLUMN_DEFAULT, 'NULL'),
			COALESCE(COLLATION_NAME, ''), EXTRA) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()`,
		`SELECT CONCAT_WS('|', 'index', TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, NON_UNIQUE) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE()`,
		`SELECT CONCAT_WS('|', 'check', CONSTRAINT_NAME, CHECK_CLAUSE) FROM information_schema.CHECK_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = DATABASE()`,
	} {
		rows, err := conn.QueryContext(ctx, q)
		if err != nil {
			return "", err
		}
		for rows.Next() {
			var l string
			if err := rows.Scan(&l); err != nil {
				rows.Close()
				return "", err
			}
			lines = append(lines, l)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return "", err
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n"), nil
}

var fresh struct {
	once   sync.Once
	schema string
	err    error
}

// freshSchema is schemaOf a database migrated from scratch, made once per
// process in a database of its own that is dropped right after.
func freshSchema(ctx context.Context) (string, error) {
	fresh.once.Do(func() {
		fresh.schema, fresh.err = func() (string, error) {
			cfg, err := gomysql.ParseDSN(AdminDSN())
			if err != nil {
				return "", err
			}
			db, err := sql.Open("mysql", AdminDSN())
			if err != nil {
				return "", err
			}
			defer db.Close()
			name := drivertest.RandomName("t_", 6)
			if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
				return "", err
			}
			defer db.ExecContext(context.WithoutCancel(ctx), "DROP DATABASE IF EXISTS "+name)
			c := cfg.Clone()
			c.DBName = name
			drv := mysql.Open(c.FormatDSN())
			defer drv.Close()
			if err := drv.Migrate(ctx); err != nil {
				return "", err
			}
			conn, err := drv.DB().Conn(ctx)
			if err != nil {
				return "", err
			}
			defer conn.Close()
			return schemaOf(ctx, conn)
		}()
	})
	return fresh.schema, fresh.err
}

// diffLines lists the lines only one of two descriptions has.
func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out []string
	for _, l := range w {
		if !slices.Contains(g, l) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range g {
		if !slices.Contains(w, l) {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

// SteppedIDs are the session parameters that make the server step ids as a
// 3-node Galera cluster does with wsrep_auto_increment_control ON (its
// default): by 3, from an offset of 2. go-sql-driver sets them on each
// session.
const SteppedIDs = "auto_increment_increment=3&auto_increment_offset=2"

// WithParams adds DSN parameters (already escaped) to dsn.
func WithParams(dsn, params string) string {
	if params == "" {
		return dsn
	}
	if strings.Contains(dsn, "?") {
		return dsn + "&" + params
	}
	return dsn + "?" + params
}

// BeginTx begins a transaction on the driver's database, adapted with
// mysql.Tx, and returns its commit and rollback.
func BeginTx(ctx context.Context, d driver.Driver) (driver.Tx, func() error, func() error, error) {
	return kit.BeginTx(ctx, d)
}
