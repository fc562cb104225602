package postgres

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Claim implements driver.Driver, as "Claims" in the package documentation
// describes. setUpClaim decides, from what the driver remembers of the
// group's last claim, whether the probe can be skipped and where to start;
// claim runs the claim in one round trip (claimFast), or after the probe
// (probe) in a transaction of its own (claimUsual); remember keeps what the
// next claim (its window) and Ack (the batch written) may use; readOn
// completes a claim whose transaction ended early. The statements that
// record what a claim took go out with the COMMIT when they end it (it has
// its Limit, or read to the end of the only partition with rows).
func (d *Driver) Claim(ctx context.Context, p driver.ClaimParams) (driver.ClaimResult, error) {
	if err := d.check(); err != nil {
		return driver.ClaimResult{}, err
	}
	s := d.setUpClaim(p)
	c, err := d.claim(ctx, p, s)
	s.acks.done(err == nil)
	if err == nil {
		d.remember(p, c)
		if c.short {
			c.res = d.readOn(ctx, p, c.res)
		}
	}
	took := c.took
	if err == nil && took.ok {
		d.wakes.leftAt(p.Stream.ID, p.Group, took)
	}
	took.first, took.drawn, took.limit = s.nextFirst, true, p.Limit
	if took.ok {
		// The next claim starts where this one's rows were, a few claims
		// in a row (driver.Streak): its first round trip then reads the
		// rows it takes.
		if took.streak = s.streak.Then(int(took.partition)); took.streak.Stay(p.Stream.Partitions) {
			took.first = took.partition
		}
	}
	d.setBusy(p.Stream.ID, p.Group, err == nil && p.Limit > 0 && len(c.res.Deliveries) >= p.Limit, took)
	if err != nil {
		return driver.ClaimResult{}, err
	}
	return c.res, nil
}

// claimSetup is what Claim decides before its transaction.
type claimSetup struct {
	acks *claimAcks
	// hot: the group's last claim (of this driver) took its Limit; ahead
	// is where it left the cursor of the one partition it took rows from,
	// and win the rows past it that it read for this claim (claimFast).
	hot   bool
	ahead busyState
	win   *window
	// direct: no probe runs (the claim is hot, or woken by a notification
	// (wakeclaim.go), or carries acks, which it writes whatever the probe
	// would say): the transaction finds out itself what is claimable.
	direct bool
	// readAhead: the first round trip reads the rows past ahead (the
	// claim is hot, or woken).
	readAhead bool
	// What the probe found, or direct may find: rows past a cursor,
	// batches expired, exceptions due (or expired).
	fresh, expired, due bool
	first, nextFirst    int32 // the partition to lock first, and the next claim's
	streak              driver.Streak
	readNext            bool // read the window past the cursor for the next claim
}

// setUpClaim decides, from what this driver remembers of the group's last
// claim, whether the claim may skip the probe, where it starts, and
// whether it reads a window for the next claim.
func (d *Driver) setUpClaim(p driver.ClaimParams) claimSetup {
	var s claimSetup
	s.ahead, s.hot = d.busyGroups.Hint(p.Stream.ID, p.Group)
	s.hot = s.hot && p.Limit > 0
	woken, left := d.wakes.woken(p.Stream.ID, p.Group)
	woken = woken && p.Limit > 0 && !s.hot
	s.acks = d.newClaimAcks(p)
	s.direct = s.hot || woken || s.acks != nil
	s.readAhead = s.hot
	s.first = int32(rand.IntN(p.Stream.Partitions))
	switch {
	case s.hot && s.ahead.drawn && s.ahead.first < int32(p.Stream.Partitions):
		// Drawn by the claim before, which read the window past its cursor
		// only when it drew that cursor's partition.
		s.first = s.ahead.first
	case woken && left.ok && left.partition < int32(p.Stream.Partitions):
		s.ahead, s.readAhead, s.first = left, true, left.partition
	}
	if s.hot {
		s.streak = s.ahead.streak
	}
	// The next claim starts here too when this one fills its limit here
	// and the streak goes on; else where it is drawn.
	s.nextFirst = int32(rand.IntN(p.Stream.Partitions))
	if s.streak.Then(int(s.first)).Stay(p.Stream.Partitions) {
		s.nextFirst = s.first
	}
	// A window is read for the next claim only when it may take it whole:
	// the claims of the group take one window's worth at most and as many
	// as the claim before (a loop of Claim(n); Run's claims vary).
	s.readNext = p.Limit <= driver.MaxClaimWindow && (!s.hot || s.ahead.limit == p.Limit) && windowed(p)
	if s.hot {
		s.win, _ = d.windows.Take(p.Stream.ID, p.Group)
	}
	return s
}

