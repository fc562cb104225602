// Package sqlite is the embedded sqlstreams driver: one SQLite file, pure Go
// (modernc.org/sqlite, no cgo), nothing to install or run.
//
// Commit order (C5): SQLite has one writer at a time, so ids (AUTOINCREMENT,
// never reused) are assigned and committed in the same order, and a cursor
// can never pass a row that commits later. The driver keeps one writer
// connection per process, opens write transactions with BEGIN IMMEDIATE so
// that processes queue on the file lock instead of failing to upgrade, and
// reads (health, lookups, dead letters) through a separate pool that WAL
// mode lets run beside the writer.
//
// Several processes may share one file: writes queue on SQLite's file lock
// for up to BusyTimeout. SQLite grants that lock to whichever waiter polls
// first, not in arrival order, so a process that writes back to back can keep
// another waiting for a while; for many busy writer processes, use the
// PostgreSQL or MySQL driver.
//
// Transactions for ProduceTx come from DB(): wrap them with Tx. While such a
// transaction is open it holds the writer, so other writes of the process
// wait for it to end; keep it short, and do not produce outside it from the
// goroutine that holds it.
//
// The same holds for a transaction given to AckTx, RetryTx or DeadTx (the
// inbox pattern): from its first write until it ends, every write of every
// process on the file waits for it (every member's heartbeat, claims, acks
// and produces), each for up to BusyTimeout, then fails with ErrConflict.
// Leases do not run meanwhile: the first claim or extension after the
// COMMIT gives every lease live at the settle the time the writer was held
// since (pause.go), so no delivery is handed out while its handler runs.
// Time held before the settle, or by a transaction that rolls back, is not
// given back; leases that lapse that way are reported lost by their
// holders' heartbeats.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Driver is the SQLite driver. Create it with Open.
type Driver struct {
	path        string
	busyTimeout time.Duration
	write       *sql.DB // one connection: SQLite has one writer
	read        *sql.DB // WAL readers
	wstmts      *stmtCache
	rstmts      *stmtCache // wstmts when read is write
	fullClaims  sync.Map   // claimKey: the group's last claim here filled its limit
	closed      atomic.Bool
	opened      error
}

// BusyTimeout is how long a write waits, by default, for the database's
// single writer: another process's write lock, or another transaction of
// this process (an open ProduceTx, AckTx, RetryTx or DeadTx transaction).
// Then it fails with ErrConflict.
const BusyTimeout = 30 * time.Second

// Option configures Open.
type Option func(*Driver)

// WithBusyTimeout sets how long a write waits for the database's writer
// before it fails with ErrConflict (default BusyTimeout).
func WithBusyTimeout(d time.Duration) Option { return func(drv *Driver) { drv.busyTimeout = d } }

// Open returns a driver for the SQLite file at path, created if missing.
// Connection errors surface from sqlstreams.Open.
func Open(path string, opts ...Option) *Driver {
	d := &Driver{path: path, busyTimeout: BusyTimeout}
	for _, o := range opts {
		o(d)
	}
	if path == "" {
		d.opened = errors.New("sqlite: empty path; pass a file name such as \"app.db\"")
		return d
	}
	if d.busyTimeout <= 0 {
		d.opened = fmt.Errorf("sqlite: busy timeout %v; use a positive duration", d.busyTimeout)
		return d
	}
	memory := path == ":memory:" || strings.Contains(path, "mode=memory")
	pragmas := url.Values{}
	for _, p := range []string{"busy_timeout(" + strconv.Itoa(int(d.busyTimeout.Milliseconds())) + ")", "journal_mode(WAL)", "synchronous(NORMAL)", "foreign_keys(1)"} {
		pragmas.Add("_pragma", p)
	}
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	writeDSN := path + sep + pragmas.Encode() + "&_txlock=immediate"
	d.write, d.opened = sql.Open("sqlite", writeDSN)
	if d.opened != nil {
		return d
	}
	d.write.SetMaxOpenConns(1)
	d.write.SetConnMaxIdleTime(0)
	d.wstmts = newStmtCache(d.write)
	if memory {
		d.read, d.rstmts = d.write, d.wstmts
		return d
	}
	d.read, d.opened = sql.Open("sqlite", path+sep+pragmas.Encode())
	if d.opened == nil {
		// Keep every reader idle rather than database/sql's default of two:
		// reopening a connection re-reads the schema and drops its kept
		// statements, which concurrent readers (Health of many streams)
		// would otherwise do on every call.
		d.read.SetMaxOpenConns(4)
		d.read.SetMaxIdleConns(4)
		d.rstmts = newStmtCache(d.read)
	}
	return d
}

