package postgres

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Batch leases (migration 0007): see "Batch leases" in the package
// documentation.

// maxMaterialize bounds how many expired batches one claim materializes.
const maxMaterialize = 100

// exceptionColumns are the columns a materialized exception row sets.
const exceptionColumns = `stream_id, group_name, msg_id, partition, schema_version, state, attempt, due_at, lease_token, holder, updated_at`

// materializeBatches is a statement that materializes every member of the
// batches of stream streamID that where (a predicate on delivery_batch b,
// with the caller's parameters) selects, locked in order with lock, and
// deletes those batches. The schema version comes from the member's row;
// a member whose row is gone is resolved with its batch.
func materializeBatches(streamID int64, where, order, lock string) string {
	return `WITH b AS (SELECT b.stream_id, b.group_name, b.lease_token, b.partition FROM delivery_batch b WHERE ` + where + `
			ORDER BY ` + order + ` ` + lock + `),
		x AS (DELETE FROM delivery_batch t USING b
			WHERE ` + strings.ReplaceAll(batchKey, "m.", "b.") + `
			RETURNING t.stream_id, t.group_name, t.lease_token, t.partition, t.ids, t.holder, t.lease_until, t.created_at)
		INSERT INTO delivery_exception (` + exceptionColumns + `)
		SELECT x.stream_id, x.group_name, m.id, x.partition, m.schema_version, 'leased', 1, x.lease_until, x.lease_token, x.holder, x.created_at
		FROM x CROSS JOIN LATERAL unnest(x.ids) AS u(id) JOIN ` + logTable(streamID) + ` m ON m.id = u.id
		ON CONFLICT (stream_id, group_name, msg_id) DO NOTHING`
}

// batchExpired: batch b of the group (stream, group) expired by now; the
// probe's, fast check's and materialization's test.
func batchExpired(stream, group, now string) string {
	return `b.stream_id = ` + stream + ` AND b.group_name = ` + group + ` AND b.lease_until <= ` + now
}

// materializeExpired is materializeBatches for a claim: up to maxMaterialize of the
// group's batches whose lease expired by $3, oldest first, skipping those a
// settle holds (it may still ack them). Parameters: stream, group, now.
func materializeExpired(streamID int64) string {
	return materializeBatches(streamID, batchExpired("$1::bigint", "$2::text", "$3::timestamptz"),
		`b.lease_until LIMIT `+strconv.Itoa(maxMaterialize), `FOR UPDATE SKIP LOCKED`)
}

// batchColumns are the columns of delivery_batch, in the order inserts list
// them.
const batchColumns = `stream_id, group_name, lease_token, partition, first_id, last_id, ids, holder, lease_until, created_at`

// batchOrder is the order in which statements lock a group's batches, so
// that settles of the same batches never deadlock each other.
const batchOrder = `b.group_name, b.lease_token, b.partition`

// memberAction says what a settle does with the batch members it names.
type memberAction int

const (
	// settleAck resolves them: they leave their batches.
	settleAck memberAction = iota
	// settleExtend moves the lease of a batch all of whose remaining
	// members it names to $8, and materializes the named members of other
	// batches, for the exception-row statement to extend.
	settleExtend
	// settleMaterialize materializes them, for the exception-row statement
	// to change (Fail, Release).
	settleMaterialize
)

// batchKey joins batch t to m by its primary key. Its columns never change
// (first_id does): a statement's write to a batch that a concurrent settle
// changed after the statement's snapshot finds the batch by them, and
// applies to its current version (a read committed recheck).
const batchKey = `t.stream_id = m.stream_id AND t.group_name = m.group_name AND t.lease_token = m.lease_token AND t.partition = m.partition`

// namedMember is true when member u.id of batch b is one of the leases of
// the settle's leaseSet ($3 to $7): its id is in the sorted list (a binary
// search) with b's token.
const namedMember = `COALESCE(u.id BETWEEN $3::bigint AND $4::bigint AND ($5::bigint[])[width_bucket(u.id, $5::bigint[])] = u.id
	AND ($7::text[])[($6::integer[])[width_bucket(u.id, $5::bigint[])]] = b.lease_token, false)`

