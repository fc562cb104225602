package mysql_test

import (
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/mysql"
)

// storedLeases lists a group's exception rows as text, one per row, without
// the group's name, for comparing two groups' rows.
func storedLeases(t *testing.T, dsn, group string) []string {
	t.Helper()
	db, _ := adminDB(t)
	rows, err := db.Query("SELECT CONCAT_WS('|', msg_id, `partition`, schema_version, state, attempt, due_at, COALESCE(lease_token, ''), COALESCE(holder, ''), updated_at)"+
		" FROM "+dbName(t, dsn)+".delivery_exception WHERE group_name = ? ORDER BY msg_id", group)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBatchLeasesDown: 0007 down writes each batch's members back as
// exactly the leased exception rows of their own that the driver
// materializes (and that the retired per-delivery model wrote at the
// claim), and the holder then settles them as before.
func TestBatchLeasesDown(t *testing.T) {
	t.Parallel()
	drv, dsn := openMigrated(t)
	plain := mysql.Open(dsn)
	defer plain.Close()
	st := mustStream(t, drv, "down", 2)
	mustGroup(t, drv, driver.GroupConfig{StreamID: st.ID, Name: "b", SchemaVersion: 1})
	mustGroup(t, drv, driver.GroupConfig{StreamID: st.ID, Name: "e", SchemaVersion: 1})
	rows := make([]driver.AppendRow, 12)
	for i := range rows {
		rows[i].Partition = i % 2
	}
	ids := mustAppend(t, drv, st, rows...)
	now := time.Now().UTC().Truncate(time.Microsecond)
	b := claimAs(t, drv, driver.ClaimParams{Stream: st, Group: "b", Token: "t", Holder: "h", Decodes: []int{1}, Now: now})
	e := claimAs(t, plain, driver.ClaimParams{Stream: st, Group: "e", Token: "t", Holder: "h", Decodes: []int{1}, Now: now})
	if len(b.Deliveries) != 12 || len(e.Deliveries) != 12 {
		t.Fatalf("claimed %d and %d of 12", len(b.Deliveries), len(e.Deliveries))
	}
	if err := mysql.LeaseRowsOfTheirOwn(testCtx(t), plain, plain.DB(), st.ID, "e", "t"); err != nil {
		t.Fatal(err)
	}
	if got := storedLeases(t, dsn, "b"); len(got) != 0 {
		t.Fatalf("a batch claim wrote exception rows %v", got)
	}
	acked := []driver.Lease{{ID: ids[0], Token: "t"}, {ID: ids[3], Token: "t"}}
	for _, d := range []*mysql.Driver{drv, plain} {
		group := "b"
		if d == plain {
			group = "e"
		}
		if res, err := d.Ack(testCtx(t), driver.AckParams{StreamID: st.ID, Group: group, Leases: acked, Now: now}); err != nil || len(res.Lost) != 0 {
			t.Fatalf("ack in %s: lost %v, %v", group, res.Lost, err)
		}
	}
	// Later migrations go down first, newest first: a down step refuses to
	// run under them.
	ms, err := drv.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	for i := len(ms) - 1; i >= 0 && ms[i].Version >= 7; i-- {
		if err := drv.ApplyMigration(testCtx(t), driver.ApplyMigrationParams{Version: ms[i].Version, Down: true}); err != nil {
			t.Fatalf("migration %d down: %v", ms[i].Version, err)
		}
	}
	if tableExists(t, dsn, "delivery_batch") {
		t.Fatal("0007 down left delivery_batch")
	}
	want, got := storedLeases(t, dsn, "e"), storedLeases(t, dsn, "b")
	if len(want) != 10 || !slices.Equal(got, want) {
		t.Fatalf("after 0007 down the batch group has exception rows\n%v\nwant those of the group whose leases have rows of their own\n%v", got, want)
	}
	if err := drv.Migrate(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	// The driver still remembers its batches; the settle finds them gone
	// and settles the exception rows instead.
	var rest []driver.Lease
	for _, d := range b.Deliveries {
		if d.ID != ids[0] && d.ID != ids[3] {
			rest = append(rest, driver.Lease{ID: d.ID, Token: "t"})
		}
	}
	res, err := drv.Ack(testCtx(t), driver.AckParams{StreamID: st.ID, Group: "b", Leases: append(rest, acked[0]), Now: now})
	if err != nil || !slices.Equal(res.Lost, []int64{ids[0]}) {
		t.Fatalf("ack after 0007 down: lost %v, %v; want %d", res.Lost, err, ids[0])
	}
	if got := storedLeases(t, dsn, "b"); len(got) != 0 {
		t.Fatalf("exception rows left after the acks: %v", got)
	}
}

// TestBatchSettleElsewhere: settles of one claim's batch through another
// driver, and an ack in a transaction that rolls back, leave the claiming
// driver's memory of the batch stale; its settles then still change
// exactly the members left and report the rest lost.
func TestBatchSettleElsewhere(t *testing.T) {
	t.Parallel()
	drv, dsn := openMigrated(t)
	other := mysql.Open(dsn)
	defer other.Close()
	st := mustStream(t, drv, "elsewhere", 1)
	mustGroup(t, drv, driver.GroupConfig{StreamID: st.ID, Name: "g", SchemaVersion: 1})
	ids := mustAppend(t, drv, st, make([]driver.AppendRow, 10)...)
	now := time.Now().UTC().Truncate(time.Microsecond)
	c := claimAs(t, drv, driver.ClaimParams{Stream: st, Group: "g", Token: "t", Holder: "h", Decodes: []int{1}, Now: now})
	if len(c.Deliveries) != 10 {
		t.Fatalf("claimed %d of 10", len(c.Deliveries))
	}
	lease := func(is ...int) []driver.Lease {
		out := make([]driver.Lease, len(is))
		for k, i := range is {
			out[k] = driver.Lease{ID: ids[i], Token: "t"}
		}
		return out
	}
	want := func(step string, res driver.SettleResult, err error, lost ...int64) {
		t.Helper()
		if err != nil || !slices.Equal(res.Lost, lost) {
			t.Fatalf("%s: lost %v, %v; want %v", step, res.Lost, err, lost)
		}
	}
	res, err := other.Ack(testCtx(t), driver.AckParams{StreamID: st.ID, Group: "g", Leases: lease(0, 1), Now: now})
	want("ack through the other driver", res, err)
	res, err = drv.Ack(testCtx(t), driver.AckParams{StreamID: st.ID, Group: "g", Leases: lease(1, 2), Now: now})
	want("ack of one acked elsewhere", res, err, ids[1])
	res, err = other.Fail(testCtx(t), driver.FailParams{StreamID: st.ID, Group: "g", Now: now, Failures: []driver.Failure{{Lease: lease(3)[0], Error: "x", Due: now.Add(time.Hour)}}})
	want("fail through the other driver", res, err)
	res, err = drv.Extend(testCtx(t), driver.ExtendParams{StreamID: st.ID, Group: "g", Leases: lease(3, 4, 5, 6, 7, 8, 9), Until: now.Add(2 * time.Hour), Now: now})
	want("extend of the rest and one failed elsewhere", res, err, ids[3])

	res, err = drv.Ack(testCtx(t), driver.AckParams{StreamID: st.ID, Group: "g", Leases: lease(4, 5, 6, 7, 8, 9), Now: now})
	want("ack of the rest", res, err)

	// An ack in a transaction that rolls back changes nothing, though the
	// driver took it for done.
	more := mustAppend(t, drv, st, make([]driver.AppendRow, 4)...)
	if c := claimAs(t, drv, driver.ClaimParams{Stream: st, Group: "g", Token: "u", Holder: "h", Decodes: []int{1}, Now: now}); len(c.Deliveries) != 4 {
		t.Fatalf("claimed %d of 4", len(c.Deliveries))
	}
	leases := []driver.Lease{{ID: more[0], Token: "u"}, {ID: more[1], Token: "u"}, {ID: more[2], Token: "u"}, {ID: more[3], Token: "u"}}
	tx, err := drv.DB().BeginTx(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err = drv.Ack(testCtx(t), driver.AckParams{StreamID: st.ID, Group: "g", Leases: leases[:2], Now: now, Tx: mysql.Tx(tx)})
	want("ack in a transaction", res, err)
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	res, err = drv.Ack(testCtx(t), driver.AckParams{StreamID: st.ID, Group: "g", Leases: leases[2:], Now: now})
	want("ack of the others after the rollback", res, err)
	res, err = drv.Ack(testCtx(t), driver.AckParams{StreamID: st.ID, Group: "g", Leases: leases[:2], Now: now})
	want("ack of the rolled back ones", res, err)
	var batches, exceptions int
	admin, _ := adminDB(t)
	name := dbName(t, dsn)
	if err := admin.QueryRow("SELECT (SELECT COUNT(*) FROM "+name+".delivery_batch), (SELECT COUNT(*) FROM "+name+".delivery_exception WHERE state <> 'delayed')").
		Scan(&batches, &exceptions); err != nil && err != sql.ErrNoRows {
		t.Fatal(err)
	}
	if batches != 0 || exceptions != 0 {
		t.Fatalf("%d batches and %d exception rows but the failure left; want none", batches, exceptions)
	}
}

// TestClaimHotSeesDue: a claim that follows a full one skips the probe
// (claimHot) and still leases what is due first: a failure due now, and
// the members of a batch whose lease expired, before new rows.
func TestClaimHotSeesDue(t *testing.T) {
	t.Parallel()
	drv, _ := openMigrated(t)
	st := mustStream(t, drv, "hot", 1)
	mustGroup(t, drv, driver.GroupConfig{StreamID: st.ID, Name: "g", SchemaVersion: 1})
	ids := mustAppend(t, drv, st, make([]driver.AppendRow, 40)...)
	now := time.Now().UTC().Truncate(time.Microsecond)
	claim := func(token string, at time.Time) driver.ClaimResult {
		t.Helper()
		return claimAs(t, drv, driver.ClaimParams{Stream: st, Group: "g", Token: token, Holder: "h", Decodes: []int{1}, Limit: 10, Now: at, LeaseUntil: at.Add(time.Minute)})
	}
	if c := claim("t1", now); !slices.Equal(deliveryIDs(c.Deliveries), ids[:10]) {
		t.Fatalf("first claim %v", deliveryIDs(c.Deliveries))
	}
	if res, err := drv.Fail(testCtx(t), driver.FailParams{StreamID: st.ID, Group: "g", Now: now,
		Failures: []driver.Failure{{Lease: driver.Lease{ID: ids[3], Token: "t1"}, Error: "again", Due: now}}}); err != nil || len(res.Lost) != 0 {
		t.Fatalf("fail: %v %v", res.Lost, err)
	}
	c := claim("t2", now)
	if got := deliveryIDs(c.Deliveries); got[0] != ids[3] || c.Deliveries[0].Attempt != 2 || len(got) != 10 {
		t.Fatalf("claim after a failure due now: %v (first attempt %d); want %d first, then new rows", got, c.Deliveries[0].Attempt, ids[3])
	}
	// Two minutes on, every lease expired (19 deliveries, in two batches and
	// one exception row): the next claims hand those out again, attempt 2 (3
	// for the failed one), before any new row.
	later := now.Add(2 * time.Minute)
	var again, fresh []int64
	for _, tok := range []string{"t3", "t4"} {
		for _, d := range claim(tok, later).Deliveries {
			if d.Attempt >= 2 {
				again = append(again, d.ID)
			} else {
				fresh = append(fresh, d.ID)
			}
		}
	}
	slices.Sort(again)
	if !slices.Equal(again, ids[:19]) || !slices.Equal(fresh, ids[19:20]) {
		t.Fatalf("after expiry the claims handed out %v again and %v new; want %v again and %v new", again, fresh, ids[:19], ids[19:20])
	}
}

// TestBatchAckAcrossPartitions: a claim over several partitions writes one
// batch each; an ack of all of it settles them together, also when one of
// them changed meanwhile through another driver.
func TestBatchAckAcrossPartitions(t *testing.T) {
	t.Parallel()
	drv, dsn := openMigrated(t)
	other := mysql.Open(dsn)
	defer other.Close()
	st := mustStream(t, drv, "across", 3)
	mustGroup(t, drv, driver.GroupConfig{StreamID: st.ID, Name: "g", SchemaVersion: 1})
	rows := make([]driver.AppendRow, 12)
	for i := range rows {
		rows[i].Partition = i % 3
	}
	mustAppend(t, drv, st, rows...)
	admin, _ := adminDB(t)
	count := func(table string) int {
		t.Helper()
		var n int
		if err := admin.QueryRow("SELECT COUNT(*) FROM " + dbName(t, dsn) + "." + table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for round, tok := range []string{"a", "b"} {
		c := claimAs(t, drv, driver.ClaimParams{Stream: st, Group: "g", Token: tok, Holder: "h", Decodes: []int{1}, Limit: 6})
		if len(c.Deliveries) != 6 || count("delivery_batch") < 2 || count("delivery_exception") != 0 {
			t.Fatalf("claim %s: %d deliveries, %d batches, %d exception rows; want 6 in two or more batches and no row",
				tok, len(c.Deliveries), count("delivery_batch"), count("delivery_exception"))
		}
		leases := leasesOf(c.Deliveries, tok)
		var lost []int64
		if round == 1 {
			// Another driver acks one delivery first.
			if res, err := other.Ack(testCtx(t), driver.AckParams{StreamID: st.ID, Group: "g", Leases: leases[:1], Now: time.Now()}); err != nil || len(res.Lost) != 0 {
				t.Fatalf("ack through the other driver: %v %v", res.Lost, err)
			}
			lost = []int64{leases[0].ID}
		}
		res, err := drv.Ack(testCtx(t), driver.AckParams{StreamID: st.ID, Group: "g", Leases: leases, Now: time.Now()})
		if err != nil || !slices.Equal(res.Lost, lost) {
			t.Fatalf("ack of claim %s: lost %v, %v; want %v", tok, res.Lost, err, lost)
		}
		if n := count("delivery_batch"); n != 0 {
			t.Fatalf("%d batches left after the ack of claim %s", n, tok)
		}
	}
}
