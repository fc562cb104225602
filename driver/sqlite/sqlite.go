// Package sqlite is the embedded sqlstreams driver: one SQLite file, pure Go
// (modernc.org/sqlite, no cgo), nothing to install or run.
//
//	client, err := sqlstreams.Open(ctx, sqlite.Open("app.db"))
//
// Commit order (C5): SQLite has one writer at a time, so ids are assigned
// and committed in the same order. The driver keeps one writer connection
// per process and reads beside it through WAL readers (docs/internals.md,
// "Invariants per engine").
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
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// The interfaces the driver implements, the optional ones included.
var (
	_ driver.Driver          = (*Driver)(nil)
	_ driver.Alterer         = (*Driver)(nil)
	_ driver.ClientDirectory = (*Driver)(nil)
	_ driver.GroupPauser     = (*Driver)(nil)
	_ driver.Notifier        = (*Driver)(nil)
	_ driver.RevisionDeleter = (*Driver)(nil)
	_ driver.SampleStore     = (*Driver)(nil)
)

// directory is the client directory, the samples and the dead letters
// (ListDead, Replay, Discard), sqldb's on this driver's scopes.
type directory = sqldb.Directory[int64]

// Driver is the SQLite driver. Create it with Open.
type Driver struct {
	directory   // RecordClient, ListClients, ..., PruneSamples
	path        string
	busyTimeout time.Duration
	write       *sql.DB // one connection: SQLite has one writer
	read        *sql.DB // WAL readers
	wstmts      *stmtCache
	rstmts      *stmtCache                 // wstmts when read is write
	next        driver.NextClaim[struct{}] // the group's last claim here filled its limit
	noNotify    bool                       // WithoutNotify: consumers poll only
	watching    driver.Subscribers[string] // Subscribe calls by file, sharing one watch (notify.go)
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

// WithoutNotify turns the write-ahead log watch off (Subscribe): consumers
// rely on polling alone, as they must where the file system reports no
// changes made by other hosts (a network share).
func WithoutNotify() Option { return func(drv *Driver) { drv.noNotify = true } }

// Open returns a driver for the SQLite file at path, created if missing.
// Connection errors surface from sqlstreams.Open.
func Open(path string, opts ...Option) *Driver {
	d := &Driver{path: path, busyTimeout: BusyTimeout}
	d.directory = directory{Store: store, Write: sqldb.Over(d.writing), Read: sqldb.Over(d.reading)}
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
	memory := inMemory(path)
	pragmas := url.Values{}
	for _, p := range []string{"busy_timeout(" + strconv.Itoa(int(d.busyTimeout.Milliseconds())) + ")", "journal_mode(WAL)", "synchronous(NORMAL)", "foreign_keys(1)"} {
		pragmas.Add("_pragma", p)
	}
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	writeDSN := path + sep + pragmas.Encode() + "&_txlock=immediate"
	writer, err := newBusyConnector(writeDSN, d.busyTimeout)
	if err != nil {
		d.opened = err
		return d
	}
	d.write = sql.OpenDB(writer)
	d.write.SetMaxOpenConns(1)
	d.write.SetConnMaxIdleTime(0)
	d.wstmts = newStmtCache(d.write)
	if memory {
		d.read, d.rstmts = d.write, d.wstmts
		return d
	}
	reader, err := newBusyConnector(path+sep+pragmas.Encode(), d.busyTimeout)
	if d.opened = err; err == nil {
		d.read = sql.OpenDB(reader)
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

// driverName is the driver's name: Name, and the adapter of a caller's
// transaction (driver.AdaptedTx).
const driverName = "sqlite"

// Name implements driver.Driver.
func (d *Driver) Name() string { return driverName }

// Capabilities implements driver.Driver.
func (d *Driver) Capabilities() driver.Capabilities {
	_, file := databaseFile(d.path)
	return driver.Capabilities{SingleWriter: true, InProcess: true, Notify: file && !d.noNotify}
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

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// logTable names a stream's log table.
var logTable = sqldb.LogTable

func isUnique(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && (se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY)
}