// batchSettle wraps stmt, a settle's exception-row statement (an UPDATE or
// DELETE of delivery_exception d ending in leasedPairs and RETURNING
// d.msg_id, with the leaseSet as $1 to $7), into one statement that also
// handles the batch members among the leases, as mode says. It returns
// pairs (id, materialized): the ids changed, and the ids materialized, which
// the exception-row statement (which cannot see rows its own statement
// inserted) must then change in a statement of its own.
//
// The batches holding the tokens named are locked first (FOR UPDATE, in
// batchOrder), so the members read are the current ones: a lock waits for
// a concurrent settle of the same batch and returns the row as it left it,
// and the writes of this statement to a row it locked apply to that version
// (a read committed recheck). With no batch of those tokens the lock reads
// one index range and finds nothing, and stmt runs as it always did: no
// extra round trip.
func batchSettle(streamID int64, mode memberAction, stmt string) string {
	s := `WITH b AS (SELECT b.stream_id, b.group_name, b.lease_token, b.partition, b.ids, b.holder, b.lease_until, b.created_at
			FROM delivery_batch b
			WHERE b.stream_id = $1::bigint AND b.group_name = $2::text AND b.lease_token = ANY($7::text[]) ORDER BY ` + batchOrder + ` FOR UPDATE),
		m AS (SELECT b.stream_id, b.group_name, b.lease_token, b.partition, b.holder, b.lease_until, b.created_at, x.gone, x.kept
			FROM b CROSS JOIN LATERAL (SELECT array_agg(u.id ORDER BY u.id) FILTER (WHERE u.named) AS gone,
					array_agg(u.id ORDER BY u.id) FILTER (WHERE NOT u.named) AS kept
				FROM (SELECT u.id, ` + namedMember + ` AS named FROM unnest(b.ids) AS u(id)) u) x
			WHERE x.gone IS NOT NULL),`
	if mode == settleExtend {
		s += `
		w AS (UPDATE delivery_batch t SET lease_until = $8::timestamptz FROM m WHERE ` + batchKey + ` AND m.kept IS NULL),`
	} else {
		s += `
		w AS (DELETE FROM delivery_batch t USING m WHERE ` + batchKey + ` AND m.kept IS NULL),`
	}
	s += `
		r AS (UPDATE delivery_batch t SET ids = m.kept, first_id = m.kept[1], last_id = m.kept[cardinality(m.kept)] FROM m
			WHERE ` + batchKey + ` AND m.kept IS NOT NULL),`
	materialized := "TRUE"
	if mode == settleExtend {
		materialized = "m.kept IS NOT NULL"
	}
	if mode != settleAck {
		s += `
		i AS (INSERT INTO delivery_exception (` + exceptionColumns + `)
			SELECT m.stream_id, m.group_name, l.id, m.partition, l.schema_version, 'leased', 1, m.lease_until, m.lease_token, m.holder, m.created_at
			FROM m CROSS JOIN LATERAL unnest(m.gone) AS g(id) JOIN ` + logTable(streamID) + ` l ON l.id = g.id
			WHERE ` + materialized + `
			ON CONFLICT (stream_id, group_name, msg_id) DO NOTHING RETURNING msg_id),`
	}
	s += `
		e AS (` + stmt + `)
		SELECT msg_id, false FROM e`
	switch mode {
	case settleAck:
		s += ` UNION ALL SELECT g.id, false FROM m CROSS JOIN LATERAL unnest(m.gone) AS g(id)`
	case settleExtend:
		s += ` UNION ALL SELECT g.id, false FROM m CROSS JOIN LATERAL unnest(m.gone) AS g(id) WHERE m.kept IS NULL
			UNION ALL SELECT msg_id, true FROM i`
	default:
		s += ` UNION ALL SELECT msg_id, true FROM i`
	}
	return s
}

// batchClaim records a main claim's rows of a partition: the leased rows
// ($10 true) become one batch of the claim's token (attempt 1 until the
// lease expires), the deferred ones delayed exceptions (due now at attempt
// 0, with no lease); rows
// the group has an exception for (its cursor was moved back over them) are
// skipped. It returns the ids it leased or deferred. One index probe of the
// exceptions in the rows' id range ($11 to $12) settles the common case,
// where there is none; only otherwise is each row looked up. No batch
// member can be among the rows: members are at or below the cursor.
//
// A claim that passes over such rows reads on and records more rows of the
// partition: they join the batch it wrote there (only they are returned:
// all are above the earlier ones).
const batchClaim = `WITH u AS (SELECT u.id, u.v, u.l FROM unnest($8::bigint[], $9::integer[], $10::boolean[]) AS u(id, v, l)),
	k AS (SELECT u.id, u.v, u.l FROM u
		WHERE NOT EXISTS (SELECT 1 FROM delivery_exception e WHERE e.stream_id = $1::bigint AND e.group_name = $2::text
				AND e.msg_id BETWEEN $11::bigint AND $12::bigint)
			OR NOT EXISTS (SELECT 1 FROM delivery_exception e WHERE e.stream_id = $1::bigint AND e.group_name = $2::text AND e.msg_id = u.id)),
	d AS (INSERT INTO delivery_exception (` + exceptionColumns + `)
		SELECT $1::bigint, $2::text, k.id, $3::integer, k.v, 'delayed', 0, $6::timestamptz, NULL, $7::text, $6::timestamptz FROM k WHERE NOT k.l
		ON CONFLICT (stream_id, group_name, msg_id) DO NOTHING RETURNING msg_id),
	b AS (INSERT INTO delivery_batch AS t (` + batchColumns + `)
		SELECT $1::bigint, $2::text, $5::text, $3::integer, min(k.id), max(k.id), array_agg(k.id ORDER BY k.id), $7::text, $4::timestamptz, $6::timestamptz
		FROM k WHERE k.l HAVING count(*) > 0
		ON CONFLICT (stream_id, group_name, lease_token, partition) DO UPDATE SET ids = t.ids || excluded.ids, last_id = excluded.last_id
		RETURNING t.ids)
	SELECT msg_id FROM d UNION ALL SELECT x.id FROM b CROSS JOIN LATERAL unnest(b.ids) AS x(id) WHERE x.id BETWEEN $11::bigint AND $12::bigint`

