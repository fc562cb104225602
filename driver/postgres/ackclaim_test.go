package postgres_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/postgres"
)

// A claim carrying the acks of a whole earlier claim resolves them before
// it reads. It first tries to delete that claim's batch whole; when the
// batch changed since (here through another driver, which does not know the
// claim), the delete finds nothing and the claim settles the acks with
// Ack's statements, still before it reads: it reports exactly the lost
// ones, leaves the others' rows as they were, and an ordered partition the
// acks free is claimed by that same claim.
func TestClaimAcksFallBack(t *testing.T) {
	eachMode(t, func(t *testing.T, opts ...postgres.Option) {
		// Extended members become exception rows (rows of their own) of the
		// same token: still leased, so acked, but no longer in the batch.
		extended := batchChange{"some members extended", func(f *fixture, other *postgres.Driver, ls []driver.Lease) ([]int64, int64) {
			if got, err := other.Extend(tctx(f.t), driver.ExtendParams{StreamID: f.stream.ID, Group: "g", Leases: ls[2:5], Until: f.now.Add(2 * time.Hour), Now: f.now}); err != nil || len(got.Lost) != 0 {
				f.t.Fatalf("extend: lost %v, %v", got.Lost, err)
			}
			return nil, 0
		}}
		for _, tc := range append(batchChanges(time.Hour), extended) {
			for _, ordered := range []bool{false, true} {
				name := tc.name
				if ordered {
					name += "/ordered"
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					f := newFixture(t, 1, opts...)
					other := postgres.Open(f.ns, opts...)
					t.Cleanup(func() { _ = other.Close() })
					f.group("g", driver.GroupConfig{})
					all := f.appendN(0, 10)
					_, ls := f.claimAll("g", 10, time.Hour, func(p *driver.ClaimParams) { p.Ordered = ordered })
					lost, rows := tc.before(f, other, ls)
					all = append(all, f.appendN(0, 5)...)
					at := f.now.Add(time.Minute)
					got, err := f.drv.Claim(tctx(t), driver.ClaimParams{Stream: f.stream, Group: "g", Member: driver.Member{SchemaVersion: 1}, Ordered: ordered,
						Limit: 10, Token: "next", Holder: "h", Now: at, LeaseUntil: at.Add(time.Hour), Acks: ls})
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got.Lost, lost) {
						t.Errorf("lost acks %v; want %v", got.Lost, lost)
					}
					// An ordered partition is free once every row of the first
					// claim is resolved.
					var want []int64
					if !ordered || rows == 0 {
						want = all[10:]
					}
					if !slices.Equal(ids(got.Deliveries), want) {
						t.Errorf("the claim took %v; want %v", ids(got.Deliveries), want)
					}
					if n := f.count(`SELECT count(*) FROM delivery_batch WHERE lease_token <> 'next'`); n != 0 {
						t.Errorf("%d batches of earlier claims left", n)
					}
					if n := f.count(`SELECT count(*) FROM delivery_exception WHERE lease_token IS DISTINCT FROM 'next'`); n != rows {
						t.Errorf("%d exception rows of earlier claims left; want %d", n, rows)
					}
				})
			}
		}
	})
}

