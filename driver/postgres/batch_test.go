package postgres_test

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/postgres"
)

// batch is a delivery_batch row.
type batch struct {
	token       string
	first, last int64
	ids         []int64
	holder      string
	leaseUntil  time.Time
}

func (f *fixture) batches(group string) []batch {
	f.t.Helper()
	rows, err := f.drv.Pool().Query(tctx(f.t), `SELECT lease_token, first_id, last_id, ids, COALESCE(holder, ''), lease_until FROM delivery_batch
		WHERE stream_id = $1 AND group_name = $2 ORDER BY first_id`, f.stream.ID, group)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	var out []batch
	for rows.Next() {
		var b batch
		if err := rows.Scan(&b.token, &b.first, &b.last, &b.ids, &b.holder, &b.leaseUntil); err != nil {
			f.t.Fatal(err)
		}
		b.leaseUntil = b.leaseUntil.UTC()
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		f.t.Fatal(err)
	}
	return out
}

func (f *fixture) count(query string) int64 {
	f.t.Helper()
	var n int64
	if err := f.drv.Pool().QueryRow(tctx(f.t), query).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// An extension of some of a batch's members materializes them, as leased
// rows with the new expiry; the others keep the batch's lease (and expire
// with it), and the batch's first_id and last_id follow its members.
func TestBatchLeasesPartialExtend(t *testing.T) {
	eachMode(t, func(t *testing.T, opts ...postgres.Option) {
		f := newFixture(t, 1, opts...)
		f.group("g", driver.GroupConfig{})
		all := f.appendN(0, 10)
		_, ls := f.claimAll("g", 10, time.Minute)
		tok := ls[0].Token
		until := f.now.Add(time.Minute).Truncate(time.Microsecond)
		if bs := f.batches("g"); len(bs) != 1 || !slices.Equal(bs[0].ids, all) || bs[0].first != all[0] || bs[0].last != all[9] ||
			bs[0].holder != "h" || !bs[0].leaseUntil.Equal(until) {
			t.Fatalf("after the claim: %+v", bs)
		}
		later := f.now.Add(time.Hour).Truncate(time.Microsecond)
		extend := func(ls []driver.Lease) {
			t.Helper()
			got, err := f.drv.Extend(tctx(t), driver.ExtendParams{StreamID: f.stream.ID, Group: "g", Leases: ls, Until: later, Now: f.now})
			if err != nil || len(got.Lost) != 0 {
				t.Fatalf("extend: lost %v, %v", got.Lost, err)
			}
		}
		extend(ls[:3])
		extend([]driver.Lease{ls[5], ls[7]})
		want := []batch{{tok, all[3], all[9], []int64{all[3], all[4], all[6], all[8], all[9]}, "h", until}}
		if got := f.batches("g"); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("after two partial extensions:\n%+v\nwant\n%+v", got, want)
		}
		for _, id := range []int64{all[0], all[1], all[2], all[5], all[7]} {
			var state, token string
			var attempt int32
			var due time.Time
			if err := f.drv.Pool().QueryRow(tctx(t), `SELECT state, attempt, lease_token, due_at FROM delivery_exception WHERE msg_id = $1`, id).
				Scan(&state, &attempt, &token, &due); err != nil || state != "leased" || attempt != 1 || token != tok || !due.Equal(later) {
				t.Errorf("extended row %d: %s attempt %d token %q due %v, %v; want leased at attempt 1 until %v", id, state, attempt, token, due, err, later)
			}
		}
		// Past the first lease, a claim takes the members not extended, at
		// their second attempt.
		again, tok2 := f.claim("g", "h2", 10, f.now.Add(2*time.Minute), time.Minute)
		if want := []int64{all[3], all[4], all[6], all[8], all[9]}; !slices.Equal(ids(again.Deliveries), want) {
			t.Fatalf("after the first lease expired a claim took %v; want %v", ids(again.Deliveries), want)
		}
		for _, d := range again.Deliveries {
			if d.Attempt != 2 {
				t.Errorf("row %d at attempt %d; want 2", d.ID, d.Attempt)
			}
		}
		// The old holder still has what it extended, and lost the rest.
		ack, err := f.drv.Ack(tctx(t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Leases: ls, Now: f.now})
		if want := []int64{all[3], all[4], all[6], all[8], all[9]}; err != nil || !slices.Equal(ack.Lost, want) {
			t.Fatalf("the first holder's ack: lost %v, %v; want %v", ack.Lost, err, want)
		}
		if ack, err := f.drv.Ack(tctx(t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Leases: leases(again.Deliveries, tok2), Now: f.now}); err != nil || len(ack.Lost) != 0 {
			t.Fatalf("the second holder's ack: lost %v, %v", ack.Lost, err)
		}
		if n := f.count(`SELECT count(*) FROM delivery_exception`) + f.count(`SELECT count(*) FROM delivery_batch`); n != 0 {
			t.Errorf("%d exception rows and batches left after every ack", n)
		}
	})
}

