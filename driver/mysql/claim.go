package mysql

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// headExpr is 1 when row m is claimable: on a compacted stream, only a head.
//
// The head is looked up by its id, along compaction_head_id (stream_id,
// head_id), which also holds the key (InnoDB keeps the primary key in every
// index): the rows a claim reads are consecutive ids, so their lookups
// share a few index pages. By key they land on pages all over the primary
// key, which outgrow the buffer pool as keys grow (a claim of 100 took 2.3x
// as long at 1M keys as at 100k).
func headExpr(stream driver.StreamConfig) string {
	if !stream.Compacted {
		return "1"
	}
	return `EXISTS (SELECT 1 FROM compaction_head h FORCE INDEX (compaction_head_id) WHERE h.stream_id = ` + strconv.FormatInt(stream.ID, 10) + ` AND h.head_id = m.id AND h.msg_key = m.msg_key)`
}

// Claim implements driver.Driver. One query without a transaction reads the
// group and finds out whether anything is due or new, which is all most
// polls need. The claim transaction then locks a cursor row (FOR UPDATE
// SKIP LOCKED) before it reads the group's configuration again, leases due
// exceptions, and claims new rows from the partitions whose cursor rows it
// can lock, passing over those other claimers hold. While a backlog is
// consumed (the driver's last claim of the group filled its limit from one
// partition's new rows) the claim skips that query and starts with the
// transaction (claimHot).
func (d *Driver) Claim(ctx context.Context, p driver.ClaimParams) (driver.ClaimResult, error) {
	if err := d.check(); err != nil {
		return driver.ClaimResult{}, err
	}
	if len(p.Acks) > 0 {
		return d.claimAcking(ctx, p)
	}
	var out claimOut
	deferred := 0
	if part, ok := d.hotPartition(p); ok {
		ok, err := d.claimHot(ctx, p, part, &out)
		if err != nil {
			return driver.ClaimResult{}, err
		}
		d.setHot(p, out.full)
		if ok {
			return out.res, nil
		}
		deferred = out.res.Deferred
	}
	var pr probe
	err := d.withLog(ctx, p.Stream.ID, func() error {
		var err error
		pr, err = d.probe(ctx, d.db, p)
		return err
	})
	if err != nil {
		return driver.ClaimResult{}, d.wrap(ctx, err, opRead)
	}
	res := driver.ClaimResult{Group: pr.group, Deferred: deferred}
	if !pr.worthClaiming(p) {
		return res, nil
	}
	err = d.withLog(ctx, p.Stream.ID, func() error {
		return d.ownTx(ctx, false, func(tx querier) error {
			out.reset(res)
			return d.claim(ctx, tx, p, pr, &out)
		})
	})
	if err != nil {
		return driver.ClaimResult{}, err
	}
	d.claimed(p, &out)
	return out.res, nil
}

// claimOut is what a claim transaction collects. ownTx may run the
// transaction again, so each run starts with reset.
type claimOut struct {
	res     driver.ClaimResult
	batches []heldBatch // the batches the main claim wrote
	full    int         // the partition whose new rows filled the claim, or -1
}

func (o *claimOut) reset(res driver.ClaimResult) {
	o.res, o.batches, o.full = res, o.batches[:0], -1
}

// claimed remembers, once a claim committed, the batches it wrote and
// whether it filled its limit from one partition's new rows.
func (d *Driver) claimed(p driver.ClaimParams, out *claimOut) {
	d.setHot(p, out.full)
	d.batches.add(p.Stream.ID, p.Group, out.batches)
}

// hotPartition returns the partition whose new rows filled the driver's
// last claim of the group, when this claim may go there without the probe:
// a few claims in a row (driver.Streak), so that a partition that never
// runs dry does not starve the others, which a claim through the probe
// visits from a random one on. Not for ordered groups: there the last
// claim's leases hold the partition until they are settled.
func (d *Driver) hotPartition(p driver.ClaimParams) (int, bool) {
	st, ok := d.next.Hint(p.Stream.ID, p.Group)
	if !ok || p.Limit <= 0 || p.Ordered || !st.Stay(p.Stream.Partitions) {
		return 0, false
	}
	return st.Partition, true
}

