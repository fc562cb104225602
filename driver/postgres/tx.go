package postgres

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// maxRetries bounds how often the driver runs one of its own transactions
// again after a serialization failure, a deadlock or a failure that
// certainly wrote nothing.
const maxRetries = 20

// retry runs fn, one attempt of the driver's own statement or transaction,
// until it succeeds, fails for good, or ctx ends, and classifies its error.
// stage says what a failure means when fn does not say it itself (see
// staged).
func (d *Driver) retry(ctx context.Context, stage stage, fn func() error) error {
	if err := d.check(); err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		err := fn()
		if err == nil {
			return nil
		}
		st := stage
		if s, ok := err.(*staged); ok {
			err, st = s.err, s.stage
		}
		if sentNothing(err) {
			st = stageRead
		}
		if attempt >= maxRetries || ctx.Err() != nil || d.closed.Load() || !retryable(err, st) {
			return d.wrap(ctx, err, st)
		}
		backoff := time.Duration(1+rand.IntN(1<<min(attempt, 6))) * time.Millisecond
		select {
		case <-ctx.Done():
			return d.wrap(ctx, err, st)
		case <-time.After(backoff):
		}
	}
}

// write runs fn, an autocommit write (one statement, or a batch that runs
// as one implicit transaction), on a connection of the pool. A failure to
// get the connection sent nothing; a failure of fn after it sent its
// statement leaves the outcome unknown unless the server answered with an
// error.
func (d *Driver) write(ctx context.Context, fn func(c *pgxpool.Conn) error) error {
	return d.retry(ctx, stageWrite, func() error {
		c, err := d.pool.Acquire(ctx)
		if err != nil {
			return &staged{err: err, stage: stageRead}
		}
		defer c.Release()
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

// claimTx is inTx for the claim, on a connection of its own, with the
// transaction begun in the batch of statements first queues (one round trip
// for BEGIN and them; read reads their results). It turns bitmap scans off
// for the transaction: on a log whose statistics are missing or stale (a
// new stream, before autovacuum's first analyze) the planner would
// otherwise read every row past the cursor and sort them instead of walking
// the (partition, id) index for the few rows it needs. first must queue
// that setting first. fn may end the transaction itself, sending COMMIT
// with its last statements (claimTxn.commitWith); otherwise claimTx
// commits.
func (d *Driver) claimTx(ctx context.Context, first func(*pgx.Batch), read func(pgx.BatchResults) error, fn func(*claimTxn) error) error {
	return d.retry(ctx, stageTx, func() error {
		c, err := d.pool.Acquire(ctx)
		if err != nil {
			return &staged{err: err, stage: stageRead} // nothing was sent
		}
		defer c.Release() // a connection left in a transaction is closed, not reused
		t := &claimTxn{conn: c.Conn()}
		b := &pgx.Batch{}
		b.Queue(`begin isolation level read committed`)
		first(b)
		br := t.conn.SendBatch(ctx, b)
		_, err = br.Exec() // BEGIN
		if err == nil {
			err = read(br)
		}
		err = errors.Join(err, br.Close())
		if err == nil {
			err = fn(t)
		}
		if err != nil {
			if !t.ended {
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
				_, _ = t.conn.Exec(rctx, `rollback`)
				cancel()
			}
			return err
		}
		if t.ended {
			return nil
		}
		tag, err := t.conn.Exec(ctx, `commit`)
		if err == nil && tag.String() == "ROLLBACK" {
			err = pgx.ErrTxCommitRollback
		}
		if err != nil {
			return &staged{err: err, stage: stageCommit}
		}
		return nil
	})
}

// claimTxn is the claim's transaction (claimTx).
type claimTxn struct {
	conn *pgx.Conn
	// ended: COMMIT went out with the claim's last statements.
	ended bool
}

func (t *claimTxn) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return t.conn.Query(ctx, sql, args...)
}

func (t *claimTxn) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return t.conn.QueryRow(ctx, sql, args...)
}

func (t *claimTxn) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return t.conn.SendBatch(ctx, b)
}

// commitWith queues COMMIT as the last statement of b, the claim's last
// batch of statements: one round trip for them and the commit. done reads
// the batch's results but the last, and then commitWith reads the COMMIT's:
// a failure of one of b's statements left the transaction aborted (the
// server skipped the rest of the batch), which claimTx rolls back; a
// failure of COMMIT itself may leave the outcome unknown.
func (t *claimTxn) commitWith(ctx context.Context, b *pgx.Batch, done func(pgx.BatchResults) error) error {
	b.Queue(`commit`)
	br := t.conn.SendBatch(ctx, b)
	if err := done(br); err != nil {
		_ = br.Close()
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return err // the server skipped the rest, COMMIT too
		}
		t.ended = true // COMMIT was sent: it may have run
		return &staged{err: err, stage: stageCommit}
	}
	t.ended = true
	tag, err := br.Exec()
	if err == nil && tag.String() == "ROLLBACK" {
		err = pgx.ErrTxCommitRollback
	}
	if err = errors.Join(err, br.Close()); err != nil {
		return &staged{err: err, stage: stageCommit}
	}
	return nil
}

// readTx runs fn in a read-only repeatable read transaction: one snapshot.
func (d *Driver) readTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return d.retry(ctx, stageRead, func() error {
		return d.runTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
	})
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
	if opts.AccessMode == pgx.ReadOnly {
		return tx.Commit(ctx)
	}
	if err := tx.Commit(ctx); err != nil {
		return &staged{err: err, stage: stageCommit}
	}
	return nil
}

func eachRow(ctx context.Context, tx pgx.Tx, query string, args []any, fn func(pgx.Rows) error) error {
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
