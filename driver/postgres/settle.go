package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// leasedPairs names the deliveries leased with their tokens, a leaseSet as
// $3 to $7: an id found in the sorted list (width_bucket, a binary search)
// with its listed token. It plans as an index range scan whatever the
// planner knows; an unnest semi-join was quadratic on a table without
// statistics (13s for 10000 leases).
const leasedPairs = ` WHERE d.stream_id = $1::bigint AND d.group_name = $2::text AND d.state = 'leased'
	AND d.msg_id BETWEEN $3::bigint AND $4::bigint
	AND ($5::bigint[])[width_bucket(d.msg_id, $5::bigint[])] = d.msg_id
	AND d.lease_token = ($7::text[])[($6::integer[])[width_bucket(d.msg_id, $5::bigint[])]]`

// leaseIndex is the position of row d's id in the sorted id list $5.
const leaseIndex = `width_bucket(d.msg_id, $5::bigint[])`

// leaseSet is a list of leases as leasedPairs takes them: sorted by id, each
// with the index (from 1) of its token among the distinct tokens.
type leaseSet struct {
	ids    []int64
	tokIdx []int32
	toks   []string
}

func newLeaseSet(leases []driver.Lease) leaseSet {
	order := make([]int, len(leases))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(leases[a].ID, leases[b].ID) })
	s := leaseSet{ids: make([]int64, len(leases)), tokIdx: make([]int32, len(leases))}
	index := map[string]int32{}
	for i, j := range order {
		l := leases[j]
		k, ok := index[l.Token]
		if !ok {
			s.toks = append(s.toks, l.Token)
			k = int32(len(s.toks))
			index[l.Token] = k
		}
		s.ids[i], s.tokIdx[i] = l.ID, k
	}
	return s
}

// args returns $1 to $7.
func (s leaseSet) args(streamID int64, group string) []any {
	return []any{streamID, group, s.ids[0], s.ids[len(s.ids)-1], int8s(s.ids), s.tokIdx, s.toks}
}

// settleStmt is a settle's statement on exception rows: an UPDATE or
// DELETE of delivery_exception d whose own parameters, from $8 on, args
// gives for the leaseSet it runs over (nil: none), and what the settle does
// with the batch members among them (batchSettle).
type settleStmt struct {
	sql  string
	mode memberAction
	args func(set leaseSet) []any
}

// bind is the statement's arguments over leases: their leaseSet's ($1 to
// $7), then its own.
func (st settleStmt) bind(streamID int64, group string, leases []driver.Lease) []any {
	set := newLeaseSet(leases)
	args := set.args(streamID, group)
	if st.args != nil {
		args = append(args, st.args(set)...)
	}
	return args
}

// settle runs st over the deliveries leased with their tokens and reports
// the leases it did not change. Autocommit, one statement changes the rows
// and does st.mode to the batch members among them (batchSettle); members
// it materialized are then settled by st alone, in a second statement:
// between the two they are held with their token as before, so a failure
// leaves them leased, never lost.
//
// In the caller's transaction tx, which may stay open long after (the
// inbox pattern), the members are first materialized in a statement of the
// driver's own, committed at once, and tx changes only exception rows: it
// never locks a batch record, so the other members of the batch are
// extended, acked and claimed past meanwhile (issue 25). Materialized rows
// are what the batch stood for: when tx rolls back they stay leased with
// their token until their lease expires, as the batch would have.
func (d *Driver) settle(ctx context.Context, tx driver.Tx, streamID int64, group string, leases []driver.Lease, st settleStmt) (driver.SettleResult, error) {
	var caller pgx.Tx
	err := d.check()
	if err == nil && tx != nil {
		caller, err = callerTx(tx)
	}
	if err != nil || len(leases) == 0 {
		return driver.SettleResult{}, err
	}
	changed, rest := map[int64]bool{}, leases
	if caller != nil {
		carve := batchSettle(streamID, settleMaterialize, `SELECT d.msg_id FROM delivery_exception d`+leasedPairs+` AND false`)
		_, _, err = d.settleQuery(ctx, nil, carve, newLeaseSet(leases).args(streamID, group))
	} else {
		var materialized map[int64]bool
		changed, materialized, err = d.settleQuery(ctx, nil, batchSettle(streamID, st.mode, st.sql+leasedPairs+` RETURNING d.msg_id`),
			st.bind(streamID, group, leases))
		rest = nil
		for _, l := range leases {
			if materialized[l.ID] {
				rest = append(rest, l)
			}
		}
	}
	if err == nil && len(rest) > 0 {
		var done map[int64]bool
		done, _, err = d.settleQuery(ctx, caller, st.sql+leasedPairs+` RETURNING d.msg_id, false`, st.bind(streamID, group, rest))
		maps.Copy(changed, done)
	}
	if err != nil {
		return driver.SettleResult{}, err
	}
	return driver.SettleResult{Lost: driver.Lost(leases, changed)}, nil
}