// setHot notes that the last claim of a group filled its limit from
// partition part's new rows (-1: it did not), so that the next claim goes
// there without the probe (claimHot).
func (d *Driver) setHot(p driver.ClaimParams, part int) {
	if part < 0 {
		d.next.Forget(p.Stream.ID, p.Group)
		return
	}
	st, _ := d.next.Hint(p.Stream.ID, p.Group)
	d.next.Set(p.Stream.ID, p.Group, st.Then(part))
}

// claimHot claims from partition part, which filled this driver's last
// claim of the group, without the probe: a backlog is being consumed, and
// the probe's round trip would only say so again. The cursor lock's
// statement finds out whether exceptions are due, in subqueries that lock
// nothing. It reports false when the cursor is taken or the claim got
// nothing (the backlog ended, or moved to other partitions): then the
// caller probes and claims as usual, so that an empty claim still means
// that nothing was claimable. out.full is the partition that filled this
// claim, or -1.
func (d *Driver) claimHot(ctx context.Context, p driver.ClaimParams, part int, out *claimOut) (ok bool, err error) {
	err = d.withLog(ctx, p.Stream.ID, func() error {
		return d.ownTx(ctx, false, func(tx querier) error {
			out.reset(driver.ClaimResult{})
			var err error
			ok, err = d.claimHotIn(ctx, tx, p, part, out)
			return err
		})
	})
	if err != nil {
		return false, err
	}
	if ok {
		d.batches.add(p.Stream.ID, p.Group, out.batches)
	}
	return ok, nil
}

// claimHotIn is claimHot's work in the transaction tx, which out starts
// empty for. It reports whether it claimed anything.
func (d *Driver) claimHotIn(ctx context.Context, tx querier, p driver.ClaimParams, part int, out *claimOut) (bool, error) {
	df, dargs := dueExprs(p, "c.stream_id", "c.group_name")
	args := append(append([]any{}, dargs...), p.Stream.ID, p.Group, part)
	var pr probe
	var pos int64
	err := tx.QueryRowContext(ctx, "SELECT c.position, "+df+" FROM group_cursor c WHERE c.stream_id = ? AND c.group_name = ? AND c.`partition` = ? FOR UPDATE SKIP LOCKED",
		args...).Scan(&pos, &pr.due, &pr.expired)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	pr.due = pr.due || pr.expired
	// The rest of the limit from the other partitions with new
	// rows, as the probe would have found them.
	more := func() ([]int, error) {
		var others []int
		err := sqldb.EachRow(ctx, tx, "SELECT c.`partition` FROM group_cursor c WHERE c.stream_id = ? AND c.group_name = ? AND c.`partition` <> ? AND "+pastCursor(p.Stream.ID)+
			" ORDER BY c.`partition`", []any{p.Stream.ID, p.Group, part}, func(r *sql.Rows) error {
			var q int
			err := r.Scan(&q)
			others = append(others, q)
			return err
		})
		return rotated(others), err
	}
	f := fence{cands: []int{part}, positions: map[int]int64{part: pos}, more: more}
	if err := d.claimFenced(ctx, tx, p, pr, f, out); err != nil {
		return false, err
	}
	return len(out.res.Deliveries) > 0, nil
}

// rotated returns parts starting from a random one, so that claimers spread
// over partitions.
func rotated(parts []int) []int {
	if len(parts) < 2 {
		return parts
	}
	k := rand.IntN(len(parts))
	return append(parts[k:], parts[:k]...)
}

// dueExprs is two SQL columns for a group (named by the SQL expressions
// stream and group): whether exceptions at versions the member decodes are
// due, and whether a batch's lease expired (due whatever its members'
// versions: the claim explodes it into exception rows, which the version
// filter then sees). Both read along their due indexes.
func dueExprs(p driver.ClaimParams, stream, group string) (string, []any) {
	df, dargs := sqldb.VersionFilter("e.schema_version", p.Decodes)
	now := ts(p.Now)
	return `EXISTS (SELECT 1 FROM delivery_exception e FORCE INDEX (delivery_exception_due) WHERE e.stream_id = ` + stream + ` AND e.group_name = ` + group + `
			AND e.state IN ('leased', 'delayed') AND e.due_at <= ? AND ` + df + `),
		EXISTS (SELECT 1 FROM delivery_batch b FORCE INDEX (delivery_batch_expiry) WHERE b.stream_id = ` + stream + ` AND b.group_name = ` + group + `
			AND b.lease_until <= ?)`, append(append([]any{now}, dargs...), now)
}