// DB returns the writer database, on which to begin transactions for
// ProduceTx.
func (d *Driver) DB() *sql.DB { return d.write }

// Tx adapts a transaction begun on DB() for Producer.ProduceTx and the
// transactional settles (Delivery.AckTx).
func Tx(tx *sql.Tx) driver.Tx { return txAdapter{tx} }

// UnwrapTx returns the *sql.Tx that Tx adapted, so that code handed a
// driver.Tx can write its own rows in the same transaction.
func UnwrapTx(tx driver.Tx) (*sql.Tx, bool) {
	a, ok := tx.(txAdapter)
	return a.tx, ok && a.tx != nil
}

type txAdapter struct{ tx *sql.Tx }

func (txAdapter) DriverName() string { return "sqlite" }

// Name implements driver.Driver.
func (d *Driver) Name() string { return "sqlite" }

// Capabilities implements driver.Driver.
func (d *Driver) Capabilities() driver.Capabilities {
	return driver.Capabilities{SingleWriter: true}
}

// Close implements driver.Driver.
func (d *Driver) Close() error {
	if d.closed.Swap(true) {
		return driver.ErrClosed
	}
	var errs []error
	for _, c := range []*stmtCache{d.wstmts, d.rstmts} {
		if c != nil {
			c.close()
		}
	}
	if d.write != nil {
		errs = append(errs, d.write.Close())
	}
	if d.read != nil && d.read != d.write {
		errs = append(errs, d.read.Close())
	}
	return errors.Join(errs...)
}

func (d *Driver) check() error {
	if d.closed.Load() {
		return fmt.Errorf("sqlite %s: %w", d.path, driver.ErrClosed)
	}
	if d.opened != nil {
		return &driver.Error{Kind: driver.ErrUnavailable, Err: d.opened, Advice: "the database cannot be opened"}
	}
	return nil
}

// Migrate implements driver.Driver: every pending migration, in version
// order, each in its own immediate transaction, so processes starting at
// once apply each exactly once.
func (d *Driver) Migrate(ctx context.Context) error {
	ms, err := d.Migrations()
	if err != nil {
		return err
	}
	for _, m := range ms {
		if err := d.apply(ctx, m, false, true); err != nil {
			return err
		}
	}
	return nil
}

// Migrations implements driver.Driver.
func (d *Driver) Migrations() ([]driver.Migration, error) {
	ms, err := driver.ReadMigrations(migrations, "migrations")
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	for i := range ms {
		ms[i].Record = migrationTable + fmt.Sprintf(";\nINSERT INTO sqlstreams_migration (version, applied_at) VALUES (%d, CAST(unixepoch('subsec') * 1000000 AS INTEGER));\n", ms[i].Version)
	}
	return ms, nil
}

// migrationTable records applied migrations; applied_at is in unix
// microseconds.
const migrationTable = `CREATE TABLE IF NOT EXISTS sqlstreams_migration (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`

// AppliedMigrations implements driver.Driver.
func (d *Driver) AppliedMigrations(ctx context.Context, _ driver.AppliedMigrationsParams) ([]driver.AppliedMigration, error) {
	var out []driver.AppliedMigration
	err := d.readTx(ctx, func(tx *sql.Tx) error {
		var exists bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlstreams_migration')`).Scan(&exists); err != nil || !exists {
			return err
		}
		return eachRow(ctx, tx, `SELECT version, applied_at FROM sqlstreams_migration ORDER BY version`, nil, func(r *sql.Rows) error {
			var m driver.AppliedMigration
			var at int64
			err := r.Scan(&m.Version, &at)
			m.AppliedAt = fromMicros(at)
			out = append(out, m)
			return err
		})
	})
	return out, err
}

