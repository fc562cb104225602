package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// lockStream locks a stream's config row, so that maintenance of one stream
// runs in one process at a time (appends do not touch this row).
func lockStream(ctx context.Context, tx querier, streamID int64) (driver.StreamConfig, error) {
	return queryStream(ctx, tx, "id = ? FOR UPDATE", streamID)
}

// Compact implements driver.Driver.
func (d *Driver) Compact(ctx context.Context, p driver.CompactParams) (int64, error) {
	var removed int64
	err := d.withLog(ctx, p.StreamID, func() error {
		return d.inTx(ctx, nil, func(tx querier) error {
			removed = 0
			stream, err := lockStream(ctx, tx, p.StreamID)
			if err != nil || !stream.Compacted {
				return err
			}
			var victims []driver.RetainCandidate
			if err := sqldb.EachRow(ctx, tx, "SELECT m.id, m.`partition`, m.schema_version FROM "+logTable(p.StreamID)+" m WHERE NOT "+headExpr(stream)+" ORDER BY m.id LIMIT ?",
				[]any{p.Limit}, func(r *sql.Rows) error {
					var v driver.RetainCandidate
					err := r.Scan(&v.ID, &v.Partition, &v.Version)
					victims = append(victims, v)
					return err
				}); err != nil {
				return err
			}
			removed = int64(len(victims))
			if err := d.materializeOverlapping(ctx, tx, stream.ID, victims); err != nil {
				return err
			}
			return d.deleteRows(ctx, tx, stream, victims, false)
		})
	})
	return removed, err
}

// deleteRows removes log rows with their exceptions and any head pointing at
// them. The exceptions go first (deleteExceptions), before any append lock
// is taken: a caller's open transaction may hold them (an AckTx), and no
// producer may wait behind maintenance that waits for it (decisions.md,
// "Maintenance takes the append locks last"). Then it keeps the high-water
// mark: a partition whose newest row goes has its
// stream_partition.high_water raised to that row's id. Only such partitions
// are locked for it (the append lock row, waiting for an append in flight),
// or every partition of the stream with lockAll (retention of a compacted
// stream, whose removal of heads races with appends moving them); a
// partition keeping a newer row needs no mark, since Health reads its newest
// id from the log, and Compact and Retain of one stream never run at once
// (both lock the stream's config row first).
func (d *Driver) deleteRows(ctx context.Context, tx querier, stream driver.StreamConfig, victims []driver.RetainCandidate, lockAll bool) error {
	if len(victims) == 0 {
		return nil
	}
	table := logTable(stream.ID)
	ids := make([]int64, len(victims))
	for i, v := range victims {
		ids[i] = v.ID
	}
	if err := d.deleteExceptions(ctx, tx, stream.ID, ids); err != nil {
		return err
	}
	if lockAll {
		if _, err := d.lockPartitions(ctx, tx, stream.ID, nil, false, false); err != nil {
			return err
		}
	}
	gone := map[int]int64{}
	for _, v := range victims {
		gone[v.Partition] = max(gone[v.Partition], v.ID)
	}
	parts := make([]int, 0, len(gone))
	for p := range gone {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	tops, err := readTops(ctx, tx, stream.ID, parts)
	if err != nil {
		return err
	}
	var mark []int
	for _, p := range parts {
		if gone[p] >= tops[p].newest {
			mark = append(mark, p)
		}
	}
	if len(mark) > 0 {
		if !lockAll {
			if _, err := d.lockPartitions(ctx, tx, stream.ID, mark, false, false); err != nil {
				return err
			}
		}
		args := make([]any, 0, 3*len(mark)+1)
		for _, p := range mark {
			args = append(args, p, gone[p])
		}
		args = append(append(args, stream.ID), sqldb.Args(mark)...)
		if _, err := tx.ExecContext(ctx, "UPDATE stream_partition SET high_water = GREATEST(high_water, CASE `partition`"+strings.Repeat(" WHEN ? THEN ?", len(mark))+
			" ELSE 0 END) WHERE stream_id = ? AND `partition` IN ("+sqldb.Placeholders(len(mark))+")", args...); err != nil {
			return err
		}
	}
	if err := subtractRowCounts(ctx, tx, stream.ID, victims); err != nil {
		return err
	}
	for start := 0; start < len(ids); start += idChunk {
		chunk := sqldb.Args(ids[start:min(start+idChunk, len(ids))])
		in := ` IN (` + sqldb.Placeholders(len(chunk)) + `)`
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE id`+in, chunk...); err != nil {
			return err
		}
		args := append([]any{stream.ID}, chunk...)
		if _, err := tx.ExecContext(ctx, `DELETE FROM compaction_head WHERE stream_id = ? AND head_id`+in, args...); err != nil {
			return err
		}
	}
	return nil
}

// deleteExceptions locks and removes the exception rows of ids, each a
// primary-key lookup by group (a scan by stream would also wait for rows
// of other messages that a caller's transaction holds). The locking read
// waits at most the lock timeout (WAIT on MariaDB, innodb_lock_wait_timeout
// on MySQL) and is not run again when it runs out, with an error that says
// what it waited for.
func (d *Driver) deleteExceptions(ctx context.Context, tx querier, streamID int64, ids []int64) error {
	var groups []string
	if err := sqldb.EachRow(ctx, tx, `SELECT name FROM consumer_group WHERE stream_id = ? ORDER BY name`, []any{streamID}, func(r *sql.Rows) error {
		var g string
		err := r.Scan(&g)
		groups = append(groups, g)
		return err
	}); err != nil || len(groups) == 0 {
		return err
	}
	for start := 0; start < len(ids); start += idChunk {
		chunk := ids[start:min(start+idChunk, len(ids))]
		where := `stream_id = ? AND group_name IN (` + sqldb.Placeholders(len(groups)) + `) AND msg_id IN (` + sqldb.Placeholders(len(chunk)) + `)`
		args := append(append([]any{streamID}, sqldb.Args(groups)...), sqldb.Args(chunk)...)
		err := sqldb.EachRow(ctx, tx, `SELECT msg_id FROM delivery_exception WHERE `+where+` ORDER BY group_name, msg_id FOR UPDATE`+d.waitClause(), args,
			func(*sql.Rows) error { return nil })
		if err != nil {
			return d.leaseWaitError(streamID, "lock exceptions of rows removed", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM delivery_exception WHERE `+where, args...); err != nil {
			return err
		}
	}
	return nil
}

