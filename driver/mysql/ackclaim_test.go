package mysql_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/mysql"
)

// Statements the tests below look for, by how they begin or what they hold.
const (
	probeMarker    = "FROM consumer_group g LEFT JOIN group_cursor c"
	lockBatchesSQL = "SELECT group_name, lease_token, `partition`, ids FROM delivery_batch"
)

// oneTransaction fails unless stmts are one transaction: START
// TRANSACTION, statements, COMMIT, and nothing before or after.
func oneTransaction(t *testing.T, step string, stmts []string) {
	t.Helper()
	count := func(s string) int {
		n := 0
		for _, q := range stmts {
			if q == s {
				n++
			}
		}
		return n
	}
	if len(stmts) < 3 || stmts[0] != "START TRANSACTION" || stmts[len(stmts)-1] != "COMMIT" ||
		count("START TRANSACTION") != 1 || count("COMMIT") != 1 || count("ROLLBACK") != 0 {
		t.Fatalf("%s sent %d statements, not one transaction that commits:\n%s", step, len(stmts), strings.Join(stmts, "\n"))
	}
}

func containing(stmts []string, s string) bool {
	return slices.ContainsFunc(stmts, func(q string) bool { return strings.Contains(q, s) })
}

// TestAckWithClaimOneTransaction: a claim carrying acks records them in its
// own transaction, as its first statement after START TRANSACTION, with
// Ack's one-statement form (the compare-and-set on a batch the driver
// claimed, or DELETE ... RETURNING on leases with rows of their own) where
// it has one. A claim right after one that took its limit goes on to the cursor lock
// without the probe; when the cursor is taken, or the backlog ended, the
// same transaction probes and claims as usual, and still commits the acks
// once; a claim that fails rolls them back, and the driver's memory of
// the batch stays as it was. A batch changed since the claim (acked elsewhere) falls back to
// the locked read and reports exactly the member it no longer holds.
func TestAckWithClaimOneTransaction(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// ownRows turns every claim's batch into leases with rows of their
		// own (LeaseRowsOfTheirOwn), which the driver does not remember.
		ownRows bool
		// ack is how the acks' first statement begins.
		ack         string
		noReturning bool
	}{
		{"batch", false, "DELETE FROM delivery_batch WHERE", false},
		{"rows", true, "DELETE FROM delivery_exception WHERE", false},
		{"rows-no-returning", true, lockBatchesSQL, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dsn := newDatabase(t)
			drv := mysql.Open(dsn)
			log := mysql.RecordStatements(drv, dsn)
			t.Cleanup(func() { drv.Close() })
			if tc.noReturning {
				mysql.ForceNoReturning(drv)
			}
			if err := drv.Migrate(testCtx(t)); err != nil {
				t.Fatal(err)
			}
			other := mysql.Open(dsn)
			t.Cleanup(func() { other.Close() })
			st := mustStream(t, drv, "ackclaim", 1)
			mustGroup(t, drv, driver.GroupConfig{StreamID: st.ID, Name: "g", SchemaVersion: 1})
			ids := mustAppend(t, drv, st, make([]driver.AppendRow, 30)...)
			claim := func(token string, acks []driver.Lease) driver.ClaimResult {
				t.Helper()
				res := claimAs(t, drv, driver.ClaimParams{Stream: st, Group: "g", Token: token, Holder: "h", Decodes: []int{1}, Limit: 10, Acks: acks})
				if tc.ownRows {
					if err := mysql.LeaseRowsOfTheirOwn(testCtx(t), drv, other.DB(), st.ID, "g", token); err != nil {
						t.Fatal(err)
					}
				}
				return res
			}
			want := func(step string, res driver.ClaimResult, ids []int64, lost ...int64) {
				t.Helper()
				if got := deliveryIDs(res.Deliveries); !slices.Equal(got, ids) || !slices.Equal(res.Lost, lost) {
					t.Fatalf("%s: claimed %v and lost %v; want %v and %v", step, got, res.Lost, ids, lost)
				}
			}
			settled := func(step string, leases []driver.Lease) {
				t.Helper()
				res, err := drv.Ack(testCtx(t), driver.AckParams{StreamID: st.ID, Group: "g", Leases: leases, Now: time.Now().UTC()})
				if err != nil || len(res.Lost) != len(leases) {
					t.Fatalf("%s: acking the acked leases again: lost %v, %v; want all %d", step, res.Lost, err, len(leases))
				}
			}

			// A claim that takes its limit, then one that acks it: hot, so
			// no probe; the acks' statement first.
			first := claim("t1", nil)
			want("first claim", first, ids[:10])
			log.Take()
			second := claim("t2", leasesOf(first.Deliveries, "t1"))
			stmts := log.Take()
			want("the claim acking the first", second, ids[10:20])
			oneTransaction(t, "the claim acking the first", stmts)
			if !strings.HasPrefix(stmts[1], tc.ack) {
				t.Fatalf("the claim acking the first began with %q; want %q", stmts[1], tc.ack)
			}
			if containing(stmts, probeMarker) {
				t.Fatalf("the claim right after a full one probed:\n%s", strings.Join(stmts, "\n"))
			}
			if !tc.noReturning && containing(stmts, lockBatchesSQL) {
				t.Fatalf("the acks took the locking path:\n%s", strings.Join(stmts, "\n"))
			}
			settled("the first claim's", leasesOf(first.Deliveries, "t1"))

			// The hot partition's cursor is taken: the same transaction
			// probes, finds nothing it can lock, and commits the acks.
			admin, _ := adminDB(t)
			holder, err := admin.BeginTx(testCtx(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			var pos int64
			if err := holder.QueryRow("SELECT position FROM "+dbName(t, dsn)+".group_cursor WHERE stream_id = ? AND group_name = 'g' FOR UPDATE", st.ID).Scan(&pos); err != nil {
				t.Fatal(err)
			}
			log.Take()
			third := claim("t3", leasesOf(second.Deliveries, "t2"))
			stmts = log.Take()
			if err := holder.Rollback(); err != nil {
				t.Fatal(err)
			}
			want("the claim while the cursor is taken", third, nil)
			oneTransaction(t, "the claim while the cursor is taken", stmts)
			if !containing(stmts, probeMarker) {
				t.Fatalf("the claim whose hot cursor was taken did not probe:\n%s", strings.Join(stmts, "\n"))
			}
			settled("the second claim's", leasesOf(second.Deliveries, "t2"))

			// The last rows, then a hot claim that finds the backlog ended:
			// it probes in its transaction and commits the acks.
			fourth := claim("t4", nil)
			want("the fourth claim", fourth, ids[20:30])
			// Claims that fail, in the hot path and after the probe (a
			// claim of none skips the hot path), roll their acks back.
			for _, limit := range []int{10, 0} {
				log.Take()
				now := time.Now().UTC()
				_, err := drv.Claim(testCtx(t), driver.ClaimParams{Stream: st, Group: "g", Token: "bad", Holder: "h", Member: driver.Member{SchemaVersion: 2},
					Decodes: []int{2}, Limit: limit, Now: now, LeaseUntil: now.Add(time.Hour), Acks: leasesOf(fourth.Deliveries, "t4")})
				stmts := log.Take()
				if !errors.Is(err, driver.ErrGroupVersion) {
					t.Fatalf("a claim of %d by a member of another version: %v; want ErrGroupVersion", limit, err)
				}
				if len(stmts) < 3 || stmts[0] != "START TRANSACTION" || stmts[len(stmts)-1] != "ROLLBACK" || !strings.HasPrefix(stmts[1], tc.ack) ||
					containing(stmts, probeMarker) != (limit == 0) {
					t.Fatalf("the failed claim of %d did not ack and roll back:\n%s", limit, strings.Join(stmts, "\n"))
				}
			}
			log.Take()
			fifth := claim("t5", leasesOf(fourth.Deliveries, "t4"))
			stmts = log.Take()
			want("the claim after the backlog and the failed ones", fifth, nil)
			oneTransaction(t, "the claim after the backlog", stmts)
			if !containing(stmts, probeMarker) || !strings.HasPrefix(stmts[1], tc.ack) {
				t.Fatalf("the claim after the backlog did not ack first and then probe:\n%s", strings.Join(stmts, "\n"))
			}
			settled("the fourth claim's", leasesOf(fourth.Deliveries, "t4"))

			// A delivery of the claim acked through another driver: the
			// others are acked in the claim's transaction, that one is
			// reported lost.
			more := mustAppend(t, drv, st, make([]driver.AppendRow, 20)...)
			sixth := claim("t6", nil)
			want("the sixth claim", sixth, more[:10])
			leases := leasesOf(sixth.Deliveries, "t6")
			if res, err := other.Ack(testCtx(t), driver.AckParams{StreamID: st.ID, Group: "g", Leases: leases[3:4], Now: time.Now().UTC()}); err != nil || len(res.Lost) != 0 {
				t.Fatalf("ack through the other driver: lost %v, %v", res.Lost, err)
			}
			log.Take()
			seventh := claim("t7", leases)
			stmts = log.Take()
			want("the claim acking one acked elsewhere", seventh, more[10:20], leases[3].ID)
			oneTransaction(t, "the claim acking one acked elsewhere", stmts)
			if !containing(stmts, lockBatchesSQL) {
				t.Fatalf("the acks of a changed batch did not take the locking path:\n%s", strings.Join(stmts, "\n"))
			}
			settled("the sixth claim's", leases)
			if res, err := drv.Ack(testCtx(t), driver.AckParams{StreamID: st.ID, Group: "g", Leases: leasesOf(seventh.Deliveries, "t7"), Now: time.Now().UTC()}); err != nil || len(res.Lost) != 0 {
				t.Fatalf("acking the last claim: lost %v, %v", res.Lost, err)
			}
			var rows int
			name := dbName(t, dsn)
			if err := admin.QueryRow("SELECT (SELECT COUNT(*) FROM " + name + ".delivery_batch) + (SELECT COUNT(*) FROM " + name + ".delivery_exception)").Scan(&rows); err != nil {
				t.Fatal(err)
			}
			if rows != 0 {
				t.Fatalf("%d batches and exception rows left after every delivery was acked", rows)
			}
		})
	}
}

