package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// A claim of the backlog in one round trip (claimFast).
//
// A claim that takes its Limit from one partition reads, before its COMMIT,
// the window of rows past where it leaves that cursor (a window): the next
// claim of the group already knows the rows it will take, if nothing
// changed. That claim then sends its whole transaction at once: BEGIN, the
// cursor's lock at that position, a check that nothing changed, the
// cursor's move and the record of the rows (queueRecord, as the main claim
// writes them), the next window, and COMMIT. The check fails the statement
// (a division by zero, guardFailed) when anything it assumed does not hold;
// the server then skips the rest of the pipeline, COMMIT too, and the claim
// rolls back and runs as it otherwise would.
//
// Why the rows read in an earlier transaction are still the ones to take:
//   - The cursor is locked at the position the window follows, by this
//     transaction (FOR UPDATE SKIP LOCKED: a claimer holding it makes the
//     check fail instead of waiting), so no other claim takes them.
//   - Ids commit in order within a partition (C5): no row can appear
//     between rows the window read, so the rows past the cursor up to the
//     window's last are exactly those it holds, unless some were removed
//     (retention, or any deletion). The check counts them.
//   - The log's rows never change. Compacted streams, whose rows stop
//     being claimable when a newer row of their key arrives, take no fast
//     path, nor do ordered groups.
//   - The group is read in the check, a statement that starts after the
//     lock is granted: a registration that changed it and held the lock has
//     committed by then (C19). The check compares it with the group the
//     window's claim read (groupPrint); the member's plan comes from it.
//   - Due exceptions and expired batches are claimed first by the main
//     claim: the check fails when there is any.
//
// The partition is the one the claim would lock first anyway: each claim
// draws where the next one starts (busyState.first), and reads the window
// only when that is the partition it leaves, so consumers spread over
// partitions as before. It reads one only when the next claim may take it
// whole (its Limit fits one window and is the Limit of the claim before),
// and not for a claim carrying acks (AckAndClaim runs as before).

// groupPrint sums up the columns of group g that a claim's plan depends
// on, and its creation time (a group deleted and created again differs).
const groupPrint = `md5(jsonb_build_array(g.schema_version, g.all_versions, g.bindings, g.converts_from, g.start_position,
	extract(epoch FROM g.created_at), extract(epoch FROM g.paused_at))::text)`

// guardFailed is the error a fast claim's check raises.
const guardFailed = "22012" // division_by_zero

// fastLock locks the cursor ($1 stream, $2 group, $3 partition) if no one
// holds it and it is at $4; otherwise it fails.
const fastLock = `SELECT 1 / count(*)::integer FROM (SELECT 1 FROM group_cursor
	WHERE stream_id = $1::bigint AND group_name = $2::text AND partition = $3::integer AND position = $4::bigint FOR UPDATE SKIP LOCKED) c`

// fastCheck reads the group, and fails unless its print is $3, the
// stream's generation is $9 (it was not altered), no exception is due and
// no batch expired at $4, and the rows of partition $5 past $6 up to $7
// are $8 rows.
func fastCheck(streamID int64) string {
	return `SELECT ` + groupColumnsOf("g") + `, 1 / CASE WHEN ` + groupPrint + ` = $3::text
		AND NOT EXISTS (SELECT 1 FROM delivery_exception e WHERE ` + exceptionDue("$1::bigint", "$2::text", "$4::timestamptz") + `)
		AND NOT EXISTS (SELECT 1 FROM delivery_batch b WHERE ` + batchExpired("$1::bigint", "$2::text", "$4::timestamptz") + `)
		AND (SELECT count(*) FROM ` + logTable(streamID) + ` m WHERE m.partition = $5::integer AND m.id > $6::bigint AND m.id <= $7::bigint) = $8::bigint
		AND (SELECT generation FROM stream_config WHERE id = $1::bigint) = $9::bigint
		THEN 1 ELSE 0 END
	FROM (VALUES (1)) AS v(one) LEFT JOIN consumer_group g ON g.stream_id = $1::bigint AND g.name = $2::text`
}