// A claim carrying acks whose insert passes over rows the group has
// exceptions for (its cursor was moved back over them) commits, acks
// included, and reads on in a new transaction that does not carry the acks
// again: the rows it acked are behind the moved cursor and delivered anew,
// as an Ack followed by a Claim would have them, and none is reported lost.
func TestClaimAcksReadOnPastExceptions(t *testing.T) {
	eachMode(t, func(t *testing.T, opts ...postgres.Option) {
		f := newFixture(t, 1, opts...)
		f.group("g", driver.GroupConfig{})
		all := f.appendN(0, 15)
		first, tokA := f.claim("g", "h", 5, f.now, time.Hour)
		second, tokB := f.claim("g", "h", 5, f.now, time.Hour)
		if !slices.Equal(ids(first.Deliveries), all[:5]) || !slices.Equal(ids(second.Deliveries), all[5:10]) {
			t.Fatalf("claims took %v and %v", ids(first.Deliveries), ids(second.Deliveries))
		}
		if err := f.drv.SetCursors(tctx(t), driver.SetCursorsParams{StreamID: f.stream.ID, Group: "g", Positions: map[int]int64{0: 0}}); err != nil {
			t.Fatal(err)
		}
		got, err := f.drv.Claim(tctx(t), driver.ClaimParams{Stream: f.stream, Group: "g", Member: driver.Member{SchemaVersion: 1},
			Limit: 10, Token: "next", Holder: "h", Now: f.now, LeaseUntil: f.now.Add(time.Hour), Acks: leases(first.Deliveries, tokA)})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Lost) != 0 {
			t.Errorf("lost acks %v; want none", got.Lost)
		}
		if want := append(slices.Clone(all[:5]), all[10:]...); !slices.Equal(ids(got.Deliveries), want) {
			t.Fatalf("the claim took %v; want %v", ids(got.Deliveries), want)
		}
		for _, id := range all[:5] {
			if state, attempt, tok := f.exception("g", id); state != "leased" || attempt != 1 || tok != "next" {
				t.Errorf("row %d: %s at attempt %d with %q; want leased anew by the claim", id, state, attempt, tok)
			}
		}
		for _, id := range all[5:10] {
			if state, _, tok := f.exception("g", id); state != "leased" || tok != tokB {
				t.Errorf("row %d: %s with %q; want still the second claim's", id, state, tok)
			}
		}
		if c := f.cursor("g", 0); c != all[14] {
			t.Errorf("cursor at %d; want %d", c, all[14])
		}
	})
}

// Where connections cache their statements (pgx's default mode), a claim
// carrying acks runs Ack's exception-row DELETE planned for its arguments
// at every run, as settles are, and leaves the claim's own statements to
// their cached plans: the setting is for that statement alone.
func TestClaimAcksPlannedPerRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1)
	// Acks go through the exception-row DELETE when they are not a claim's
	// whole batch: here each claim's first four deliveries, extended alone
	// (by another driver) into rows of their own.
	drv := postgres.Open(f.ns, postgres.WithPoolConfig(func(c *pgxpool.Config) { c.MaxConns = 1 }))
	t.Cleanup(func() { _ = drv.Close() })
	f.group("g", driver.GroupConfig{})
	f.appendN(0, 100)
	var acks []driver.Lease
	for i := range 10 {
		tok := randomName("tok-")
		res, err := drv.Claim(tctx(t), driver.ClaimParams{Stream: f.stream, Group: "g", Member: driver.Member{SchemaVersion: 1}, Limit: 5, Token: tok,
			Holder: "h", Now: f.now, LeaseUntil: f.now.Add(time.Hour), Acks: acks})
		if err != nil || len(res.Deliveries) != 5 || len(res.Lost) != 0 {
			t.Fatalf("claim %d: %d deliveries, lost %v, %v", i, len(res.Deliveries), res.Lost, err)
		}
		acks = leases(res.Deliveries, tok)[:4]
		if got, err := f.drv.Extend(tctx(t), driver.ExtendParams{StreamID: f.stream.ID, Group: "g", Leases: acks, Until: f.now.Add(2 * time.Hour), Now: f.now}); err != nil || len(got.Lost) != 0 {
			t.Fatalf("extend %d: lost %v, %v", i, got.Lost, err)
		}
	}
	conn, err := drv.Pool().Acquire(tctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	plans := func(prefix string) (generic, custom int64) {
		t.Helper()
		if err := conn.QueryRow(tctx(t), `SELECT COALESCE(sum(generic_plans), 0)::bigint, COALESCE(sum(custom_plans), 0)::bigint FROM pg_prepared_statements
			WHERE starts_with(ltrim(statement), $1)`, prefix).Scan(&generic, &custom); err != nil {
			t.Fatal(err)
		}
		return generic, custom
	}
	if generic, custom := plans(`DELETE FROM delivery_exception d`); generic != 0 || custom < 9 {
		t.Errorf("the acks' DELETE: %d generic and %d custom plans; want every one of its 9 runs planned for its arguments", generic, custom)
	}
	if generic, _ := plans(`SELECT g.stream_id, g.name, g.schema_version, g.all_versions, g.bindings, g.converts_from, g.start_position, g.created_at, g.removed_unread, g.paused_at, md5(`); generic == 0 {
		t.Errorf("the claim's group read, run after the acks' DELETE in 9 claims, never used its generic plan: the setting outlived the DELETE")
	}
}

