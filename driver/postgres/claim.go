package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// maxWindow is the most rows the main claim reads per query while looking
// for claimable rows; maxScan bounds one claim's work when most rows are at
// other versions or match no binding.
const (
	maxWindow = 512
	maxScan   = 20000
)

// Claim implements driver.Driver. One autocommit probe reads the group and
// whether any exception the member can take is due and any partition has
// rows past its cursor; most claims end there. Otherwise one transaction
// locks a cursor with FOR UPDATE SKIP LOCKED and then reads the group's
// stored configuration (C19), leases due exceptions, and then rows past the
// cursors, one unlocked cursor at a time starting at a random partition,
// until it has Limit deliveries or no unlocked partition has work. The
// statements that record what it took go out with the COMMIT when they end
// the claim (it has its Limit, or read to the end of the only partition).
//
// A claim right after one of the group that took its Limit (from this
// driver: a consumer working through a backlog) skips the probe: the
// transaction's first round trip, which begins it, locks a cursor and reads
// the group, also materializes expired batches, finds out whether
// exceptions are due, and reads the next rows from where the last claim
// left the cursor, used if this claim locks that cursor at that position:
// two round trips for a claim of the backlog. Such a claim that takes its
// Limit from one partition also reads the rows past where it leaves the
// cursor before its COMMIT, so that the next claim, if nothing changed in
// between, sends its whole transaction in one round trip (claimFast).
//
// A claim carrying acks (p.Acks) skips the probe too, and resolves them
// in that first round trip, before the statements that read (claimAcks):
// a consumer that acks each batch as it claims the next commits once per
// batch, in two round trips.
func (d *Driver) Claim(ctx context.Context, p driver.ClaimParams) (driver.ClaimResult, error) {
	if err := d.check(); err != nil {
		return driver.ClaimResult{}, err
	}
	var res driver.ClaimResult
	var due, fresh, expired bool
	ahead, hot := d.busy(p.Stream.ID, p.Group)
	hot = hot && p.Limit > 0
	// A claim carrying acks writes whatever the probe would say: its
	// transaction records them and finds out what is claimable itself.
	acks := d.newClaimAcks(p)
	direct := hot || acks != nil
	first := int32(rand.IntN(p.Stream.Partitions))
	if hot && ahead.drawn && ahead.first < int32(p.Stream.Partitions) {
		// Drawn by the claim before, which read the window past its cursor
		// only when it drew that cursor's partition.
		first = ahead.first
	}
	nextFirst := int32(rand.IntN(p.Stream.Partitions)) // the next claim's
	// A window is read for the next claim only when it may take it whole:
	// the claims of the group take one window's worth at most and as many
	// as the claim before (a loop of Claim(n); Run's claims vary).
	readNext := p.Limit <= maxWindow && (!hot || ahead.limit == p.Limit)
	var win *window
	if hot {
		win = d.takeWindow(p.Stream.ID, p.Group)
	}
	var fast claimOutcome
	var fastOK bool
	if win != nil && win.partition == first && acks == nil && !p.Ordered && !p.Stream.Compacted {
		var err error
		if fast, fastOK, err = d.claimFast(ctx, p, win, readNext && win.partition == nextFirst); err != nil {
			d.setBusy(p.Stream.ID, p.Group, false, busyState{})
			return driver.ClaimResult{}, err
		}
	}
	if fastOK {
		direct = false // no probe: claimed
	} else if direct {
		fresh, expired = p.Limit > 0, p.Limit > 0
	} else {
		var decodes []int32
		if p.Decodes != nil {
			decodes = int32s(p.Decodes)
		}
		err := d.read(ctx, func() error {
			g, err := loadGroupAnd(ctx, d.pool, p.Stream.ID, p.Group, `,
			EXISTS (SELECT 1 FROM delivery_exception e WHERE e.stream_id = g.stream_id AND e.group_name = g.name
				AND e.state <> 'dead' AND e.due_at <= $3::timestamptz
				AND (g.all_versions OR e.schema_version = g.schema_version OR g.converts_from @> to_jsonb(e.schema_version))
				AND ($4::integer[] IS NULL OR e.schema_version = ANY($4::integer[]))),
			EXISTS (SELECT 1 FROM group_cursor c WHERE c.stream_id = g.stream_id AND c.group_name = g.name
				AND EXISTS (SELECT 1 FROM `+logTable(p.Stream.ID)+` m WHERE m.partition = c.partition AND m.id > c.position)),
			EXISTS (SELECT 1 FROM delivery_batch b WHERE b.stream_id = g.stream_id AND b.group_name = g.name AND b.lease_until <= $3::timestamptz)`,
				[]any{ts(p.Now), decodes}, &due, &fresh, &expired)
			if err != nil {
				return err
			}
			if _, err := driver.PlanClaim(g, p); err != nil {
				return err
			}
			res.Group = g
			return nil
		})
		if err != nil || p.Limit <= 0 || (!due && !fresh && !expired) {
			d.setBusy(p.Stream.ID, p.Group, false, busyState{})
			return res, err
		}
	}
	// Expired batches are materialized (explodeExpired) before the
	// exception claim, which then takes their members as expired leases.
	due = due || expired
	var c claimOutcome
	var err error
	if fastOK {
		c = fast
	} else {
		c, err = d.claimUsual(ctx, p, claimSetup{acks: acks, fresh: fresh, expired: expired, due: due, direct: direct, hot: hot,
			ahead: ahead, first: first, nextFirst: nextFirst, readNext: readNext})
	}
	res, short, took, next := c.res, c.short, c.took, c.next
	if err == nil && next != nil && next.done && !short && len(res.Deliveries) == p.Limit && took.ok &&
		took.partition == next.partition && took.position == next.from {
		d.windows.Store(busyKey{p.Stream.ID, p.Group}, next)
	}
	if err == nil && len(c.wrote) == 1 {
		for part, ids := range c.wrote {
			slices.Sort(ids)
			d.claimed.add(claimKey{p.Stream.ID, p.Group, p.Token}, claimedBatch{partition: part, ids: ids})
		}
	}
	if err == nil && short {
		// Rare: rows past the cursor had exceptions (it was moved back over
		// them). What was taken is leased and committed; read on.
		rest := p
		rest.Limit -= len(res.Deliveries)
		rest.Acks = nil // recorded with what was taken
		if more, err := d.Claim(ctx, rest); err == nil {
			res.Deliveries = append(res.Deliveries, more.Deliveries...)
			res.Deferred += more.Deferred
		}
	}
	took.first, took.drawn, took.limit = nextFirst, true, p.Limit
	d.setBusy(p.Stream.ID, p.Group, err == nil && p.Limit > 0 && len(res.Deliveries) >= p.Limit, took)
	if err != nil {
		acks.failed()
		return driver.ClaimResult{}, err
	}
	return res, nil
}