// Settles of one batch running at once each see the batch as the others
// left it (the batch is locked, then written at its current version):
// none loses a lease, and no member is left behind or settled twice.
func TestBatchLeasesConcurrentSettles(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1)
	f.group("g", driver.GroupConfig{})
	const n, acks, fails, each = 200, 15, 5, 10 // (acks + fails) * each = n
	for round := range 3 {
		f.appendN(0, n)
		res, tok := f.claim("g", "h", n, f.now, time.Hour)
		if len(res.Deliveries) != n {
			t.Fatalf("claimed %d of %d", len(res.Deliveries), n)
		}
		ls := leases(res.Deliveries, tok)
		// Spread each settle over the batch, so that all of them write
		// first_id and last_id.
		part := func(k int) []driver.Lease {
			var out []driver.Lease
			for i := k; i < n; i += n / each {
				out = append(out, ls[i])
			}
			return out
		}
		var wg sync.WaitGroup
		errs := make(chan error, 2*(acks+fails))
		for k := range acks + fails {
			wg.Go(func() {
				var got driver.SettleResult
				var err error
				if k < acks {
					got, err = f.drv.Ack(tctx(t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Leases: part(k), Now: f.now})
				} else {
					var fs []driver.Failure
					for _, l := range part(k) {
						fs = append(fs, driver.Failure{Lease: l, Error: "boom", Due: f.now.Add(time.Hour)})
					}
					got, err = f.drv.Fail(tctx(t), driver.FailParams{StreamID: f.stream.ID, Group: "g", Failures: fs, Now: f.now})
				}
				if err == nil && len(got.Lost) != 0 {
					err = fmt.Errorf("settle %d lost %v", k, got.Lost)
				}
				errs <- err
			})
		}
		// Extensions of the whole claim meanwhile lose only what was
		// settled before them.
		for range 5 {
			wg.Go(func() {
				_, err := f.drv.Extend(tctx(t), driver.ExtendParams{StreamID: f.stream.ID, Group: "g", Leases: ls, Until: f.now.Add(2 * time.Hour), Now: f.now})
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("round %d: %v", round, err)
			}
		}
		if bs := f.batches("g"); len(bs) != 0 {
			t.Errorf("round %d: batches left: %+v", round, bs)
		}
		if got := f.count(`SELECT count(*) FROM delivery_exception WHERE state = 'delayed'`); got != fails*each {
			t.Errorf("round %d: %d failed rows; want %d", round, got, fails*each)
		}
		if got := f.count(`SELECT count(*) FROM delivery_exception`); got != fails*each {
			t.Errorf("round %d: %d exception rows; want only the %d failed", round, got, fails*each)
		}
		if _, err := f.drv.Pool().Exec(tctx(t), `DELETE FROM delivery_exception`); err != nil {
			t.Fatal(err)
		}
	}
}

