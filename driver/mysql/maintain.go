package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

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
			victims, err := sqldb.CompactVictims(ctx, sqldb.On(tx), logTable(p.StreamID), headExpr(stream), p.Limit)
			if err != nil {
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
// the rows removed before the group resolved them. The steps
// (sqldb.Retention) lock the stream first, then (hard limits) the groups
// and their cursors, so that the count of unread rows is exact (claims
// take cursors with SKIP LOCKED and pass these over meanwhile), then the
// batches among the victims, the rows last.
func (d *Driver) Retain(ctx context.Context, req driver.RetainParams) (driver.RetainResult, error) {
	var res driver.RetainResult
	err := d.withLog(ctx, req.StreamID, func() error {
		return d.inTx(ctx, nil, func(tx querier) error {
			var err error
			res, err = driver.RetainPass(ctx, req, sqldb.Retention{
				R: sqldb.On(tx), Table: logTable, Time: leaseWrites.Time,
				Span: func(table string) string {
					return `SELECT (SELECT id FROM ` + table + ` ORDER BY id LIMIT 1), (SELECT id FROM ` + table + ` ORDER BY id DESC LIMIT 1)`
				},
				ReadStream: func(ctx context.Context, streamID int64) (driver.StreamConfig, error) {
					return lockStream(ctx, tx, streamID)
				},
				Groups: func(ctx context.Context, stream driver.StreamConfig) ([]driver.GroupStats, error) {
					return d.loadGroups(ctx, tx, stream, true)
				},
				Materialize: func(ctx context.Context, streamID int64, victims []driver.RetainCandidate) error {
					return d.materializeOverlapping(ctx, tx, streamID, victims)
				},
				// Removing a head races with appends moving it: on a
				// compacted stream deleteRows takes every partition, in the
				// order appends take them, so the two cannot deadlock.
				Delete: func(ctx context.Context, stream driver.StreamConfig, victims []driver.RetainCandidate, _ []string) error {
					return d.deleteRows(ctx, tx, stream, victims, stream.Compacted)
				},
			})
			return err
		})
	})
	return res, err
}

// materializeOverlapping writes back as exception rows the members of the
// stream's batches that are among the victims, and removes them from their
// batches, before the rows are removed (sqldb.Leases.MaterializeRemoved).
// Only the batches whose id range overlaps the victims' are locked and
// read, each wait bounded.
func (d *Driver) materializeOverlapping(ctx context.Context, tx querier, streamID int64, victims []driver.RetainCandidate) error {
	ids := driver.RetainIDs(victims)
	held, err := leaseWrites.Overlapping(ctx, tx, streamID, ids, " FOR UPDATE"+d.waitClause())
	if err != nil {
		return d.leaseWaitError(streamID, "lock batches of rows removed", err)
	}
	return leaseWrites.MaterializeRemoved(ctx, tx, streamID, held, ids)
}