// settleQuery runs a statement returning (msg_id, materialized) for each
// delivery it changed or materialized: autocommit (retried while that is
// safe), or once in the caller's transaction, which it never commits or
// rolls back.
func (d *Driver) settleQuery(ctx context.Context, caller pgx.Tx, query string, args []any) (changed, materialized map[int64]bool, err error) {
	changed, materialized = map[int64]bool{}, map[int64]bool{}
	run := func(q querier) error {
		clear(changed)
		clear(materialized)
		// Planned for the ids at hand (settleMode): a generic plan cached
		// before the table was analyzed read the group's every exception
		// (13 ms for one lease behind 100k retries).
		return eachRow(ctx, q, query, append([]any{d.settleMode}, args...), func(rows pgx.Rows) error {
			var id int64
			var m bool
			if err := rows.Scan(&id, &m); err != nil {
				return err
			}
			if m {
				materialized[id] = true
			} else {
				changed[id] = true
			}
			return nil
		})
	}
	if caller != nil {
		err = d.callerTxError(ctx, run(caller))
	} else {
		err = d.write(ctx, func(c *pgxpool.Conn) error { return run(c) })
	}
	return changed, materialized, err
}

// callerTxError classifies a failed write in the caller's transaction,
// which the caller rolls back, and retries whole after a conflict.
func (d *Driver) callerTxError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	err = d.wrap(ctx, err, stageWrite)
	var de *driver.Error
	var pe *pgconn.PgError
	if errors.As(err, &de) && de.Kind == driver.ErrConflict && de.Advice == "" && errors.As(err, &pe) {
		switch pe.Code {
		case "55P03":
			de.Advice = "a lock wait of this transaction ran out (its lock_timeout): another transaction holds a delivery it settles; roll it back and retry it whole"
		default:
			de.Advice = adviceCallerRetry
		}
	}
	return err
}

// Ack implements driver.Driver. With p.Tx, the deliveries are resolved in
// the caller's transaction: they stay leased (to their token) until it
// commits, and are leased again as before when it rolls back. Without, the
// members of batches this driver's claims wrote are acked with one
// statement per batch that compares its ids with those expected
// (batchAcks), and only what those did not resolve takes the locking path.
func (d *Driver) Ack(ctx context.Context, p driver.AckParams) (driver.SettleResult, error) {
	if p.Tx == nil {
		if err := d.check(); err != nil {
			return driver.SettleResult{}, err
		}
		if batches, rest := d.newBatchAcks(p.StreamID, p.Group, p.Leases); len(batches.acks) > 0 {
			missed, err := d.ackBatches(ctx, batches)
			if p.Leases = unresolved(p.Leases, missed, rest); err != nil || len(p.Leases) == 0 {
				return driver.SettleResult{}, err
			}
		}
		if d.settleMode == pgx.QueryExecModeCacheDescribe && len(p.Leases) > 0 {
			return d.ackPipelined(ctx, p)
		}
	}
	return d.settle(ctx, p.Tx, p.StreamID, p.Group, p.Leases, settleStmt{sql: ackExceptions, mode: settleAck})
}

// ackExceptions is Ack's exception-row statement.
const ackExceptions = `DELETE FROM delivery_exception d`

// ackPipelined is Ack as two statements in one round trip and one implicit
// transaction: batchAck, prepared once per connection (planning all of
// batchSettle for each ack cost more than running it), then the
// exception-row DELETE, planned per run as settleQuery's are. Only where
// the connection may prepare statements (settleMode is CacheDescribe).
func (d *Driver) ackPipelined(ctx context.Context, p driver.AckParams) (driver.SettleResult, error) {
	if err := d.check(); err != nil {
		return driver.SettleResult{}, err
	}
	set := newLeaseSet(p.Leases)
	args := set.args(p.StreamID, p.Group)
	query := ackExceptions + leasedPairs + ` RETURNING d.msg_id`
	changed := map[int64]bool{}
	run := func(conn *pgx.Conn) error {
		clear(changed)
		sd, err := conn.Prepare(ctx, batchAck, batchAck)
		if err != nil {
			return err
		}
		var bq, eq pgx.ExtendedQueryBuilder
		if err := bq.Build(conn.TypeMap(), sd, args); err != nil {
			return err
		}
		if err := eq.Build(conn.TypeMap(), nil, args); err != nil {
			return err
		}
		pl := conn.PgConn().StartPipeline(ctx)
		pl.SendQueryPrepared(sd.Name, bq.ParamValues, bq.ParamFormats, nil)
		pl.SendQueryParams(query, eq.ParamValues, nil, eq.ParamFormats, nil)
		err = pl.Sync()
		for n := 0; err == nil && n < 2; n++ {
			var res any
			if res, err = pl.GetResults(); err != nil {
				break
			}
			rr, ok := res.(*pgconn.ResultReader)
			if !ok {
				err = fmt.Errorf("postgres: ack: unexpected pipeline result %T", res)
				break
			}
			for rr.NextRow() {
				id, perr := strconv.ParseInt(string(rr.Values()[0]), 10, 64)
				if perr != nil {
					err = perr
				}
				changed[id] = true
			}
			if _, cerr := rr.Close(); err == nil {
				err = cerr
			}
		}
		if cerr := pl.Close(); err == nil {
			err = cerr
		}
		return err
	}
	if err := d.write(ctx, func(c *pgxpool.Conn) error { return run(c.Conn()) }); err != nil {
		return driver.SettleResult{}, err
	}
	return driver.SettleResult{Lost: driver.Lost(p.Leases, changed)}, nil
}