// Going back over migration 0007 turns every batch into the leased
// exception rows it stands for: the holder settles them as rows after
// migrating up again.
func TestBatchLeasesDown(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2)
	f.group("g", driver.GroupConfig{})
	f.appendN(0, 5)
	f.appendN(1, 5)
	res, ls := f.claimAll("g", 10, time.Minute)
	tok := ls[0].Token
	if got, err := f.drv.Ack(tctx(t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Leases: ls[:3], Now: f.now}); err != nil || len(got.Lost) != 0 {
		t.Fatalf("ack: lost %v, %v", got.Lost, err)
	}
	if bs := f.batches("g"); len(bs) != 2 {
		t.Fatalf("batches of a claim over two partitions: %+v", bs)
	}
	downTo(t, f.drv, 7)
	until := f.now.Add(time.Minute).Truncate(time.Microsecond)
	for _, d := range res.Deliveries[3:] {
		var state, token, holder string
		var attempt int32
		var due time.Time
		var part, version int32
		if err := f.drv.Pool().QueryRow(tctx(t), `SELECT state, attempt, lease_token, holder, due_at, partition, schema_version FROM delivery_exception
			WHERE stream_id = $1 AND group_name = 'g' AND msg_id = $2`, f.stream.ID, d.ID).Scan(&state, &attempt, &token, &holder, &due, &part, &version); err != nil {
			t.Fatalf("row %d after 0007 down: %v", d.ID, err)
		}
		if state != "leased" || attempt != 1 || token != tok || holder != "h" || !due.Equal(until) || int(part) != d.Partition || version != 1 {
			t.Errorf("row %d after 0007 down: %s attempt %d token %q holder %q due %v partition %d version %d", d.ID, state, attempt, token, holder, due, part, version)
		}
	}
	if n := f.count(`SELECT count(*) FROM delivery_exception`); n != 7 {
		t.Errorf("%d exception rows after 0007 down; want 7", n)
	}
	if err := f.drv.ApplyMigration(tctx(t), driver.ApplyMigrationParams{Version: 7}); err != nil {
		t.Fatal(err)
	}
	got, err := f.drv.Ack(tctx(t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Leases: ls, Now: f.now})
	if want := ids(res.Deliveries[:3]); err != nil || !slices.Equal(got.Lost, want) {
		t.Fatalf("ack after 0007 down and up: lost %v, %v; want the 3 acked before, %v", got.Lost, err, want)
	}
	if n := f.count(`SELECT count(*) FROM delivery_exception`); n != 0 {
		t.Errorf("%d exception rows after the acks", n)
	}
}

// A claim right after one that took its Limit skips the probe: it still
// takes expired leases (materializing their batches) and due retries before
// new rows, and still finds a deleted group gone.
func TestClaimAfterFullClaim(t *testing.T) {
	eachMode(t, func(t *testing.T, opts ...postgres.Option) {
		f := newFixture(t, 1, opts...)
		f.group("g", driver.GroupConfig{})
		all := f.appendN(0, 30)
		first, tok := f.claim("g", "h", 10, f.now, time.Minute)
		if !slices.Equal(ids(first.Deliveries), all[:10]) {
			t.Fatalf("first claim: %v", ids(first.Deliveries))
		}
		// One of them fails, due at once; the others' lease runs out.
		fail := []driver.Failure{{Lease: driver.Lease{ID: all[0], Token: tok}, Error: "boom", Due: f.now}}
		if got, err := f.drv.Fail(tctx(t), driver.FailParams{StreamID: f.stream.ID, Group: "g", Failures: fail, Now: f.now}); err != nil || len(got.Lost) != 0 {
			t.Fatalf("fail: lost %v, %v", got.Lost, err)
		}
		later := f.now.Add(2 * time.Minute)
		again, _ := f.claim("g", "h", 10, later, time.Minute)
		if !slices.Equal(ids(again.Deliveries), all[:10]) {
			t.Fatalf("the claim after a full one at expiry took %v; want the expired and failed rows %v", ids(again.Deliveries), all[:10])
		}
		for _, d := range again.Deliveries {
			if d.Attempt != 2 {
				t.Errorf("row %d at attempt %d; want 2", d.ID, d.Attempt)
			}
		}
		next, _ := f.claim("g", "h", 10, later, time.Minute)
		if !slices.Equal(ids(next.Deliveries), all[10:20]) {
			t.Fatalf("the next claim took %v; want %v", ids(next.Deliveries), all[10:20])
		}
		if err := f.drv.DeleteGroup(tctx(t), driver.DeleteGroupParams{StreamID: f.stream.ID, Group: "g"}); err != nil {
			t.Fatal(err)
		}
		if n := f.count(`SELECT count(*) FROM delivery_batch`) + f.count(`SELECT count(*) FROM delivery_exception`); n != 0 {
			t.Errorf("%d batches and exception rows left after DeleteGroup", n)
		}
		_, err := f.drv.Claim(tctx(t), driver.ClaimParams{Stream: f.stream, Group: "g", Member: driver.Member{SchemaVersion: 1}, Limit: 10, Token: "t",
			Holder: "h", Now: later, LeaseUntil: later.Add(time.Minute)})
		if !errors.Is(err, driver.ErrGroupNotFound) {
			t.Errorf("a claim after a full one of a deleted group: %v; want ErrGroupNotFound", err)
		}
	})
}