// leaseWaitError gives a lock wait of compaction or retention for the
// leases of the rows it removes that ran out its advice, and keeps ownTx
// from running it again: the holder is a caller's transaction, which may
// stay open a while. Other errors it returns as they are.
func (d *Driver) leaseWaitError(streamID int64, what string, err error) error {
	if !lockWaitEnded(err) {
		return err
	}
	return finalError{&driver.Error{Kind: driver.ErrConflict, Err: driver.Redact(fmt.Errorf("stream %d: %s: %w", streamID, what, err), d.secrets...),
		Advice: "another transaction holds the lease of a delivery among the rows removed, probably an open AckTx, RetryTx or DeadTx of a consumer; " +
			"nothing was removed; compaction and retention try again at their next run"}}
}

// Retain implements driver.Driver. Soft limits remove a row only when every
// group's cursor in its partition has passed it and no group holds an
// exception for it; hard limits remove it regardless and count, per group,
// the rows removed before the group resolved them.
func (d *Driver) Retain(ctx context.Context, req driver.RetainParams) (driver.RetainResult, error) {
	var res driver.RetainResult
	err := d.withLog(ctx, req.StreamID, func() error {
		return d.inTx(ctx, nil, func(tx querier) error {
			var err error
			res, err = driver.RetainPass(ctx, req, retention{d, tx})
			return err
		})
	})
	return res, err
}

// retention is Retain's statements (driver.RetainSteps): the stream is
// locked first, then (hard limits) the groups and their cursors, so that
// the count of unread rows is exact (claims take cursors with SKIP LOCKED
// and pass these over meanwhile), then the batches among the victims, the
// rows last.
type retention struct {
	d  *Driver
	tx querier
}

func (r retention) Stream(ctx context.Context, streamID int64) (driver.StreamConfig, error) {
	return lockStream(ctx, r.tx, streamID)
}

func (r retention) Probe(ctx context.Context, stream driver.StreamConfig) driver.RetentionProbe {
	table := logTable(stream.ID)
	return sqldb.Probe(ctx, r.tx, driver.RetentionStatements{
		Span:       `SELECT (SELECT id FROM ` + table + ` ORDER BY id LIMIT 1), (SELECT id FROM ` + table + ` ORDER BY id DESC LIMIT 1)`,
		FirstYoung: `SELECT id FROM ` + table + ` WHERE produced_at >= ? ORDER BY id LIMIT 1`,
		NthNewest:  `SELECT id FROM ` + table + ` ORDER BY id DESC LIMIT 1 OFFSET ?`,
		At:         func(t time.Time) any { return ts(t) },
	})
}

