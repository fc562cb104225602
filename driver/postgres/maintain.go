package postgres

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// Compact implements driver.Driver.
func (d *Driver) Compact(ctx context.Context, p driver.CompactParams) (int64, error) {
	var removed int64
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		removed = 0
		stream, err := lookupStreamByID(ctx, tx, p.StreamID)
		if err != nil || !stream.Compacted {
			return err
		}
		victims, err := sqldb.CompactVictims(ctx, runner{tx}, logTable(p.StreamID), headExpr(stream), p.Limit)
		if err != nil {
			return err
		}
		removed = int64(len(victims))
		return d.deleteRows(ctx, tx, p.StreamID, victims, nil)
	})
	if err != nil {
		return 0, d.maintenanceError(err)
	}
	return removed, nil
}

// deleteRows removes log rows with their exceptions (a batch holding any of
// them materialized first) and any head pointing at them, and raises each
// partition's high-water mark to the greatest id it removes, so that the
// mark never goes down. groups are the consumer groups whose rows the
// caller updates next (hard retention's counts). Its locks go in the order
// of docs/internals.md, "Lock order per engine": the append locks last.
func (d *Driver) deleteRows(ctx context.Context, tx pgx.Tx, streamID int64, victims []driver.RetainCandidate, groups []string) error {
	if len(victims) == 0 {
		return nil
	}
	ids := driver.RetainIDs(victims)
	parts := make([]int32, len(victims))
	for i, v := range victims {
		parts[i] = int32(v.Partition)
	}
	slices.Sort(parts)
	parts = slices.Compact(parts)
	q := &lockedBatch{d: d}
	q.bounded(waitCounts, lockCounts, streamID)
	// Whole batches, so that their holders find the removed rows lost.
	q.bounded(waitLeases, materializeBatches(streamID, `b.stream_id = $1::bigint AND b.first_id <= $3::bigint AND b.last_id >= $2::bigint`, batchOrder, `FOR UPDATE`),
		streamID, slices.Min(ids), slices.Max(ids))
	q.bounded(waitLeases, `SELECT 1 FROM delivery_exception WHERE stream_id = $1::bigint AND msg_id = ANY($2::bigint[])
		ORDER BY group_name, msg_id FOR UPDATE`, streamID, ids)
	if len(groups) > 0 {
		q.bounded(waitGroups, `SELECT 1 FROM consumer_group WHERE stream_id = $1::bigint AND name = ANY($2::text[])
			ORDER BY name FOR NO KEY UPDATE`, streamID, groups)
	}
	q.bounded(waitPartitions, `SELECT partition FROM stream_partition WHERE stream_id = $1::bigint AND partition = ANY($2::integer[])
		ORDER BY partition FOR NO KEY UPDATE`, streamID, parts)
	q.queue(`UPDATE stream_partition sp SET high_water = GREATEST(sp.high_water, x.hw)
		FROM (SELECT m.partition, max(m.id) AS hw FROM `+logTable(streamID)+` m WHERE m.id = ANY($2::bigint[]) GROUP BY m.partition) x
		WHERE sp.stream_id = $1::bigint AND sp.partition = x.partition`, streamID, ids)
	queueDeleteCounted(&q.b, streamID, ids)
	q.waits = append(q.waits, "")
	q.queue(`DELETE FROM delivery_exception WHERE stream_id = $1::bigint AND msg_id = ANY($2::bigint[])`, streamID, ids)
	q.queue(`DELETE FROM compaction_head WHERE stream_id = $1::bigint AND head_id = ANY($2::bigint[])`, streamID, ids)
	if waited, err := q.send(ctx, tx); err != nil {
		return &maintenanceLock{err: err, parts: parts, waited: waited}
	}
	return nil
}

// What a lock wait of compaction or retention waited for, in its error.
const (
	waitCounts     = "the stream's row counts (another process's compaction, retention or Health count)"
	waitLeases     = "the lease of a delivery among the rows removed, probably an open AckTx, RetryTx or DeadTx of a consumer"
	waitGroups     = "a consumer group of the stream (a group being registered or reset)"
	waitPartitions = "partitions"
)

