package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// leaseWrites is the write side of leases (sqldb.Leases) in SQLite's words:
// nothing is locked, the one writer holds the database; a batch record
// keeps its members' versions, which materializing reads.
var leaseWrites = sqldb.Leases{
	Exceptions: "delivery_exception",
	Versions:   true,
	Materialize: func(_ int64, members string) string {
		return `INSERT INTO delivery_exception (stream_id, group_name, msg_id, partition, schema_version, state, attempt, due_at, lease_token, holder, updated_at)
			SELECT b.stream_id, b.group_name, j.value, b.partition, v.value, 'leased', 1, b.lease_until, b.lease_token, b.holder, b.created_at
			FROM delivery_batch b JOIN json_each(b.ids) j JOIN json_each(b.versions) v ON v.key = j.key WHERE b.stream_id = ? AND (` + members + `)
			ON CONFLICT (stream_id, group_name, msg_id) DO NOTHING`
	},
	Among: func(ids []int64) (string, []any) {
		return `j.value IN (SELECT value FROM json_each(?))`, []any{sqldb.EncodeInts(ids)}
	},
	Failures: "failures = " + appendFailure,
	Time:     func(t time.Time) any { return micros(t) },
	Chunk:    500,
}

// settlement is one settle: the leases of a group it names, what it does
// to those in batches, and an extension's new expiry and time.
type settlement struct {
	streamID   int64
	group      string
	leases     []driver.Lease
	mode       sqldb.SettleMode
	until, now int64
}

const settleAck = sqldb.SettleAck

// byStatement settles rows with stmt (an ack, release or extension, with
// args), to which the WHERE clause naming them is added.
func byStatement(stmt string, args ...any) sqldb.Apply { return sqldb.ExecByIDs(stmt, args...) }

// ackStmt is Ack's statement on rows of their own.
const ackStmt = sqldb.AckStmt

// settle runs s in one transaction, the caller's when callerTx is not nil,
// and reports the leases it did not change.
func (d *Driver) settle(ctx context.Context, callerTx driver.Tx, s settlement, apply sqldb.Apply) (driver.SettleResult, error) {
	if len(s.leases) == 0 {
		return driver.SettleResult{}, d.check()
	}
	var res driver.SettleResult
	err := d.inTxQ(ctx, callerTx, func(tx cachedTx) error {
		var err error
		if res, err = settleIn(ctx, tx, s, apply); err != nil || callerTx == nil {
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
func settleIn(ctx context.Context, tx querier, s settlement, apply sqldb.Apply) (driver.SettleResult, error) {
	changed := map[int64]bool{}
	op := sqldb.Settle{StreamID: s.streamID, Group: s.group, Mode: s.mode, Until: s.until, Now: s.now, Apply: apply}
	if err := leaseWrites.SettleIn(ctx, tx, op, s.leases, changed); err != nil {
		return driver.SettleResult{}, err
	}
	return driver.SettleResult{Lost: driver.Lost(s.leases, changed)}, nil
}

// Ack implements driver.Driver.
func (d *Driver) Ack(ctx context.Context, p driver.AckParams) (driver.SettleResult, error) {
	return d.settle(ctx, p.Tx, settlement{streamID: p.StreamID, group: p.Group, leases: p.Leases, mode: settleAck}, byStatement(ackStmt))
}

// Fail implements driver.Driver. All failures run in one transaction.
func (d *Driver) Fail(ctx context.Context, p driver.FailParams) (driver.SettleResult, error) {
	s := settlement{streamID: p.StreamID, group: p.Group, leases: sqldb.Leased(p), mode: sqldb.SettleMaterialize}
	return d.settle(ctx, p.Tx, s, leaseWrites.Fail(p))
}

// appendFailure appends one failure to the history, with parameters
// (error, at) and the lease's holder.
const appendFailure = `json_insert(COALESCE(failures, '[]'), '$[#]', json_object('attempt', attempt, 'error', ?, 'at', ?, 'holder', COALESCE(holder, '')))`

// Release implements driver.Driver.
func (d *Driver) Release(ctx context.Context, p driver.ReleaseParams) (driver.SettleResult, error) {
	if p.ClaimToken != "" {
		return driver.SettleResult{}, d.inTx(ctx, nil, func(tx *sql.Tx) error { return leaseWrites.ReleaseClaim(ctx, tx, p) })
	}
	now := micros(p.Now)
	s := settlement{streamID: p.StreamID, group: p.Group, leases: p.Leases, mode: sqldb.SettleMaterialize}
	return d.settle(ctx, nil, s, byStatement(sqldb.ReleaseStmt, now, now))
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
		s := settlement{streamID: p.StreamID, group: p.Group, leases: p.Leases, mode: sqldb.SettleExtend,
			until: micros(p.Until.Add(max(now.Sub(p.Now), 0))), now: micros(now)}
		var err error
		res, err = settleIn(ctx, tx, s, byStatement(sqldb.ExtendStmt, s.until, s.now))
		return err
	})
	if err != nil {
		return driver.SettleResult{}, err
	}
	return res, nil
}
