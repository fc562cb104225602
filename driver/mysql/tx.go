package mysql

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// querier is what statements run on: a connection of the pool holding one
// of the driver's transactions, or the caller's *sql.Tx.
type querier = sqldb.Querier

// Retry limits for the driver's own transactions and autocommit statements.
const (
	deadlockAttempts    = 5 // deadlocks: the engine rolled back one of two transactions
	lockTimeoutAttempts = 3 // lock wait timeouts are retried at most twice
	lostConnAttempts    = 3 // connections lost before anything could commit
)

// rollbackTimeout bounds the ROLLBACK after a failure, which runs even when
// the caller's context has ended.
const rollbackTimeout = 5 * time.Second

// finalError is an error the driver's transaction must not be re-run for.
type finalError struct{ err error }

func (e finalError) Error() string { return e.err.Error() }
func (e finalError) Unwrap() error { return e.err }

// stage is where a transaction failed.
type stage int

const (
	stageBegin stage = iota
	stageStatement
	stageCommit
)

// inTx runs fn in the caller's transaction when tx is not nil, or in a new
// transaction of the driver's that commits when fn succeeds and is re-run
// after deadlocks, lock wait timeouts and connections lost before COMMIT; fn
// must reset anything it accumulates.
func (d *Driver) inTx(ctx context.Context, tx driver.Tx, fn func(querier) error) error {
	if err := d.check(); err != nil {
		return err
	}
	if tx == nil {
		return d.ownTx(ctx, false, fn)
	}
	native, ok := driver.Unwrap[*sql.Tx](tx, driverName)
	if !ok {
		return driver.ForeignTx(driverName, tx, "wrap a *sql.Tx from this driver's DB() with mysql.Tx")
	}
	if native == nil {
		return fmt.Errorf("mysql: %w: mysql.Tx was given a nil *sql.Tx", driver.ErrForeignTx)
	}
	caller, _, err := marked(fn(native))
	if caller {
		return err
	}
	return d.wrap(ctx, err, opCallerTx)
}

// marked unwraps an error fn marked: a driver.CallerError goes back to the
// caller as it is, a finalError is not run again.
func marked(err error) (caller, final bool, inner error) {
	if inner, ok := driver.FromCaller(err); ok {
		return true, false, inner
	}
	var fe finalError
	if errors.As(err, &fe) {
		return false, true, fe.err
	}
	return false, false, err
}

// retryLimits are driver.Retries' limits for the driver's own
// transactions and autocommit statements, by failureKind.
var retryLimits = []int{deadlockAttempts, lockTimeoutAttempts, lostConnAttempts}

// failureKind is the kind of a failure the engine rolled back (a deadlock
// and the like), a lock wait that ran out, or a connection lost before
// anything could commit, as retryLimits counts them; -1 for any other.
func failureKind(rolledBack, timedOut, lost bool) int {
	switch {
	case rolledBack:
		return 0
	case timedOut:
		return 1
	case lost:
		return 2
	}
	return -1
}

// ownTx runs fn in a transaction of the driver's own, READ COMMITTED, or a
// read-only REPEATABLE READ snapshot when snapshot is set.
func (d *Driver) ownTx(ctx context.Context, snapshot bool, fn func(querier) error) error {
	if err := d.check(); err != nil {
		return err
	}
	var at stage
	r := driver.Retries{Limits: retryLimits}
	last, ended := r.Run(ctx, func() (err error) {
		at, err = d.tryTx(ctx, snapshot, fn)
		return err
	}, func(err error) int {
		caller, final, err := marked(err)
		// A COMMIT that failed without the server's answer may have been
		// applied; one the server refused (Galera's certification failure is
		// a deadlock at COMMIT) was not, and may run again.
		if caller || final || ctx.Err() != nil || (at == stageCommit && mysqlErrno(err) == 0) {
			return -1
		}
		// A connection lost before COMMIT committed nothing; a pooled
		// connection found dead fails its first statement.
		n := mysqlErrno(err)
		return failureKind(rolledBack(n) || errors.Is(err, errOutOfOrder) || d.galeraIDTaken(err), n == errLockWaitTimeout,
			n == 0 && at != stageCommit && !driver.Classified(err) && isConnError(err))
	})
	if ended != nil {
		return d.wrap(ctx, ended, opRead)
	}
	caller, _, err := marked(last)
	if caller {
		return err
	}
	o := opRead
	if at == stageCommit {
		o = opWrite
	}
	return d.wrap(ctx, err, o)
}

