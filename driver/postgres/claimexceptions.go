package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// exceptionDue: exception e of the group (stream, group) is due by now and
// not dead; the probe's, first round trip's, fast check's and claim's test.
func exceptionDue(stream, group, now string) string {
	return `e.stream_id = ` + stream + ` AND e.group_name = ` + group + ` AND e.state <> 'dead' AND e.due_at <= ` + now
}

// claimExceptions leases due exceptions at the versions the member decodes.
// Candidates are locked with FOR UPDATE SKIP LOCKED, so concurrent claimers
// take different ones.
func claimExceptions(ctx context.Context, tx querier, p driver.ClaimParams, plan driver.ClaimPlan) ([]driver.Delivery, error) {
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
	return driver.ClaimDue(p.Limit, func(limit int) ([]driver.Delivery, int, error) {
		return claimExceptionsPage(ctx, tx, p, vf, vargs, ordered, limit)
	})
}

// claimExceptionsPage handles up to limit due exceptions (driver.FateOfDue)
// and returns what it leased and, when it found that many candidates, how
// many it resolved or buried: then more may be due past them.
func claimExceptionsPage(ctx context.Context, tx querier, p driver.ClaimParams, vf string, vargs []any, ordered string, limit int) ([]driver.Delivery, int, error) {
	args := append([]any{p.Stream.ID, p.Group, ts(p.Now), int32(limit)}, vargs...)
	var f driver.DueFates
	err := eachRow(ctx, tx, `SELECT `+rowColumns+`, e.msg_id, e.state, e.attempt, m.id IS NOT NULL AND `+rowIsHead(p.Stream)+`
		FROM delivery_exception e LEFT JOIN `+logTable(p.Stream.ID)+` m ON m.id = e.msg_id
		WHERE `+exceptionDue("$1::bigint", "$2::text", "$3::timestamptz")+` AND `+vf+ordered+`
		ORDER BY e.due_at LIMIT $4::integer FOR UPDATE OF e SKIP LOCKED`, args, func(rows pgx.Rows) error {
		var o optionalRow
		var msgID int64
		var state string
		var attempt int32
		var claimable bool
		if err := rows.Scan(append(o.dest(), &msgID, &state, &attempt, &claimable)...); err != nil {
			return err
		}
		return f.Add(p, msgID, driver.ExceptionState(state), int(attempt), claimable, o.row, ts(p.LeaseUntil))
	})
	if err != nil {
		return nil, 0, err
	}
	b := &pgx.Batch{}
	where := ` WHERE stream_id = $1::bigint AND group_name = $2::text AND msg_id = ANY($3::bigint[])`
	if len(f.Resolve) > 0 {
		b.Queue(`DELETE FROM delivery_exception`+where, p.Stream.ID, p.Group, f.Resolve)
	}
	if len(f.Bury) > 0 {
		// The expired lease's attempt and holder go to the failure history.
		b.Queue(`UPDATE delivery_exception e SET state = 'dead', lease_token = NULL, last_error = $4::text,
			failures = `+appendFailure("e", `$6::text`, `$7::text`)+`,
			first_failed_at = COALESCE(first_failed_at, $5::timestamptz), updated_at = $5::timestamptz`+where,
			p.Stream.ID, p.Group, f.Bury, storableText(p.LastError), ts(p.Now), historyError(p.LastError), driver.HistoryTime(p.Now))
	}
	if len(f.Lease) > 0 {
		b.Queue(`UPDATE delivery_exception SET state = 'leased', attempt = attempt + 1, due_at = $4::timestamptz, lease_token = $5::text,
			holder = $6::text, updated_at = $7::timestamptz`+where, p.Stream.ID, p.Group, f.Lease, ts(p.LeaseUntil), p.Token, p.Holder, ts(p.Now))
	}
	if b.Len() > 0 {
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return nil, 0, err
		}
	}
	if f.Examined() < limit {
		return f.Leased, 0, nil // nothing more is due
	}
	return f.Leased, f.Dropped(), nil
}