func (r retention) Victims(ctx context.Context, stream driver.StreamConfig, bound int64, limit int) ([]driver.RetainCandidate, error) {
	where := `m.id < ?`
	if sid := strconv.FormatInt(stream.ID, 10); !stream.Retention.Hard {
		where += " AND NOT EXISTS (SELECT 1 FROM group_cursor c WHERE c.stream_id = " + sid + " AND c.`partition` = m.`partition` AND c.position < m.id)" +
			" AND NOT EXISTS (SELECT 1 FROM delivery_exception e WHERE e.stream_id = " + sid + " AND e.msg_id = m.id)" +
			// Nor a row at or above any batch's lowest member: batch
			// members are leased exceptions (one snapshot sees a batch or
			// the rows materialized from it).
			" AND m.id < COALESCE((SELECT MIN(b.first_id) FROM delivery_batch b WHERE b.stream_id = " + sid + "), m.id + 1)"
	}
	return sqldb.Collect(ctx, r.tx, "SELECT m.id, m.`partition`, m.schema_version, m.routing_key FROM "+logTable(stream.ID)+" m WHERE "+where+" ORDER BY m.id LIMIT ?",
		[]any{bound, limit}, driver.ScanRetainCandidate)
}

func (r retention) Unread(ctx context.Context, stream driver.StreamConfig, victims []driver.RetainCandidate) ([]driver.GroupStats, driver.Held, error) {
	groups, err := r.d.loadGroups(ctx, r.tx, stream, true)
	if err != nil {
		return nil, nil, err
	}
	// Batch members among the victims become exception rows, which count
	// as held and go with their rows.
	if err := r.d.materializeOverlapping(ctx, r.tx, stream.ID, victims); err != nil {
		return nil, nil, err
	}
	held := driver.Held{}
	return groups, held, sqldb.EachRow(ctx, r.tx, `SELECT group_name, msg_id FROM delivery_exception WHERE stream_id = ? AND msg_id BETWEEN ? AND ?`,
		[]any{stream.ID, victims[0].ID, victims[len(victims)-1].ID}, func(rs *sql.Rows) error { return held.Scan(rs) })
}

func (r retention) Remove(ctx context.Context, stream driver.StreamConfig, victims []driver.RetainCandidate, removedUnread map[string]int64) error {
	if err := sqldb.AddRemovedUnread(ctx, r.tx, `UPDATE consumer_group SET removed_unread = removed_unread + ? WHERE stream_id = ? AND name = ?`,
		stream.ID, removedUnread); err != nil {
		return err
	}
	// Removing a head races with appends moving it: on a compacted stream
	// deleteRows takes every partition, in the order appends take them, so
	// the two cannot deadlock.
	return r.d.deleteRows(ctx, r.tx, stream, victims, stream.Compacted)
}

// materializeOverlapping writes back as exception rows the members of the
// stream's batches that are among the victims, and removes them from their
// batches, before the rows are removed: the exception rows then go with
// them (hard retention counts them as held, not unread), and the holders'
// settles find those leases lost, as they find removed exception rows. Only
// the batches whose id range overlaps the victims' are locked and read.
func (d *Driver) materializeOverlapping(ctx context.Context, tx querier, streamID int64, victims []driver.RetainCandidate) error {
	if len(victims) == 0 {
		return nil
	}
	gone := make(map[int64]bool, len(victims))
	lo, hi := victims[0].ID, victims[0].ID
	for _, v := range victims {
		lo, hi = min(lo, v.ID), max(hi, v.ID)
		gone[v.ID] = true
	}
	held, err := lockBatches(ctx, tx, streamID, "first_id <= ? AND last_id >= ?", []any{hi, lo}, " FOR UPDATE"+d.waitClause())
	if err != nil {
		return d.leaseWaitError(streamID, "lock batches of rows removed", err)
	}
	w := batchWrites{op: settleOp{streamID: streamID, mode: settleMaterialize}}
	for _, b := range held {
		named := map[int64]bool{}
		for _, id := range b.ids {
			if gone[id] {
				named[id] = true
			}
		}
		if len(named) > 0 {
			w.materializeLater(b, named)
		}
	}
	return w.finish(ctx, tx)
}
