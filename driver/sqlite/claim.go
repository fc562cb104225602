package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// headExpr is 1 when row m is claimable: on a compacted stream, only a head.
func headExpr(stream driver.StreamConfig) string {
	if !stream.Compacted {
		return "1"
	}
	return `EXISTS (SELECT 1 FROM compaction_head h WHERE h.stream_id = ` + strconv.FormatInt(stream.ID, 10) + ` AND h.msg_key = m.msg_key AND h.head_id = m.id)`
}

// Claim implements driver.Driver. Whether anything is due or new is found
// out on a reader first, without taking the single write lock that
// producers and other claims need; the claim itself runs in one immediate
// transaction, which also makes it atomic with respect to registrations.
func (d *Driver) Claim(ctx context.Context, p driver.ClaimParams) (driver.ClaimResult, error) {
	if err := d.check(); err != nil {
		return driver.ClaimResult{}, err
	}
	var res driver.ClaimResult
	var work claimWork
	if _, ok := d.next.Hint(p.Stream.ID, p.Group); (ok && p.Limit > 0) || len(p.Acks) > 0 {
		// After a claim that filled its limit, more work is likely: the probe
		// would only cost a read transaction, so the claim goes straight to
		// the write transaction, which finds out the same itself. A claim
		// carrying acks writes anyway: the write transaction records them.
		work = claimWork{due: p.Limit > 0, fresh: p.Limit > 0}
	} else {
		var err error
		if work, err = d.probe(ctx, p, &res); err != nil || p.Limit <= 0 || (!work.due && !work.fresh) {
			return res, err
		}
	}
	err := d.inTxQ(ctx, nil, func(tx cachedTx) error { return claimIn(ctx, tx, p, work, &res) })
	d.next.Note(p.Stream.ID, p.Group, struct{}{}, err == nil && len(res.Deliveries) >= p.Limit)
	return res, err
}

// claimWork is what a claim looks for: due exceptions or batches whose
// lease ended (their members are due as expired leased rows are), and rows
// past a cursor.
type claimWork struct{ due, fresh bool }

// probe finds out, in a read transaction, what the group has to claim; it
// also checks that the claim can be planned and reports the group.
func (d *Driver) probe(ctx context.Context, p driver.ClaimParams, res *driver.ClaimResult) (claimWork, error) {
	var work claimWork
	err := d.readTxQ(ctx, func(tx cachedTx) error {
		g, err := loadGroup(ctx, tx, p.Stream.ID, p.Group)
		if err != nil {
			return err
		}
		if _, err := driver.PlanClaim(g, p); err != nil {
			return err
		}
		res.Group = g
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM delivery_exception WHERE stream_id = ? AND group_name = ?
			AND state IN ('leased', 'delayed') AND due_at <= ?) OR EXISTS (SELECT 1 FROM delivery_batch WHERE stream_id = ? AND group_name = ? AND lease_until <= ?)`,
			p.Stream.ID, p.Group, micros(p.Now), p.Stream.ID, p.Group, micros(p.Now)).Scan(&work.due); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM group_cursor c WHERE c.stream_id = ? AND c.group_name = ?
			AND EXISTS (SELECT 1 FROM `+logTable(p.Stream.ID)+` m WHERE m.partition = c.partition AND m.id > c.position))`,
			p.Stream.ID, p.Group).Scan(&work.fresh)
	})
	return work, err
}