// pastCursor is true when the partition of cursor c has rows past it. The
// newest id is read with ORDER BY id DESC LIMIT 1, one index dive: MariaDB
// reads EXISTS (... m.id > c.position) and MAX(id) of a correlated
// partition by scanning the partition's index from its first entry.
func pastCursor(streamID int64) string {
	return "c.position < (SELECT m.id FROM " + logTable(streamID) + " m WHERE m.`partition` = c.`partition` ORDER BY m.id DESC LIMIT 1)"
}

// probe is what a claim finds out before its transaction.
type probe struct {
	group driver.GroupConfig
	due   bool
	// expired says the group has a batch whose lease expired (then due
	// is set too).
	expired bool
	// fresh lists the partitions with rows past the group's cursor.
	fresh []int
}

// worthClaiming reports whether the claim transaction has anything to do.
func (pr probe) worthClaiming(p driver.ClaimParams) bool {
	return p.Limit > 0 && (pr.due || len(pr.fresh) > 0)
}

// probe reads, in one round trip and without locks, the group, whether
// exceptions at versions the member decodes are due, and which partitions
// have rows past their cursor (one result row per such partition).
func (d *Driver) probe(ctx context.Context, q querier, p driver.ClaimParams) (probe, error) {
	var pr probe
	df, args := dueExprs(p, "g.stream_id", "g.name")
	args = append(args, p.Stream.ID, p.Group)
	found := false
	err := sqldb.EachRow(ctx, q, `SELECT g.`+strings.ReplaceAll(sqldb.GroupColumns, ", ", ", g.")+`, `+df+`, c.`+"`partition`"+`
		FROM consumer_group g LEFT JOIN group_cursor c ON c.stream_id = g.stream_id AND c.group_name = g.name AND `+pastCursor(p.Stream.ID)+`
		WHERE g.stream_id = ? AND g.name = ? ORDER BY c.`+"`partition`", args, func(r *sql.Rows) error {
		var part sql.NullInt64
		var expired bool
		g, _, err := scanGroup(r, &pr.due, &expired, &part)
		pr.expired = pr.expired || expired
		pr.due = pr.due || expired
		pr.group, found = g, true
		if part.Valid {
			pr.fresh = append(pr.fresh, int(part.Int64))
		}
		return err
	})
	if err != nil {
		return pr, err
	}
	if !found {
		return pr, driver.GroupNotFound(p.Group)
	}
	if _, err := driver.PlanClaim(pr.group, p); err != nil {
		return pr, err
	}
	return pr, nil
}

// fence is what keeps the group's configuration as a claim transaction
// read it: the first cursor lock (positions) or, when every cursor is
// taken, the group row's shared lock (groupLock). While this transaction
// holds a cursor of the group, a change to the group's configuration waits
// for it (RegisterGroup locks every cursor before it writes), so the
// configuration read after the lock is the one this claim commits under
// (C19). It also carries the partitions the main claim visits: cands in
// order, passing over skipped (cursors other claimers hold), and when those
// leave the limit unmet, the further ones more names (if not nil).
type fence struct {
	cands     []int
	positions map[int]int64
	skipped   map[int]bool
	groupLock string
	more      func() ([]int, error)
}