// tryTx runs fn once in a transaction on a connection of its own. COMMIT is
// a statement of its own rather than Tx.Commit, so that the context bounds
// it: go-sql-driver's Commit does not watch the context.
func (d *Driver) tryTx(ctx context.Context, snapshot bool, fn func(querier) error) (stage, error) {
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return stageBegin, err
	}
	defer conn.Close()
	begin := "START TRANSACTION"
	if snapshot {
		if _, err := conn.ExecContext(ctx, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"); err != nil {
			discard(conn)
			return stageBegin, err
		}
		begin = "START TRANSACTION READ ONLY"
	}
	if _, err := conn.ExecContext(ctx, begin); err != nil {
		discard(conn)
		return stageBegin, err
	}
	if err := fn(conn); err != nil {
		rollback(ctx, conn)
		return stageStatement, err
	}
	if snapshot {
		rollback(ctx, conn)
		return stageCommit, nil
	}
	if err := ctx.Err(); err != nil {
		// COMMIT was not sent: the transaction rolls back.
		rollback(ctx, conn)
		return stageStatement, err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		discard(conn)
		return stageCommit, err
	}
	return stageCommit, nil
}

// rollback ends a transaction that will not commit, or drops its connection
// (and with it the transaction) when that fails.
func rollback(ctx context.Context, conn *sql.Conn) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	if _, err := conn.ExecContext(rctx, "ROLLBACK"); err != nil {
		discard(conn)
	}
}

// discard makes the pool close conn instead of reusing it, so that no
// transaction in an unknown state is left open on a pooled connection.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return sqldriver.ErrBadConn })
}

// autocommit runs fn, one statement that commits on its own, on a connection
// of the pool, and runs it again after errors that say it did not take
// effect (a deadlock or lock wait timeout rolled the statement back, or the
// connection was found dead before anything was sent), unless fn says the
// error is final (finalError).
func (d *Driver) autocommit(ctx context.Context, fn func(querier) error) error {
	if err := d.check(); err != nil {
		return err
	}
	o := opWrite
	r := driver.Retries{Limits: retryLimits}
	last, ended := r.Run(ctx, func() error {
		conn, err := d.db.Conn(ctx)
		if err == nil {
			defer conn.Close()
			err = ctx.Err()
		}
		if err != nil {
			o = opRead
			return finalError{err}
		}
		return fn(conn)
	}, func(err error) int {
		if errors.As(err, new(finalError)) || ctx.Err() != nil {
			return -1
		}
		n := mysqlErrno(err)
		return failureKind(rolledBack(n), n == errLockWaitTimeout, n == 0 && errors.Is(err, sqldriver.ErrBadConn))
	})
	if ended != nil {
		return d.wrap(ctx, ended, opRead)
	}
	var fe finalError
	if errors.As(last, &fe) {
		last = fe.err
	}
	return d.wrap(ctx, last, o)
}

// exec runs one statement that commits on its own (see autocommit).
func (d *Driver) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	var res sql.Result
	err := d.autocommit(ctx, func(q querier) error {
		var err error
		res, err = q.ExecContext(ctx, query, args...)
		return err
	})
	return res, err
}

// Tx adapts a transaction for Producer.ProduceTx and for the transactional
// settles (Delivery.AckTx, RetryTx, DeadTx). Begin it on DB(), or on another
// pool connected to the same database; the rows and outcomes become visible
// when the caller commits. While it is open the transaction holds the append
// lock of the partitions it produced to, and the locks of the deliveries it
// settled (see the package documentation).
func Tx(tx *sql.Tx) driver.Tx { return driver.AdaptedTx[*sql.Tx]{Native: tx, Driver: driverName} }

// UnwrapTx returns the *sql.Tx that Tx adapted, so that code handed a
// driver.Tx (middleware, a handler) can write its own rows in the same
// transaction. It reports false for a transaction of another driver or a
// nil one.
func UnwrapTx(tx driver.Tx) (*sql.Tx, bool) {
	native, ok := driver.Unwrap[*sql.Tx](tx, driverName)
	return native, ok && native != nil
}