// claimIn is the claim's write transaction: it gives leases back the time
// a caller's transaction held the writer, records the acks the claim
// carries, then leases due exceptions and new rows, up to the limit.
func claimIn(ctx context.Context, tx cachedTx, p driver.ClaimParams, work claimWork, res *driver.ClaimResult) error {
	res.Deliveries, res.Deferred, res.Lost = res.Deliveries[:0], 0, nil
	if err := resumeLeases(ctx, tx); err != nil {
		return err
	}
	if len(p.Acks) > 0 {
		// First, so that what they resolve is claimable (an ordered
		// partition they free) and commits with the claim.
		acked, err := settleIn(ctx, tx, settlement{streamID: p.Stream.ID, group: p.Group, leases: p.Acks, mode: settleAck}, byStatement(ackStmt))
		if err != nil {
			return err
		}
		res.Lost = acked.Lost
	}
	g, err := loadGroup(ctx, tx, p.Stream.ID, p.Group)
	if err != nil {
		return err
	}
	if err := checkGeneration(ctx, tx, p.Stream); err != nil {
		return err
	}
	plan, err := driver.PlanClaim(g, p)
	if err != nil {
		return err
	}
	res.Group = g
	if work.due {
		if res.Deliveries, err = claimExceptions(ctx, tx, p, plan); err != nil {
			return err
		}
	}
	if !work.fresh {
		return nil
	}
	// From a random partition on, so that members claiming at once start
	// apart.
	n := p.Stream.Partitions
	first := rand.IntN(n)
	for i := range n {
		if len(res.Deliveries) >= p.Limit {
			break
		}
		got, deferred, err := claimPartition(ctx, partitionClaim{p: p, plan: plan, part: (first + i) % n, tx: tx}, p.Limit-len(res.Deliveries))
		if err != nil {
			return err
		}
		res.Deliveries = append(res.Deliveries, got...)
		res.Deferred += deferred
	}
	return nil
}

// partitionClaim is the main claim's work on one partition, the engine's
// steps of driver.ClaimPartition.
type partitionClaim struct {
	p    driver.ClaimParams
	plan driver.ClaimPlan
	part int
	tx   querier
	// query reads a window (windowQuery), with its arguments but the last
	// three (partition, cursor, window).
	query string
	args  []any
}

// claimPartition runs the main claim on one partition, up to limit rows.
// It returns the deliveries and how many rows it left due.
func claimPartition(ctx context.Context, c partitionClaim, limit int) ([]driver.Delivery, int, error) {
	cursor, err := c.cursor(ctx)
	if err != nil {
		return nil, 0, err
	}
	// SQLite steps a statement's rows one by one in the process, so a
	// window larger than needed costs nothing past the row where the scan
	// stops: every window is the largest.
	c.query, c.args = c.windowQuery()
	return driver.ClaimPartition(ctx, c, driver.PartitionClaim{Params: c.p, Plan: c.plan, Cursor: cursor, Limit: limit, FirstWindow: driver.MaxClaimWindow})
}