// batchAck is Ack's batch part on its own (batchSettle's settleAck without
// the exception-row statement): it only reads and writes delivery_batch by
// the primary key's prefix, so a plan made once for every argument is as
// good as one made for the arguments at hand, and it is prepared once per
// connection (ackPipelined).
var batchAck = func() string {
	s := batchSettle(0, settleAck, "")
	return strings.TrimSuffix(strings.TrimSpace(s[:strings.Index(s, "\n\t\te AS (")]), ",") + `
		SELECT g.id FROM m CROSS JOIN LATERAL unnest(m.gone) AS g(id)`
}()

// batchAcks are the acks of one Ack, or of one claim's acks, that name
// members of batches this driver's claims wrote (driver.BatchMemo): one
// statement per batch, which changes it only while it holds exactly the
// ids the memo expects, and what each did.
type batchAcks struct {
	stream int64
	group  string
	acks   []driver.BatchAck
	hits   []bool
}

// newBatchAcks plans leases' acks from the driver's memory of its claims;
// rest are the leases it does not know as batch members.
func (d *Driver) newBatchAcks(stream int64, group string, leases []driver.Lease) (b *batchAcks, rest []driver.Lease) {
	acks, rest := d.claimed.Plan(stream, group, leases)
	return &batchAcks{stream: stream, group: group, acks: acks, hits: make([]bool, len(acks))}, rest
}

// queue queues the statements (and forgets what an earlier attempt saw):
// each deletes its batch, or leaves what remains in it, when the batch
// holds the ids expected.
func (b *batchAcks) queue(r *roundTrip) {
	clear(b.hits)
	const where = ` WHERE stream_id = $1::bigint AND group_name = $2::text AND lease_token = $3::text AND partition = $4::integer AND ids = $5::bigint[]`
	for i, a := range b.acks {
		read := func(br pgx.BatchResults) error {
			tag, err := br.Exec()
			b.hits[i] = err == nil && tag.RowsAffected() == 1
			return err
		}
		args := []any{b.stream, b.group, a.Token, a.Expected.Partition, int8s(a.Expected.IDs)}
		if left := a.Remaining; len(left) > 0 {
			r.add(read, `UPDATE delivery_batch SET ids = $6::bigint[], first_id = $7::bigint, last_id = $8::bigint`+where,
				append(args, int8s(left), left[0], left[len(left)-1])...)
		} else {
			r.add(read, `DELETE FROM delivery_batch`+where, args...)
		}
	}
}

// missed returns the leases of the batches whose statement did not change
// them, for the locking path.
func (b *batchAcks) missed() (missed []driver.Lease) {
	for i, a := range b.acks {
		if !b.hits[i] {
			missed = append(missed, a.Leases...)
		}
	}
	return missed
}

// unresolved returns, in their order, the leases among missed (of batches
// whose statement changed nothing) or rest (not batch members): those the
// locking path settles, usually none.
func unresolved(leases, missed, rest []driver.Lease) []driver.Lease {
	if len(missed)+len(rest) == 0 {
		return nil
	}
	left := make(map[driver.Lease]bool, len(missed)+len(rest))
	for _, l := range append(missed, rest...) {
		left[l] = true
	}
	return slices.DeleteFunc(slices.Clone(leases), func(l driver.Lease) bool { return !left[l] })
}

// done tells the memo what the statements did, once they are committed
// (or failed, outcome unknown: then the batches are forgotten).
func (b *batchAcks) done(memo *driver.BatchMemo, committed bool) {
	for i, a := range b.acks {
		memo.Settled(b.stream, b.group, a, committed && b.hits[i])
	}
}

// ackBatches runs the batch statements in one round trip, an implicit
// transaction of its own, and returns the leases they did not resolve.
func (d *Driver) ackBatches(ctx context.Context, b *batchAcks) ([]driver.Lease, error) {
	err := d.write(ctx, func(conn *pgxpool.Conn) error {
		r := &roundTrip{}
		b.queue(r)
		br := conn.SendBatch(ctx, &r.Batch)
		return errors.Join(r.read(br), br.Close())
	})
	b.done(&d.claimed, err == nil)
	if err != nil {
		return nil, err
	}
	return b.missed(), nil
}