// An Ack naming exactly the members of a claim's batch deletes the batch in
// one statement, comparing its ids; a batch changed since the claim (some
// members settled, materialized or re-claimed elsewhere) does not compare
// equal, and the Ack settles what is still held, naming the rest lost.
func TestBatchLeasesWholeAck(t *testing.T) {
	t.Parallel()
	for _, tc := range batchChanges(time.Minute) {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 1)
			other := postgres.Open(f.ns)
			t.Cleanup(func() { _ = other.Close() })
			f.group("g", driver.GroupConfig{})
			f.appendN(0, 10)
			_, ls := f.claimAll("g", 10, time.Minute)
			lost, rows := tc.before(f, other, ls)
			got, err := f.drv.Ack(tctx(t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Leases: ls, Now: f.now})
			if err != nil || !slices.Equal(got.Lost, lost) {
				t.Fatalf("ack of the whole claim: lost %v, %v; want %v", got.Lost, err, lost)
			}
			if bs := f.batches("g"); len(bs) != 0 {
				t.Errorf("batches left: %+v", bs)
			}
			if n := f.count(`SELECT count(*) FROM delivery_exception`); n != rows {
				t.Errorf("%d exception rows left; want %d", n, rows)
			}
		})
	}
}

// A claim acked in parts, as Run acks what its handlers finish, here a
// claim of two partitions: each Ack is one round trip of one statement per
// batch it names, which compares the batch's ids with those the driver
// expects after its earlier parts, and the last parts delete the batches. A
// batch changed since the claim (batchChanges) does not compare equal, and
// the acks settle what is still held, naming the rest lost.
func TestBatchLeasesAckInParts(t *testing.T) {
	t.Parallel()
	for _, tc := range batchChanges(time.Minute) {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr := &sentTracer{}
			// Without wake-ups: a trailing NOTIFY of the appends would be traced too.
			f := newFixture(t, 2, postgres.WithoutNotify(), postgres.WithPoolConfig(func(c *pgxpool.Config) { c.ConnConfig.Tracer = tr }))
			other := postgres.Open(f.ns)
			t.Cleanup(func() { _ = other.Close() })
			f.group("g", driver.GroupConfig{})
			partition := map[int64]int{}
			for part := range 2 {
				for _, id := range f.appendN(part, 5) {
					partition[id] = part
				}
			}
			_, ls := f.claimAll("g", 10, time.Minute)
			slices.SortFunc(ls, func(a, b driver.Lease) int { return cmp.Compare(a.ID, b.ID) }) // ls[:5] in partition 0
			lost, rows := tc.before(f, other, ls)
			tr.take()
			var gotLost []int64
			for _, part := range [][]driver.Lease{{ls[0], ls[5]}, {ls[1], ls[2], ls[3], ls[6], ls[7]}, {ls[4], ls[8], ls[9]}} {
				got, err := f.drv.Ack(tctx(t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Leases: part, Now: f.now})
				if err != nil {
					t.Fatal(err)
				}
				gotLost = append(gotLost, got.Lost...)
				sent := tr.take()
				if tc.name != "unchanged" {
					continue
				}
				named := map[int]bool{}
				for _, l := range part {
					named[partition[l.ID]] = true
				}
				if len(sent) != 1 || len(sent[0]) != len(named) {
					t.Fatalf("an ack of %d leases in %d partitions sent %q; want one round trip of a statement per batch", len(part), len(named), sent)
				}
				for _, stmt := range sent[0] {
					if !strings.HasPrefix(stmt, "UPDATE delivery_batch SET ids") && !strings.HasPrefix(stmt, "DELETE FROM delivery_batch WHERE") {
						t.Errorf("an ack of batch members sent %q", stmt)
					}
				}
			}
			slices.Sort(gotLost)
			slices.Sort(lost)
			if !slices.Equal(gotLost, lost) {
				t.Errorf("lost %v; want %v", gotLost, lost)
			}
			if bs := f.batches("g"); len(bs) != 0 {
				t.Errorf("batches left: %+v", bs)
			}
			if n := f.count(`SELECT count(*) FROM delivery_exception`); n != rows {
				t.Errorf("%d exception rows left; want %d", n, rows)
			}
		})
	}
}