// Pending implements driver.PartitionSteps.
func (c partitionClaim) Pending(ctx context.Context) (bool, error) {
	var pending bool
	err := c.tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM delivery_exception WHERE stream_id = ? AND group_name = ? AND partition = ? AND state IN ('leased', 'delayed'))
		OR EXISTS (SELECT 1 FROM delivery_batch WHERE stream_id = ? AND group_name = ? AND partition = ?)`,
		c.p.Stream.ID, c.p.Group, c.part, c.p.Stream.ID, c.p.Group, c.part).Scan(&pending)
	return pending, err
}

// cursor reads the group's position in the partition.
func (c partitionClaim) cursor(ctx context.Context) (int64, error) {
	var cursor int64
	err := c.tx.QueryRowContext(ctx, `SELECT position FROM group_cursor WHERE stream_id = ? AND group_name = ? AND partition = ?`,
		c.p.Stream.ID, c.p.Group, c.part).Scan(&cursor)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("group %q partition %d: %w", c.p.Group, c.part, driver.ErrGroupNotFound)
	}
	return cursor, err
}

// windowQuery is the statement that reads a window, and its arguments but
// the last three (partition, cursor, window). Payloads are read only for
// rows at the group's versions: other rows are passed over without their
// payload leaving the database.
func (c partitionClaim) windowQuery() (string, []any) {
	vf, vargs := sqldb.VersionFilter("m.schema_version", c.plan.Versions)
	return `SELECT m.id, m.partition, m.schema_version, m.msg_key, m.routing_key, m.compaction_rank,
		CASE WHEN ` + vf + ` THEN m.payload ELSE x'' END, m.headers, m.produced_at, ` + vf + `, ` + headExpr(c.p.Stream) + `
		FROM ` + logTable(c.p.Stream.ID) + ` m WHERE m.partition = ? AND m.id > ? ORDER BY m.id LIMIT ?`, slices.Concat(vargs, vargs)
}

// ReadWindow implements driver.PartitionSteps.
func (c partitionClaim) ReadWindow(ctx context.Context, from int64, size int, s *driver.PartitionScan) (int, error) {
	return sqldb.ReadWindow(ctx, c.tx, c.query, slices.Concat(c.args, []any{c.part, from, size}), s, func(rows *sql.Rows) (driver.Row, bool, error) {
		var versionOK, head bool
		r, err := scanRow(rows, &versionOK, &head)
		return r, versionOK && head, err
	})
}

// Record implements driver.PartitionSteps.
func (c partitionClaim) Record(ctx context.Context, s *driver.PartitionScan) ([]driver.Delivery, int, error) {
	if _, err := c.tx.ExecContext(ctx, `UPDATE group_cursor SET position = ? WHERE stream_id = ? AND group_name = ? AND partition = ?`,
		s.Cursor, c.p.Stream.ID, c.p.Group, c.part); err != nil {
		return nil, 0, err
	}
	taken, err := c.lease(ctx, s.Taken)
	if err != nil {
		return nil, 0, err
	}
	deferred, err := c.deferRows(ctx, s.Deferred)
	if err != nil {
		return nil, 0, err
	}
	return taken, deferred, nil
}

// lease writes the batch record of the rows taken. A row the group already
// has an exception for (a cursor moved back over it) keeps that exception
// and is passed over.
func (c partitionClaim) lease(ctx context.Context, taken []driver.Delivery) ([]driver.Delivery, error) {
	if len(taken) == 0 {
		return nil, nil
	}
	held := map[int64]bool{}
	if err := sqldb.Mark(ctx, c.tx, `SELECT msg_id FROM delivery_exception WHERE stream_id = ? AND group_name = ? AND msg_id BETWEEN ? AND ?`,
		[]any{c.p.Stream.ID, c.p.Group, taken[0].ID, taken[len(taken)-1].ID}, held); err != nil {
		return nil, err
	}
	taken = slices.DeleteFunc(taken, func(d driver.Delivery) bool { return held[d.ID] })
	if len(taken) == 0 {
		return nil, nil
	}
	return taken, insertBatch(ctx, c.tx, c.p, c.part, taken)
}

// deferRows gives the rows this member cannot decode delayed exception rows,
// due now, and returns how many it wrote: a row the group already has an
// exception for keeps it, and the insert passes over it.
func (c partitionClaim) deferRows(ctx context.Context, deferred []driver.Row) (int, error) {
	return sqldb.DeferRows(ctx, c.tx, c.p, deferred, micros(c.p.Now), 100, func(n int) string {
		return `INSERT INTO delivery_exception (stream_id, group_name, msg_id, partition, schema_version, state, attempt, due_at, holder, updated_at)
			VALUES ` + sqldb.Repeated(n, "(?, ?, ?, ?, ?, 'delayed', 0, ?, ?, ?)", ", ") + ` ON CONFLICT (stream_id, group_name, msg_id) DO NOTHING`
	})
}

// claimExceptions leases due exceptions at the versions the member decodes
// (driver.ClaimDue looks again past those it drops).
func claimExceptions(ctx context.Context, tx querier, p driver.ClaimParams, plan driver.ClaimPlan) ([]driver.Delivery, error) {
	if err := explodeExpired(ctx, tx, p); err != nil {
		return nil, err
	}
	return driver.ClaimDue(p.Limit, func(limit int) ([]driver.Delivery, int, error) {
		return claimExceptionBatch(ctx, tx, p, plan, limit)
	})
}

// claimExceptionBatch examines up to limit due exceptions: it leases those
// still claimable and resolves or buries the others (driver.DueFates),
// which it counts as dropped.
func claimExceptionBatch(ctx context.Context, tx querier, p driver.ClaimParams, plan driver.ClaimPlan, limit int) ([]driver.Delivery, int, error) {
	cands, err := dueCandidates(ctx, tx, p, plan, limit)
	if err != nil {
		return nil, 0, err
	}
	// The deliveries go out in id order, as the main claim's do.
	slices.SortFunc(cands, func(a, b candidate) int { return cmp.Compare(a.msgID, b.msgID) })
	var f driver.DueFates
	for _, c := range cands {
		_ = f.Add(p, c.msgID, driver.ExceptionState(c.state), c.attempt, c.exists && c.head, func() (driver.Row, error) { return c.row, nil }, p.LeaseUntil)
	}
	if err := sqldb.RecordFates(ctx, tx, p, &f, sqldb.DueWrites{Failures: "failures = " + appendFailure, Now: micros(p.Now), LeaseUntil: micros(p.LeaseUntil)}); err != nil {
		return nil, 0, err
	}
	return f.Leased, f.Dropped(), nil
}

// candidate is a due exception and the row it is for.
type candidate struct {
	row     driver.Row
	msgID   int64
	state   string
	attempt int
	exists  bool // the row is still in the log
	head    bool // the row is claimable: on a compacted stream, its key's head
}

// dueCandidates reads up to limit due exceptions at the versions the member
// decodes; for an ordered group, only the lowest pending one of a
// partition.
func dueCandidates(ctx context.Context, tx querier, p driver.ClaimParams, plan driver.ClaimPlan, limit int) ([]candidate, error) {
	vf, vargs := sqldb.VersionFilter("e.schema_version", plan.Decodable)
	ordered := ""
	if p.Ordered {
		ordered = ` AND NOT EXISTS (SELECT 1 FROM delivery_exception e2 WHERE e2.stream_id = e.stream_id AND e2.group_name = e.group_name
			AND e2.partition = e.partition AND e2.state IN ('leased', 'delayed') AND e2.msg_id < e.msg_id)
			AND NOT EXISTS (SELECT 1 FROM delivery_batch b WHERE b.stream_id = e.stream_id AND b.group_name = e.group_name
			AND b.partition = e.partition AND b.first_id < e.msg_id)`
	}
	var cands []candidate
	// One state at a time, in due order along delivery_exception_due
	// (stream_id, group_name, state, due_at), so that the read stops at the
	// limit and never walks retries that are due later: in id order it
	// read the group's every exception (45 ms behind 100k delayed retries).
	for _, state := range []string{string(driver.StateLeased), string(driver.StateDelayed)} {
		if len(cands) >= limit {
			break
		}
		args := append([]any{p.Stream.ID, p.Group, state, micros(p.Now)}, vargs...)
		if err := sqldb.EachRow(ctx, tx, `SELECT `+rowColumns+`, e.msg_id, e.state, e.attempt, `+headExpr(p.Stream)+`
			FROM delivery_exception e LEFT JOIN `+logTable(p.Stream.ID)+` m ON m.id = e.msg_id
			WHERE e.stream_id = ? AND e.group_name = ? AND e.state = ? AND e.due_at <= ? AND `+vf+ordered+`
			ORDER BY e.due_at LIMIT ?`, append(args, limit-len(cands)), func(r *sql.Rows) error {
			c, err := scanCandidate(r)
			cands = append(cands, c)
			return err
		}); err != nil {
			return nil, err
		}
	}
	return cands, nil
}

// scanCandidate reads rowColumns, NULL where the row is gone, and the
// exception's columns.
func scanCandidate(r *sql.Rows) (candidate, error) {
	var c candidate
	var id, part, version, rank, produced sql.NullInt64
	var key, rk, headers sql.NullString
	var payload []byte
	if err := r.Scan(&id, &part, &version, &key, &rk, &rank, &payload, &headers, &produced, &c.msgID, &c.state, &c.attempt, &c.head); err != nil {
		return c, err
	}
	c.exists = id.Valid
	if !c.exists {
		return c, nil
	}
	c.row = driver.Row{ID: id.Int64, Partition: int(part.Int64), SchemaVersion: int(version.Int64), Key: key.String, HasKey: key.Valid,
		RoutingKey: rk.String, CompactionRank: rank.Int64, Payload: payload, ProducedAt: fromMicros(produced.Int64)}
	if headers.Valid && headers.String != "" {
		if err := json.Unmarshal([]byte(headers.String), &c.row.Headers); err != nil {
			return c, fmt.Errorf("row %d: stored headers: %w", c.row.ID, err)
		}
	}
	return c, nil
}
