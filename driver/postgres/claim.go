package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
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
// until it has Limit deliveries or no unlocked partition has work.
func (d *Driver) Claim(ctx context.Context, p driver.ClaimParams) (driver.ClaimResult, error) {
	if err := d.check(); err != nil {
		return driver.ClaimResult{}, err
	}
	var res driver.ClaimResult
	var due, fresh bool
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
				AND EXISTS (SELECT 1 FROM `+logTable(p.Stream.ID)+` m WHERE m.partition = c.partition AND m.id > c.position))`,
			[]any{ts(p.Now), decodes}, &due, &fresh)
		if err != nil {
			return err
		}
		if _, err := driver.PlanClaim(g, p); err != nil {
			return err
		}
		res.Group = g
		return nil
	})
	if err != nil || p.Limit <= 0 || (!due && !fresh) {
		return res, err
	}
	err = d.claimTx(ctx, func(tx pgx.Tx) error {
		res = driver.ClaimResult{}
		n := int32(p.Stream.Partitions)
		first := int32(rand.IntN(p.Stream.Partitions))
		visited := []int32{}
		var g driver.GroupConfig
		var locked *lockedCursor
		rows := fresh // this attempt's, as the transaction may run again
		if rows {
			// The group is read after the first cursor lock is granted, in
			// a statement of its own (a snapshot taken after the lock): a
			// registration that changed the group and held this lock has
			// committed by then (C19). One round trip for both.
			b := &pgx.Batch{}
			query, args := lockCursor(p, visited, first)
			b.Queue(query, args...)
			queueLoadGroup(b, p.Stream.ID, p.Group)
			br := tx.SendBatch(ctx, b)
			c, ok, err := scanLockedCursor(br.QueryRow())
			if err == nil {
				g, err = scanLoadedGroup(br.QueryRow(), p.Group)
			}
			if err := errors.Join(err, br.Close()); err != nil {
				return err
			}
			if ok {
				locked = &c
			} else {
				rows = false // every partition with rows is being claimed
			}
		} else {
			var err error
			if g, err = loadGroup(ctx, tx, p.Stream.ID, p.Group, ""); err != nil {
				return err
			}
		}
		plan, err := driver.PlanClaim(g, p)
		if err != nil {
			return err
		}
		res.Group = g
		if due {
			if res.Deliveries, err = d.claimExceptions(ctx, tx, p, plan); err != nil {
				return err
			}
		}
		for rows && len(res.Deliveries) < p.Limit && len(visited) < int(n) {
			c := locked
			locked = nil
			if c == nil {
				query, args := lockCursor(p, visited, first)
				next, ok, err := scanLockedCursor(tx.QueryRow(ctx, query, args...))
				if err != nil {
					return err
				}
				if !ok {
					break
				}
				c = &next
			}
			visited = append(visited, c.partition)
			if p.Ordered {
				// Exceptions of a partition are created only under its cursor
				// lock, which this transaction now holds: this read is current.
				var pending bool
				if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM delivery_exception WHERE stream_id = $1::bigint AND group_name = $2::text
					AND partition = $3::integer AND state <> 'dead')`, p.Stream.ID, p.Group, c.partition).Scan(&pending); err != nil {
					return err
				}
				if pending {
					continue
				}
			}
			got, deferred, err := claimPartition(ctx, tx, p, plan, c.partition, c.position, p.Limit-len(res.Deliveries))
			if err != nil {
				return err
			}
			res.Deliveries = append(res.Deliveries, got...)
			res.Deferred += deferred
		}
		return nil
	})
	if err != nil {
		return driver.ClaimResult{}, err
	}
	return res, nil
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

func queueLoadGroup(b *pgx.Batch, streamID int64, name string) {
	b.Queue(`SELECT `+groupColumns+` FROM consumer_group WHERE stream_id = $1::bigint AND name = $2::text`, streamID, name)
}

