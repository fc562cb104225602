package postgres

import (
	"context"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// claimPartition is driver.ClaimPartition over partitionSteps past cursor
// c (which this transaction holds), for as many rows as the claim lacks.
// The record skips rows the group already has an exception for (its cursor
// was moved back over them, batchClaim); the claim then reads on past them,
// in this transaction or, when the record's COMMIT ended it, in one of its
// own (claimOutcome.short). It adds what it took to u.out. ahead is a
// window read ahead.
func (u *usualClaim) claimPartition(ctx context.Context, t *claimTxn, c lockedCursor, ahead *window) error {
	limit := u.p.Limit - len(u.out.res.Deliveries)
	u.steps = partitionSteps{u: u, t: t, part: c.partition, ahead: ahead, only: u.p.Stream.Partitions == 1 || u.alone}
	steps := &u.steps
	p := u.p
	p.LeaseUntil = ts(p.LeaseUntil)
	var taken []driver.Delivery
	deferred, cursor := 0, c.position
	for scanned := 0; len(taken) < limit && scanned < driver.MaxClaimScan; {
		n := limit - len(taken)
		got, d, err := driver.ClaimPartition(ctx, steps, driver.PartitionClaim{Params: p, Plan: u.plan, Cursor: cursor, Limit: n,
			FirstWindow: driver.FirstWindow(n), Bound: driver.MaxClaimScan - scanned})
		s := steps.recorded
		if err != nil {
			return err
		}
		if s == nil {
			break
		}
		steps.recorded = nil
		taken, deferred = appendTo(taken, got), deferred+d
		cursor, scanned = s.Cursor, scanned+s.Scanned
		if !steps.skipped || !s.More {
			break
		}
		if t.ended {
			u.out.short = true
			break
		}
	}
	u.out.add(c.partition, taken, deferred, cursor, u.plan.Versions)
	return nil
}

// appendTo is append(to, ds...) without the copy when to is empty.
func appendTo(to, ds []driver.Delivery) []driver.Delivery {
	if len(to) == 0 {
		return ds
	}
	return append(to, ds...)
}

// partitionSteps are the main claim's driver.PartitionSteps in a claim's
// transaction, for one partition.
type partitionSteps struct {
	u     *usualClaim
	t     *claimTxn
	part  int32
	ahead *window // stands in for the first window's read, if it is that window
	only  bool    // no other partition has rows: reading to the end ends the claim
	asked bool    // Pending was asked
	// query reads a window (scanQuery, when first needed), with its
	// version filter's argument.
	query string
	vargs []any
	// What the last Record recorded, and whether it passed over rows.
	recorded *driver.PartitionScan
	skipped  bool
}

// Pending implements driver.PartitionSteps (partitionHeld), asked once: a
// read on past rows the record passed over finds the batch it wrote.
func (st *partitionSteps) Pending(ctx context.Context) (bool, error) {
	if st.asked {
		return false, nil
	}
	st.asked = true
	return partitionHeld(ctx, st.t, st.u.p, st.part)
}

// ReadWindow implements driver.PartitionSteps. The window read ahead, when
// it is the first window this scan reads (past from, of size rows), stands
// in for the query; the fast claim reads only its window, which must fill
// the claim.
func (st *partitionSteps) ReadWindow(ctx context.Context, from int64, size int, s *driver.PartitionScan) (int, error) {
	win, ahead := []scannedRow(nil), st.ahead
	st.ahead = nil
	switch fast := st.u.fast != nil; {
	case fast && (ahead == nil || !inspect(s, ahead.rows, false)):
		return 0, errNotFast // the fast claim's window fills it, or it runs as usual
	case fast:
		return len(ahead.rows), nil
	case ahead != nil && ahead.from == from && ahead.size == size:
		win = ahead.rows
	default:
		if st.query == "" {
			st.query, st.vargs = scanQuery(st.u.p, st.u.plan.Versions)
		}
		rows, err := st.t.Query(ctx, st.query, append([]any{st.part, from, int32(size)}, st.vargs...)...)
		if err != nil {
			return 0, err
		}
		if win, err = collectWindow(rows, size); err != nil {
			return 0, err
		}
	}
	inspect(s, win, len(win) == size)
	return len(win), nil
}

// Record implements driver.PartitionSteps in one round trip: the cursor's
// move and the record of the rows (queueRecord, or the fast claim's
// fastBatch after its lock and check). When the scan filled the claim, the
// window past the new cursor is read too, for the next claim (claimFast).
// When it ends the claim (it filled it, or read to the end of the only
// partition with rows, usualClaim.alone), it carries the COMMIT.
func (st *partitionSteps) Record(ctx context.Context, s *driver.PartitionScan) ([]driver.Delivery, int, error) {
	u := st.u
	full := len(s.Taken) == s.Limit
	r, fast := &roundTrip{}, u.fast
	var ids []int64
	if u.fast = nil; fast != nil {
		u.queueFast(r, fast, s)
	}
	if fast != nil && len(s.Deferred) == 0 && len(s.Taken) > 0 {
		queueFastBatch(r, u.p, st.part, s, &ids)
	} else {
		queueRecord(r, u.p, st.part, s, &ids)
	}
	if next := u.out.next; full && next != nil {
		next.queue(r, u.p, st.part, s.Cursor)
	}
	if err := st.t.send(ctx, &r.Batch, r.read, full || (!s.More && st.only)); err != nil {
		return nil, 0, err
	}
	taken, deferred := recorded(s, ids)
	st.recorded, st.skipped = s, len(taken)+deferred < len(s.Taken)+len(s.Deferred)
	return taken, deferred, nil
}

// inspect takes the claimable rows of a window in order until the scan has
// its limit (driver.PartitionScan decides what each row is), and reports
// whether it has.
func inspect(s *driver.PartitionScan, win []scannedRow, more bool) (full bool) {
	s.Expect(len(win), more)
	for _, w := range win {
		if !s.Inspect(w.row, w.versionOK && w.head) {
			return !s.Stopped
		}
	}
	return false
}

// scanQuery is the statement that reads a window of rows past a cursor
// ($1 partition, $2 cursor, $3 window), with its version filter's
// argument. Payloads are read only for rows at the group's versions: other
// rows are passed over without their payload leaving the database.
func scanQuery(p driver.ClaimParams, versions []int) (string, []any) {
	cols, vargs := scanColumns(p, versions)
	return `SELECT ` + cols + `
		FROM ` + logTable(p.Stream.ID) + ` m WHERE m.partition = $1::integer AND m.id > $2::bigint ORDER BY m.id LIMIT $3::integer`, vargs
}

// scanColumns is the select list of a window's read of log rows m (what
// rowScanner reads, then whether the row is at the versions, whether it is its
// key's head), with its version filter's argument, $4.
func scanColumns(p driver.ClaimParams, versions []int) (string, []any) {
	vf, vargs := versionFilter("m.schema_version", versions, 4)
	return `m.id, m.partition, m.schema_version, m.msg_key, m.routing_key, m.compaction_rank,
		CASE WHEN ` + vf + ` THEN m.payload END, m.headers, m.produced_at, ` + vf + `, ` + rowIsHead(p.Stream), vargs
}

// scannedRow is a row of a window, with whether it is at the group's
// versions and its key's head.
type scannedRow struct {
	row             driver.Row
	versionOK, head bool
}

// collectWindow reads a window of at most size rows.
func collectWindow(rows pgx.Rows, size int) ([]scannedRow, error) {
	defer rows.Close()
	out := make([]scannedRow, 0, size)
	var w scannedRow
	sc := newRowScanner(&w.versionOK, &w.head)
	for rows.Next() {
		var err error
		if w.row, err = sc.scan(rows); err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// sameVersions reports whether two version lists (nil: every version) are
// the same.
func sameVersions(a, b []int) bool { return (a == nil) == (b == nil) && slices.Equal(a, b) }

// rowIsHead is headExpr for a claim's select list: whether the row m is its
// key's head, as one index lookup per row. A scalar subquery, because an
// EXISTS there is planned as a hashed subplan that reads every head of the
// stream at each claim (50 ms at 100k keys, 500 ms at 1M).
func rowIsHead(stream driver.StreamConfig) string {
	if !stream.Compacted {
		return "TRUE"
	}
	return `COALESCE((SELECT TRUE FROM compaction_head h WHERE h.stream_id = ` + strconv.FormatInt(stream.ID, 10) + `
		AND h.msg_key = m.msg_key AND h.head_id = m.id LIMIT 1), FALSE)`
}

// window is rows past a cursor read ahead of the claim that takes them: by
// a claim before its COMMIT, for the group's next claim (claimFast), or in
// a claim's first round trip, past where the group's last claim left the
// cursor (usualClaim.ahead).
type window struct {
	partition int32
	from      int64 // the cursor position the rows follow
	size      int   // the most rows read (driver.FirstWindow)
	versions  []int // the versions whose payloads the read took; nil: every version
	rows      []scannedRow
	done      bool // the rows were read
	// For claimFast: the group as the claim that read the window knew it.
	group driver.GroupConfig
	print string // groupPrint of group
}

// queue queues the read of the window past from, sized as the first
// window of a claim of p.Limit rows.
func (w *window) queue(r *roundTrip, p driver.ClaimParams, part int32, from int64) {
	w.partition, w.from, w.size = part, from, driver.FirstWindow(p.Limit)
	query, vargs := scanQuery(p, w.versions)
	r.add(w.read, query, append([]any{part, from, int32(w.size)}, vargs...)...)
}

func (w *window) read(br pgx.BatchResults) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	w.rows, err = collectWindow(rows, w.size)
	w.done = err == nil
	return err
}

// queueRecord queues the record of a partition's rows: the cursor's move past
// what s inspected and, when s leased or deferred rows, their record
// (batchClaim), whose reader sets *ids to the ids recorded.
func queueRecord(r *roundTrip, p driver.ClaimParams, part int32, s *driver.PartitionScan, ids *[]int64) {
	r.add(execRead, `UPDATE group_cursor SET position = $1::bigint WHERE stream_id = $2::bigint AND group_name = $3::text AND partition = $4::integer`,
		s.Cursor, p.Stream.ID, p.Group, part)
	n := len(s.Taken) + len(s.Deferred)
	if n == 0 {
		return
	}
	rows := make([]int64, 0, n)
	versions := make([]int32, 0, n)
	leased := make([]bool, 0, n)
	for _, t := range s.Taken {
		rows, versions, leased = append(rows, t.ID), append(versions, int32(t.SchemaVersion)), append(leased, true)
	}
	for _, d := range s.Deferred {
		rows, versions, leased = append(rows, d.ID), append(versions, int32(d.SchemaVersion)), append(leased, false)
	}
	r.add(func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err == nil {
			*ids, err = collectIDs(rows, n)
		}
		return err
	}, batchClaim, p.Stream.ID, p.Group, part, ts(p.LeaseUntil), p.Token, ts(p.Now), p.Holder, int8s(rows), versions, leased, slices.Min(rows), slices.Max(rows))
}

// recorded is what a record of s took, given the ids it recorded:
// the deliveries, and the count of deferred rows.
func recorded(s *driver.PartitionScan, inserted []int64) ([]driver.Delivery, int) {
	if len(inserted) == len(s.Taken)+len(s.Deferred) {
		return s.Taken, len(s.Deferred)
	}
	// The rare path: the group had exceptions for some of these rows.
	kept := make(map[int64]bool, len(inserted))
	for _, id := range inserted {
		kept[id] = true
	}
	var taken []driver.Delivery
	for _, t := range s.Taken {
		if kept[t.ID] {
			taken = append(taken, t)
		}
	}
	deferred := 0
	for _, r := range s.Deferred {
		if kept[r.ID] {
			deferred++
		}
	}
	return taken, deferred
}
