package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// querier is what the driver's statements run on, and runner adapts for
// the statements it shares (sqldb.Runner): the pool, one of its
// connections, a transaction (the driver's or the caller's), or a claim's
// transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// retryLimits are driver.Retries' limits for the driver's own statements
// and transactions: one kind (serialization failures, deadlocks and
// failures that certainly wrote nothing), run again up to 20 times.
var retryLimits = []int{1 + 20}

// retry runs fn, one attempt of the driver's own statement or transaction,
// until it succeeds, fails for good, or ctx ends, and classifies its error.
// stage says what a failure means when fn does not say it itself (see
// staged).
func (d *Driver) retry(ctx context.Context, stage stage, fn func() error) error {
	if err := d.check(); err != nil {
		return err
	}
	r := driver.Retries{Limits: retryLimits}
	last, _ := r.Run(ctx, fn, func(err error) int {
		st := stage
		if s, ok := err.(*staged); ok {
			err, st = s.err, s.stage
		}
		if sentNothing(err) {
			st = stageRead
		}
		if ctx.Err() == nil && !d.closed.Load() && retryable(err, st) {
			return 0
		}
		return -1
	})
	return d.wrap(ctx, last, stage)
}

// write runs fn, an autocommit write (one statement, or a batch that runs
// as one implicit transaction), on a connection of the pool (onConn). A
// failure of fn after it sent its statement leaves the outcome unknown
// unless the server answered with an error.
func (d *Driver) write(ctx context.Context, fn func(c *pgxpool.Conn) error) error {
	return d.onConn(ctx, stageWrite, fn)
}

// onConn is retry of fn on a connection of the pool. A failure to get the
// connection sent nothing.
func (d *Driver) onConn(ctx context.Context, stage stage, fn func(c *pgxpool.Conn) error) error {
	return d.retry(ctx, stage, func() error {
		c, err := d.pool.Acquire(ctx)
		if err != nil {
			return &staged{err: err, stage: stageRead}
		}
		defer c.Release() // a connection left in a transaction is closed, not reused
		return fn(c)
	})
}

// read runs fn, which only reads, with the pool.
func (d *Driver) read(ctx context.Context, fn func() error) error {
	return d.retry(ctx, stageRead, fn)
}

// inTx runs fn in a new read committed transaction that commits when fn
// succeeds, retrying the whole transaction after serialization failures,
// deadlocks and failures that certainly left nothing written.
func (d *Driver) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return d.retry(ctx, stageTx, func() error { return d.runTx(ctx, pgx.TxOptions{}, fn) })
}

// claimTx is inTx for the claim, on a connection of its own, whose round
// trips fn sends with claimTxn.send: the first begins the transaction, and
// the last may end it, sending COMMIT with the claim's last statements;
// otherwise claimTx commits.
func (d *Driver) claimTx(ctx context.Context, fn func(*claimTxn) error) error {
	return d.onConn(ctx, stageTx, func(c *pgxpool.Conn) error {
		t := &claimTxn{Conn: c.Conn()}
		if err := fn(t); err != nil {
			t.rollback(ctx)
			return err
		}
		if !t.begun || t.ended {
			return nil
		}
		if err := committed(t.Exec(ctx, `commit`)); err != nil {
			return &staged{err: err, stage: stageCommit}
		}
		return nil
	})
}

// claimTxn is the claim's transaction (claimTx) on its connection.
type claimTxn struct {
	*pgx.Conn
	begun bool // BEGIN was sent
	ended bool // COMMIT or ROLLBACK was sent
}

// beginClaim begins a claim's transaction. It turns bitmap scans off for
// the transaction: on a log whose statistics are missing or stale (a new
// stream, before autovacuum's first analyze) the planner would otherwise
// read every row past the cursor and sort them instead of walking the
// (partition, id) index for the few rows it needs (20 ms per claim at 100k
// rows, growing with the log).
var beginClaim = []string{`begin isolation level read committed`, `SET LOCAL enable_bitmapscan = off`}