// claim runs in the claim transaction, collecting in out.
func (d *Driver) claim(ctx context.Context, tx querier, p driver.ClaimParams, pr probe, out *claimOut) error {
	// Only the cursors of partitions with new rows are worth locking.
	f := fence{cands: rotated(slices.Clone(pr.fresh)), positions: map[int]int64{}, skipped: map[int]bool{}}
	for _, part := range f.cands {
		pos, ok, err := lockCursor(ctx, tx, p, part)
		if err != nil {
			return err
		}
		if ok {
			f.positions[part] = pos
			return d.claimFenced(ctx, tx, p, pr, f, out)
		}
		f.skipped[part] = true
	}
	// No partition with new rows is free: any cursor serves as the fence.
	var part int
	var pos int64
	err := tx.QueryRowContext(ctx, "SELECT `partition`, position FROM group_cursor WHERE stream_id = ? AND group_name = ? ORDER BY `partition` LIMIT 1 FOR UPDATE SKIP LOCKED",
		p.Stream.ID, p.Group).Scan(&part, &pos)
	switch {
	case err == nil:
		f.positions[part] = pos
	case !errors.Is(err, sql.ErrNoRows):
		return err
	case !pr.due:
		// Every cursor is locked by other claimers, and nothing is due.
		return nil
	default:
		// Every cursor is locked by other claimers, but exceptions are
		// due: a shared lock on the group row is the fence instead
		// (RegisterGroup locks that row FOR UPDATE first).
		f.groupLock = " LOCK IN SHARE MODE" + d.waitClause()
	}
	return d.claimFenced(ctx, tx, p, pr, f, out)
}

// claimFenced goes on with a claim once f holds its fence: it reads the
// configuration, leases due exceptions, then claims new rows.
func (d *Driver) claimFenced(ctx context.Context, tx querier, p driver.ClaimParams, pr probe, f fence, out *claimOut) error {
	g, newestException, err := fencedGroup(ctx, tx, p, f.groupLock)
	if err != nil {
		return err
	}
	plan, err := driver.PlanClaim(g, p)
	if err != nil {
		return err
	}
	out.res.Group = g
	if pr.due {
		// Expired batches first become the leased exception rows they
		// stand for, which the exception claim takes as it takes any
		// expired lease.
		if pr.expired {
			if err := explodeExpired(ctx, tx, p); err != nil {
				return err
			}
		}
		got, err := claimExceptions(ctx, tx, p, plan)
		if err != nil {
			return err
		}
		out.res.Deliveries = append(out.res.Deliveries, got...)
	}
	if f.groupLock != "" {
		return nil
	}
	return claimNew(ctx, partitionScan{p: p, plan: plan, newestException: newestException, tx: tx, out: out}, f)
}

// fencedGroup reads the group's configuration under the fence. With a
// cursor lock as the fence it also reads newestException, the group's
// highest exception id, for the main claim: only rows at or below it can
// have an exception row the batch must pass over. No exception row past a
// cursor this claim holds can appear meanwhile: they are made under the
// cursor lock or by SetCursors, which waits for it (materialized batch
// members are at or below their cursor). With the group row's lock
// (groupLock) there is no main claim. Either way it refuses a claim
// planned with another generation of the stream's configuration than the
// one stored (read after the fence, which AlterStream also takes) with a
// *driver.StreamChangedError.
func fencedGroup(ctx context.Context, tx querier, p driver.ClaimParams, groupLock string) (g driver.GroupConfig, newestException int64, err error) {
	var gen int64
	if groupLock != "" {
		g, err = loadGroup(ctx, tx, p.Stream.ID, p.Group, groupLock)
		if err == nil {
			err = tx.QueryRowContext(ctx, `SELECT generation FROM stream_config WHERE id = ?`, p.Stream.ID).Scan(&gen)
		}
	} else {
		var newest sql.NullInt64
		g, _, err = scanGroup(tx.QueryRowContext(ctx, `SELECT `+sqldb.GroupColumns+`, (SELECT MAX(e.msg_id) FROM delivery_exception e WHERE e.stream_id = ? AND e.group_name = ?),
			(SELECT generation FROM stream_config WHERE id = ?) FROM consumer_group WHERE stream_id = ? AND name = ?`,
			p.Stream.ID, p.Group, p.Stream.ID, p.Stream.ID, p.Group), &newest, &gen)
		newestException = newest.Int64
	}
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return g, 0, driver.GroupNotFound(p.Group)
	case err != nil:
		return g, 0, err
	}
	return g, newestException, driver.CheckGeneration(p.Stream, gen, func() (driver.StreamConfig, error) { return lookupStreamByID(ctx, tx, p.Stream.ID) })
}

