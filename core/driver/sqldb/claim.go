package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Claims is the claim's work inside its transaction as MySQL and SQLite do
// it alike: the main claim of new rows, partition after partition
// (ClaimNew, the engine's driver.PartitionSteps), and the claim of due
// exceptions (ClaimDue, over driver.ClaimDue and FateOfDue). Both engines
// accept the same statements on these tables, so the Go and the text are
// here; each driver passes what its engine spells differently (locks, index
// hints, times, the compaction head) and keeps what happens around the
// transaction: MySQL's probe, fences, hot partition and batch cache,
// SQLite's reader probe and single writer.
type Claims struct {
	// Leases writes the batch records and the due exceptions' fates.
	Leases Leases
	// Lock follows the reads of cursor rows and due exception rows that
	// the claim then changes (" FOR UPDATE SKIP LOCKED": concurrent
	// claimers pass over each other's; empty under SQLite's one writer).
	Lock string
	// DueIndex follows delivery_exception in the read of due exceptions
	// (MySQL forces its due index, which keeps the read flat however many
	// retries are due later).
	DueIndex string
	// OnePartition follows the log table in the window read of a stream
	// of one partition (MySQL reads it along the primary key).
	OnePartition string
	// EmptyPayload is the literal read instead of the payload of a row at
	// a version the group does not read.
	EmptyPayload string
	// Head is 1 when log row m is claimable: on a compacted stream, only
	// its key's head.
	Head func(driver.StreamConfig) string
	// Readers read log rows (ReadersOf the engine's time encoding).
	Readers RowReaders
	// FirstWindow is the first window of a claim of limit rows
	// (driver.FirstWindow, or driver.MaxClaimWindow where the engine steps
	// rows in the process and a larger window costs nothing).
	FirstWindow func(limit int) int
	// Defer is the statement that writes n deferred rows as DeferRows
	// describes it, DeferChunk rows at most at a time.
	Defer      func(n int) string
	DeferChunk int
}

// Claimed is what a claim transaction collects. A transaction that may run
// again starts each run with Reset.
type Claimed struct {
	driver.ClaimResult
	// Batches are the batch records the main claim wrote.
	Batches []Batch
	// Full is the partition whose new rows filled the claim, or -1.
	Full int
}

// Reset starts o over from res.
func (o *Claimed) Reset(res driver.ClaimResult) {
	o.ClaimResult, o.Batches, o.Full = res, o.Batches[:0], -1
}

// NewRows is what the main claim visits, under a claim p planned as Plan.
type NewRows struct {
	P    driver.ClaimParams
	Plan driver.ClaimPlan
	// NewestException is the group's highest exception id: only rows at
	// or below it can have an exception row (a cursor moved back over
	// them) that the batch must pass over.
	NewestException int64
	// Parts are the partitions to visit, in order. Positions holds the
	// cursors the transaction has locked already, Skipped those another
	// claimer holds; the claim locks the others as it reaches them.
	Parts     []int
	Positions map[int]int64
	Skipped   map[int]bool
	// More, if not nil, names further partitions to visit when Parts
	// leave the limit unmet.
	More func() ([]int, error)
}

// Rotated returns parts starting from a random one, so that claimers
// spread over partitions.
func Rotated(parts []int) []int {
	if len(parts) < 2 {
		return parts
	}
	k := rand.IntN(len(parts))
	return append(parts[k:], parts[:k]...)
}

// LockCursor reads a partition's cursor row of the group, locked with
// c.Lock; ok is false when there is none to take (another claimer holds
// it).
func (c Claims) LockCursor(ctx context.Context, q Querier, p driver.ClaimParams, part int) (pos int64, ok bool, err error) {
	err = q.QueryRowContext(ctx, "SELECT position FROM group_cursor WHERE stream_id = ? AND group_name = ? AND `partition` = ?"+c.Lock,
		p.Stream.ID, p.Group, part).Scan(&pos)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return pos, err == nil, err
}

