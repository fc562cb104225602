package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Leases do not run while a caller's transaction holds the writer.
//
// A settle in the caller's transaction (AckTx, RetryTx, DeadTx) leaves that
// transaction holding the file's one writer until the caller commits or
// rolls back, which the inbox pattern may do much later: until then no
// member of any process can write, so no heartbeat extends a lease and no
// claim takes one. Without more, every lease that ran out meanwhile would
// be taken by the first claim after the COMMIT, while its handler still
// runs (issue 25). So the settle records when it took place (pauseLeases,
// in the caller's transaction), and the first claim or extension after the
// COMMIT, in its own write transaction and before it reads any expiry,
// moves every lease that was live then by the time since (resumeLeases).
// Nobody else wrote in between, so no lease was extended or taken in that
// time. A rolled-back transaction takes its record with it: then the
// leases are not moved, and their holders' heartbeats, late, report them
// lost where another member took them.

// pauseLeases records, in the caller's transaction tx, that it holds the
// writer from now on.
func pauseLeases(ctx context.Context, tx cachedTx, now time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO lease_pause (since) VALUES (?)`, micros(now))
	return err
}

// resumeLeases gives the leases live when the earliest recorded pause began
// the time since, and deletes the records; it does nothing, with one read
// of an empty table, when there are none.
func resumeLeases(ctx context.Context, tx cachedTx) error {
	var since sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT MIN(since) FROM lease_pause`).Scan(&since); err != nil || !since.Valid {
		return err
	}
	if shift := micros(time.Now().UTC()) - since.Int64; shift > 0 {
		if _, err := tx.ExecContext(ctx, `UPDATE delivery_batch SET lease_until = lease_until + ? WHERE lease_until > ?`, shift, since.Int64); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE delivery_exception SET due_at = due_at + ? WHERE state = ? AND due_at > ?`,
			shift, string(driver.StateLeased), since.Int64); err != nil {
			return err
		}
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM lease_pause`)
	return err
}
