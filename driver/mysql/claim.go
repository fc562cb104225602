package mysql

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// claims is the claim's work in its transaction (sqldb.Claims) in MySQL's
// words: cursor and due exception rows are locked FOR UPDATE SKIP LOCKED,
// so that concurrent claimers pass over each other's; the due read is
// forced along its index (left to itself MariaDB made the claim grow with
// the backlog of retries due later: 6 to 78 ms behind 100k against 2 to 4
// ms behind 1k; forced, it is flat), and a stream of one partition is read
// along the primary key (the (partition, id) index would add a lookup of
// each row in it). Deferred rows are written with INSERT IGNORE, which
// keeps an exception row that is there (the only error IGNORE can meet
// here: delivery_exception has no other unique key, no foreign key and no
// CHECK, and every value fits its column).
var claims = sqldb.Claims{
	Leases:       leaseWrites,
	Lock:         " FOR UPDATE SKIP LOCKED",
	DueIndex:     " FORCE INDEX (delivery_exception_due)",
	OnePartition: " FORCE INDEX (PRIMARY)",
	EmptyPayload: "''",
	Head:         headExpr,
	Readers:      sqldb.ReadersOf(utc),
	FirstWindow:  driver.FirstWindow,
	Defer: func(n int) string {
		return "INSERT IGNORE INTO delivery_exception (stream_id, group_name, msg_id, `partition`, schema_version, state, attempt, due_at, holder, updated_at) VALUES " +
			sqldb.Repeated(n, "(?, ?, ?, ?, ?, 'delayed', 0, ?, ?, ?)", ", ")
	},
	DeferChunk: idChunk,
}

// claimOut is what a claim transaction collects; ownTx may run the
// transaction again, so each run starts with Reset.
type claimOut = sqldb.Claimed

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
		d.setHot(p, out.Full)
		if ok {
			return out.ClaimResult, nil
		}
		deferred = out.Deferred
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
			out.Reset(res)
			return d.claim(ctx, tx, p, pr, &out)
		})
	})
	if err != nil {
		return driver.ClaimResult{}, err
	}
	d.claimed(p, &out)
	return out.ClaimResult, nil
}

// claimed remembers, once a claim committed, the batches it wrote and
// whether it filled its limit from one partition's new rows.
func (d *Driver) claimed(p driver.ClaimParams, out *claimOut) {
	d.setHot(p, out.Full)
	d.batches.add(p.Stream.ID, p.Group, out.Batches)
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
// that nothing was claimable. out.Full is the partition that filled this
// claim, or -1.
func (d *Driver) claimHot(ctx context.Context, p driver.ClaimParams, part int, out *claimOut) (ok bool, err error) {
	err = d.withLog(ctx, p.Stream.ID, func() error {
		return d.ownTx(ctx, false, func(tx querier) error {
			out.Reset(driver.ClaimResult{})
			var err error
			ok, err = d.claimHotIn(ctx, tx, p, part, out)
			return err
		})
	})
	if err != nil {
		return false, err
	}
	if ok {
		d.batches.add(p.Stream.ID, p.Group, out.Batches)
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
		others, err := sqldb.Collect(ctx, tx, "SELECT c.`partition` FROM group_cursor c WHERE c.stream_id = ? AND c.group_name = ? AND c.`partition` <> ? AND "+pastCursor(p.Stream.ID)+
			" ORDER BY c.`partition`", []any{p.Stream.ID, p.Group, part}, sqldb.Column[int])
		return sqldb.Rotated(others), err
	}
	f := fence{visit: sqldb.NewRows{Parts: []int{part}, Positions: map[int]int64{part: pos}, More: more}}
	if err := d.claimFenced(ctx, tx, p, pr, f, out); err != nil {
		return false, err
	}
	return len(out.Deliveries) > 0, nil
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
// read it: the first cursor lock (visit.Positions) or, when every cursor is
// taken, the group row's shared lock (groupLock). While this transaction
// holds a cursor of the group, a change to the group's configuration waits
// for it (RegisterGroup locks every cursor before it writes), so the
// configuration read after the lock is the one this claim commits under
// (C19). It also carries the partitions the main claim visits (visit:
// sqldb.NewRows's Parts, Positions, Skipped and More).
type fence struct {
	visit     sqldb.NewRows
	groupLock string
}

// claim runs in the claim transaction, collecting in out.
func (d *Driver) claim(ctx context.Context, tx querier, p driver.ClaimParams, pr probe, out *claimOut) error {
	// Only the cursors of partitions with new rows are worth locking.
	f := fence{visit: sqldb.NewRows{Parts: sqldb.Rotated(slices.Clone(pr.fresh)), Positions: map[int]int64{}, Skipped: map[int]bool{}}}
	for _, part := range f.visit.Parts {
		pos, ok, err := claims.LockCursor(ctx, tx, p, part)
		if err != nil {
			return err
		}
		if ok {
			f.visit.Positions[part] = pos
			return d.claimFenced(ctx, tx, p, pr, f, out)
		}
		f.visit.Skipped[part] = true
	}
	// No partition with new rows is free: any cursor serves as the fence.
	var part int
	var pos int64
	err := tx.QueryRowContext(ctx, "SELECT `partition`, position FROM group_cursor WHERE stream_id = ? AND group_name = ? ORDER BY `partition` LIMIT 1 FOR UPDATE SKIP LOCKED",
		p.Stream.ID, p.Group).Scan(&part, &pos)
	switch {
	case err == nil:
		f.visit.Positions[part] = pos
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
	out.Group = g
	if pr.due {
		// Expired batches first become the leased exception rows they
		// stand for.
		got, err := claims.ClaimDue(ctx, tx, p, plan, pr.expired)
		if err != nil {
			return err
		}
		out.Deliveries = append(out.Deliveries, got...)
	}
	if f.groupLock != "" {
		return nil
	}
	f.visit.P, f.visit.Plan, f.visit.NewestException = p, plan, newestException
	return claims.ClaimNew(ctx, tx, f.visit, out)
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