// TestAckWithClaimAcrossPartitions: the acks of a claim that wrote batches
// on several partitions are one DELETE ... RETURNING in the next claim's
// transaction, as Ack does them.
func TestAckWithClaimAcrossPartitions(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	drv := mysql.Open(dsn)
	log := mysql.RecordStatements(drv, dsn)
	t.Cleanup(func() { drv.Close() })
	if err := drv.Migrate(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	st := mustStream(t, drv, "across", 2)
	mustGroup(t, drv, driver.GroupConfig{StreamID: st.ID, Name: "g", SchemaVersion: 1})
	rows := make([]driver.AppendRow, 6)
	for i := range rows {
		rows[i].Partition = i % 2
	}
	mustAppend(t, drv, st, rows...)
	first := claimAs(t, drv, driver.ClaimParams{Stream: st, Group: "g", Token: "t1", Holder: "h", Decodes: []int{1}, Limit: 10})
	if len(first.Deliveries) != 6 {
		t.Fatalf("claimed %d of 6", len(first.Deliveries))
	}
	more := mustAppend(t, drv, st, rows...)
	log.Take()
	second := claimAs(t, drv, driver.ClaimParams{Stream: st, Group: "g", Token: "t2", Holder: "h", Decodes: []int{1}, Limit: 10, Acks: leasesOf(first.Deliveries, "t1")})
	stmts := log.Take()
	got := deliveryIDs(second.Deliveries)
	slices.Sort(got)
	if !slices.Equal(got, more) || len(second.Lost) != 0 {
		t.Fatalf("the claim acking the first claimed %v and lost %v; want %v and none", got, second.Lost, more)
	}
	oneTransaction(t, "the claim acking the first", stmts)
	if !strings.HasPrefix(stmts[1], "DELETE FROM delivery_batch WHERE") || !strings.Contains(stmts[1], "RETURNING") || containing(stmts, lockBatchesSQL) {
		t.Fatalf("the acks were not one DELETE ... RETURNING of the batches:\n%s", strings.Join(stmts, "\n"))
	}
	res, err := drv.Ack(testCtx(t), driver.AckParams{StreamID: st.ID, Group: "g", Leases: leasesOf(first.Deliveries, "t1"), Now: time.Now().UTC()})
	if err != nil || len(res.Lost) != 6 {
		t.Fatalf("acking the first claim again: lost %v, %v; want all 6", res.Lost, err)
	}
}