// send sends b in one round trip and reads its results with read. The
// transaction's first round trip begins it (beginClaim goes first). With
// commit, COMMIT goes last, after the statements read reads: a failure of
// one of b's statements left the transaction aborted (the server skipped
// the rest of the batch, COMMIT too), which claimTx rolls back; a failure
// of COMMIT itself may leave the outcome unknown.
func (t *claimTxn) send(ctx context.Context, b *pgx.Batch, read func(pgx.BatchResults) error, commit bool) error {
	begin := !t.begun
	if begin {
		first := make([]*pgx.QueuedQuery, len(beginClaim))
		for i, sql := range beginClaim {
			first[i] = &pgx.QueuedQuery{SQL: sql}
		}
		b.QueuedQueries, t.begun = append(first, b.QueuedQueries...), true
	}
	if commit {
		b.Queue(`commit`)
	}
	br := t.SendBatch(ctx, b)
	var err error
	for i := 0; begin && i < len(beginClaim) && err == nil; i++ {
		_, err = br.Exec()
	}
	if err == nil {
		err = read(br)
	}
	if err != nil {
		_ = br.Close()
		var pe *pgconn.PgError
		if !commit || errors.As(err, &pe) {
			return err // the server skipped the rest, COMMIT too
		}
		t.ended = true // COMMIT was sent: it may have run
		return &staged{err: err, stage: stageCommit}
	}
	if !commit {
		return br.Close()
	}
	t.ended = true
	if err := errors.Join(committed(br.Exec()), br.Close()); err != nil {
		return &staged{err: err, stage: stageCommit}
	}
	return nil
}

// rollback ends a transaction begun and not yet ended, bounded by a second
// however ctx ends.
func (t *claimTxn) rollback(ctx context.Context) {
	if !t.begun || t.ended {
		return
	}
	t.ended = true
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	_, _ = t.Exec(rctx, `rollback`)
}

// committed is the outcome of a COMMIT from its tag: the server answers a
// COMMIT of a failed transaction with ROLLBACK.
func committed(tag pgconn.CommandTag, err error) error {
	if err == nil && tag.String() == "ROLLBACK" {
		return pgx.ErrTxCommitRollback
	}
	return err
}

// runTx is one attempt of a transaction. A failure before COMMIT leaves
// nothing written (the server rolls back a transaction whose connection
// drops); a failure of COMMIT itself may leave the outcome unknown.
func (d *Driver) runTx(ctx context.Context, opts pgx.TxOptions, fn func(pgx.Tx) error) error {
	tx, err := d.pool.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		_ = tx.Rollback(rctx)
		cancel()
		return err
	}
	if err = tx.Commit(ctx); err != nil && opts.AccessMode != pgx.ReadOnly {
		return &staged{err: err, stage: stageCommit}
	}
	return err
}

func eachRow(ctx context.Context, tx querier, query string, args []any, fn func(pgx.Rows) error) error {
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// roundTrip is the statements of one round trip, each queued with what
// reads its result (add), or a few with one reader (then): what decides
// whether a statement goes out is written once, and read reads the results
// in the order queued.
type roundTrip struct {
	pgx.Batch
	reads []func(pgx.BatchResults) error
}

// add queues a statement and what reads its result.
func (r *roundTrip) add(read func(pgx.BatchResults) error, sql string, args ...any) {
	r.Queue(sql, args...)
	r.then(read)
}

// then adds what reads the results of the statements queued since the
// last reader.
func (r *roundTrip) then(read func(pgx.BatchResults) error) { r.reads = append(r.reads, read) }

func (r *roundTrip) read(br pgx.BatchResults) error {
	for _, read := range r.reads {
		if err := read(br); err != nil {
			return err
		}
	}
	return nil
}

// execRead reads the result of a statement that returns no rows.
func execRead(br pgx.BatchResults) error {
	_, err := br.Exec()
	return err
}