// windowed reports whether a claim may take a window in one round trip
// (claimFast) and read one for the next claim: not a claim carrying acks
// (it runs as usual), nor an ordered group's, nor one of a compacted
// stream, whose rows stop being claimable when a newer row of their key
// arrives.
func windowed(p driver.ClaimParams) bool {
	return len(p.Acks) == 0 && !p.Ordered && !p.Stream.Compacted
}

// claim runs the claim: in one round trip when the group's last claim read
// the window this one starts at and nothing changed since (claimFast);
// otherwise, unless the probe finds nothing to do, in claimUsual's
// transaction.
func (d *Driver) claim(ctx context.Context, p driver.ClaimParams, s claimSetup) (claimOutcome, error) {
	if s.win != nil && s.win.partition == s.first && windowed(p) {
		c, ok, err := d.claimFast(ctx, p, s, s.win)
		if err != nil || ok {
			return c, err
		}
	}
	if s.direct {
		s.fresh, s.expired = p.Limit > 0, p.Limit > 0
	} else {
		res, err := d.probe(ctx, p, &s)
		if err != nil || p.Limit <= 0 || !(s.due || s.fresh || s.expired) {
			return claimOutcome{res: res}, err
		}
	}
	// Expired batches are materialized (materializeExpired) before the
	// exception claim, which then takes their members as expired leases.
	s.due = s.due || s.expired
	return d.claimUsual(ctx, p, s)
}

// probe reads the group and finds out, in one autocommit statement, what
// the claim has to do: whether an exception the member can take is due
// (s.due), a partition has rows past its cursor (s.fresh) or a batch
// expired (s.expired). The claim of an idle group ends here.
func (d *Driver) probe(ctx context.Context, p driver.ClaimParams, s *claimSetup) (driver.ClaimResult, error) {
	var decodes []int32
	if p.Decodes != nil {
		decodes = int32s(p.Decodes)
	}
	var res driver.ClaimResult
	var changed bool
	err := d.read(ctx, func() error {
		g, err := loadGroupAnd(ctx, d.pool, p.Stream.ID, p.Group, `,
			EXISTS (SELECT 1 FROM delivery_exception e WHERE `+exceptionDue("g.stream_id", "g.name", "$3::timestamptz")+`
				AND (g.all_versions OR e.schema_version = g.schema_version OR g.converts_from @> to_jsonb(e.schema_version))
				AND ($4::integer[] IS NULL OR e.schema_version = ANY($4::integer[]))),
			EXISTS (SELECT 1 FROM group_cursor c WHERE c.stream_id = g.stream_id AND c.group_name = g.name
				AND EXISTS (SELECT 1 FROM `+logTable(p.Stream.ID)+` m WHERE m.partition = c.partition AND m.id > c.position)),
			EXISTS (SELECT 1 FROM delivery_batch b WHERE `+batchExpired("g.stream_id", "g.name", "$3::timestamptz")+`),
			(SELECT generation FROM stream_config WHERE id = g.stream_id) <> $5::bigint`,
			[]any{ts(p.Now), decodes, p.Stream.Generation}, &s.due, &s.fresh, &s.expired, &changed)
		if err != nil {
			return err
		}
		// A stream altered since the claim was planned: the transaction
		// refuses the claim (usualClaim.run).
		s.fresh = s.fresh || changed
		if _, err := driver.PlanClaim(g, p); err != nil {
			return err
		}
		res.Group = g
		return nil
	})
	return res, err
}