// ClaimNew is the main claim: new rows from the partitions n names, until
// p.Limit deliveries are in out.
func (c Claims) ClaimNew(ctx context.Context, q Querier, n NewRows, out *Claimed) error {
	parts, more := n.Parts, n.More
	for i := 0; i < len(parts) && len(out.Deliveries) < n.P.Limit; i++ {
		part := parts[i]
		pos, ok := n.Positions[part]
		if !ok && !n.Skipped[part] {
			var err error
			if pos, ok, err = c.LockCursor(ctx, q, n.P, part); err != nil {
				return err
			}
		}
		if !ok {
			continue
		}
		s := &partitionSteps{c: &c, q: q, n: &n, part: part, cursor: pos, out: out}
		if err := s.claim(ctx, n.P.Limit-len(out.Deliveries)); err != nil {
			return err
		}
		if i == len(parts)-1 && more != nil && len(out.Deliveries) < n.P.Limit {
			extra, err := more()
			if err != nil {
				return err
			}
			parts, more = append(parts, extra...), nil
		}
	}
	return nil
}

// partitionSteps is the main claim of one partition, the engine's steps of
// driver.ClaimPartition.
type partitionSteps struct {
	c      *Claims
	q      Querier
	n      *NewRows
	part   int
	cursor int64 // the position of the cursor this transaction holds
	out    *Claimed
	// query reads a window (windowQuery), with its arguments but the last
	// three (partition, cursor, window).
	query string
	args  []any
}

// claim claims up to limit rows of the partition, as one batch. Rows the
// group reads that the member cannot decode become due exceptions for
// members that can; they are counted as deferred. A row the group already
// has an exception for keeps that exception as it is: the claim passes
// over it, and goes on reading to fill the limit.
func (s *partitionSteps) claim(ctx context.Context, limit int) error {
	s.query, s.args = s.windowQuery()
	taken, deferred, err := driver.ClaimPartition(ctx, s, driver.PartitionClaim{Params: s.n.P, Plan: s.n.Plan, Cursor: s.cursor, Limit: limit, FirstWindow: s.c.FirstWindow(limit)})
	if err != nil {
		return err
	}
	s.out.Deliveries = append(s.out.Deliveries, taken...)
	s.out.Deferred += deferred
	if len(taken) == limit {
		s.out.Full = s.part
	}
	return nil
}

// Record implements driver.PartitionSteps: the read passed over the rows
// the group has an exception for, so the batch holds every row taken.
func (s *partitionSteps) Record(ctx context.Context, rows *driver.PartitionScan) ([]driver.Delivery, int, error) {
	p := s.n.P
	deferred, err := DeferRows(ctx, s.q, p, rows.Deferred, s.c.Leases.Time(p.Now), s.c.DeferChunk, s.c.Defer)
	if err != nil {
		return nil, 0, err
	}
	if len(rows.Taken) > 0 {
		b, err := s.c.Leases.InsertBatch(ctx, s.q, p, s.part, rows.Taken)
		if err != nil {
			return nil, 0, err
		}
		s.out.Batches = append(s.out.Batches, b)
	}
	if _, err := s.q.ExecContext(ctx, "UPDATE group_cursor SET position = ? WHERE stream_id = ? AND group_name = ? AND `partition` = ?",
		rows.Cursor, p.Stream.ID, p.Group, s.part); err != nil {
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
func (s *partitionSteps) Pending(ctx context.Context) (bool, error) {
	var pending bool
	p := s.n.P
	err := s.q.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM delivery_exception WHERE stream_id = ? AND group_name = ? AND `partition` = ? AND state IN ('leased', 'delayed'))"+
		" OR EXISTS (SELECT 1 FROM delivery_batch WHERE stream_id = ? AND group_name = ? AND `partition` = ?)",
		p.Stream.ID, p.Group, s.part, p.Stream.ID, p.Group, s.part).Scan(&pending)
	return pending, err
}