// An Ack of a whole claim in the caller's transaction is undone with it. It
// first materialized the batch in a statement of its own (the caller's
// transaction must not hold the batch's lock: issue 25), so the claim's
// deliveries stay leased with its token as exception rows, and a later Ack
// settles them.
func TestBatchLeasesWholeAckRolledBack(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1)
	f.group("g", driver.GroupConfig{})
	all := f.appendN(0, 10)
	res, tok := f.claim("g", "h", 10, f.now, time.Minute)
	ls := leases(res.Deliveries, tok)
	tx, err := f.drv.Pool().Begin(tctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := f.drv.Ack(tctx(t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Leases: ls, Now: f.now, Tx: postgres.Tx(tx)}); err != nil || len(got.Lost) != 0 {
		t.Fatalf("ack in the transaction: lost %v, %v", got.Lost, err)
	}
	if err := tx.Rollback(tctx(t)); err != nil {
		t.Fatal(err)
	}
	if bs := f.batches("g"); len(bs) != 0 {
		t.Fatalf("after the rollback: batches %+v; want the claim materialized", bs)
	}
	for _, id := range all {
		if state, attempt, token := f.exception("g", id); state != "leased" || attempt != 1 || token != tok {
			t.Fatalf("after the rollback, row %d is %s at attempt %d with token %q; want leased at attempt 1 with the claim's", id, state, attempt, token)
		}
	}
	if got, err := f.drv.Ack(tctx(t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Leases: ls, Now: f.now}); err != nil || len(got.Lost) != 0 {
		t.Fatalf("ack after the rollback: lost %v, %v", got.Lost, err)
	}
	if bs, n := f.batches("g"), f.count(`SELECT count(*) FROM delivery_exception`); len(bs) != 0 || n != 0 {
		t.Errorf("left: batches %+v, %d exception rows", bs, n)
	}
}

// A claim whose first window fills its limit but whose insert passes over
// rows the group has exceptions for (its cursor was moved back over them)
// reads on past them, though its first transaction already committed: one
// Claim still takes its limit.
func TestClaimReadsOnPastExceptions(t *testing.T) {
	eachMode(t, func(t *testing.T, opts ...postgres.Option) {
		f := newFixture(t, 1, opts...)
		f.group("g", driver.GroupConfig{})
		all := f.appendN(0, 15)
		if res, _ := f.claim("g", "h", 5, f.now, time.Hour); len(res.Deliveries) != 5 {
			t.Fatalf("claimed %d of 5", len(res.Deliveries))
		}
		if err := f.drv.SetCursors(tctx(t), driver.SetCursorsParams{StreamID: f.stream.ID, Group: "g", Positions: map[int]int64{0: 0}}); err != nil {
			t.Fatal(err)
		}
		res, _ := f.claim("g", "h2", 10, f.now, time.Hour)
		if want := all[5:]; !slices.Equal(ids(res.Deliveries), want) {
			t.Fatalf("claim after the reset took %v; want %v", ids(res.Deliveries), want)
		}
		for _, d := range res.Deliveries {
			if d.Attempt != 1 {
				t.Errorf("row %d at attempt %d; want 1", d.ID, d.Attempt)
			}
		}
		if got := f.cursor("g", 0); got != all[14] {
			t.Errorf("cursor at %d; want %d", got, all[14])
		}
	})
}