// ApplyMigration implements driver.Driver.
func (d *Driver) ApplyMigration(ctx context.Context, p driver.ApplyMigrationParams) error {
	ms, err := d.Migrations()
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.Version == p.Version {
			return d.apply(ctx, m, p.Down, false)
		}
	}
	return &driver.Error{Kind: driver.ErrDatabase, Err: fmt.Errorf("sqlite: no migration %d", p.Version),
		Advice: "list the driver's migrations with Migrations and pick one of their versions"}
}

// apply runs one migration up or down in an immediate transaction that
// first checks what the database has: pending-only (Migrate) skips a
// migration already applied; otherwise the step must make sense.
func (d *Driver) apply(ctx context.Context, m driver.Migration, down, pendingOnly bool) error {
	if err := d.check(); err != nil {
		return err
	}
	err := d.inTx(ctx, nil, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, migrationTable); err != nil {
			return err
		}
		var applied, before, after int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE version = ?), count(*) FILTER (WHERE version = ? - 1), count(*) FILTER (WHERE version > ?)
			FROM sqlstreams_migration`, m.Version, m.Version, m.Version).Scan(&applied, &before, &after); err != nil {
			return err
		}
		refuse := func(why, advice string) error {
			return &driver.Error{Kind: driver.ErrDatabase, Err: fmt.Errorf("migration %s %s", m.Name, why), Advice: advice}
		}
		switch {
		case pendingOnly && applied > 0:
			return nil
		case !down && applied > 0:
			return refuse("is already applied", "nothing to do")
		case !down && m.Version > 1 && before == 0:
			return refuse("needs the migration before it", "apply the migrations in version order")
		case down && applied == 0:
			return refuse("is not applied", "nothing to undo")
		case down && after > 0:
			return refuse("has later migrations applied", "undo the later migrations first")
		case down && m.Down == "":
			return refuse("has no down step", "going back from it would lose data; restore a backup instead")
		}
		if down {
			if _, err := tx.ExecContext(ctx, m.Down); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `DELETE FROM sqlstreams_migration WHERE version = ?`, m.Version)
			return err
		}
		if _, err := tx.ExecContext(ctx, m.Up); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO sqlstreams_migration (version, applied_at) VALUES (?, ?)`, m.Version, micros(time.Now()))
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite %s: migration %s: %w", d.path, m.Name, err)
	}
	return nil
}