// excepting reports whether rows past the cursor may have an exception row:
// only then is each row looked up.
func (s *partitionSteps) excepting() bool { return s.n.NewestException > s.cursor }

// windowQuery is the read of a window of rows past a cursor, and its
// arguments but the last three (partition, cursor, window). Payloads are
// read only for rows at the group's versions: other rows are passed over
// without their payload leaving the database. The read sees committed rows;
// appends commit a partition's ids in increasing order, so it sees a
// gap-free prefix (C5).
func (s *partitionSteps) windowQuery() (string, []any) {
	p := s.n.P
	vf, args := VersionFilter("m.schema_version", s.n.Plan.Versions)
	// The partition is the one the WHERE clause names, whether the group
	// reads the row's version is found from the version read, and every row
	// of a stream that is not compacted is a head: none is a column.
	query := "SELECT m.id, m.schema_version, m.msg_key, m.routing_key, m.compaction_rank, " +
		"CASE WHEN " + vf + " THEN m.payload ELSE " + s.c.EmptyPayload + " END, m.headers, m.produced_at"
	if p.Stream.Compacted {
		query += ", " + s.c.Head(p.Stream)
	}
	if s.excepting() {
		// Whether the group has an exception row for the row (a cursor
		// moved back over it), which the batch must not hold too.
		query += ", m.id <= ? AND EXISTS (SELECT 1 FROM delivery_exception x WHERE x.stream_id = " + strconv.FormatInt(p.Stream.ID, 10) + " AND x.group_name = ? AND x.msg_id = m.id)"
		args = append(args, s.n.NewestException, p.Group)
	}
	index := ""
	if p.Stream.Partitions == 1 {
		index = s.c.OnePartition
	}
	return query + " FROM " + LogTable(p.Stream.ID) + " m" + index + " WHERE m.`partition` = ? AND m.id > ? ORDER BY m.id LIMIT ?", args
}

// ReadWindow implements driver.PartitionSteps.
func (s *partitionSteps) ReadWindow(ctx context.Context, from int64, size int, out *driver.PartitionScan) (int, error) {
	head, excepted := true, false
	var dest []any
	if s.n.P.Stream.Compacted {
		dest = append(dest, &head)
	}
	if s.excepting() {
		dest = append(dest, &excepted)
	}
	rows := s.c.Readers.Window(s.part, dest...)
	out.Expect(size, false) // the rows stream in: how many come back is not known yet
	return ReadWindow(ctx, s.q, s.query, slices.Concat(s.args, []any{s.part, from, size}), out, func(r *sql.Rows) (driver.Row, bool, error) {
		row, err := rows.Read(r)
		return row, s.n.Plan.Reads(row.SchemaVersion) && head && !excepted, err
	})
}

// InsertBatch writes the batch record of the rows a claim took from
// partition part (ascending), and returns it.
func (l Leases) InsertBatch(ctx context.Context, q Querier, p driver.ClaimParams, part int, taken []driver.Delivery) (Batch, error) {
	b := Batch{Group: p.Group, Token: p.Token, Part: part, IDs: make([]int64, len(taken))}
	for i, t := range taken {
		b.IDs[i] = t.ID
	}
	columns, values := "", ""
	args := []any{p.Stream.ID, p.Group, p.Token, part, b.IDs[0], b.IDs[len(b.IDs)-1], EncodeInts(b.IDs)}
	if l.Versions {
		b.Versions = make([]int, len(taken))
		for i, t := range taken {
			b.Versions[i] = t.SchemaVersion
		}
		columns, values = ", versions", ", ?"
		args = append(args, EncodeInts(b.Versions))
	}
	_, err := q.ExecContext(ctx, "INSERT INTO delivery_batch (stream_id, group_name, lease_token, `partition`, first_id, last_id, ids"+columns+", holder, lease_until, created_at)"+
		" VALUES (?, ?, ?, ?, ?, ?, ?"+values+", ?, ?, ?)", append(args, p.Holder, l.Time(p.LeaseUntil), l.Time(p.Now))...)
	return b, err
}