// Fail implements driver.Driver. Each failure carries its own state, due
// time and error, passed as arrays in the order of the sorted ids, so one
// statement records them all and appends each to its delivery's failure
// history (with the attempt and holder of the lease). With p.Tx it runs in
// the caller's transaction.
func (d *Driver) Fail(ctx context.Context, p driver.FailParams) (driver.SettleResult, error) {
	byID := make(map[int64]driver.Failure, len(p.Failures))
	for _, f := range p.Failures {
		byID[f.Lease.ID] = f
	}
	return d.settle(ctx, p.Tx, p.StreamID, p.Group, sqldb.Leased(p), settleStmt{mode: settleMaterialize, sql: `UPDATE delivery_exception d SET
			state = CASE WHEN ($8::boolean[])[` + leaseIndex + `] THEN 'dead' ELSE 'delayed' END,
			due_at = ($9::timestamptz[])[` + leaseIndex + `],
			last_error = ($11::text[])[($10::integer[])[` + leaseIndex + `]],
			failures = ` + appendFailure("d", `($13::text[])[($10::integer[])[`+leaseIndex+`]]`, `$14::text`) + `,
			lease_token = NULL, first_failed_at = COALESCE(d.first_failed_at, $12::timestamptz), updated_at = $12::timestamptz`,
		args: func(set leaseSet) []any { return failArgs(set, byID, p.Now) }})
}

// failArgs are Fail's parameters from $8 on, in the order of set's ids:
// each failure's outcome and the index of its error among the distinct
// errors.
func failArgs(set leaseSet, byID map[int64]driver.Failure, now time.Time) []any {
	n := len(set.ids)
	dead, dues, errIdx := make([]bool, n), make([]time.Time, n), make([]int32, n)
	var errs, cut []string
	index := map[string]int32{}
	for i, id := range set.ids {
		f := byID[id]
		state, due := f.Outcome(now)
		dead[i], dues[i] = state == driver.StateDead, ts(due)
		k, ok := index[f.Error]
		if !ok {
			errs, cut = append(errs, storableText(f.Error)), append(cut, historyError(f.Error))
			k = int32(len(errs))
			index[f.Error] = k
		}
		errIdx[i] = k
	}
	return []any{dead, dues, errIdx, errs, ts(now), cut, driver.HistoryTime(now)}
}

// Release implements driver.Driver. With p.ClaimToken, the batches of that
// token are materialized first, in the same implicit transaction.
func (d *Driver) Release(ctx context.Context, p driver.ReleaseParams) (driver.SettleResult, error) {
	const set = `UPDATE delivery_exception d SET state = 'delayed', due_at = $8::timestamptz, attempt = d.attempt - 1, lease_token = NULL, updated_at = $8::timestamptz`
	if p.ClaimToken == "" {
		args := func(leaseSet) []any { return []any{ts(p.Now)} }
		return d.settle(ctx, nil, p.StreamID, p.Group, p.Leases, settleStmt{sql: set, mode: settleMaterialize, args: args})
	}
	err := d.write(ctx, func(c *pgxpool.Conn) error {
		b := &pgx.Batch{}
		b.Queue(materializeBatches(p.StreamID, `b.stream_id = $1::bigint AND b.group_name = $2::text AND b.lease_token = $3::text`, batchOrder, `FOR UPDATE`),
			p.StreamID, p.Group, p.ClaimToken)
		b.Queue(`UPDATE delivery_exception SET state = 'delayed', due_at = $4::timestamptz, attempt = attempt - 1, lease_token = NULL, updated_at = $4::timestamptz
			WHERE stream_id = $1::bigint AND group_name = $2::text AND lease_token = $3::text AND state = 'leased'`,
			p.StreamID, p.Group, p.ClaimToken, ts(p.Now))
		return c.SendBatch(ctx, b).Close()
	})
	return driver.SettleResult{}, err
}

// Extend implements driver.Driver. A batch all of whose remaining members
// are named (Run's heartbeat extends all it holds) moves its lease_until;
// the named members of other batches are materialized and extended as rows.
func (d *Driver) Extend(ctx context.Context, p driver.ExtendParams) (driver.SettleResult, error) {
	args := func(leaseSet) []any { return []any{ts(p.Until), ts(p.Now)} }
	return d.settle(ctx, nil, p.StreamID, p.Group, p.Leases, settleStmt{sql: `UPDATE delivery_exception d SET due_at = $8::timestamptz, updated_at = $9::timestamptz`,
		mode: settleExtend, args: args})
}