// A claim of no rows carrying acks still resolves them, and leaves the
// next claim to probe as usual.
func TestClaimAcksWithoutLimit(t *testing.T) {
	eachMode(t, func(t *testing.T, opts ...postgres.Option) {
		f := newFixture(t, 1, opts...)
		f.group("g", driver.GroupConfig{})
		all := f.appendN(0, 8)
		res, tok := f.claim("g", "h", 5, f.now, time.Hour)
		ls := leases(res.Deliveries, tok)
		ls[4].Token = "wrong"
		got, err := f.drv.Claim(tctx(t), driver.ClaimParams{Stream: f.stream, Group: "g", Member: driver.Member{SchemaVersion: 1},
			Token: "none", Holder: "h", Now: f.now, LeaseUntil: f.now.Add(time.Hour), Acks: ls})
		if err != nil || len(got.Deliveries) != 0 || !slices.Equal(got.Lost, []int64{ls[4].ID}) {
			t.Fatalf("a claim of no rows with acks: %v, lost %v, %v; want nothing claimed and %d lost", ids(got.Deliveries), got.Lost, err, ls[4].ID)
		}
		for i, id := range all[:5] {
			if state, _, _ := f.exception("g", id); (state == "gone") != (i < 4) {
				t.Errorf("row %d: %s after the claim of no rows", id, state)
			}
		}
		if next, _ := f.claim("g", "h", 5, f.now, time.Hour); !slices.Equal(ids(next.Deliveries), all[5:]) {
			t.Errorf("the next claim took %v; want %v", ids(next.Deliveries), all[5:])
		}
	})
}

// Claims that carry parts of an earlier claim, as Run's do when its acks do
// not line up with its claims: each part goes out in the claim's first
// round trip as one statement on the earlier claim's batch, which the
// driver expects to hold what the claims before left in it (learnt once
// each claim committed); no claim runs Ack's locking statements, and the
// last part deletes the batch.
func TestClaimAcksInParts(t *testing.T) {
	t.Parallel()
	tr := &sentTracer{}
	// Without wake-ups: a trailing NOTIFY of the appends would be traced too.
	f := newFixture(t, 1, postgres.WithoutNotify(), postgres.WithPoolConfig(func(c *pgxpool.Config) { c.ConnConfig.Tracer = tr }))
	f.group("g", driver.GroupConfig{})
	f.appendN(0, 10)
	_, ls := f.claimAll("g", 10, time.Hour)
	tok := ls[0].Token
	for i, part := range [][]driver.Lease{ls[:3], ls[3:7], ls[7:]} {
		f.appendN(0, 1)
		tr.take()
		got, err := f.drv.Claim(tctx(t), driver.ClaimParams{Stream: f.stream, Group: "g", Member: driver.Member{SchemaVersion: 1},
			Limit: 1, Token: fmt.Sprintf("next-%d", i), Holder: "h", Now: f.now, LeaseUntil: f.now.Add(time.Hour), Acks: part})
		if err != nil || len(got.Lost) != 0 || len(got.Deliveries) != 1 {
			t.Fatalf("claim with part %d: %d deliveries, lost %v, %v", i, len(got.Deliveries), got.Lost, err)
		}
		want := "UPDATE delivery_batch SET ids"
		if i == 2 {
			want = "DELETE FROM delivery_batch WHERE"
		}
		var batchStmts, lockingAcks int
		for _, trip := range tr.take() {
			for _, stmt := range trip {
				switch {
				case strings.HasPrefix(stmt, want):
					batchStmts++
				case strings.HasPrefix(stmt, "WITH b AS (SELECT b.stream_id, b.group_name, b.lease_token, b.partition, b.ids"), strings.HasPrefix(stmt, "DELETE FROM delivery_exception d"):
					lockingAcks++
				}
			}
		}
		if batchStmts != 1 || lockingAcks != 0 {
			t.Errorf("claim with part %d sent %d statements %q… and %d of Ack's locking ones; want one and none", i, batchStmts, want, lockingAcks)
		}
	}
	if n := f.count(`SELECT count(*) FROM delivery_batch WHERE lease_token = '` + tok + `'`); n != 0 {
		t.Errorf("the first claim's batch is left (%d)", n)
	}
	if n := f.count(`SELECT count(*) FROM delivery_exception`); n != 0 {
		t.Errorf("%d exception rows; want none", n)
	}
}
