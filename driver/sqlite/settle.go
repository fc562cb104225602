package sqlite

import (
	"context"
	"database/sql"
	"slices"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// settlement is one settle: the leases of a group it names, and what it
// does to those in batches (batch.go).
type settlement struct {
	streamID int64
	group    string
	leases   []driver.Lease
	op       batchSettle
	until    int64 // settleExtend: the new expiry
}

// settleRows changes the leased rows of their own that a settle names (the
// leases left after the batches), marking the ids it changed.
type settleRows func(ctx context.Context, tx querier, s settlement, rest []driver.Lease, changed map[int64]bool) error

// settle runs s in one transaction, the caller's when callerTx is not nil,
// and reports the leases it did not change.
func (d *Driver) settle(ctx context.Context, callerTx driver.Tx, s settlement, rows settleRows) (driver.SettleResult, error) {
	if len(s.leases) == 0 {
		return driver.SettleResult{}, d.check()
	}
	var res driver.SettleResult
	err := d.inTxQ(ctx, callerTx, func(tx cachedTx) error {
		var err error
		if res, err = settleIn(ctx, tx, s, rows); err != nil || callerTx == nil {
			return err
		}
		return pauseLeases(ctx, tx, time.Now().UTC())
	})
	if err != nil {
		return driver.SettleResult{}, err
	}
	return res, nil
}

// settleIn is settle's work inside the transaction tx: first the batches,
// then the rows of their own.
func settleIn(ctx context.Context, tx querier, s settlement, rows settleRows) (driver.SettleResult, error) {
	changed := map[int64]bool{}
	rest, err := settleBatches(ctx, tx, s, changed)
	if err != nil {
		return driver.SettleResult{}, err
	}
	if err := rows(ctx, tx, s, rest, changed); err != nil {
		return driver.SettleResult{}, err
	}
	return driver.SettleResult{Lost: driver.Lost(s.leases, changed)}, nil
}

// byStatement settles rows with stmt, an UPDATE or DELETE of
// delivery_exception to which it adds the WHERE clause naming the leases,
// in chunks.
func byStatement(stmt string, args ...any) settleRows {
	return func(ctx context.Context, tx querier, s settlement, rest []driver.Lease, changed map[int64]bool) error {
		const chunkSize = 400
		for start := 0; start < len(rest); start += chunkSize {
			pred, pargs := leasedPairs(rest[start:min(start+chunkSize, len(rest))])
			all := append(append(slices.Clone(args), s.streamID, s.group), pargs...)
			if err := sqldb.Mark(ctx, tx, stmt+` WHERE stream_id = ? AND group_name = ? AND `+pred+` RETURNING msg_id`, all, changed); err != nil {
				return err
			}
		}
		return nil
	}
}

// leasedPairs is the predicate naming leased deliveries by (id, token), and
// its arguments: a delivery is held only with the token of the claim that
// leased it.
func leasedPairs(leases []driver.Lease) (string, []any) {
	args := make([]any, 0, 2*len(leases))
	for _, l := range leases {
		args = append(args, l.ID, l.Token)
	}
	return `state = 'leased' AND (msg_id, lease_token) IN (VALUES ` + sqldb.Repeated(len(leases), "(?, ?)", ", ") + `)`, args
}

// ackStmt is Ack's statement on rows of their own.
const ackStmt = `DELETE FROM delivery_exception`

// Ack implements driver.Driver.
func (d *Driver) Ack(ctx context.Context, p driver.AckParams) (driver.SettleResult, error) {
	return d.settle(ctx, p.Tx, settlement{streamID: p.StreamID, group: p.Group, leases: p.Leases, op: settleAck}, byStatement(ackStmt))
}

// Fail implements driver.Driver. Each failure carries its own error and due
// time, so each is one statement; all run in one transaction. settleCarve
// settles no batch member itself: each failure has a row of its own by the
// time its statement runs.
func (d *Driver) Fail(ctx context.Context, p driver.FailParams) (driver.SettleResult, error) {
	s := settlement{streamID: p.StreamID, group: p.Group, leases: make([]driver.Lease, len(p.Failures)), op: settleCarve}
	for i, f := range p.Failures {
		s.leases[i] = f.Lease
	}
	return d.settle(ctx, p.Tx, s, func(ctx context.Context, tx querier, s settlement, _ []driver.Lease, changed map[int64]bool) error {
		for _, f := range p.Failures {
			state, due := driver.StateDelayed, f.Due
			if f.Dead {
				state, due = driver.StateDead, p.Now
			}
			res, err := tx.ExecContext(ctx, `UPDATE delivery_exception SET state = ?, due_at = ?, lease_token = NULL, last_error = ?,
				first_failed_at = COALESCE(first_failed_at, ?), updated_at = ?, failures = `+appendFailure+`
				WHERE stream_id = ? AND group_name = ? AND msg_id = ? AND lease_token = ? AND state = 'leased'`,
				string(state), micros(due), f.Error, micros(p.Now), micros(p.Now), driver.CutHistoryError(f.Error), driver.HistoryTime(p.Now),
				s.streamID, s.group, f.Lease.ID, f.Lease.Token)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 1 {
				changed[f.Lease.ID] = true
			}
		}
		return nil
	})
}

// appendFailure appends one failure to the history, with parameters
// (error, at) and the lease's holder.
const appendFailure = `json_insert(COALESCE(failures, '[]'), '$[#]', json_object('attempt', attempt, 'error', ?, 'at', ?, 'holder', COALESCE(holder, '')))`

const releaseSet = `UPDATE delivery_exception SET state = 'delayed', due_at = ?, attempt = attempt - 1, lease_token = NULL, updated_at = ?`

// Release implements driver.Driver.
func (d *Driver) Release(ctx context.Context, p driver.ReleaseParams) (driver.SettleResult, error) {
	now := micros(p.Now)
	if p.ClaimToken != "" {
		return driver.SettleResult{}, d.inTx(ctx, nil, func(tx *sql.Tx) error {
			if err := materializeAll(ctx, tx, p.StreamID, `SELECT `+batchColumns+` FROM delivery_batch WHERE stream_id = ? AND group_name = ? AND lease_token = ?`,
				p.StreamID, p.Group, p.ClaimToken); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, releaseSet+` WHERE stream_id = ? AND group_name = ? AND lease_token = ? AND state = 'leased'`,
				now, now, p.StreamID, p.Group, p.ClaimToken)
			return err
		})
	}
	return d.settle(ctx, nil, settlement{streamID: p.StreamID, group: p.Group, leases: p.Leases, op: settleCarve}, byStatement(releaseSet, now, now))
}

// Extend implements driver.Driver. The new expiry counts from when the
// extension is applied, not from p.Now: the write may have waited for the
// database's one writer (a caller's transaction holds it until COMMIT), and
// an expiry computed before that wait could be past by then.
func (d *Driver) Extend(ctx context.Context, p driver.ExtendParams) (driver.SettleResult, error) {
	if len(p.Leases) == 0 {
		return driver.SettleResult{}, d.check()
	}
	var res driver.SettleResult
	err := d.inTxQ(ctx, nil, func(tx cachedTx) error {
		if err := resumeLeases(ctx, tx); err != nil {
			return err
		}
		now := time.Now().UTC()
		s := settlement{streamID: p.StreamID, group: p.Group, leases: p.Leases, op: settleExtend, until: micros(p.Until.Add(max(now.Sub(p.Now), 0)))}
		var err error
		res, err = settleIn(ctx, tx, s, byStatement(`UPDATE delivery_exception SET due_at = ?, updated_at = ?`, s.until, micros(now)))
		return err
	})
	if err != nil {
		return driver.SettleResult{}, err
	}
	return res, nil
}