// claimNew is the main claim: new rows from the partitions f names, until
// the limit is met. s carries what every partition's claim shares.
func claimNew(ctx context.Context, s partitionScan, f fence) error {
	cands, more := f.cands, f.more
	for i := 0; i < len(cands) && len(s.out.res.Deliveries) < s.p.Limit; i++ {
		part := cands[i]
		pos, ok := f.positions[part]
		if !ok && !f.skipped[part] {
			var err error
			if pos, ok, err = lockCursor(ctx, s.tx, s.p, part); err != nil {
				return err
			}
		}
		if !ok {
			continue
		}
		s.part, s.cursor = part, pos
		if err := s.claim(ctx, s.p.Limit-len(s.out.res.Deliveries)); err != nil {
			return err
		}
		if i == len(cands)-1 && more != nil && len(s.out.res.Deliveries) < s.p.Limit {
			extra, err := more()
			if err != nil {
				return err
			}
			cands, more = append(cands, extra...), nil
		}
	}
	return nil
}

// lockCursor locks a partition's cursor row of the group unless another
// claimer holds it, and returns its position.
func lockCursor(ctx context.Context, tx querier, p driver.ClaimParams, part int) (int64, bool, error) {
	var pos int64
	err := tx.QueryRowContext(ctx, "SELECT position FROM group_cursor WHERE stream_id = ? AND group_name = ? AND `partition` = ? FOR UPDATE SKIP LOCKED",
		p.Stream.ID, p.Group, part).Scan(&pos)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return pos, err == nil, err
}

// partitionScan is the main claim of one partition, the engine's steps
// of driver.ClaimPartition.
type partitionScan struct {
	p    driver.ClaimParams
	plan driver.ClaimPlan
	// newestException is the group's highest exception id (fencedGroup).
	newestException int64
	part            int
	cursor          int64 // the position of the cursor this transaction holds
	tx              querier
	out             *claimOut
	// query reads a window (windowQuery), with its arguments but the last
	// three (partition, cursor, window).
	query string
	args  []any
}

// claim claims up to limit rows of partition s.part, as one
// batch in out. Rows the group reads that the member cannot decode become
// due exceptions for members that can; they are counted as deferred. A row
// the group already has an exception for (its cursor was moved back over
// it with SetCursors) keeps that exception as it is: the claim passes over
// it, and goes on reading to fill the limit. out.full is set to the
// partition when its rows filled the claim.
func (s partitionScan) claim(ctx context.Context, limit int) error {
	s.query, s.args = s.windowQuery()
	taken, deferred, err := driver.ClaimPartition(ctx, s, driver.PartitionClaim{Params: s.p, Plan: s.plan, Cursor: s.cursor, Limit: limit, FirstWindow: driver.FirstWindow(limit)})
	if err != nil {
		return err
	}
	s.out.res.Deliveries = append(s.out.res.Deliveries, taken...)
	s.out.res.Deferred += deferred
	if len(taken) == limit {
		s.out.full = s.part
	}
	return nil
}

// Record implements driver.PartitionSteps: the read passed over the rows
// the group has an exception for, so the batch holds every row taken.
func (s partitionScan) Record(ctx context.Context, rows *driver.PartitionScan) ([]driver.Delivery, int, error) {
	deferred, err := insertDeferred(ctx, s.tx, s.p, rows.Deferred)
	if err != nil {
		return nil, 0, err
	}
	if len(rows.Taken) > 0 {
		b, err := insertBatch(ctx, s.tx, s.p, s.part, rows.Taken)
		if err != nil {
			return nil, 0, err
		}
		s.out.batches = append(s.out.batches, b)
	}
	if _, err := s.tx.ExecContext(ctx, "UPDATE group_cursor SET position = ? WHERE stream_id = ? AND group_name = ? AND `partition` = ?",
		rows.Cursor, s.p.Stream.ID, s.p.Group, s.part); err != nil {
		return nil, 0, err
	}
	return rows.Taken, deferred, nil
}