// lockedBatch is a pgx.Batch whose statements say what each may wait for,
// so that a failed lock names it.
type lockedBatch struct {
	d     *Driver
	b     pgx.Batch
	waits []string // per queued statement; "" for one that waits for nothing
}

// bounded queues a locking statement between the two that bound its wait
// with the driver's lock timeout (queueBounded).
func (q *lockedBatch) bounded(what, query string, args ...any) {
	q.d.queueBounded(&q.b, query, args...)
	q.waits = append(q.waits, "", what, "")
}

func (q *lockedBatch) queue(query string, args ...any) {
	q.b.Queue(query, args...)
	q.waits = append(q.waits, "")
}

// send runs the batch in tx and returns, with an error, what the failed
// statement waited for.
func (q *lockedBatch) send(ctx context.Context, tx pgx.Tx) (string, error) {
	br := tx.SendBatch(ctx, &q.b)
	for _, what := range q.waits {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return what, err
		}
	}
	return "", br.Close()
}

// maintenanceLock names what compaction or retention waited for when it
// failed: the partitions whose append locks it needed, or the lock it took
// before them.
type maintenanceLock struct {
	err    error
	parts  []int32
	waited string
}

func (m *maintenanceLock) Error() string { return m.err.Error() }
func (m *maintenanceLock) Unwrap() error { return m.err }

// maintenanceError gives a lock conflict of compaction or retention its
// advice, naming what it waited for.
func (d *Driver) maintenanceError(err error) error {
	var ml *maintenanceLock
	var de *driver.Error
	var pe *pgconn.PgError
	if !errors.As(err, &ml) || !errors.As(err, &de) || de.Kind != driver.ErrConflict || de.Advice != "" || !errors.As(err, &pe) {
		return err
	}
	switch {
	case pe.Code == "55P03" && ml.waited == waitPartitions:
		de.Advice = conflictAdvice(err, ml.parts, false)
	case pe.Code == "55P03" && ml.waited != "":
		de.Advice = "another transaction holds " + ml.waited + "; nothing was removed"
	case pe.Code == "40P01":
		de.Advice = "a deadlock with another transaction (one that holds a lease of a removed row and produces to the stream); nothing was removed"
	}
	if de.Advice != "" {
		de.Advice += "; compaction and retention try again at their next run"
	}
	return err
}

// Retain implements driver.Driver. The steps (sqldb.Retention) read the
// groups and the victims they hold unlocked; deleteRows locks them, in its
// one order, before the counts are updated.
func (d *Driver) Retain(ctx context.Context, req driver.RetainParams) (driver.RetainResult, error) {
	var res driver.RetainResult
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		res, err = driver.RetainPass(ctx, req, sqldb.Retention{
			R: runner{tx}, Table: logTable, Time: func(t time.Time) any { return ts(t) }, Held: heldVictims,
			Span: func(table string) string {
				return `SELECT (SELECT min(id) FROM ` + table + `), (SELECT max(id) FROM ` + table + `)`
			},
			ReadStream: func(ctx context.Context, streamID int64) (driver.StreamConfig, error) {
				return lookupStreamByID(ctx, tx, streamID)
			},
			Groups: func(ctx context.Context, stream driver.StreamConfig) ([]driver.GroupStats, error) {
				return loadGroups(ctx, tx, stream)
			},
			Delete: func(ctx context.Context, stream driver.StreamConfig, victims []driver.RetainCandidate, groups []string) error {
				return d.deleteRows(ctx, tx, stream.ID, victims, groups)
			},
		})
		return err
	})
	if err != nil {
		return driver.RetainResult{}, d.maintenanceError(err)
	}
	return res, nil
}

// heldVictims reads which groups hold the rows from $2 to $3 of stream $1:
// their exceptions, and the members of their batches, which deleteRows
// materializes only under its locks.
const heldVictims = `SELECT group_name, msg_id FROM delivery_exception WHERE stream_id = $1::bigint AND msg_id BETWEEN $2::bigint AND $3::bigint
	UNION ALL SELECT b.group_name, u.id FROM delivery_batch b CROSS JOIN LATERAL unnest(b.ids) AS u(id)
	WHERE b.stream_id = $1::bigint AND b.first_id <= $3::bigint AND b.last_id >= $2::bigint AND u.id BETWEEN $2::bigint AND $3::bigint`
