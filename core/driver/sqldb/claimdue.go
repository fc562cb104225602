package sqldb

import (
	"context"
	"database/sql"
	"slices"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// ClaimDue leases due exceptions at the versions the member decodes, in id
// order (driver.ClaimDue looks again past those it drops). With explode,
// the group's expired batches first become the leased exception rows they
// stand for, which the claim then takes as it takes any expired lease. Due
// exception rows are read with c.Lock, so that concurrent claimers take
// different ones.
func (c Claims) ClaimDue(ctx context.Context, q Querier, p driver.ClaimParams, plan driver.ClaimPlan, explode bool) ([]driver.Delivery, error) {
	if explode {
		if err := c.Leases.ExplodeExpired(ctx, q, p); err != nil {
			return nil, err
		}
	}
	return driver.ClaimDue(p.Limit, func(limit int) ([]driver.Delivery, int, error) {
		return c.claimDuePage(ctx, q, p, plan, limit)
	})
}

// dueException is a due exception row a claim read, with what decides its
// fate.
type dueException struct {
	msgID     int64
	partition int
	state     string
	attempt   int
}

// claimDuePage examines up to limit due exceptions: it leases those still
// claimable and resolves or buries the others (driver.FateOfDue), which it
// counts as dropped.
func (c Claims) claimDuePage(ctx context.Context, q Querier, p driver.ClaimParams, plan driver.ClaimPlan, limit int) ([]driver.Delivery, int, error) {
	due, err := c.lockDue(ctx, q, p, plan, limit)
	if err != nil || len(due) == 0 {
		return nil, 0, err
	}
	ids := make([]int64, len(due))
	for i, e := range due {
		ids[i] = e.msgID
	}
	// The log rows are read apart from the locking read: MariaDB has no
	// FOR UPDATE OF, and log rows must not be locked.
	type logRow struct {
		driver.Row
		head bool
	}
	found := map[int64]logRow{}
	var head bool
	rows := c.Readers.Rows(&head)
	if err := EachRow(ctx, q, `SELECT `+RowColumns+`, `+c.Head(p.Stream)+` FROM `+LogTable(p.Stream.ID)+` m WHERE m.id IN (`+Placeholders(len(ids))+`)`,
		Args(ids), func(r *sql.Rows) error {
			row, err := rows.Read(r)
			found[row.ID] = logRow{row, head}
			return err
		}); err != nil {
		return nil, 0, err
	}
	var f driver.DueFates
	for _, e := range due {
		row, exists := found[e.msgID]
		_ = f.Add(p, e.msgID, driver.ExceptionState(e.state), e.attempt, exists && row.head, func() (driver.Row, error) { return row.Row, nil }, p.LeaseUntil)
	}
	// The expired lease's own attempt and holder go to the history.
	l := c.Leases
	if err := RecordFates(ctx, q, p, &f, DueWrites{Failures: l.Failures, Now: l.Time(p.Now), LeaseUntil: l.Time(p.LeaseUntil)}); err != nil {
		return nil, 0, err
	}
	return f.Leased, f.Dropped(), nil
}

// lockDue reads up to limit due exceptions, locked with c.Lock. For an
// ordered group only the lowest pending exception of each partition
// qualifies.
func (c Claims) lockDue(ctx context.Context, q Querier, p driver.ClaimParams, plan driver.ClaimPlan, limit int) ([]dueException, error) {
	vf, vargs := VersionFilter("schema_version", plan.Decodable)
	now := c.Leases.Time(p.Now)
	var due []dueException
	scan := func(r *sql.Rows) error {
		var e dueException
		err := r.Scan(&e.msgID, &e.partition, &e.state, &e.attempt)
		due = append(due, e)
		return err
	}
	if !p.Ordered {
		// One state at a time, in due order along delivery_exception_due
		// (stream_id, group_name, state, due_at), so that the read stops
		// at the limit, locks no more rows than it returns, and never
		// walks retries that are due later.
		for _, state := range []string{string(driver.StateLeased), string(driver.StateDelayed)} {
			if len(due) >= limit {
				break
			}
			if err := EachRow(ctx, q, "SELECT msg_id, `partition`, state, attempt FROM delivery_exception"+c.DueIndex+" WHERE stream_id = ? AND group_name = ? AND state = ? AND due_at <= ? AND "+vf+
				" ORDER BY due_at LIMIT ?"+c.Lock,
				append(append([]any{p.Stream.ID, p.Group, state, now}, vargs...), limit-len(due)), scan); err != nil {
				return nil, err
			}
		}
		return due, nil
	}
	lowest, err := lowestPending(ctx, q, p, nil)
	if err != nil || len(lowest) == 0 {
		return nil, err
	}
	ids := make([]int64, 0, len(lowest))
	for _, id := range lowest {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if err := EachRow(ctx, q, "SELECT msg_id, `partition`, state, attempt FROM delivery_exception WHERE stream_id = ? AND group_name = ? AND msg_id IN ("+Placeholders(len(ids))+
		") AND state IN ('leased', 'delayed') AND due_at <= ? AND "+vf+" ORDER BY msg_id LIMIT ?"+c.Lock,
		append(append(append([]any{p.Stream.ID, p.Group}, Args(ids)...), now), append(vargs, limit)...), scan); err != nil {
		return nil, err
	}
	if len(due) == 0 || c.Lock == "" {
		// Without locks (one writer) nothing changed since lowestPending.
		return due, nil
	}
	// Re-check under the locks: a replay may have made a lower row pending.
	parts := make([]int, 0, len(due))
	for _, e := range due {
		parts = append(parts, e.partition)
	}
	lowest, err = lowestPending(ctx, q, p, parts)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(due, func(e dueException) bool { return lowest[e.partition] != e.msgID }), nil
}

// lowestPending returns the lowest pending (leased or delayed) exception of
// each partition of the group, at any version, or of the given partitions;
// a batch's lowest member counts as pending too (it is a leased exception
// in compressed form). One statement, so that one snapshot sees a batch or
// the rows materialized from it.
func lowestPending(ctx context.Context, q Querier, p driver.ClaimParams, parts []int) (map[int]int64, error) {
	qe := "SELECT `partition`, msg_id FROM delivery_exception WHERE stream_id = ? AND group_name = ? AND state IN ('leased', 'delayed')"
	qb := "SELECT `partition`, first_id FROM delivery_batch WHERE stream_id = ? AND group_name = ?"
	args := []any{p.Stream.ID, p.Group}
	var pargs []any
	if parts != nil {
		in := " AND `partition` IN (" + Placeholders(len(parts)) + ")"
		qe, qb, pargs = qe+in, qb+in, Args(parts)
	}
	args = append(append(args, pargs...), p.Stream.ID, p.Group)
	args = append(args, pargs...)
	return Map[int, int64](ctx, q, "SELECT `partition`, MIN(msg_id) FROM ("+qe+" UNION ALL "+qb+") x GROUP BY `partition`", args...)
}