func scanLoadedGroup(r pgx.Row, name string) (driver.GroupConfig, error) {
	g, _, err := scanGroup(r)
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
func claimPartition(ctx context.Context, tx pgx.Tx, p driver.ClaimParams, plan driver.ClaimPlan, part int32, cursor int64, limit int) ([]driver.Delivery, int, error) {
	vf, vargs := versionFilter("m.schema_version", plan.Versions, 4)
	// Payloads are read only for rows at the group's versions: other rows
	// are passed over without their payload leaving the database.
	query := `SELECT m.id, m.partition, m.schema_version, m.msg_key, m.routing_key, m.compaction_rank,
		CASE WHEN ` + vf + ` THEN m.payload END, m.headers, m.produced_at, ` + vf + `, ` + headExpr(p.Stream) + `
		FROM ` + logTable(p.Stream.ID) + ` m WHERE m.partition = $1::integer AND m.id > $2::bigint ORDER BY m.id LIMIT $3::integer`
	var taken []driver.Delivery
	var deferred []driver.Row
	start, scanned := cursor, 0
	window := min(max(limit, 16), maxWindow)
scan:
	for len(taken) < limit && scanned < maxScan {
		args := append([]any{part, cursor, int32(window)}, vargs...)
		rows, err := tx.Query(ctx, query, args...)
		if err != nil {
			return nil, 0, err
		}
		n := 0
		for rows.Next() {
			var versionOK, head bool
			r, err := scanRow(rows, &versionOK, &head)
			if err != nil {
				rows.Close()
				return nil, 0, err
			}
			n++
			cursor = r.ID
			if !versionOK || !head || !plan.Matches(r.RoutingKey) {
				continue
			}
			if !plan.Decodes(r.SchemaVersion) {
				// The group reads this version, this member cannot decode it:
				// leave it due for a member that can. An ordered group stops
				// here, so that the partition's order holds.
				deferred = append(deferred, r)
				if p.Ordered {
					rows.Close()
					if err := rows.Err(); err != nil {
						return nil, 0, err
					}
					break scan
				}
				continue
			}
			taken = append(taken, driver.Delivery{Row: r, Attempt: 1, LeaseUntil: ts(p.LeaseUntil)})
			if len(taken) == limit {
				break
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, 0, err
		}
		scanned += n
		if n < window {
			break
		}
		window = min(window*2, maxWindow)
	}
	if cursor == start {
		return nil, 0, nil
	}
	b := &pgx.Batch{}
	b.Queue(`UPDATE group_cursor SET position = $1::bigint WHERE stream_id = $2::bigint AND group_name = $3::text AND partition = $4::integer`,
		cursor, p.Stream.ID, p.Group, part)
	if len(taken)+len(deferred) > 0 {
		ids := make([]int64, 0, len(taken)+len(deferred))
		versions := make([]int32, 0, cap(ids))
		leased := make([]bool, 0, cap(ids))
		for _, t := range taken {
			ids, versions, leased = append(ids, t.ID), append(versions, int32(t.SchemaVersion)), append(leased, true)
		}
		for _, r := range deferred {
			ids, versions, leased = append(ids, r.ID), append(versions, int32(r.SchemaVersion)), append(leased, false)
		}
		// Leased rows: attempt 1 until the lease expires. Deferred rows:
		// due now at attempt 0, with no lease.
		b.Queue(`INSERT INTO delivery_exception (stream_id, group_name, msg_id, partition, schema_version, state, attempt, due_at, lease_token, holder, updated_at)
			SELECT $1::bigint, $2::text, u.id, $3::integer, u.v, CASE WHEN u.l THEN 'leased' ELSE 'delayed' END, CASE WHEN u.l THEN 1 ELSE 0 END,
				CASE WHEN u.l THEN $4::timestamptz ELSE $6::timestamptz END, CASE WHEN u.l THEN $5::text END, $7::text, $6::timestamptz
			FROM unnest($8::bigint[], $9::integer[], $10::boolean[]) AS u(id, v, l)`,
			p.Stream.ID, p.Group, part, ts(p.LeaseUntil), p.Token, ts(p.Now), p.Holder, ids, versions, leased)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, 0, err
	}
	return taken, len(deferred), nil
}

// claimExceptions leases due exceptions at the versions the member decodes.
// Candidates are locked with FOR UPDATE SKIP LOCKED, so concurrent claimers
// take different ones.
func (d *Driver) claimExceptions(ctx context.Context, tx pgx.Tx, p driver.ClaimParams, plan driver.ClaimPlan) ([]driver.Delivery, error) {
	if plan.Decodable != nil && len(plan.Decodable) == 0 {
		return nil, nil
	}
	vf, vargs := versionFilter("e.schema_version", plan.Decodable, 5)
	ordered := ""
	if p.Ordered {
		// Only the lowest pending exception of a partition may be handed out.
		ordered = ` AND NOT EXISTS (SELECT 1 FROM delivery_exception e2 WHERE e2.stream_id = e.stream_id AND e2.group_name = e.group_name
			AND e2.partition = e.partition AND e2.state <> 'dead' AND e2.msg_id < e.msg_id)`
	}
	// Superseded or removed rows are resolved and buried ones leave the due
	// set as they are found; look past them until Limit deliveries are
	// leased or nothing due is left.
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
	return out, nil
}

// claimExceptionsPage handles up to limit due exceptions and reports whether
// it found that many candidates.
func claimExceptionsPage(ctx context.Context, tx pgx.Tx, p driver.ClaimParams, vf string, vargs []any, ordered string, limit int) ([]driver.Delivery, bool, error) {
	args := append([]any{p.Stream.ID, p.Group, ts(p.Now), int32(limit)}, vargs...)
	rows, err := tx.Query(ctx, `SELECT `+rowColumns+`, e.msg_id, e.state, e.attempt, m.id IS NOT NULL AND `+headExpr(p.Stream)+`
		FROM delivery_exception e LEFT JOIN `+logTable(p.Stream.ID)+` m ON m.id = e.msg_id
		WHERE e.stream_id = $1::bigint AND e.group_name = $2::text AND e.state <> 'dead' AND e.due_at <= $3::timestamptz AND `+vf+ordered+`
		ORDER BY e.msg_id LIMIT $4::integer FOR UPDATE OF e SKIP LOCKED`, args...)
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
			if len(headers) > 0 {
				if err := json.Unmarshal(headers, &r.Headers); err != nil {
					rows.Close()
					return nil, false, fmt.Errorf("row %d: stored headers: %w", r.ID, err)
				}
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
		b.Queue(`UPDATE delivery_exception SET state = 'dead', lease_token = NULL, last_error = $4::text,
			first_failed_at = COALESCE(first_failed_at, $5::timestamptz), updated_at = $5::timestamptz`+where,
			p.Stream.ID, p.Group, bury, p.LastError, ts(p.Now))
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

// leasedPairs is the predicate naming deliveries leased with their own
// tokens, with a leaseSet as parameters $3 to $7. A row matches when its id
// is in the sorted id list (width_bucket: a binary search) and its token is
// the one listed for that id. The plan is an index range scan whatever the
// planner knows: an (id, token) IN (SELECT * FROM unnest(...)) semi-join
// becomes a nested loop over the array for each row on a table without
// statistics, quadratic in the batch (13s for 10000 leases).
const leasedPairs = ` WHERE d.stream_id = $1::bigint AND d.group_name = $2::text AND d.state = 'leased'
	AND d.msg_id BETWEEN $3::bigint AND $4::bigint
	AND ($5::bigint[])[width_bucket(d.msg_id, $5::bigint[])] = d.msg_id
	AND d.lease_token = ($7::text[])[($6::integer[])[width_bucket(d.msg_id, $5::bigint[])]]`

// leaseIndex is the position of row d's id in the sorted id list $5.
const leaseIndex = `width_bucket(d.msg_id, $5::bigint[])`

// leaseSet is a list of leases as leasedPairs takes them: sorted by id, each
// with the index (from 1) of its token among the distinct tokens. order[i]
// is the input position of the i-th lease in id order.
type leaseSet struct {
	ids    []int64
	tokIdx []int32
	toks   []string
	order  []int
}

func newLeaseSet(leases []driver.Lease) leaseSet {
	s := leaseSet{ids: make([]int64, len(leases)), tokIdx: make([]int32, len(leases)), order: make([]int, len(leases))}
	for i := range leases {
		s.order[i] = i
	}
	slices.SortStableFunc(s.order, func(a, b int) int { return cmp.Compare(leases[a].ID, leases[b].ID) })
	index := map[string]int32{}
	for i, j := range s.order {
		l := leases[j]
		k, ok := index[l.Token]
		if !ok {
			s.toks = append(s.toks, l.Token)
			k = int32(len(s.toks))
			index[l.Token] = k
		}
		s.ids[i], s.tokIdx[i] = l.ID, k
	}
	return s
}

// args returns $1 to $7.
func (s leaseSet) args(streamID int64, group string) []any {
	return []any{streamID, group, s.ids[0], s.ids[len(s.ids)-1], s.ids, s.tokIdx, s.toks}
}

// settle runs stmt (an UPDATE or DELETE of delivery_exception d whose own
// parameters start at $8) over the deliveries leased with their tokens, in
// one autocommit statement, and reports the leases it did not change.
func (d *Driver) settle(ctx context.Context, streamID int64, group string, leases []driver.Lease, stmt string, args ...any) (driver.SettleResult, error) {
	if len(leases) == 0 {
		return driver.SettleResult{}, d.check()
	}
	set := newLeaseSet(leases)
	return d.settleQuery(ctx, leases, stmt+leasedPairs+` RETURNING d.msg_id`, append(set.args(streamID, group), args...))
}

// settleQuery runs an autocommit statement returning the msg_id of each
// delivery it changed.
func (d *Driver) settleQuery(ctx context.Context, leases []driver.Lease, query string, args []any) (driver.SettleResult, error) {
	changed := map[int64]bool{}
	err := d.write(ctx, func(c *pgxpool.Conn) error {
		clear(changed)
		rows, err := c.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return err
			}
			changed[id] = true
		}
		return rows.Err()
	})
	if err != nil {
		return driver.SettleResult{}, err
	}
	return driver.SettleResult{Lost: driver.Lost(leases, changed)}, nil
}

// Ack implements driver.Driver.
func (d *Driver) Ack(ctx context.Context, p driver.AckParams) (driver.SettleResult, error) {
	return d.settle(ctx, p.StreamID, p.Group, p.Leases, `DELETE FROM delivery_exception d`)
}

// Fail implements driver.Driver. Each failure carries its own state, due
// time and error, passed as arrays in the order of the sorted ids, so one
// statement records them all.
func (d *Driver) Fail(ctx context.Context, p driver.FailParams) (driver.SettleResult, error) {
	if len(p.Failures) == 0 {
		return driver.SettleResult{}, d.check()
	}
	n := len(p.Failures)
	leases := make([]driver.Lease, n)
	for i, f := range p.Failures {
		leases[i] = f.Lease
	}
	set := newLeaseSet(leases)
	dead, dues, errIdx := make([]bool, n), make([]time.Time, n), make([]int32, n)
	var errs []string
	index := map[string]int32{}
	for i, j := range set.order {
		f := p.Failures[j]
		dead[i], dues[i] = f.Dead, ts(f.Due)
		if f.Dead {
			dues[i] = ts(p.Now)
		}
		k, ok := index[f.Error]
		if !ok {
			errs = append(errs, f.Error)
			k = int32(len(errs))
			index[f.Error] = k
		}
		errIdx[i] = k
	}
	return d.settleQuery(ctx, leases, `UPDATE delivery_exception d SET
			state = CASE WHEN ($8::boolean[])[`+leaseIndex+`] THEN 'dead' ELSE 'delayed' END,
			due_at = ($9::timestamptz[])[`+leaseIndex+`],
			last_error = ($11::text[])[($10::integer[])[`+leaseIndex+`]],
			lease_token = NULL, first_failed_at = COALESCE(d.first_failed_at, $12::timestamptz), updated_at = $12::timestamptz`+
		leasedPairs+` RETURNING d.msg_id`, append(set.args(p.StreamID, p.Group), dead, dues, errIdx, errs, ts(p.Now)))
}

// Release implements driver.Driver.
func (d *Driver) Release(ctx context.Context, p driver.ReleaseParams) (driver.SettleResult, error) {
	const set = `UPDATE delivery_exception d SET state = 'delayed', due_at = $8::timestamptz, attempt = d.attempt - 1, lease_token = NULL, updated_at = $8::timestamptz`
	if p.ClaimToken == "" {
		return d.settle(ctx, p.StreamID, p.Group, p.Leases, set, ts(p.Now))
	}
	err := d.write(ctx, func(c *pgxpool.Conn) error {
		_, err := c.Exec(ctx, `UPDATE delivery_exception SET state = 'delayed', due_at = $4::timestamptz, attempt = attempt - 1, lease_token = NULL, updated_at = $4::timestamptz
			WHERE stream_id = $1::bigint AND group_name = $2::text AND lease_token = $3::text AND state = 'leased'`,
			p.StreamID, p.Group, p.ClaimToken, ts(p.Now))
		return err
	})
	return driver.SettleResult{}, err
}

// Extend implements driver.Driver.
func (d *Driver) Extend(ctx context.Context, p driver.ExtendParams) (driver.SettleResult, error) {
	return d.settle(ctx, p.StreamID, p.Group, p.Leases, `UPDATE delivery_exception d SET due_at = $8::timestamptz, updated_at = $9::timestamptz`,
		ts(p.Until), ts(p.Now))
}

// ListDead implements driver.Driver.
func (d *Driver) ListDead(ctx context.Context, p driver.ListDeadParams) ([]driver.DeadLetter, error) {
	var out []driver.DeadLetter
	err := d.read(ctx, func() error {
		out = out[:0]
		rows, err := d.pool.Query(ctx, `SELECT `+rowColumns+`, e.attempt, COALESCE(e.last_error, ''), COALESCE(e.first_failed_at, e.updated_at), e.updated_at
			FROM delivery_exception e JOIN `+logTable(p.StreamID)+` m ON m.id = e.msg_id
			WHERE e.stream_id = $1::bigint AND e.group_name = $2::text AND e.state = 'dead' AND e.msg_id > $3::bigint ORDER BY e.msg_id LIMIT $4::integer`,
			p.StreamID, p.Group, p.AfterID, int32(p.Limit))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var dl driver.DeadLetter
			var attempt int32
			if dl.Row, err = scanRow(rows, &attempt, &dl.Error, &dl.FirstFailed, &dl.DiedAt); err != nil {
				return err
			}
			dl.Attempt = int(attempt)
			dl.FirstFailed, dl.DiedAt = dl.FirstFailed.UTC(), dl.DiedAt.UTC()
			out = append(out, dl)
		}
		return rows.Err()
	})
	return out, err
}

// Replay implements driver.Driver.
func (d *Driver) Replay(ctx context.Context, p driver.ReplayParams) (int64, error) {
	return d.onDead(ctx, p.StreamID, p.Group, p.IDs, `UPDATE delivery_exception SET state = 'delayed', attempt = 0, due_at = $4::timestamptz, updated_at = $4::timestamptz`, ts(p.Now))
}

// Discard implements driver.Driver.
func (d *Driver) Discard(ctx context.Context, p driver.DiscardParams) (int64, error) {
	return d.onDead(ctx, p.StreamID, p.Group, p.IDs, `DELETE FROM delivery_exception`)
}

// onDead runs stmt over the group's dead deliveries, all of them when ids is
// nil. stmt's own parameters start at $4.
func (d *Driver) onDead(ctx context.Context, streamID int64, group string, ids []int64, stmt string, args ...any) (int64, error) {
	where := ` WHERE stream_id = $1::bigint AND group_name = $2::text AND state = 'dead' AND ($3::bigint[] IS NULL OR msg_id = ANY($3::bigint[]))`
	var list []int64 // nil: every dead delivery
	if ids != nil {
		list = dedupe(ids)
	}
	all := append([]any{streamID, group, list}, args...)
	var n int64
	err := d.write(ctx, func(c *pgxpool.Conn) error {
		tag, err := c.Exec(ctx, stmt+where, all...)
		n = tag.RowsAffected()
		return err
	})
	return n, err
}
