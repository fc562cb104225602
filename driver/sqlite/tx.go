package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/sqlstreams/sqlstreams/core/driver"
	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// DB returns the writer database, on which to begin transactions for
// ProduceTx.
func (d *Driver) DB() *sql.DB { return d.write }

// Tx adapts a transaction begun on DB() for Producer.ProduceTx and the
// transactional settles (Delivery.AckTx).
func Tx(tx *sql.Tx) driver.Tx { return driver.AdaptedTx[*sql.Tx]{Native: tx, Driver: driverName} }

// UnwrapTx returns the *sql.Tx that Tx adapted, so that code handed a
// driver.Tx can write its own rows in the same transaction.
func UnwrapTx(tx driver.Tx) (*sql.Tx, bool) {
	native, ok := driver.Unwrap[*sql.Tx](tx, driverName)
	return native, ok && native != nil
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
		native, ok := driver.Unwrap[*sql.Tx](tx, driverName)
		if !ok {
			return driver.ForeignTx(driverName, tx, "wrap a transaction from this driver's DB() with sqlite.Tx")
		}
		return d.wrap(fn(cachedTx{Tx: native}))
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
	if err, ok := driver.Settled(err); ok || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if d.closed.Load() {
		return fmt.Errorf("sqlite %s: %w (%v)", d.path, driver.ErrClosed, err)
	}
	if code, ok := primaryCode(err); ok {
		switch code {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return &driver.Error{Kind: driver.ErrConflict, Err: err, Advice: fmt.Sprintf("another connection held the database's write lock for more than %v "+
				"(another process, or an open transaction of the caller's: ProduceTx, AckTx, RetryTx or DeadTx); keep write transactions short, or use the PostgreSQL or MySQL driver for many writer processes", d.busyTimeout)}
		case sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT:
			return &driver.Error{Kind: driver.ErrUnavailable, Err: err, Advice: fmt.Sprintf("the database file %s cannot be opened or read; check the path, its permissions and the disk", d.path)}
		}
	}
	return &driver.Error{Kind: driver.ErrDatabase, Err: err}
}

// primaryCode is an engine error's primary result code (SQLITE_BUSY for
// SQLITE_BUSY_SNAPSHOT, say), if err is one.
func primaryCode(err error) (int, bool) {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return 0, false
	}
	return se.Code() & 0xff, true
}