// fastBatch is the fast claim's record of a window it leases whole as one
// batch (no row deferred): the cursor's move and the batch's insert in one
// statement, the common case of batchClaim without its row-by-row
// machinery. Rows the group has exceptions for (a cursor moved back over
// them) fail the check as anything else that changed does: the usual claim
// then skips them. $1 stream, $2 group, $3 partition, $4 lease until, $5
// token, $6 now, $7 holder, $8 the ids (sorted), $9 the new cursor, $10
// and $11 the first and last id.
const fastBatch = `WITH c AS (UPDATE group_cursor SET position = $9::bigint
		WHERE stream_id = $1::bigint AND group_name = $2::text AND partition = $3::integer)
	INSERT INTO delivery_batch AS t (` + batchColumns + `)
	SELECT $1::bigint, $2::text, $5::text, $3::integer, $10::bigint, $11::bigint, $8::bigint[], $7::text, $4::timestamptz, $6::timestamptz
	WHERE 1 / (NOT EXISTS (SELECT 1 FROM delivery_exception e WHERE e.stream_id = $1::bigint AND e.group_name = $2::text
		AND e.msg_id BETWEEN $10::bigint AND $11::bigint))::integer = 1
	ON CONFLICT (stream_id, group_name, lease_token, partition) DO UPDATE SET ids = t.ids || excluded.ids, last_id = excluded.last_id`

// queueFastBatch queues fastBatch for the rows s took; its reader sets
// *ids to the ids leased, all of them.
func queueFastBatch(r *roundTrip, p driver.ClaimParams, part int32, s *driver.PartitionScan, ids *[]int64) {
	leased := make([]int64, len(s.Taken))
	for i, t := range s.Taken {
		leased[i] = t.ID
	}
	slices.Sort(leased)
	r.add(func(br pgx.BatchResults) error {
		tag, err := br.Exec()
		if err == nil && tag.RowsAffected() != 1 {
			err = fmt.Errorf("postgres: fast claim: the batch insert wrote %d rows, want 1", tag.RowsAffected())
		}
		*ids = leased
		return err
	}, fastBatch, p.Stream.ID, p.Group, part, ts(p.LeaseUntil), p.Token, ts(p.Now), p.Holder, int8s(leased), s.Cursor, leased[0], leased[len(leased)-1])
}

// errNotFast ends a fast claim before it sent anything: the window does
// not fill the claim.
var errNotFast = errors.New("postgres: not a fast claim")

// claimFast claims the rows of window w in one round trip, if nothing
// changed since w was read: the usual claim's partition steps over w, with
// the cursor's lock and the check (queueFast) in place of the first round
// trip, sent with the record. ok false: it claimed nothing, and the claim
// runs as usual.
func (d *Driver) claimFast(ctx context.Context, p driver.ClaimParams, s claimSetup, w *window) (_ claimOutcome, ok bool, err error) {
	plan, err := driver.PlanClaim(w.group, p)
	if err != nil || !sameVersions(plan.Versions, w.versions) {
		return claimOutcome{}, false, nil
	}
	u := &usualClaim{}
	err = d.claimTx(ctx, func(t *claimTxn) error {
		*u = usualClaim{p: p, s: s, g: w.group, gprint: w.print, rows: true, locked: &lockedCursor{w.partition, w.from}, ahead: w,
			plan: plan, visited: []int32{}, out: claimOutcome{wrote: map[int32][]int64{}}, fast: w}
		err := u.claimPartitions(ctx, t)
		var pe *pgconn.PgError
		if errors.Is(err, errNotFast) || errors.As(err, &pe) && pe.Code == guardFailed {
			t.rollback(ctx) // not sent, or something changed: the claim runs as usual
			return nil
		}
		ok = err == nil
		return err
	})
	return u.out, ok, err
}

// queueFast queues the fast claim's first statements: the lock of the
// cursor at the position window w follows, and the check that nothing
// changed since w was read, which reads the group.
func (u *usualClaim) queueFast(r *roundTrip, w *window, scan *driver.PartitionScan) {
	p := u.p
	var one int32
	r.add(func(br pgx.BatchResults) error { return br.QueryRow().Scan(&one) }, fastLock, p.Stream.ID, p.Group, w.partition, w.from)
	r.add(func(br pgx.BatchResults) (err error) {
		u.out.res.Group, err = scanLoadedGroup(br.QueryRow(), p.Group, &one)
		if n := u.out.next; n != nil {
			n.group = u.out.res.Group
		}
		return err
	}, fastCheck(p.Stream.ID), p.Stream.ID, p.Group, w.print, ts(p.Now), w.partition, w.from, scan.Cursor, int64(scan.Scanned), p.Stream.Generation)
}