// Pending implements driver.PartitionSteps: an ordered group's partition
// is held by a pending (leased or delayed) exception or a batch. New
// exceptions and batches of a partition are only made under its cursor
// lock, which this transaction holds, or by materializing a batch's
// members in the transaction that shrinks it: one statement, one
// snapshot, sees the batch or the rows.
func (s partitionScan) Pending(ctx context.Context) (bool, error) {
	var pending bool
	err := s.tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM delivery_exception WHERE stream_id = ? AND group_name = ? AND `partition` = ? AND state IN ('leased', 'delayed'))"+
		" OR EXISTS (SELECT 1 FROM delivery_batch WHERE stream_id = ? AND group_name = ? AND `partition` = ?)",
		s.p.Stream.ID, s.p.Group, s.part, s.p.Stream.ID, s.p.Group, s.part).Scan(&pending)
	return pending, err
}

// excepting reports whether rows past the cursor may have an exception row:
// only then is each row looked up.
func (s partitionScan) excepting() bool { return s.newestException > s.cursor }

// query is the scan's read of a window of rows past a cursor, and its
// arguments but the last three (partition, cursor, window). Payloads are
// read only for rows at the group's versions: other rows are passed over
// without their payload leaving the database. The read is a consistent
// read of committed rows; appends commit a partition's ids in increasing
// order, so it sees a gap-free prefix (C5).
func (s partitionScan) windowQuery() (string, []any) {
	vf, vargs := sqldb.VersionFilter("m.schema_version", s.plan.Versions)
	query := "SELECT m.id, m.`partition`, m.schema_version, m.msg_key, m.routing_key, m.compaction_rank, " +
		"CASE WHEN " + vf + " THEN m.payload ELSE '' END, m.headers, m.produced_at, " + vf + ", " + headExpr(s.p.Stream)
	args := append(append(make([]any, 0, 2*len(vargs)+5), vargs...), vargs...)
	if s.excepting() {
		// Whether the group has an exception row for the row (a cursor
		// moved back over it), which the batch must not hold too.
		query += ", m.id <= ? AND EXISTS (SELECT 1 FROM delivery_exception x WHERE x.stream_id = " + strconv.FormatInt(s.p.Stream.ID, 10) + " AND x.group_name = ? AND x.msg_id = m.id)"
		args = append(args, s.newestException, s.p.Group)
	}
	// A stream of one partition is read along the primary key: the
	// (partition, id) index would add a lookup of each row in it.
	index := ""
	if s.p.Stream.Partitions == 1 {
		index = " FORCE INDEX (PRIMARY)"
	}
	return query + " FROM " + logTable(s.p.Stream.ID) + " m" + index + " WHERE m.`partition` = ? AND m.id > ? ORDER BY m.id LIMIT ?", args
}

// ReadWindow implements driver.PartitionSteps.
func (s partitionScan) ReadWindow(ctx context.Context, from int64, size int, out *driver.PartitionScan) (int, error) {
	return sqldb.ReadWindow(ctx, s.tx, s.query, slices.Concat(s.args, []any{s.part, from, size}), out, func(rows *sql.Rows) (driver.Row, bool, error) {
		var versionOK, head, excepted bool
		dest := []any{&versionOK, &head}
		if s.excepting() {
			dest = append(dest, &excepted)
		}
		r, err := scanRow(rows, dest...)
		return r, versionOK && head && !excepted, err
	})
}

// insertBatch writes the batch of the rows a claim took from partition
// part, and returns it as the batch cache holds it.
func insertBatch(ctx context.Context, tx querier, p driver.ClaimParams, part int, taken []driver.Delivery) (heldBatch, error) {
	ids := make([]int64, len(taken))
	for i, t := range taken {
		ids[i] = t.ID
	}
	_, err := tx.ExecContext(ctx, "INSERT INTO delivery_batch (stream_id, group_name, lease_token, `partition`, first_id, last_id, ids, holder, lease_until, created_at)"+
		" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", p.Stream.ID, p.Group, p.Token, part, ids[0], ids[len(ids)-1], sqldb.EncodeInts(ids), p.Holder, ts(p.LeaseUntil), ts(p.Now))
	return heldBatch{batchRef: batchRef{group: p.Group, token: p.Token, part: part}, ids: ids}, err
}