// claimOutcome is what a claim's transaction did (claimFast's or claimUsual's).
type claimOutcome struct {
	res   driver.ClaimResult
	wrote map[int32][]int64 // the members of the batches it wrote, by partition
	short bool              // the transaction ended before the claim was done
	took  busyState         // the one partition it took rows from
	next  *window           // read past the cursor for the next claim
}

// add counts what partition part gave the claim: its deliveries and
// deferred rows, the members of the batch it wrote there (remember), and,
// when it is the first to give rows, where it left the cursor (took).
func (o *claimOutcome) add(part int32, taken []driver.Delivery, deferred int, cursor int64, versions []int) {
	if len(taken) > 0 {
		o.took = busyState{ok: !o.took.ok && len(o.res.Deliveries) == 0, partition: part, position: cursor, versions: slices.Clone(versions)}
	}
	o.wrote[part] = slices.Grow(o.wrote[part], len(taken))
	for _, d := range taken {
		o.wrote[part] = append(o.wrote[part], d.ID)
	}
	o.res.Deliveries = appendTo(o.res.Deliveries, taken)
	o.res.Deferred += deferred
}

// remember keeps what a claim's transaction leaves for later calls: the
// window it read for the next claim, when that claim may take it whole
// (claimFast), and the batches it wrote, for Ack's statements that
// compare their ids (batchAcks).
func (d *Driver) remember(p driver.ClaimParams, c claimOutcome) {
	if n := c.next; n != nil && n.done && !c.short && len(c.res.Deliveries) == p.Limit && c.took.ok &&
		c.took.partition == n.partition && c.took.position == n.from {
		d.windows.Set(p.Stream.ID, p.Group, n)
	}
	var batches []driver.MemoBatch
	for part, ids := range c.wrote {
		if len(ids) > 0 {
			slices.Sort(ids)
			batches = append(batches, driver.MemoBatch{Partition: part, IDs: ids})
		}
	}
	d.claimed.Add(p.Stream.ID, p.Group, p.Token, batches)
}

// readOn completes a claim whose transaction ended early, rarely: rows past
// the cursor had exceptions (it was moved back over them). What was taken
// is leased and committed; a claim of its own reads on.
func (d *Driver) readOn(ctx context.Context, p driver.ClaimParams, res driver.ClaimResult) driver.ClaimResult {
	rest := p
	rest.Limit -= len(res.Deliveries)
	rest.Acks = nil // recorded with what was taken
	if more, err := d.Claim(ctx, rest); err == nil {
		res.Deliveries = append(res.Deliveries, more.Deliveries...)
		res.Deferred += more.Deferred
	}
	return res
}

// usualClaim is a claim's transaction: acks, exceptions due, then
// partitions past their cursors; the claim in one round trip (claimFast)
// runs its partition steps after a first round trip of its own. Its fields
// but p and s are those of one attempt of the transaction, which may run
// again.
type usualClaim struct {
	p driver.ClaimParams
	s claimSetup
	// What the first round trip read.
	g       driver.GroupConfig
	gprint  string        // the group's groupPrint
	gen     int64         // the stream's stored generation
	rows    bool          // partitions may have rows past their cursors
	locked  *lockedCursor // the cursor it locked, if any
	pending bool          // exceptions are due
	ahead   *window       // the rows past where the group's last claim left its cursor
	// windows: the rows past every cursor, by partition, read by a woken
	// claim of a stream of several partitions (queueWindows); the window of
	// the cursor it locked becomes ahead.
	windows map[int32]*window
	// alone: the first round trip asked whether cursors other than the one
	// it locks have rows past them (queueRowsElsewhere, on a stream of
	// several partitions, for a claim that may take fewer rows than its
	// Limit), and none had, so reading the locked partition to its end
	// ends the claim.
	alone   bool
	plan    driver.ClaimPlan
	visited []int32 // the partitions whose cursors it locked
	out     claimOutcome
	// fast is the fast claim's window: its first statements go with its
	// record (claimFast).
	fast  *window
	steps partitionSteps // of the partition being claimed

}

