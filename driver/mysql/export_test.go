package mysql

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"sync"

	gomysql "github.com/go-sql-driver/mysql"
)

// Hooks for the tests of package mysql_test.

// ForceReadBack makes Append read new ids back from the table, as it does
// when innodb_autoinc_lock_mode is 2. Call it before Migrate.
func ForceReadBack(d *Driver) { d.forceReadBack = true }

// AppendInTx makes Append run in a transaction of the driver's own (START
// TRANSACTION, the partition lock, INSERT, COMMIT) also where it would
// append in one statement. Call it before Migrate.
func AppendInTx(d *Driver) { d.forceAppendTx = true }

// LogDDL is the CREATE TABLE statement of a stream log named table.
func LogDDL(table string) string { return logDDL(table) }

// TimeString formats t as the driver stores it.
var TimeString = ts

// MigrationCount is the number of embedded migrations (down files are part
// of theirs).
func MigrationCount() int {
	ms, _ := (*Driver)(nil).Migrations()
	return len(ms)
}

// ForceNoReturning makes Ack settle several deliveries as on MySQL 8, in a
// transaction that locks them first, instead of DELETE ... RETURNING.
func ForceNoReturning(d *Driver) { d.forceNoReturning = true }

// MigrateTo applies the migrations up to version last only, as an older
// release of the driver did.
func MigrateTo(ctx context.Context, d *Driver, last int) error { return d.migrateTo(ctx, last) }

// IsMariaDB reports what Migrate found.
func IsMariaDB(d *Driver) bool { return d.mariadb.Load() }

// PrivilegeProbes counts the CheckPrivileges calls that had to ask the
// server with DDL, information_schema not showing the privileges.
func PrivilegeProbes(d *Driver) int64 { return d.privilegeProbes.Load() }

// StatementLog records the statements a driver's connections send.
type StatementLog struct {
	mu    sync.Mutex
	stmts []string
}

// Take returns the statements recorded since the last Take, and forgets
// them.
func (l *StatementLog) Take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.stmts
	l.stmts = nil
	return out
}

func (l *StatementLog) add(q string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stmts = append(l.stmts, q)
}

// RecordStatements makes d (just opened on dsn, not yet used) record the
// statements its connections send, apart from those that set a new
// connection up.
func RecordStatements(d *Driver, dsn string) *StatementLog {
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		panic(err)
	}
	if err := configure(cfg, dsn); err != nil {
		panic(err)
	}
	conn, err := gomysql.NewConnector(cfg)
	if err != nil {
		panic(err)
	}
	log := &StatementLog{}
	d.db.Close()
	d.db = sql.OpenDB(&recordingConnector{Connector: &connector{Connector: conn, d: d}, log: log})
	return log
}

type recordingConnector struct {
	sqldriver.Connector
	log *StatementLog
}

func (c *recordingConnector) Connect(ctx context.Context) (sqldriver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &recordingConn{conn: conn, log: c.log}, nil
}

// recordingConn passes everything to the go-sql-driver connection conn.
type recordingConn struct {
	conn sqldriver.Conn
	log  *StatementLog
}

func (c *recordingConn) Prepare(q string) (sqldriver.Stmt, error) {
	c.log.add(q)
	return c.conn.Prepare(q)
}

func (c *recordingConn) PrepareContext(ctx context.Context, q string) (sqldriver.Stmt, error) {
	c.log.add(q)
	return c.conn.(sqldriver.ConnPrepareContext).PrepareContext(ctx, q)
}

func (c *recordingConn) Close() error { return c.conn.Close() }

// Begin is the deprecated form database/sql no longer calls when BeginTx
// exists; the interface still requires it.
func (c *recordingConn) Begin() (sqldriver.Tx, error) {
	c.log.add("BEGIN")
	return c.conn.Begin() //lint:ignore SA1019 the wrapped conn's own Begin, for callers of the old interface
}

func (c *recordingConn) BeginTx(ctx context.Context, opts sqldriver.TxOptions) (sqldriver.Tx, error) {
	c.log.add("BEGIN")
	return c.conn.(sqldriver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *recordingConn) ExecContext(ctx context.Context, q string, args []sqldriver.NamedValue) (sqldriver.Result, error) {
	c.log.add(q)
	return c.conn.(sqldriver.ExecerContext).ExecContext(ctx, q, args)
}

func (c *recordingConn) QueryContext(ctx context.Context, q string, args []sqldriver.NamedValue) (sqldriver.Rows, error) {
	c.log.add(q)
	return c.conn.(sqldriver.QueryerContext).QueryContext(ctx, q, args)
}

func (c *recordingConn) Ping(ctx context.Context) error { return c.conn.(sqldriver.Pinger).Ping(ctx) }

func (c *recordingConn) ResetSession(ctx context.Context) error {
	return c.conn.(sqldriver.SessionResetter).ResetSession(ctx)
}

func (c *recordingConn) IsValid() bool { return c.conn.(sqldriver.Validator).IsValid() }

func (c *recordingConn) CheckNamedValue(nv *sqldriver.NamedValue) error {
	return c.conn.(sqldriver.NamedValueChecker).CheckNamedValue(nv)
}

// LeaseRowsOfTheirOwn rewrites the batches of a claim (group, token) as the
// leased exception rows they stand for, one per delivery, through db (a
// pool on d's database, so that a test recording d's statements does not
// see them), and makes d forget them. That is the layout of a delivery
// extended, failed or released alone, and the one the retired per-delivery
// lease model wrote for every claimed delivery.
func LeaseRowsOfTheirOwn(ctx context.Context, d *Driver, db *sql.DB, streamID int64, group, token string) error {
	defer d.batches.forget(streamID, group, token)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := explodeWhole(ctx, tx, streamID, "group_name = ? AND lease_token = ?", []any{group, token}, " FOR UPDATE"); err != nil {
		return err
	}
	return tx.Commit()
}