// insertDeferred records the rows the main claim defers (later) as delayed
// exceptions due now, for members that decode them, and returns how many it
// recorded. The claim passes over the rows the group has an exception for,
// so every row is new; INSERT IGNORE would keep an exception row that is
// there (the only error IGNORE can meet here: delivery_exception has no
// other unique key, no foreign key and no CHECK, and every value fits its
// column).
func insertDeferred(ctx context.Context, tx querier, p driver.ClaimParams, later []driver.Row) (int, error) {
	return sqldb.DeferRows(ctx, tx, p, later, ts(p.Now), idChunk, func(n int) string {
		return "INSERT IGNORE INTO delivery_exception (stream_id, group_name, msg_id, `partition`, schema_version, state, attempt, due_at, holder, updated_at) VALUES " +
			sqldb.Repeated(n, "(?, ?, ?, ?, ?, 'delayed', 0, ?, ?, ?)", ", ")
	})
}

// claimExceptions leases due exceptions at the versions the member decodes,
// in id order (driver.ClaimDue looks again past those it drops). Due
// exception rows are locked FOR UPDATE SKIP LOCKED, so concurrent claimers
// take different ones.
func claimExceptions(ctx context.Context, tx querier, p driver.ClaimParams, plan driver.ClaimPlan) ([]driver.Delivery, error) {
	return driver.ClaimDue(p.Limit, func(limit int) ([]driver.Delivery, int, error) {
		return claimExceptionBatch(ctx, tx, p, plan, limit)
	})
}

// dueException is a due exception row a claim locked, with what decides its fate.
type dueException struct {
	msgID     int64
	partition int
	state     string
	attempt   int
}