// CheckPrivileges implements driver.Driver: the file must be writable,
// since streams create tables at run time. It creates a table in a
// transaction it then rolls back.
func (d *Driver) CheckPrivileges(ctx context.Context, _ driver.CheckPrivilegesParams) error {
	errProbed := errors.New("probed")
	err := d.inTx(ctx, nil, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE sqlstreams_privilege_probe (x INTEGER)`); err != nil {
			return err
		}
		return errProbed // roll back
	})
	switch {
	case errors.Is(err, errProbed):
		return nil
	case driver.Classified(err) && !errors.Is(err, driver.ErrDatabase):
		return err
	}
	return &driver.Error{Kind: driver.ErrDatabase, Err: err, Advice: fmt.Sprintf("the database file %s (and its directory, for the WAL) must be writable by this process: streams create tables at run time", d.path)}
}

// inTx runs fn in the caller's transaction when tx is not nil, or in a new
// immediate transaction on the writer that commits when fn succeeds. Waiting
// for the writer (held by another goroutine's transaction, such as an open
// ProduceTx) is bounded by BusyTimeout, as waiting for another process's
// file lock is; both end in ErrConflict.
func (d *Driver) inTx(ctx context.Context, tx driver.Tx, fn func(*sql.Tx) error) error {
	return d.inTxQ(ctx, tx, func(q cachedTx) error { return fn(q.Tx) })
}

// inTxQ is inTx for the hot paths: in a transaction of its own, fn's
// statements run through the writer's kept prepared statements.
func (d *Driver) inTxQ(ctx context.Context, tx driver.Tx, fn func(cachedTx) error) error {
	if err := d.check(); err != nil {
		return err
	}
	if tx != nil {
		a, ok := tx.(txAdapter)
		if !ok {
			return fmt.Errorf("sqlite: %w: got a %s transaction; wrap a transaction from this driver's DB() with sqlite.Tx", driver.ErrForeignTx, tx.DriverName())
		}
		return d.wrap(fn(cachedTx{Tx: a.tx}))
	}
	wctx, cancel := context.WithTimeout(ctx, d.busyTimeout)
	d.wstmts.prepare(wctx) // before taking the writer: preparing needs it free
	conn, err := d.write.Conn(wctx)
	cancel()
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return &driver.Error{Kind: driver.ErrConflict, Err: err, Advice: fmt.Sprintf("the database's single writer was held for %v by another transaction of this process "+
				"(a ProduceTx transaction not yet committed?); commit such transactions promptly and retry", d.busyTimeout)}
		}
		return d.wrap(err)
	}
	defer conn.Close()
	t, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return d.ended(ctx, err)
	}
	if err := fn(cachedTx{Tx: t, c: d.wstmts}); err != nil {
		_ = t.Rollback()
		return d.ended(ctx, err)
	}
	return d.ended(ctx, t.Commit())
}

// ended reports a failure after the context ended as the context's error:
// database/sql rolls the transaction back when its context ends, and a
// failed COMMIT on SQLite has not been applied, so nothing was written.
func (d *Driver) ended(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && !driver.Classified(err) {
		return fmt.Errorf("sqlite: nothing was written, the context ended first: %w", ctx.Err())
	}
	return d.wrap(err)
}

// readTx runs fn in a read transaction, so that it sees one snapshot.
func (d *Driver) readTx(ctx context.Context, fn func(*sql.Tx) error) error {
	return d.readTxQ(ctx, func(q cachedTx) error { return fn(q.Tx) })
}

// readTxQ is readTx with the readers' kept prepared statements.
func (d *Driver) readTxQ(ctx context.Context, fn func(cachedTx) error) error {
	if err := d.check(); err != nil {
		return err
	}
	db := d.read
	d.rstmts.prepare(ctx)
	t, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: db != d.write})
	if err != nil {
		return d.wrap(err)
	}
	defer t.Rollback()
	return d.wrap(fn(cachedTx{Tx: t, c: d.rstmts}))
}

// wrap gives an engine error the sentinel that says what it means. SQLite
// commits locally: a failed statement or COMMIT has not been applied, so no
// outcome is ever unknown.
func (d *Driver) wrap(err error) error {
	if err == nil || driver.Classified(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if d.closed.Load() {
		return fmt.Errorf("sqlite %s: %w (%v)", d.path, driver.ErrClosed, err)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return &driver.Error{Kind: driver.ErrConflict, Err: err, Advice: fmt.Sprintf("another connection held the database's write lock for more than %v "+
				"(another process, or an open transaction of the caller's: ProduceTx, AckTx, RetryTx or DeadTx); keep write transactions short, or use the PostgreSQL or MySQL driver for many writer processes", d.busyTimeout)}
		case sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT:
			return &driver.Error{Kind: driver.ErrUnavailable, Err: err, Advice: fmt.Sprintf("the database file %s cannot be opened or read; check the path, its permissions and the disk", d.path)}
		}
	}
	return &driver.Error{Kind: driver.ErrDatabase, Err: err}
}

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

func logTable(streamID int64) string { return "message_log_" + strconv.FormatInt(streamID, 10) }

func isUnique(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && (se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY)
}

// placeholders returns "?, ?, ?" for n values.
func placeholders(n int) string {
	if n == 0 {
		return ""
	}
	return strings.Repeat("?, ", n-1) + "?"
}

// tuples returns n copies of tuple separated by commas: the VALUES of a
// statement on n rows.
func tuples(n int, tuple string) string {
	if n == 0 {
		return ""
	}
	return strings.Repeat(tuple+", ", n-1) + tuple
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