// claimUsual runs a claim's transaction: its first round trip begins it
// and sends what queueFirst queues, then it settles the acks, leases due
// exceptions and claims partitions past their cursors (run).
func (d *Driver) claimUsual(ctx context.Context, p driver.ClaimParams, s claimSetup) (claimOutcome, error) {
	u := &usualClaim{}
	err := d.claimTx(ctx, func(t *claimTxn) error {
		*u = usualClaim{p: p, s: s, rows: s.fresh, visited: []int32{}, out: claimOutcome{wrote: map[int32][]int64{}}}
		r := &roundTrip{}
		u.queueFirst(r)
		if err := t.send(ctx, &r.Batch, r.read, false); err != nil {
			return err
		}
		return u.run(ctx, t)
	})
	return u.out, err
}

// anyExceptionDue: has group ($1, $2) an exception due at $3, of any version?
var anyExceptionDue = `SELECT EXISTS (SELECT 1 FROM delivery_exception e WHERE ` + exceptionDue("$1::bigint", "$2::text", "$3::timestamptz") + `)`

// queueFirst queues the statements of the first round trip, each with what
// reads it: the acks, before anything reads (what they resolve is
// claimable); the lock of a first cursor; the group and the stream's
// generation, read after the lock is granted in a statement of its own (a
// snapshot taken after the lock: a registration or an alter that held this
// lock has committed by then, C19); the materialization of expired
// batches; whether exceptions are due, unless the probe said; and the
// window past where the group's last claim left its cursor.
func (u *usualClaim) queueFirst(r *roundTrip) {
	p, s := u.p, u.s
	if s.acks != nil {
		s.acks.queue(r)
	}
	var locked lockedCursor
	var ok bool
	if u.rows {
		query, args := lockCursor(p, u.visited, s.first)
		r.add(func(br pgx.BatchResults) (err error) { locked, ok, err = scanLockedCursor(br.QueryRow()); return err }, query, args...)
	}
	readGroup := func(br pgx.BatchResults) (err error) {
		u.g, err = scanLoadedGroup(br.QueryRow(), p.Group, &u.gprint, &u.gen)
		return err
	}
	r.add(readGroup, groupQuery(", "+groupPrint+", (SELECT generation FROM stream_config WHERE id = $1::bigint)", ""), p.Stream.ID, p.Group)
	if s.expired {
		r.add(execRead, materializeExpired(p.Stream.ID), p.Stream.ID, p.Group, ts(p.Now))
	}
	u.pending = s.due
	if s.direct && p.Limit > 0 {
		// Any exception due (whatever its version: the exception claim
		// filters), after the materialization.
		r.add(func(br pgx.BatchResults) error { return br.QueryRow().Scan(&u.pending) },
			anyExceptionDue, p.Stream.ID, p.Group, ts(p.Now))
	}
	u.queueAhead(r)
	if u.rows && !s.hot && p.Limit > 0 && p.Stream.Partitions > 1 {
		queueRowsElsewhere(&r.Batch, p)
		r.then(func(br pgx.BatchResults) (err error) {
			u.alone, err = readRowsElsewhere(br, locked.partition)
			return err
		})
	}
	r.then(func(pgx.BatchResults) error {
		if !ok {
			u.rows = false // every partition with rows is being claimed
			return nil
		}
		u.locked = &locked
		if w := u.windows[locked.partition]; w != nil {
			// Read under this lock, as u.ahead is (nextCursor checks it).
			u.ahead = w
		}
		return nil
	})
}