// A claim right after one that took its limit reads ahead from where that
// claim left the cursor; when the cursor has moved since (another client
// claimed, a reset), what it read ahead is not used.
func TestClaimReadAheadFollowsTheCursor(t *testing.T) {
	eachMode(t, func(t *testing.T, opts ...postgres.Option) {
		f := newFixture(t, 1, opts...)
		other := postgres.Open(f.ns, opts...)
		t.Cleanup(func() { _ = other.Close() })
		f.group("g", driver.GroupConfig{})
		all := f.appendN(0, 40)
		claim := func(d *postgres.Driver, limit int) []int64 {
			t.Helper()
			res, err := d.Claim(tctx(t), driver.ClaimParams{Stream: f.stream, Group: "g", Member: driver.Member{SchemaVersion: 1}, Limit: limit,
				Token: randomName("tok-"), Holder: "h", Now: f.now, LeaseUntil: f.now.Add(time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
			return ids(res.Deliveries)
		}
		if got := claim(f.drv, 10); !slices.Equal(got, all[:10]) {
			t.Fatalf("first claim took %v", got)
		}
		if got := claim(other, 10); !slices.Equal(got, all[10:20]) {
			t.Fatalf("the other client's claim took %v", got)
		}
		if got := claim(f.drv, 10); !slices.Equal(got, all[20:30]) {
			t.Fatalf("after the other client's claim, the first took %v; want %v", got, all[20:30])
		}
		if err := f.drv.SetCursors(tctx(t), driver.SetCursorsParams{StreamID: f.stream.ID, Group: "g", Positions: map[int]int64{0: all[34]}}); err != nil {
			t.Fatal(err)
		}
		if got := claim(f.drv, 10); !slices.Equal(got, all[35:]) {
			t.Fatalf("after a reset past row %d, the claim took %v; want %v", all[34], got, all[35:])
		}
	})
}

// batchChange changes a claim's batch through another driver, which does
// not know the claim, and returns the leases a settle of the whole claim
// must then report lost, and the exception rows left of the claim's rows.
type batchChange struct {
	name   string
	before func(f *fixture, other *postgres.Driver, ls []driver.Lease) (lost []int64, rows int64)
}

// batchChanges are the ways another driver changes the batch of a claim
// whose lease ran for lease.
func batchChanges(lease time.Duration) []batchChange {
	return []batchChange{
		{"unchanged", func(*fixture, *postgres.Driver, []driver.Lease) ([]int64, int64) { return nil, 0 }},
		{"one member failed", func(f *fixture, other *postgres.Driver, ls []driver.Lease) ([]int64, int64) {
			fail := driver.Failure{Lease: ls[3], Error: "boom", Due: f.now.Add(time.Hour)}
			if got, err := other.Fail(tctx(f.t), driver.FailParams{StreamID: f.stream.ID, Group: "g", Failures: []driver.Failure{fail}, Now: f.now}); err != nil || len(got.Lost) != 0 {
				f.t.Fatalf("fail: lost %v, %v", got.Lost, err)
			}
			return []int64{ls[3].ID}, 1
		}},
		{"one member acked", func(f *fixture, other *postgres.Driver, ls []driver.Lease) ([]int64, int64) {
			if got, err := other.Ack(tctx(f.t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Leases: ls[:1], Now: f.now}); err != nil || len(got.Lost) != 0 {
				f.t.Fatalf("ack: lost %v, %v", got.Lost, err)
			}
			return []int64{ls[0].ID}, 0
		}},
		{"expired and claimed again", func(f *fixture, other *postgres.Driver, ls []driver.Lease) ([]int64, int64) {
			later := f.now.Add(2 * lease)
			res, err := other.Claim(tctx(f.t), driver.ClaimParams{Stream: f.stream, Group: "g", Member: driver.Member{SchemaVersion: 1}, Holder: "h2", Token: "t2", Limit: 10,
				Now: later, LeaseUntil: later.Add(time.Hour)})
			if err != nil || len(res.Deliveries) != len(ls) {
				f.t.Fatalf("second claim: %d deliveries, %v", len(res.Deliveries), err)
			}
			return ids(res.Deliveries), int64(len(ls))
		}},
	}
}

// downTo takes every migration from the newest down to version v (v too)
// down, newest first, as a down step requires.
func downTo(t *testing.T, drv driver.Driver, v int) {
	t.Helper()
	ms, err := drv.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	for i := len(ms) - 1; i >= 0 && ms[i].Version >= v; i-- {
		if err := drv.ApplyMigration(tctx(t), driver.ApplyMigrationParams{Version: ms[i].Version, Down: true}); err != nil {
			t.Fatalf("migration %d down: %v", ms[i].Version, err)
		}
	}
}

// A claim's batch of hundreds of ids stays in its row, uncompressed
// (migration 0016): Run acks a batch in parts, and each part would otherwise
// decompress the ids, drop some and compress the rest again. A partial ack
// keeps it so.
func TestBatchIDsStayInTheRow(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1)
	f.group("g", driver.GroupConfig{})
	f.appendN(0, 700)
	res, tok := f.claim("g", "h", 700, f.now, time.Minute)
	if len(res.Deliveries) != 700 {
		t.Fatalf("claimed %d of 700", len(res.Deliveries))
	}
	inline := func(when string, members int64) {
		t.Helper()
		// pg_column_size is the stored size: compressed, it is far below
		// the 8 bytes an id takes uncompressed.
		if n := f.count(fmt.Sprintf(`SELECT pg_column_size(ids) FROM delivery_batch WHERE stream_id = %d`, f.stream.ID)); n < 8*members {
			t.Errorf("%s: the batch's %d ids take %d bytes as stored, want them uncompressed (%d bytes or more)", when, members, n, 8*members)
		}
	}
	inline("after the claim", 700)
	part := leases(res.Deliveries[:300], tok)
	if got, err := f.drv.Ack(tctx(t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Leases: part, Now: f.now}); err != nil || len(got.Lost) > 0 {
		t.Fatalf("ack of 300 members: lost %v, %v", got.Lost, err)
	}
	inline("after a partial ack", 400)
}

// BenchmarkAckInParts is a claim of 1,000 rows acked whole, and acked in ten
// parts of 100 as Run acks what its handlers finish; µs/ack is what one
// Ack call takes (the claims are off the clock):
//
//	GOTOOLCHAIN=go1.27.3 go test -run '^$' -bench AckInParts -benchtime 30x ./driver/postgres
func BenchmarkAckInParts(b *testing.B) {
	for _, parts := range []int{1, 10} {
		b.Run(fmt.Sprintf("%d-parts", parts), func(b *testing.B) {
			f := newFixture(b, 1)
			f.group("g", driver.GroupConfig{})
			var spent time.Duration
			for range b.N {
				f.appendN(0, 1000)
				res, tok := f.claim("g", "h", 1000, f.now, time.Hour)
				ls := leases(res.Deliveries, tok)
				step := len(ls) / parts
				for i := 0; i < len(ls); i += step {
					start := time.Now()
					got, err := f.drv.Ack(tctx(b), driver.AckParams{StreamID: f.stream.ID, Group: "g", Leases: ls[i:min(i+step, len(ls))], Now: f.now})
					spent += time.Since(start)
					if err != nil || len(got.Lost) != 0 {
						b.Fatalf("ack: lost %v, %v", got.Lost, err)
					}
				}
			}
			b.ReportMetric(float64(spent.Microseconds())/float64(b.N*parts), "µs/ack")
		})
	}
}