// claimSetup is what Claim decided before its transaction, for claimUsual.
type claimSetup struct {
	acks                *claimAcks
	fresh, expired, due bool // rows past a cursor, batches expired, exceptions due (or expired) by the probe
	direct, hot         bool // no probe ran; the group's last claim took its Limit
	ahead               busyState
	first, nextFirst    int32 // the partition to lock first, and the next claim's
	readNext            bool  // read the window past the cursor for the next claim
}

// claimOutcome is what a claim's transaction did (claimFast's or claimUsual's).
type claimOutcome struct {
	res   driver.ClaimResult
	wrote map[int32][]int64 // the members of the batches it wrote, by partition
	short bool              // the transaction ended before the claim was done
	took  busyState         // the one partition it took rows from
	next  *window           // read past the cursor for the next claim
}

// claimUsual runs a claim's transaction when the claim in one round trip
// (claimFast) did not: acks, exceptions due, then partitions past their
// cursors.
func (d *Driver) claimUsual(ctx context.Context, p driver.ClaimParams, s claimSetup) (claimOutcome, error) {
	acks, fresh, expired, due, direct, hot, ahead := s.acks, s.fresh, s.expired, s.due, s.direct, s.hot, s.ahead
	first, nextFirst, readNext := s.first, s.nextFirst, s.readNext
	n := int32(p.Stream.Partitions)
	var res driver.ClaimResult
	var visited []int32
	var g driver.GroupConfig
	var locked *lockedCursor
	var rows, pending bool
	var wrote map[int32][]int64
	var short bool
	var pre *prefetch // read ahead in the first round trip
	var took busyState
	var next *window
	var gprint string // the group's groupPrint
	first1 := func(b *pgx.Batch) {
		res = driver.ClaimResult{}
		short = false
		next = nil
		wrote = map[int32][]int64{}
		visited = []int32{}
		locked = nil
		rows = fresh // this attempt's, as the transaction may run again
		// The group is read after the first cursor lock is granted, in
		// a statement of its own (a snapshot taken after the lock): a
		// registration that changed the group and held this lock has
		// committed by then (C19). One round trip for both, and for
		// beginning the transaction.
		if acks != nil {
			// Before anything reads: what they resolve is claimable.
			acks.queue(b)
		}
		if rows {
			query, args := lockCursor(p, visited, first)
			b.Queue(query, args...)
		}
		queueLoadGroup(b, p.Stream.ID, p.Group)
		if expired {
			b.Queue(explodeExpired(p.Stream.ID), p.Stream.ID, p.Group, ts(p.Now))
		}
		if direct && p.Limit > 0 {
			// Any exception due (whatever its version: the exception claim
			// filters), after the explosion.
			b.Queue(`SELECT EXISTS (SELECT 1 FROM delivery_exception e WHERE e.stream_id = $1::bigint AND e.group_name = $2::text
			AND e.state <> 'dead' AND e.due_at <= $3::timestamptz)`, p.Stream.ID, p.Group, ts(p.Now))
		}
		pre = nil
		if rows && hot && ahead.ok && !p.Ordered {
			// Read ahead where the last claim left off, after the lock (a
			// snapshot that sees what the lock's holder did): used when this
			// claim locks that cursor again, at that position, reading the
			// same versions.
			pre = &prefetch{partition: ahead.partition, from: ahead.position, window: min(max(p.Limit, 16), maxWindow), versions: ahead.versions}
			query, vargs := scanQuery(p, ahead.versions)
			b.Queue(query, append([]any{ahead.partition, ahead.position, int32(pre.window)}, vargs...)...)
		}
	}
	read1 := func(br pgx.BatchResults) error {
		var err error
		if acks != nil {
			err = acks.read(br)
		}
		var c lockedCursor
		var ok bool
		if err == nil && rows {
			c, ok, err = scanLockedCursor(br.QueryRow())
		}
		if err == nil {
			g, err = scanLoadedGroup(br.QueryRow(), p.Group, &gprint)
		}
		if err == nil && expired {
			_, err = br.Exec()
		}
		pending = due
		if err == nil && direct && p.Limit > 0 {
			err = br.QueryRow().Scan(&pending)
		}
		if err == nil && pre != nil {
			var rs pgx.Rows
			if rs, err = br.Query(); err == nil {
				pre.rows, err = collectWindow(rs)
			}
		}
		if err != nil {
			return err
		}
		if ok {
			locked = &c
		} else {
			rows = false // every partition with rows is being claimed
		}
		return nil
	}
	err := d.claimTx(ctx, func(tx *claimTxn) error {
		b := &pgx.Batch{}
		first1(b)
		if err := tx.send(ctx, b, read1, false); err != nil {
			return err
		}
		if acks != nil {
			if err := acks.settle(ctx, tx); err != nil {
				return err
			}
			res.Lost = acks.lost()
		}
		plan, err := driver.PlanClaim(g, p)
		if err != nil {
			return err
		}
		res.Group = g
		if pending {
			if res.Deliveries, err = d.claimExceptions(ctx, tx, p, plan); err != nil {
				return err
			}
		}
		took = busyState{}
		for rows && len(res.Deliveries) < p.Limit && len(visited) < int(n) {
			c, ra := locked, pre
			locked, pre = nil, nil
			if c == nil || ra == nil || pending || c.partition != ra.partition || c.position != ra.from || !sameVersions(plan.Versions, ra.versions) {
				ra = nil
			}
			if c == nil {
				query, args := lockCursor(p, visited, first)
				lc, ok, err := scanLockedCursor(tx.QueryRow(ctx, query, args...))
				if err != nil {
					return err
				}
				if !ok {
					break
				}
				c = &lc
			}
			visited = append(visited, c.partition)
			if p.Ordered {
				// Exceptions and batches of a partition are created only under
				// its cursor lock, which this transaction now holds: this read
				// is current. (Materializing a batch turns it into exceptions
				// in one transaction: one of the two is seen.)
				var pending bool
				if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM delivery_exception WHERE stream_id = $1::bigint AND group_name = $2::text
				AND partition = $3::integer AND state <> 'dead')
				OR EXISTS (SELECT 1 FROM delivery_batch WHERE stream_id = $1::bigint AND group_name = $2::text AND partition = $3::integer)`,
					p.Stream.ID, p.Group, c.partition).Scan(&pending); err != nil {
					return err
				}
				if pending {
					continue
				}
			}
			if readNext && len(res.Deliveries) == 0 && c.partition == nextFirst && acks == nil && !p.Ordered && !p.Stream.Compacted {
				// Should this partition give the claim its Limit, the next
				// claim may take the rows past it in one round trip.
				next = &window{versions: slices.Clone(plan.Versions), group: g, print: gprint}
			} else {
				next = nil
			}
			got, deferred, at, cut, err := claimPartition(ctx, tx, p, plan, c.partition, c.position, p.Limit-len(res.Deliveries), n == 1, ra, next)
			if err != nil {
				return err
			}
			short = cut
			if len(got) > 0 {
				took = busyState{ok: !took.ok && len(res.Deliveries) == 0, partition: c.partition, position: at, versions: slices.Clone(plan.Versions)}
			}
			res.Deliveries = append(res.Deliveries, got...)
			res.Deferred += deferred
			for _, g := range got {
				wrote[c.partition] = append(wrote[c.partition], g.ID)
			}
			if tx.ended {
				break
			}
		}
		return nil
	})
	return claimOutcome{res: res, wrote: wrote, short: short, took: took, next: next}, err
}

// busy reports whether this driver's last claim of the group took its
// Limit, so that the next one probably finds rows too (Claim skips its
// probe), and where that claim left the cursor of the one partition it
// took rows from, if it took from one (ahead.ok).
func (d *Driver) busy(streamID int64, group string) (ahead busyState, ok bool) {
	v, ok := d.busyGroups.Load(busyKey{streamID, group})
	if ok {
		ahead = v.(busyState)
	}
	return ahead, ok
}

func (d *Driver) setBusy(streamID int64, group string, busy bool, ahead busyState) {
	k := busyKey{streamID, group}
	if !busy {
		d.busyGroups.Delete(k)
		d.windows.Delete(k)
	} else if v, ok := d.busyGroups.Load(k); !ok || !v.(busyState).same(ahead) {
		d.busyGroups.Store(k, ahead)
	}
}

// busyState is where a claim that took its Limit left the cursor of the
// one partition it took rows from, and the versions it read: the next
// claim reads ahead from there.
type busyState struct {
	ok        bool
	partition int32
	position  int64
	versions  []int // nil: every version
	// first is where the next claim starts looking for a cursor (drawn at
	// random by this one: a window is read only past the cursor of that
	// partition).
	first int32
	drawn bool
	limit int // this claim's Limit
}

func (b busyState) same(o busyState) bool {
	return b.ok == o.ok && b.partition == o.partition && b.position == o.position && sameVersions(b.versions, o.versions) &&
		b.first == o.first && b.drawn == o.drawn && b.limit == o.limit
}

type busyKey struct {
	streamID int64
	group    string
}

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

// loadGroupAnd reads a group with extra columns (more, with parameters
// from $3 on in args) into extra destinations.
func loadGroupAnd(ctx context.Context, q querier, streamID int64, name, more string, args []any, extra ...any) (driver.GroupConfig, error) {
	g, _, err := scanGroup(q.QueryRow(ctx, `SELECT `+groupColumnsOf("g")+more+` FROM consumer_group g WHERE g.stream_id = $1::bigint AND g.name = $2::text`,
		append([]any{streamID, name}, args...)...), extra...)
	if errors.Is(err, pgx.ErrNoRows) {
		return g, fmt.Errorf("group %q: %w", name, driver.ErrGroupNotFound)
	}
	return g, err
}

// queueLoadGroup queues the read of a group, and of its groupPrint.
func queueLoadGroup(b *pgx.Batch, streamID int64, name string) {
	b.Queue(`SELECT `+groupColumnsOf("g")+`, `+groupPrint+` FROM consumer_group g WHERE g.stream_id = $1::bigint AND g.name = $2::text`, streamID, name)
}

// scanLoadedGroup reads a group's columns, then extra.
func scanLoadedGroup(r pgx.Row, name string, extra ...any) (driver.GroupConfig, error) {
	g, _, err := scanGroup(r, extra...)
	if errors.Is(err, pgx.ErrNoRows) {
		return g, fmt.Errorf("group %q: %w", name, driver.ErrGroupNotFound)
	}
	return g, err
}

type lockedCursor struct {
	partition int32
	position  int64
}

// lockCursor is the statement that locks the cursor of a partition not yet
// visited that has rows past it and that no other claimer holds.
func lockCursor(p driver.ClaimParams, visited []int32, first int32) (string, []any) {
	return `SELECT c.partition, c.position FROM group_cursor c
		WHERE c.stream_id = $1::bigint AND c.group_name = $2::text AND NOT (c.partition = ANY($3::integer[]))
			AND EXISTS (SELECT 1 FROM ` + logTable(p.Stream.ID) + ` m WHERE m.partition = c.partition AND m.id > c.position)
		ORDER BY (c.partition + $4::integer - $5::integer) % $4::integer
		LIMIT 1 FOR UPDATE OF c SKIP LOCKED`,
		[]any{p.Stream.ID, p.Group, slices.Clone(visited), int32(p.Stream.Partitions), first}
}

func scanLockedCursor(r pgx.Row) (lockedCursor, bool, error) {
	var c lockedCursor
	err := r.Scan(&c.partition, &c.position)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, false, nil
	}
	return c, err == nil, err
}

// claimPartition leases up to limit rows past the cursor of a partition
// whose cursor this transaction holds, leaves rows the member cannot decode
// as due exceptions, and moves the cursor past every row it inspected.
//
// A row the group already has an exception for (its cursor was moved back
// over it) is passed over as it is: the record skips it (batchClaim) and
// only the rows it returns are leased or deferred. Only then, when the call
// is still short of limit, does it look further.
//
// When its last write ends the claim (it takes limit rows, or reads to the
// end of the only partition), that write carries the COMMIT (end): one
// round trip less. short then says the record passed over rows and the
// claim should read on, in a transaction of its own. pre is a first window
// read ahead (scanPartition).
func claimPartition(ctx context.Context, t *claimTxn, p driver.ClaimParams, plan driver.ClaimPlan, part int32, cursor int64, limit int, only bool, pre *prefetch, next *window) (taken []driver.Delivery, deferred int, at int64, short bool, err error) {
	scanned := 0
	for len(taken) < limit && scanned < maxScan {
		s, err := scanPartition(ctx, t, p, plan, part, cursor, limit-len(taken), maxScan-scanned, pre)
		if err != nil {
			return nil, 0, 0, false, err
		}
		pre = nil
		if s.cursor == cursor {
			break
		}
		full := len(taken)+len(s.taken) == limit
		end := full || (!s.more && only)
		ahead := next
		if !full {
			ahead = nil
		}
		got, def, err := recordClaim(ctx, t, p, part, s, end, ahead)
		if err != nil {
			return nil, 0, 0, false, err
		}
		taken, deferred = append(taken, got...), deferred+def
		cursor, scanned = s.cursor, scanned+s.scanned
		skipped := len(got)+def < len(s.taken)+len(s.deferred)
		if !skipped || !s.more {
			break
		}
		if t.ended {
			return taken, deferred, cursor, true, nil
		}
	}
	return taken, deferred, cursor, false, nil
}

// claimQuerier runs the claim's statements: its transaction's connection.
type claimQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// partitionScan is what scanPartition found.
type partitionScan struct {
	taken    []driver.Delivery
	deferred []driver.Row
	cursor   int64 // the last row inspected
	scanned  int
	// more: the scan stopped at limit or its bound, not at the end of the
	// partition or at an ordered group's deferred row.
	more bool
}

// scanPartition reads up to limit claimable rows past cursor, inspecting at
// most bound rows. pre, when it holds the first window this scan would
// read (from cursor, of the same size), stands in for that window's query.
func scanPartition(ctx context.Context, tx claimQuerier, p driver.ClaimParams, plan driver.ClaimPlan, part int32, cursor int64, limit, bound int, pre *prefetch) (partitionScan, error) {
	query, vargs := scanQuery(p, plan.Versions)
	s := partitionScan{cursor: cursor, more: true}
	window := min(max(limit, 16), maxWindow)
	for len(s.taken) < limit && s.scanned < bound {
		var win []scannedRow
		if pre != nil && pre.from == s.cursor && pre.window == window {
			win = pre.rows
		} else {
			rows, err := tx.Query(ctx, query, append([]any{part, s.cursor, int32(window)}, vargs...)...)
			if err != nil {
				return s, err
			}
			if win, err = collectWindow(rows); err != nil {
				return s, err
			}
		}
		pre = nil
		full, stop := s.inspect(p, plan, win, limit)
		if full {
			break
		}
		if stop || len(win) < window {
			s.more = false
			break
		}
		window = min(window*2, maxWindow)
	}
	return s, nil
}

// inspect takes the claimable rows of a window in order until the scan has
// limit, leaving the rows the member cannot decode as deferred, and moves
// the scan's cursor to the last row it looked at. full: it has limit; stop:
// an ordered group met a deferred row.
func (s *partitionScan) inspect(p driver.ClaimParams, plan driver.ClaimPlan, win []scannedRow, limit int) (full, stop bool) {
	for _, w := range win {
		r := w.row
		s.scanned++
		s.cursor = r.ID
		if !w.versionOK || !w.head || !plan.Matches(r.RoutingKey) {
			continue
		}
		if !plan.Decodes(r.SchemaVersion) {
			// The group reads this version, this member cannot decode it:
			// leave it due for a member that can. An ordered group stops
			// here, so that the partition's order holds.
			s.deferred = append(s.deferred, r)
			if p.Ordered {
				return false, true
			}
			continue
		}
		s.taken = append(s.taken, driver.Delivery{Row: r, Attempt: 1, LeaseUntil: ts(p.LeaseUntil)})
		if len(s.taken) == limit {
			return true, false
		}
	}
	return false, false
}

// scanQuery is the statement that reads a window of rows past a cursor
// ($1 partition, $2 cursor, $3 window), with its version filter's
// argument. Payloads are read only for rows at the group's versions: other
// rows are passed over without their payload leaving the database.
func scanQuery(p driver.ClaimParams, versions []int) (string, []any) {
	vf, vargs := versionFilter("m.schema_version", versions, 4)
	return `SELECT m.id, m.partition, m.schema_version, m.msg_key, m.routing_key, m.compaction_rank,
		CASE WHEN ` + vf + ` THEN m.payload END, m.headers, m.produced_at, ` + vf + `, ` + rowIsHead(p.Stream) + `
		FROM ` + logTable(p.Stream.ID) + ` m WHERE m.partition = $1::integer AND m.id > $2::bigint ORDER BY m.id LIMIT $3::integer`, vargs
}

// scannedRow is a row of a window, with whether it is at the group's
// versions and its key's head.
type scannedRow struct {
	row             driver.Row
	versionOK, head bool
}

func collectWindow(rows pgx.Rows) ([]scannedRow, error) {
	defer rows.Close()
	var out []scannedRow
	for rows.Next() {
		var w scannedRow
		var err error
		if w.row, err = scanRow(rows, &w.versionOK, &w.head); err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// sameVersions reports whether two version lists (nil: every version) are
// the same.
func sameVersions(a, b []int) bool { return (a == nil) == (b == nil) && slices.Equal(a, b) }

// prefetch is a window read in the claim's first round trip, from where
// the group's last claim left the cursor of the partition it took from,
// in the hope that this claim locks that cursor again.
type prefetch struct {
	partition int32
	from      int64
	window    int
	versions  []int // the versions its query read; nil: every version
	rows      []scannedRow
}

// recordClaim moves the cursor past what s inspected and records its
// leased rows as the claim's batch of the partition and its deferred rows
// as delayed exceptions (batchClaim), skipping rows the group already has
// an exception for. It returns the deliveries and the count of deferred
// rows it recorded. When the write ends the claim (end) and next is not nil,
// the window past the new cursor is read before the COMMIT, for the next
// claim (claimFast).
func recordClaim(ctx context.Context, t *claimTxn, p driver.ClaimParams, part int32, s partitionScan, end bool, next *window) ([]driver.Delivery, int, error) {
	b := &pgx.Batch{}
	record := queueRecord(b, p, part, s)
	if end && next != nil {
		next.queue(b, p, part, s.cursor)
	}
	var inserted []int64
	read := func(br pgx.BatchResults) error {
		var err error
		if inserted, err = record(br); err != nil || !end || next == nil {
			return err
		}
		return next.read(br)
	}
	if err := t.send(ctx, b, read, end); err != nil {
		return nil, 0, err
	}
	taken, deferred := recorded(s, inserted)
	return taken, deferred, nil
}

// queueRecord queues recordClaim's statements in b: the cursor's move past
// what s inspected and, when s leased or deferred rows, their record
// (batchClaim). The function it returns reads their results: the ids
// recorded.
func queueRecord(b *pgx.Batch, p driver.ClaimParams, part int32, s partitionScan) func(pgx.BatchResults) ([]int64, error) {
	b.Queue(`UPDATE group_cursor SET position = $1::bigint WHERE stream_id = $2::bigint AND group_name = $3::text AND partition = $4::integer`,
		s.cursor, p.Stream.ID, p.Group, part)
	n := len(s.taken) + len(s.deferred)
	if n == 0 {
		return func(br pgx.BatchResults) ([]int64, error) { _, err := br.Exec(); return nil, err }
	}
	ids := make([]int64, 0, n)
	versions := make([]int32, 0, n)
	leased := make([]bool, 0, n)
	for _, t := range s.taken {
		ids, versions, leased = append(ids, t.ID), append(versions, int32(t.SchemaVersion)), append(leased, true)
	}
	for _, r := range s.deferred {
		ids, versions, leased = append(ids, r.ID), append(versions, int32(r.SchemaVersion)), append(leased, false)
	}
	b.Queue(batchClaim, p.Stream.ID, p.Group, part, ts(p.LeaseUntil), p.Token, ts(p.Now), p.Holder, ids, versions, leased, slices.Min(ids), slices.Max(ids))
	return func(br pgx.BatchResults) ([]int64, error) {
		if _, err := br.Exec(); err != nil {
			return nil, err
		}
		rows, err := br.Query()
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, pgx.RowTo[int64])
	}
}

// recorded is what a record of s took, given the ids it recorded:
// the deliveries, and the count of deferred rows.
func recorded(s partitionScan, inserted []int64) ([]driver.Delivery, int) {
	if len(inserted) == len(s.taken)+len(s.deferred) {
		return s.taken, len(s.deferred)
	}
	// The rare path: the group had exceptions for some of these rows.
	kept := make(map[int64]bool, len(inserted))
	for _, id := range inserted {
		kept[id] = true
	}
	var taken []driver.Delivery
	for _, t := range s.taken {
		if kept[t.ID] {
			taken = append(taken, t)
		}
	}
	deferred := 0
	for _, r := range s.deferred {
		if kept[r.ID] {
			deferred++
		}
	}
	return taken, deferred
}

// claimExceptions leases due exceptions at the versions the member decodes.
// Candidates are locked with FOR UPDATE SKIP LOCKED, so concurrent claimers
// take different ones.
func (d *Driver) claimExceptions(ctx context.Context, tx claimQuerier, p driver.ClaimParams, plan driver.ClaimPlan) ([]driver.Delivery, error) {
	if plan.Decodable != nil && len(plan.Decodable) == 0 {
		return nil, nil
	}
	vf, vargs := versionFilter("e.schema_version", plan.Decodable, 5)
	ordered := ""
	if p.Ordered {
		// Only the lowest pending exception of a partition may be handed out.
		ordered = ` AND NOT EXISTS (SELECT 1 FROM delivery_exception e2 WHERE e2.stream_id = e.stream_id AND e2.group_name = e.group_name
			AND e2.partition = e.partition AND e2.state <> 'dead' AND e2.msg_id < e.msg_id)
			AND NOT EXISTS (SELECT 1 FROM delivery_batch b2 WHERE b2.stream_id = e.stream_id AND b2.group_name = e.group_name
				AND b2.partition = e.partition AND b2.first_id < e.msg_id)`
	}
	// Superseded or removed rows are resolved and buried ones leave the due
	// set as they are found; look past them until Limit deliveries are
	// leased or nothing due is left.
	//
	// Candidates are taken in due order, along the delivery_exception_due
	// index, so that a claim reads what is due and stops at its limit
	// however many retries wait for later: in id order the planner walks
	// the group's every exception (20 ms behind 100k delayed retries). The
	// deliveries are returned in id order, as the main claim returns them.
	var out []driver.Delivery
	for len(out) < p.Limit {
		more, full, err := claimExceptionsPage(ctx, tx, p, vf, vargs, ordered, p.Limit-len(out))
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
		if !full {
			break
		}
	}
	slices.SortFunc(out, func(a, b driver.Delivery) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// claimExceptionsPage handles up to limit due exceptions and reports whether
// it found that many candidates.
func claimExceptionsPage(ctx context.Context, tx claimQuerier, p driver.ClaimParams, vf string, vargs []any, ordered string, limit int) ([]driver.Delivery, bool, error) {
	args := append([]any{p.Stream.ID, p.Group, ts(p.Now), int32(limit)}, vargs...)
	rows, err := tx.Query(ctx, `SELECT `+rowColumns+`, e.msg_id, e.state, e.attempt, m.id IS NOT NULL AND `+rowIsHead(p.Stream)+`
		FROM delivery_exception e LEFT JOIN `+logTable(p.Stream.ID)+` m ON m.id = e.msg_id
		WHERE e.stream_id = $1::bigint AND e.group_name = $2::text AND e.state <> 'dead' AND e.due_at <= $3::timestamptz AND `+vf+ordered+`
		ORDER BY e.due_at LIMIT $4::integer FOR UPDATE OF e SKIP LOCKED`, args...)
	if err != nil {
		return nil, false, err
	}
	var resolve, bury, lease []int64
	var leased []driver.Delivery
	for rows.Next() {
		var (
			id               *int64
			part, version    *int32
			rank             *int64
			key, rk          *string
			payload, headers []byte
			produced         *time.Time
			msgID            int64
			state            string
			attempt          int32
			claimable        bool
		)
		if err := rows.Scan(&id, &part, &version, &key, &rk, &rank, &payload, &headers, &produced, &msgID, &state, &attempt, &claimable); err != nil {
			rows.Close()
			return nil, false, err
		}
		switch {
		case !claimable:
			// The row was removed or superseded: nothing is left to deliver.
			resolve = append(resolve, msgID)
		case state == string(driver.StateLeased) && p.MaxAttempts > 0 && int(attempt) >= p.MaxAttempts:
			bury = append(bury, msgID)
		default:
			r := driver.Row{ID: *id, Partition: int(*part), SchemaVersion: int(*version), RoutingKey: *rk,
				CompactionRank: *rank, Payload: payload, ProducedAt: produced.UTC()}
			if key != nil {
				r.Key, r.HasKey = *key, true
			}
			if err := decodeHeaders(r.ID, headers, &r.Headers); err != nil {
				rows.Close()
				return nil, false, err
			}
			lease = append(lease, msgID)
			leased = append(leased, driver.Delivery{Row: r, Attempt: int(attempt) + 1, LeaseUntil: ts(p.LeaseUntil)})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	b := &pgx.Batch{}
	where := ` WHERE stream_id = $1::bigint AND group_name = $2::text AND msg_id = ANY($3::bigint[])`
	if len(resolve) > 0 {
		b.Queue(`DELETE FROM delivery_exception`+where, p.Stream.ID, p.Group, resolve)
	}
	if len(bury) > 0 {
		// The expired lease's attempt and holder go to the failure history.
		b.Queue(`UPDATE delivery_exception e SET state = 'dead', lease_token = NULL, last_error = $4::text,
			failures = `+appendFailure("e", `$6::text`, `$7::text`)+`,
			first_failed_at = COALESCE(first_failed_at, $5::timestamptz), updated_at = $5::timestamptz`+where,
			p.Stream.ID, p.Group, bury, storableText(p.LastError), ts(p.Now), historyError(p.LastError), historyTime(p.Now))
	}
	if len(lease) > 0 {
		b.Queue(`UPDATE delivery_exception SET state = 'leased', attempt = attempt + 1, due_at = $4::timestamptz, lease_token = $5::text,
			holder = $6::text, updated_at = $7::timestamptz`+where, p.Stream.ID, p.Group, lease, ts(p.LeaseUntil), p.Token, p.Holder, ts(p.Now))
	}
	if b.Len() > 0 {
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return nil, false, err
		}
	}
	return leased, len(resolve)+len(bury)+len(lease) == limit, nil
}