// queueAhead queues, for a hot or woken claim, the read of the rows past
// where the group's last claim left its cursor, after the lock.
func (u *usualClaim) queueAhead(r *roundTrip) {
	p, s := u.p, u.s
	switch {
	case !u.rows || !s.readAhead || !s.ahead.ok || p.Ordered:
	case !s.hot && p.Stream.Partitions > 1 && p.Stream.Partitions <= wokenWindowsMax:
		// Woken: the rows past every cursor (wakeclaim.go), read after
		// the lock as below.
		queueWindows(&r.Batch, p, s.ahead.versions)
		r.then(func(br pgx.BatchResults) (err error) {
			u.windows, err = readWindows(br, p, s.ahead.versions)
			return err
		})
	default:
		// Read after the lock (a snapshot that sees what the lock's holder
		// did), and used when this claim locks that cursor again, at that
		// position, reading the same versions (nextCursor).
		u.ahead = &window{versions: s.ahead.versions}
		u.ahead.queue(r, p, s.ahead.partition, s.ahead.position)
	}
}

// run settles the acks, plans the claim for the group as the first round
// trip read it, leases due exceptions and claims partitions.
func (u *usualClaim) run(ctx context.Context, t *claimTxn) error {
	res := &u.out.res
	// u.gen was read after the cursor lock, as the group was: when the
	// stream was altered since the claim was planned, nothing is leased and
	// the acks roll back with the transaction.
	if err := driver.CheckGeneration(u.p.Stream, u.gen, func() (driver.StreamConfig, error) {
		return lookupStreamByID(ctx, t, u.p.Stream.ID)
	}); err != nil {
		return err
	}
	if a := u.s.acks; a != nil {
		if err := a.settle(ctx, t); err != nil {
			return err
		}
		res.Lost = a.lost()
	}
	var err error
	if u.plan, err = driver.PlanClaim(u.g, u.p); err != nil {
		return err
	}
	res.Group = u.g
	if u.pending {
		if res.Deliveries, err = claimExceptions(ctx, t, u.p, u.plan); err != nil {
			return err
		}
	}
	return u.claimPartitions(ctx, t)
}

// claimPartitions claims rows past the cursors, one free cursor at a time,
// until the claim has its Limit, no free cursor has rows, or the write of
// what a partition gave ended the transaction.
func (u *usualClaim) claimPartitions(ctx context.Context, t *claimTxn) error {
	p, res := u.p, &u.out.res
	for u.rows && len(res.Deliveries) < p.Limit && len(u.visited) < p.Stream.Partitions {
		c, ahead, err := u.nextCursor(ctx, t)
		if err != nil || c == nil {
			return err
		}
		u.visited = append(u.visited, c.partition)
		u.out.next = nil
		if u.s.readNext && len(res.Deliveries) == 0 && c.partition == u.s.nextFirst {
			// Should this partition give the claim its Limit, the next
			// claim may take the rows past it in one round trip.
			u.out.next = &window{versions: slices.Clone(u.plan.Versions), group: u.g, print: u.gprint}
		}
		if err := u.claimPartition(ctx, t, *c, ahead); err != nil {
			return err
		}
		if t.ended {
			break
		}
	}
	return nil
}

// nextCursor is the cursor to claim rows past next: the one the first round
// trip locked, with the window it read when that follows the cursor at its
// position for the versions planned (and no exception was due, which the
// claim took first), or else the next free cursor with rows, locked now
// (nil: none).
func (u *usualClaim) nextCursor(ctx context.Context, t *claimTxn) (*lockedCursor, *window, error) {
	c, ahead := u.locked, u.ahead
	u.locked, u.ahead = nil, nil
	if c == nil || ahead == nil || u.pending || c.partition != ahead.partition || c.position != ahead.from ||
		!sameVersions(u.plan.Versions, ahead.versions) {
		ahead = nil
	}
	if c != nil {
		return c, ahead, nil
	}
	query, args := lockCursor(u.p, u.visited, u.s.first)
	locked, ok, err := scanLockedCursor(t.QueryRow(ctx, query, args...))
	if err != nil || !ok {
		return nil, nil, err
	}
	return &locked, nil, nil
}