// lockDue locks up to limit due exceptions with SKIP LOCKED. For an ordered
// group only the lowest pending exception of each partition qualifies.
func lockDue(ctx context.Context, tx querier, p driver.ClaimParams, plan driver.ClaimPlan, limit int) ([]dueException, error) {
	vf, vargs := sqldb.VersionFilter("schema_version", plan.Decodable)
	now := ts(p.Now)
	var due []dueException
	scan := func(r *sql.Rows) error {
		var c dueException
		err := r.Scan(&c.msgID, &c.partition, &c.state, &c.attempt)
		due = append(due, c)
		return err
	}
	if !p.Ordered {
		// One state at a time, in due order along the index, so that the
		// scan stops at the limit and locks no more rows than it returns.
		// The index is forced, as in the probe: left to itself MariaDB
		// made this claim grow with the backlog of retries due later (6
		// to 78 ms behind 100k against 2 to 4 ms behind 1k, from one run
		// to the next); forced, it is flat.
		for _, state := range []string{"leased", "delayed"} {
			if len(due) >= limit {
				break
			}
			if err := sqldb.EachRow(ctx, tx, "SELECT msg_id, `partition`, state, attempt FROM delivery_exception FORCE INDEX (delivery_exception_due) WHERE stream_id = ? AND group_name = ? AND state = ? AND due_at <= ? AND "+vf+
				" ORDER BY due_at LIMIT ? FOR UPDATE SKIP LOCKED",
				append(append([]any{p.Stream.ID, p.Group, state, now}, vargs...), limit-len(due)), scan); err != nil {
				return nil, err
			}
		}
		return due, nil
	}
	lowest, err := lowestPending(ctx, tx, p, nil)
	if err != nil || len(lowest) == 0 {
		return nil, err
	}
	ids := make([]int64, 0, len(lowest))
	for _, id := range lowest {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if err := sqldb.EachRow(ctx, tx, "SELECT msg_id, `partition`, state, attempt FROM delivery_exception WHERE stream_id = ? AND group_name = ? AND msg_id IN ("+sqldb.Placeholders(len(ids))+
		") AND state IN ('leased', 'delayed') AND due_at <= ? AND "+vf+" ORDER BY msg_id LIMIT ? FOR UPDATE SKIP LOCKED",
		append(append(append([]any{p.Stream.ID, p.Group}, sqldb.Args(ids)...), now), append(vargs, limit)...), scan); err != nil {
		return nil, err
	}
	if len(due) == 0 {
		return nil, nil
	}
	// Re-check under the locks: a replay may have made a lower row pending.
	parts := make([]int, 0, len(due))
	for _, c := range due {
		parts = append(parts, c.partition)
	}
	lowest, err = lowestPending(ctx, tx, p, parts)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(due, func(c dueException) bool { return lowest[c.partition] != c.msgID }), nil
}

// lowestPending returns the lowest pending (leased or delayed) exception of
// each partition of the group, at any version, or of the given partitions;
// a batch's lowest member counts as pending too (it is a leased exception
// in compressed form). One statement, so that one snapshot sees a batch or
// the rows materialized from it.
func lowestPending(ctx context.Context, tx querier, p driver.ClaimParams, parts []int) (map[int]int64, error) {
	q := "SELECT `partition`, msg_id FROM delivery_exception WHERE stream_id = ? AND group_name = ? AND state IN ('leased', 'delayed')"
	qb := "SELECT `partition`, first_id FROM delivery_batch WHERE stream_id = ? AND group_name = ?"
	args := []any{p.Stream.ID, p.Group}
	var pargs []any
	if parts != nil {
		q += " AND `partition` IN (" + sqldb.Placeholders(len(parts)) + ")"
		qb += " AND `partition` IN (" + sqldb.Placeholders(len(parts)) + ")"
		pargs = sqldb.Args(parts)
	}
	args = append(append(args, pargs...), p.Stream.ID, p.Group)
	args = append(args, pargs...)
	out := map[int]int64{}
	err := sqldb.EachRow(ctx, tx, "SELECT `partition`, MIN(msg_id) FROM ("+q+" UNION ALL "+qb+") x GROUP BY `partition`", args, func(r *sql.Rows) error {
		var part int
		var id int64
		err := r.Scan(&part, &id)
		out[part] = id
		return err
	})
	return out, err
}

// claimExceptionBatch examines up to limit due exceptions: it leases those
// still claimable and resolves or buries the others (driver.FateOfDue),
// which it counts as dropped.
func claimExceptionBatch(ctx context.Context, tx querier, p driver.ClaimParams, plan driver.ClaimPlan, limit int) ([]driver.Delivery, int, error) {
	due, err := lockDue(ctx, tx, p, plan, limit)
	if err != nil || len(due) == 0 {
		return nil, 0, err
	}
	ids := make([]int64, len(due))
	for i, c := range due {
		ids[i] = c.msgID
	}
	// The log rows are read apart from the locking read: MariaDB has no
	// FOR UPDATE OF, and log rows must not be locked.
	found := map[int64]driver.Row{}
	heads := map[int64]bool{}
	if err := sqldb.EachRow(ctx, tx, `SELECT `+rowColumns+`, `+headExpr(p.Stream)+` FROM `+logTable(p.Stream.ID)+` m WHERE m.id IN (`+sqldb.Placeholders(len(ids))+`)`,
		sqldb.Args(ids), func(r *sql.Rows) error {
			var head bool
			row, err := scanRow(r, &head)
			found[row.ID] = row
			heads[row.ID] = head
			return err
		}); err != nil {
		return nil, 0, err
	}
	var f driver.DueFates
	for _, c := range due {
		row, exists := found[c.msgID]
		_ = f.Add(p, c.msgID, driver.ExceptionState(c.state), c.attempt, exists && heads[c.msgID], func() (driver.Row, error) { return row, nil }, p.LeaseUntil)
	}
	// The expired lease's own attempt and holder go to the history.
	if err := sqldb.RecordFates(ctx, tx, p, &f, sqldb.DueWrites{Failures: appendFailure, Now: ts(p.Now), LeaseUntil: ts(p.LeaseUntil)}); err != nil {
		return nil, 0, err
	}
	return f.Leased, f.Dropped(), nil
}