// partitionHeld reports whether an ordered group's partition is held (C10):
// an exception of it is not dead, or a batch of it is leased. Exceptions
// and batches of a partition are created only under its cursor lock, which
// the claim's transaction holds: this read is current. (Materializing a
// batch turns it into exceptions in one transaction: one of the two is
// seen.)
func partitionHeld(ctx context.Context, q querier, p driver.ClaimParams, part int32) (bool, error) {
	var held bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM delivery_exception WHERE stream_id = $1::bigint AND group_name = $2::text
			AND partition = $3::integer AND state <> 'dead')
		OR EXISTS (SELECT 1 FROM delivery_batch WHERE stream_id = $1::bigint AND group_name = $2::text AND partition = $3::integer)`,
		p.Stream.ID, p.Group, part).Scan(&held)
	return held, err
}

// lockedCursor is a cursor the claim's transaction holds, at its position.
type lockedCursor struct {
	partition int32
	position  int64
}

// lockCursor is the statement that locks the cursor of a partition not yet
// visited that has rows past it and that no other claimer holds.
//
// Whether rows lie past the cursor is a scalar subquery, a filter on each
// cursor row that the read committed recheck of a cursor moved meanwhile
// evaluates again at the new position. As an EXISTS it was planned as a
// semi-join, whose recheck keeps the log row the old position found: it
// failed once another claim had moved the cursor past that row, so the
// statement returned nothing but kept the cursor locked to the end of the
// transaction, and every other claim of the group skipped it and came back
// empty meanwhile (D12 saw all four of its members stop with rows left).
func lockCursor(p driver.ClaimParams, visited []int32, first int32) (string, []any) {
	return `SELECT c.partition, c.position FROM group_cursor c
		WHERE c.stream_id = $1::bigint AND c.group_name = $2::text AND NOT (c.partition = ANY($3::integer[]))
			AND ` + rowsPastCursor(p) + `
		ORDER BY (c.partition + $4::integer - $5::integer) % $4::integer
		LIMIT 1 FOR UPDATE OF c SKIP LOCKED`,
		[]any{p.Stream.ID, p.Group, slices.Clone(visited), int32(p.Stream.Partitions), first}
}

// rowsPastCursor is the filter on a cursor c of the claim's group: rows
// lie past it, a scalar subquery (lockCursor says why not an EXISTS).
func rowsPastCursor(p driver.ClaimParams) string {
	return `COALESCE((SELECT TRUE FROM ` + logTable(p.Stream.ID) + ` m WHERE m.partition = c.partition AND m.id > c.position LIMIT 1), FALSE)`
}

func scanLockedCursor(r pgx.Row) (lockedCursor, bool, error) {
	var c lockedCursor
	err := r.Scan(&c.partition, &c.position)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, false, nil
	}
	return c, err == nil, err
}

// setBusy notes whether this driver's claim of the group took its Limit,
// so that the next one probably finds rows too (it skips its probe), and
// where that claim left the cursor of the one partition it took rows from
// (ahead.ok): the next claim reads ahead from there.
func (d *Driver) setBusy(streamID int64, group string, busy bool, ahead busyState) {
	if !busy {
		d.busyGroups.Forget(streamID, group)
		d.windows.Forget(streamID, group)
	} else if v, ok := d.busyGroups.Hint(streamID, group); !ok || !v.same(ahead) {
		d.busyGroups.Set(streamID, group, ahead)
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
	// first is where the next claim starts looking for a cursor (this
	// partition while the streak stays, else drawn at random by this one:
	// a window is read only past the cursor of that partition).
	first  int32
	drawn  bool
	limit  int // this claim's Limit
	streak driver.Streak
}

func (b busyState) same(o busyState) bool {
	return b.ok == o.ok && b.partition == o.partition && b.position == o.position && sameVersions(b.versions, o.versions) &&
		b.first == o.first && b.drawn == o.drawn && b.limit == o.limit && b.streak == o.streak
}
