package mysql_test

// Tests of contract v2.1 in the driver: health per partition and holder,
// failure history, SetCursors, ReadRows, settles in the caller's
// transaction, the migration API and CheckPrivileges.

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	gomysql "github.com/go-sql-driver/mysql"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/mysql"
	"github.com/sqlstreams/sqlstreams/driver/mysql/mysqltest"
)

func uniqueName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// openMigrated opens a driver on a fresh database and migrates it.
func openMigrated(t *testing.T, opts ...mysql.Option) (*mysql.Driver, string) {
	t.Helper()
	dsn := newDatabase(t)
	drv := mysql.Open(dsn, opts...)
	t.Cleanup(func() { drv.Close() })
	if err := drv.Migrate(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	return drv, dsn
}

func mustStream(t *testing.T, drv *mysql.Driver, name string, partitions int) driver.StreamConfig {
	t.Helper()
	st, err := drv.CreateStream(testCtx(t), driver.CreateStreamParams{Config: driver.StreamConfig{Name: name, Partitions: partitions, CreatedAt: time.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func mustGroup(t *testing.T, drv *mysql.Driver, g driver.GroupConfig) {
	t.Helper()
	g.CreatedAt = time.Now()
	if _, err := drv.RegisterGroup(testCtx(t), driver.RegisterGroupParams{Group: g}); err != nil {
		t.Fatal(err)
	}
}

func mustAppend(t *testing.T, drv *mysql.Driver, st driver.StreamConfig, rows ...driver.AppendRow) []int64 {
	t.Helper()
	for i := range rows {
		if rows[i].SchemaVersion == 0 {
			rows[i].SchemaVersion = 1
		}
		if rows[i].Payload == nil {
			rows[i].Payload = []byte(fmt.Sprintf(`{"i":%d}`, i))
		}
		if rows[i].ProducedAt.IsZero() {
			rows[i].ProducedAt = time.Now()
		}
	}
	ids, err := drv.Append(testCtx(t), driver.AppendParams{Stream: st, Rows: rows})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func claimAs(t *testing.T, drv *mysql.Driver, p driver.ClaimParams) driver.ClaimResult {
	t.Helper()
	if p.Member == (driver.Member{}) {
		p.Member = driver.Member{SchemaVersion: 1}
	}
	if p.Now.IsZero() {
		p.Now = time.Now().UTC()
	}
	if p.LeaseUntil.IsZero() {
		p.LeaseUntil = p.Now.Add(time.Hour)
	}
	if p.Limit == 0 {
		p.Limit = 100
	}
	res, err := drv.Claim(testCtx(t), p)
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	return res
}

func deliveryIDs(ds []driver.Delivery) []int64 {
	out := make([]int64, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

func leasesOf(ds []driver.Delivery, token string) []driver.Lease {
	out := make([]driver.Lease, len(ds))
	for i, d := range ds {
		out[i] = driver.Lease{ID: d.ID, Token: token}
	}
	return out
}

// TestHealthHoldersAndPartitions: unread rows are counted per partition,
// and leases per holder with the latest expiry, in one read.
func TestHealthHoldersAndPartitions(t *testing.T) {
	t.Parallel()
	drv, _ := openMigrated(t)
	st := mustStream(t, drv, "health", 3)
	mustGroup(t, drv, driver.GroupConfig{StreamID: st.ID, Name: "g", SchemaVersion: 1})
	mustGroup(t, drv, driver.GroupConfig{StreamID: st.ID, Name: "h", SchemaVersion: 1})
	var rows []driver.AppendRow
	for i := range 4 {
		rows = append(rows, driver.AppendRow{Partition: 0, RoutingKey: "a"}, driver.AppendRow{Partition: 2, RoutingKey: fmt.Sprint("k", i%2)})
	}
	mustAppend(t, drv, st, rows...)
	now := time.Now().UTC().Truncate(time.Microsecond)
	untilA1, untilA2, untilB := now.Add(time.Minute), now.Add(3*time.Minute), now.Add(2*time.Minute)
	a1 := claimAs(t, drv, driver.ClaimParams{Stream: st, Group: "g", Limit: 2, Token: "a1", Holder: "pod-a", Now: now, LeaseUntil: untilA1})
	a2 := claimAs(t, drv, driver.ClaimParams{Stream: st, Group: "g", Limit: 1, Token: "a2", Holder: "pod-a", Now: now, LeaseUntil: untilA2})
	b := claimAs(t, drv, driver.ClaimParams{Stream: st, Group: "g", Limit: 2, Token: "b", Holder: "pod-b", Now: now, LeaseUntil: untilB})
	if n := len(a1.Deliveries) + len(a2.Deliveries) + len(b.Deliveries); n != 5 {
		t.Fatalf("claimed %d; want 5", n)
	}
	// A failed delivery is not a lease.
	if res, err := drv.Fail(testCtx(t), driver.FailParams{StreamID: st.ID, Group: "g", Now: now,
		Failures: []driver.Failure{{Lease: driver.Lease{ID: b.Deliveries[1].ID, Token: "b"}, Error: "x", Due: now.Add(time.Hour)}}}); err != nil || len(res.Lost) > 0 {
		t.Fatalf("fail: %v %v", res, err)
	}
	hs, err := drv.Health(testCtx(t), driver.HealthParams{StreamID: st.ID, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	wantHolders := []driver.HolderCount{{Group: "g", Holder: "pod-a", Leases: 3, Until: untilA2}, {Group: "g", Holder: "pod-b", Leases: 1, Until: untilB}}
	if !slices.EqualFunc(hs.Holders, wantHolders, func(x, y driver.HolderCount) bool {
		return x.Group == y.Group && x.Holder == y.Holder && x.Leases == y.Leases && x.Until.Equal(y.Until) && x.Until.Location() == time.UTC
	}) {
		t.Errorf("holders %+v; want %+v", hs.Holders, wantHolders)
	}
	// Unread per (group, partition, version, key): g passed 5 rows in some
	// partitions, h none.
	unread := map[string]int64{}
	for _, u := range hs.Unread {
		unread[fmt.Sprintf("%s/%d/%d/%s", u.Group, u.Partition, u.Version, u.RoutingKey)] += u.Rows
	}
	for _, k := range []string{"h/0/1/a", "h/2/1/k0", "h/2/1/k1"} {
		want := int64(4)
		if k != "h/0/1/a" {
			want = 2
		}
		if unread[k] != want {
			t.Errorf("unread %s = %d; want %d (all %v)", k, unread[k], want, unread)
		}
	}
	var g int64
	for k, n := range unread {
		if strings.HasPrefix(k, "g/") {
			if strings.HasPrefix(k, "g/1/") {
				t.Errorf("unread in partition 1, which has no rows: %s", k)
			}
			g += n
		}
	}
	if g != 3 {
		t.Errorf("group g has %d unread; want the 3 rows not claimed (%v)", g, unread)
	}
}

// TestFailureHistory: every Fail appends the lease's attempt and holder and
// the error cut at MaxHistoryError (at a UTF-8 boundary), on the
// one-statement and the several-failures paths; the claim's burying of an
// expired lease appends one with LastError; replay keeps the history;
// ListDead returns it oldest first only when asked, and the holder always.
func TestFailureHistory(t *testing.T) {
	t.Parallel()
	drv, _ := openMigrated(t)
	st := mustStream(t, drv, "history", 1)
	mustGroup(t, drv, driver.GroupConfig{StreamID: st.ID, Name: "g", SchemaVersion: 1})
	ids := mustAppend(t, drv, st, driver.AppendRow{}, driver.AppendRow{}, driver.AppendRow{})
	base := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.FixedZone("x", 3600))
	at := func(i int) time.Time { return base.Add(time.Duration(i) * time.Minute) }
	utcAt := func(i int) time.Time { return at(i).UTC().Truncate(time.Microsecond) }
	long := "é" + strings.Repeat("日本", driver.MaxHistoryError) // 1000 is inside a 3-byte rune
	odd := "quote \" backslash \\ newline \n tab \t nul-ish \u0001 emoji 🙂 </script>"

	// Attempt 1 of every row: holder-1; rows 0 and 1 fail together (the
	// transaction path), row 2 alone (one statement).
	c := claimAs(t, drv, driver.ClaimParams{Stream: st, Group: "g", Token: "t1", Holder: "holder-1", Now: at(0)})
	if !slices.Equal(deliveryIDs(c.Deliveries), ids) {
		t.Fatalf("claimed %v; want %v", deliveryIDs(c.Deliveries), ids)
	}
	fail := func(now time.Time, fs ...driver.Failure) {
		t.Helper()
		res, err := drv.Fail(testCtx(t), driver.FailParams{StreamID: st.ID, Group: "g", Now: now, Failures: fs})
		if err != nil || len(res.Lost) > 0 {
			t.Fatalf("fail: %v %v", res, err)
		}
	}
	fail(at(1), driver.Failure{Lease: driver.Lease{ID: ids[0], Token: "t1"}, Error: odd, Due: at(1)},
		driver.Failure{Lease: driver.Lease{ID: ids[1], Token: "t1"}, Error: long, Due: at(1)})
	fail(at(1), driver.Failure{Lease: driver.Lease{ID: ids[2], Token: "t1"}, Error: "first", Due: at(1)})
	// Attempt 2: holder-2; all dead now.
	c = claimAs(t, drv, driver.ClaimParams{Stream: st, Group: "g", Token: "t2", Holder: "holder-2", Now: at(2)})
	if len(c.Deliveries) != 3 || c.Deliveries[0].Attempt != 2 {
		t.Fatalf("second claim: %+v", c.Deliveries)
	}
	fail(at(3), driver.Failure{Lease: driver.Lease{ID: ids[0], Token: "t2"}, Error: "second", Dead: true},
		driver.Failure{Lease: driver.Lease{ID: ids[1], Token: "t2"}, Error: "second", Dead: true})
	fail(at(3), driver.Failure{Lease: driver.Lease{ID: ids[2], Token: "t2"}, Error: long, Dead: true})

	dead, err := drv.ListDead(testCtx(t), driver.ListDeadParams{StreamID: st.ID, Group: "g", Limit: 10})
	if err != nil || len(dead) != 3 {
		t.Fatalf("list dead: %v %v", dead, err)
	}
	for _, dl := range dead {
		if dl.History != nil || dl.Holder != "holder-2" {
			t.Errorf("dead letter %d without history asked: holder %q, history %v; want holder-2 and none", dl.ID, dl.Holder, dl.History)
		}
	}
	cut := driver.CutHistoryError(long)
	if len(cut) > driver.MaxHistoryError || len(cut) < driver.MaxHistoryError-2 || !utf8.ValidString(cut) {
		t.Fatalf("cut error: %d bytes", len(cut))
	}
	check := func(id int64, want []driver.FailureRecord, lastError string) {
		t.Helper()
		got, err := drv.ListDead(testCtx(t), driver.ListDeadParams{StreamID: st.ID, Group: "g", AfterID: id - 1, Limit: 1, History: true})
		if err != nil || len(got) != 1 || got[0].ID != id {
			t.Fatalf("list dead %d: %v %v", id, got, err)
		}
		if got[0].Error != lastError {
			t.Errorf("row %d: last error %q; want %q (whole)", id, trim(got[0].Error), trim(lastError))
		}
		if !slices.EqualFunc(got[0].History, want, func(a, b driver.FailureRecord) bool {
			return a.Attempt == b.Attempt && a.Error == b.Error && a.Holder == b.Holder && a.At.Equal(b.At) && a.At.Location() == time.UTC
		}) {
			t.Errorf("row %d: history %s; want %s", id, records(got[0].History), records(want))
		}
	}
	check(ids[0], []driver.FailureRecord{rec(1, odd, utcAt(1), "holder-1"), rec(2, "second", utcAt(3), "holder-2")}, "second")
	check(ids[1], []driver.FailureRecord{rec(1, cut, utcAt(1), "holder-1"), rec(2, "second", utcAt(3), "holder-2")}, "second")
	check(ids[2], []driver.FailureRecord{rec(1, "first", utcAt(1), "holder-1"), rec(2, cut, utcAt(3), "holder-2")}, long)

	// Replay keeps the history; a lease that expires on the last attempt
	// is buried by the claim with LastError and that lease's holder.
	if n, err := drv.Replay(testCtx(t), driver.ReplayParams{StreamID: st.ID, Group: "g", IDs: ids[:1], Now: at(4)}); err != nil || n != 1 {
		t.Fatalf("replay: %d %v", n, err)
	}
	c = claimAs(t, drv, driver.ClaimParams{Stream: st, Group: "g", Token: "t3", Holder: "holder-3", Now: at(5), LeaseUntil: at(6), MaxAttempts: 1})
	if len(c.Deliveries) != 1 || c.Deliveries[0].Attempt != 1 {
		t.Fatalf("claim after replay: %+v", c.Deliveries)
	}
	c = claimAs(t, drv, driver.ClaimParams{Stream: st, Group: "g", Token: "t4", Holder: "holder-4", Now: at(7), MaxAttempts: 1, LastError: "lease expired " + odd})
	if len(c.Deliveries) != 0 {
		t.Fatalf("claim after the last attempt's lease expired: %+v; want it buried", c.Deliveries)
	}
	check(ids[0], []driver.FailureRecord{rec(1, odd, utcAt(1), "holder-1"), rec(2, "second", utcAt(3), "holder-2"),
		rec(1, "lease expired "+odd, utcAt(7), "holder-3")}, "lease expired "+odd)
}

func rec(attempt int, err string, at time.Time, holder string) driver.FailureRecord {
	return driver.FailureRecord{Attempt: attempt, Error: err, At: at, Holder: holder}
}

func trim(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

func records(rs []driver.FailureRecord) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("{%d %q %s %s}", r.Attempt, trim(r.Error), r.At.Format(time.RFC3339Nano), r.Holder))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

type exceptionState struct {
	state, token string
	attempt      int
}

// exceptionsOf lists every delivery's lease or exception state, a batch's
// members as the leased exception rows they stand for.
func exceptionsOf(t *testing.T, dsn string) map[int64]exceptionState {
	t.Helper()
	db, _ := adminDB(t)
	out := map[int64]exceptionState{}
	name := dbName(t, dsn)
	rows, err := db.Query("SELECT msg_id, state, COALESCE(lease_token, ''), attempt FROM " + name + ".delivery_exception" +
		" UNION ALL SELECT j.id, 'leased', b.lease_token, 1 FROM " + name + ".delivery_batch b JOIN JSON_TABLE(b.ids, '$[*]' COLUMNS (id BIGINT PATH '$')) j")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var e exceptionState
		if err := rows.Scan(&id, &e.state, &e.token, &e.attempt); err != nil {
			t.Fatal(err)
		}
		out[id] = e
	}
	return out
}

func cursorsOf(t *testing.T, drv *mysql.Driver, st driver.StreamConfig, group string) []int64 {
	t.Helper()
	hs, err := drv.Health(testCtx(t), driver.HealthParams{StreamID: st.ID, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range hs.Groups {
		if g.Name == group {
			return g.Cursors
		}
	}
	t.Fatalf("no group %s", group)
	return nil
}

// TestSetCursors: moving a cursor back makes the main claim deliver again
// the rows the group acked, and pass over the rows it holds an exception
// for (leased, delayed, dead, or deferred), which stay as they were, while
// it fills the limit; errors for a missing group or cursor; the cursor
// lock is waited for, bounded.
func TestSetCursors(t *testing.T) {
	t.Parallel()
	drv, dsn := openMigrated(t, mysql.WithLockTimeout(time.Second))
	st := mustStream(t, drv, "cursors", 2)
	mustGroup(t, drv, driver.GroupConfig{StreamID: st.ID, Name: "g", SchemaVersion: 1, ConvertsFrom: []int{2}})
	rows := make([]driver.AppendRow, 10)
	rows[8].SchemaVersion = 2 // a row the member below cannot decode
	ids := mustAppend(t, drv, st, rows...)
	other := mustAppend(t, drv, st, driver.AppendRow{Partition: 1})
	now := time.Now().UTC().Truncate(time.Microsecond)
	v1 := []int{1}
	c := claimAs(t, drv, driver.ClaimParams{Stream: st, Group: "g", Token: "t1", Holder: "h1", Decodes: v1, Now: now})
	if len(c.Deliveries) != 10 || c.Deferred != 1 {
		t.Fatalf("first claim: %d deliveries, %d deferred", len(c.Deliveries), c.Deferred)
	}
	byID := map[int64]bool{}
	for _, d := range c.Deliveries {
		byID[d.ID] = true
	}
	if byID[ids[8]] || !byID[other[0]] {
		t.Fatalf("first claim %v", deliveryIDs(c.Deliveries))
	}
	lease := func(i int, tok string) driver.Lease { return driver.Lease{ID: ids[i], Token: tok} }
	// Rows 0, 1: dead; 2: delayed an hour; 3: still leased; 4..7, 9: acked;
	// 8: deferred (delayed, due now) for a member that decodes version 2.
	if _, err := drv.Fail(testCtx(t), driver.FailParams{StreamID: st.ID, Group: "g", Now: now, Failures: []driver.Failure{
		{Lease: lease(0, "t1"), Error: "x", Dead: true}, {Lease: lease(1, "t1"), Error: "x", Dead: true},
		{Lease: lease(2, "t1"), Error: "later", Due: now.Add(time.Hour)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := drv.Ack(testCtx(t), driver.AckParams{StreamID: st.ID, Group: "g", Now: now,
		Leases: []driver.Lease{lease(4, "t1"), lease(5, "t1"), lease(6, "t1"), lease(7, "t1"), lease(9, "t1")}}); err != nil {
		t.Fatal(err)
	}
	before := exceptionsOf(t, dsn)

	if err := drv.SetCursors(testCtx(t), driver.SetCursorsParams{StreamID: st.ID, Group: "g", Positions: map[int]int64{0: 0}}); err != nil {
		t.Fatal(err)
	}
	if cur := cursorsOf(t, drv, st, "g"); cur[0] != 0 || cur[1] != other[0] {
		t.Fatalf("cursors after SetCursors: %v; want [0 %d]", cur, other[0])
	}
	// Health counts the rows with an exception as exceptions, not unread.
	hs, err := drv.Health(testCtx(t), driver.HealthParams{StreamID: st.ID, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	var unread int64
	for _, u := range hs.Unread {
		if u.Group == "g" {
			unread += u.Rows
			if u.Partition != 0 || u.Version != 1 {
				t.Errorf("unread %+v; want only version 1 rows of partition 0", u)
			}
		}
	}
	if unread != 5 {
		t.Errorf("unread after moving the cursor back: %d; want the 5 acked rows (%+v)", unread, hs.Unread)
	}
	// Limit 3: the first four rows have exceptions; the claim reads on.
	c = claimAs(t, drv, driver.ClaimParams{Stream: st, Group: "g", Token: "t2", Holder: "h2", Decodes: v1, Limit: 3, Now: now})
	if got := deliveryIDs(c.Deliveries); !slices.Equal(got, []int64{ids[4], ids[5], ids[6]}) || c.Deferred != 0 {
		t.Fatalf("claim after moving the cursor back: %v, %d deferred; want rows 4, 5, 6 and none deferred", got, c.Deferred)
	}
	c2 := claimAs(t, drv, driver.ClaimParams{Stream: st, Group: "g", Token: "t3", Holder: "h3", Decodes: v1, Now: now})
	if got := deliveryIDs(c2.Deliveries); !slices.Equal(got, []int64{ids[7], ids[9]}) || c2.Deferred != 0 {
		t.Fatalf("next claim: %v, %d deferred; want rows 7 and 9, none deferred", got, c2.Deferred)
	}
	after := exceptionsOf(t, dsn)
	for _, i := range []int{0, 1, 2, 3, 8} {
		if after[ids[i]] != before[ids[i]] {
			t.Errorf("row %d's exception changed: %+v, was %+v", i, after[ids[i]], before[ids[i]])
		}
	}
	if cur := cursorsOf(t, drv, st, "g"); cur[0] != ids[9] {
		t.Errorf("cursor %d after the claims; want %d", cur[0], ids[9])
	}

	// A row whose exception this very claim leases (due now) and that the
	// main claim meets again is delivered once.
	if _, err := drv.Ack(testCtx(t), driver.AckParams{StreamID: st.ID, Group: "g", Now: now, Leases: append(leasesOf(c.Deliveries, "t2"), leasesOf(c2.Deliveries, "t3")...)}); err != nil {
		t.Fatal(err)
	}
	if err := drv.SetCursors(testCtx(t), driver.SetCursorsParams{StreamID: st.ID, Group: "g", Positions: map[int]int64{0: ids[7]}}); err != nil {
		t.Fatal(err)
	}
	c = claimAs(t, drv, driver.ClaimParams{Stream: st, Group: "g", Token: "t4", Holder: "h4", Decodes: []int{1, 2}, Now: now.Add(time.Second)})
	if got := deliveryIDs(c.Deliveries); !slices.Equal(got, []int64{ids[8], ids[9]}) {
		t.Fatalf("claim of a due exception past a moved cursor: %v; want rows 8 and 9 once each", got)
	}
	if c.Deliveries[0].Attempt != 1 || after[ids[8]].attempt != 0 {
		t.Errorf("row 8 leased at attempt %d; want 1 (its deferral kept attempt 0)", c.Deliveries[0].Attempt)
	}

	// Errors.
	for _, tc := range []struct {
		name string
		p    driver.SetCursorsParams
	}{
		{"missing group", driver.SetCursorsParams{StreamID: st.ID, Group: "nope", Positions: map[int]int64{0: 1}}},
		{"missing partition", driver.SetCursorsParams{StreamID: st.ID, Group: "g", Positions: map[int]int64{0: 1, 2: 1}}},
		{"missing stream", driver.SetCursorsParams{StreamID: st.ID + 100, Group: "g", Positions: map[int]int64{}}},
	} {
		if err := drv.SetCursors(testCtx(t), tc.p); !errors.Is(err, driver.ErrGroupNotFound) {
			t.Errorf("%s: %v; want ErrGroupNotFound", tc.name, err)
		}
	}
	if cur := cursorsOf(t, drv, st, "g"); cur[0] != ids[9] {
		t.Errorf("a refused SetCursors moved a cursor: %v", cur)
	}

	// A claim in flight holds a cursor: SetCursors waits for it, bounded.
	db, _ := adminDB(t)
	tx, err := db.BeginTx(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec("SELECT position FROM "+dbName(t, dsn)+".group_cursor WHERE stream_id = ? AND group_name = 'g' AND `partition` = 1 FOR UPDATE", st.ID); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = drv.SetCursors(testCtx(t), driver.SetCursorsParams{StreamID: st.ID, Group: "g", Positions: map[int]int64{0: 0}})
	if waited := time.Since(start); mysql.IsMariaDB(drv) && (!errors.Is(err, driver.ErrConflict) || waited < 900*time.Millisecond || waited > 30*time.Second) {
		// The upper bound tells the driver's 1s from the server's 50s, with
		// room for a loaded machine.
		t.Errorf("SetCursors while a cursor is locked: %v after %v; want ErrConflict after about the 1s lock timeout, not the server's", err, waited)
	}
	done := make(chan error, 1)
	go func() {
		done <- drv.SetCursors(testCtx(t), driver.SetCursorsParams{StreamID: st.ID, Group: "g", Positions: map[int]int64{1: 0}})
	}()
	time.Sleep(200 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("SetCursors did not wait for the lock: %v", err)
	default:
	}
	tx.Rollback()
	if err := <-done; err != nil {
		t.Fatalf("SetCursors after the lock was released: %v", err)
	}
	if cur := cursorsOf(t, drv, st, "g"); cur[1] != 0 {
		t.Errorf("cursors %v; want partition 1 at 0", cur)
	}
}

// TestReadRows: filters, both directions, bounds, the MaxScan bound with
// Last and Done, payloads byte for byte and headers decoded.
func TestReadRows(t *testing.T) {
	t.Parallel()
	drv, _ := openMigrated(t)
	st := mustStream(t, drv, "browse", 2)
	var rows []driver.AppendRow
	for i := range 40 {
		r := driver.AppendRow{Partition: i % 2, SchemaVersion: 1 + i%3, RoutingKey: fmt.Sprint("rk", i), Payload: []byte(fmt.Sprintf(`{ "i" : %d , "s":"\u00e9 é 🙂"  }`, i))}
		if i%5 == 0 {
			r.Key, r.HasKey = "key-"+fmt.Sprint(i%10), true
		}
		if i == 7 {
			r.Headers = map[string]string{"trace": "abc", "é": "ü"}
		}
		rows = append(rows, r)
	}
	ids := mustAppend(t, drv, st, rows...)
	read := func(p driver.ReadRowsParams) driver.ReadRowsResult {
		t.Helper()
		p.StreamID = st.ID
		res, err := drv.ReadRows(testCtx(t), p)
		if err != nil {
			t.Fatalf("read %+v: %v", p, err)
		}
		return res
	}
	idsOf := func(rs []driver.Row) []int64 {
		out := make([]int64, len(rs))
		for i, r := range rs {
			out[i] = r.ID
		}
		return out
	}
	pick := func(keep func(i int) bool, desc bool) []int64 {
		var out []int64
		for i := range rows {
			if keep(i) {
				out = append(out, ids[i])
			}
		}
		if desc {
			slices.Reverse(out)
		}
		return out
	}
	type want struct {
		ids  []int64
		last int64
		done bool
	}
	for _, tc := range []struct {
		name string
		p    driver.ReadRowsParams
		want want
	}{
		{"all, limit 5", driver.ReadRowsParams{Partition: -1, Limit: 5}, want{ids[:5], ids[4], false}},
		{"all", driver.ReadRowsParams{Partition: -1, Limit: 100}, want{ids, ids[39], true}},
		{"exactly all", driver.ReadRowsParams{Partition: -1, Limit: 40}, want{ids, ids[39], true}},
		{"partition 1", driver.ReadRowsParams{Partition: 1, Limit: 100}, want{pick(func(i int) bool { return i%2 == 1 }, false), ids[39], true}},
		{"after and before", driver.ReadRowsParams{Partition: -1, AfterID: ids[9], BeforeID: ids[15], Limit: 100}, want{ids[10:15], ids[14], true}},
		{"descending", driver.ReadRowsParams{Partition: -1, Descending: true, Limit: 3}, want{[]int64{ids[39], ids[38], ids[37]}, ids[37], false}},
		{"descending before", driver.ReadRowsParams{Partition: 0, Descending: true, BeforeID: ids[6], Limit: 10}, want{[]int64{ids[4], ids[2], ids[0]}, ids[0], true}},
		{"versions", driver.ReadRowsParams{Partition: -1, Versions: []int{2}, Limit: 100, MaxScan: 1000}, want{pick(func(i int) bool { return i%3 == 1 }, false), ids[39], true}},
		{"no versions", driver.ReadRowsParams{Partition: -1, Versions: []int{}, Limit: 100, MaxScan: 1000}, want{nil, ids[39], true}},
		{"key", driver.ReadRowsParams{Partition: -1, Key: "key-0", HasKey: true, Limit: 100, MaxScan: 1000}, want{pick(func(i int) bool { return i%10 == 0 }, false), ids[39], true}},
		{"key, partition and version", driver.ReadRowsParams{Partition: 1, Key: "key-5", HasKey: true, Versions: []int{3}, Limit: 100, MaxScan: 1000},
			want{pick(func(i int) bool { return i%10 == 5 && i%3 == 2 }, false), ids[39], true}},
		// MaxScan 0 is Limit: 4 rows examined, 1 kept.
		{"scan bound", driver.ReadRowsParams{Partition: -1, Versions: []int{1}, Limit: 4}, want{[]int64{ids[0], ids[3]}, ids[3], false}},
		{"scan bound, descending", driver.ReadRowsParams{Partition: -1, Versions: []int{1}, Limit: 10, MaxScan: 5, Descending: true},
			want{[]int64{ids[39], ids[36]}, ids[35], false}},
		{"scan bound meets the end", driver.ReadRowsParams{Partition: -1, AfterID: ids[34], Versions: []int{1}, Limit: 10, MaxScan: 5},
			want{[]int64{ids[36], ids[39]}, ids[39], true}},
		{"limit meets the end", driver.ReadRowsParams{Partition: -1, AfterID: ids[34], Versions: []int{1}, Limit: 2, MaxScan: 100},
			want{[]int64{ids[36], ids[39]}, ids[39], true}},
		{"nothing after", driver.ReadRowsParams{Partition: -1, AfterID: ids[39], Limit: 10}, want{nil, 0, true}},
		{"empty partition range", driver.ReadRowsParams{Partition: 1, BeforeID: ids[1], Limit: 10}, want{nil, 0, true}},
	} {
		got := read(tc.p)
		if !slices.Equal(idsOf(got.Rows), tc.want.ids) || got.Last != tc.want.last || got.Done != tc.want.done {
			t.Errorf("%s: rows %v, last %d, done %v; want %v, %d, %v", tc.name, idsOf(got.Rows), got.Last, got.Done, tc.want.ids, tc.want.last, tc.want.done)
		}
	}
	// Rows come back whole.
	got := read(driver.ReadRowsParams{Partition: -1, Limit: 100})
	for i, r := range got.Rows {
		w := rows[i]
		if string(r.Payload) != string(w.Payload) || r.Partition != w.Partition || r.SchemaVersion != w.SchemaVersion || r.RoutingKey != w.RoutingKey ||
			r.Key != w.Key || r.HasKey != w.HasKey || len(r.Headers) != len(w.Headers) || r.Headers["é"] != w.Headers["é"] || r.ProducedAt.Location() != time.UTC {
			t.Errorf("row %d: %+v; want %+v", i, r, w)
		}
	}
	// Paging through a sparse filter with Last: every match, each call
	// examining at most MaxScan rows.
	var all []int64
	calls := 0
	for after := int64(0); ; calls++ {
		res := read(driver.ReadRowsParams{Partition: -1, AfterID: after, Versions: []int{3}, Limit: 100, MaxScan: 7})
		all = append(all, idsOf(res.Rows)...)
		if res.Done {
			break
		}
		after = res.Last
	}
	if want := pick(func(i int) bool { return i%3 == 2 }, false); !slices.Equal(all, want) || calls != 5 {
		t.Errorf("paged %v in %d calls; want %v in 6 calls of 7 rows", all, calls+1, want)
	}
	// A stream that does not exist.
	if _, err := drv.ReadRows(testCtx(t), driver.ReadRowsParams{StreamID: st.ID + 100, Partition: -1, Limit: 1}); !errors.Is(err, driver.ErrStreamNotFound) {
		t.Errorf("read a missing stream: %v; want ErrStreamNotFound", err)
	}
}

type foreignTx struct{}

func (foreignTx) DriverName() string { return "other" }

// TestSettleInCallerTx (C21 in the driver): Ack and Fail in the caller's
// transaction commit and roll back with it, report lost leases without
// changing the transaction, work on a transaction of another pool (without
// the driver's DSN settings), and refuse another driver's transaction.
func TestSettleInCallerTx(t *testing.T) {
	t.Parallel()
	f := newSettleFixture(t, false, 8)
	ds := f.claim(t, "tok", 8)
	if len(ds) != 8 {
		t.Fatalf("claimed %d", len(ds))
	}
	ctx := testCtx(t)
	id := f.ids
	db, _ := adminDB(t)
	marker := f.name + ".marker"
	if _, err := db.Exec("CREATE TABLE " + marker + " (k VARCHAR(64) NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	markers := func(k string) int {
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM "+marker+" WHERE k = ?", k).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// A pool of the caller's own: default go-sql-driver settings.
	cfg, _ := gomysql.ParseDSN(mysqlDSN(t, f))
	own, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	for _, pool := range []struct {
		name string
		db   *sql.DB
	}{{"driver's pool", f.drv.DB()}, {"caller's pool", own}} {
		t.Run(pool.name, func(t *testing.T) {
			step := func(k string, commit bool, settle func(tx driver.Tx) (driver.SettleResult, error)) driver.SettleResult {
				t.Helper()
				tx, err := pool.db.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback()
				if _, err := tx.Exec("INSERT INTO "+marker+" (k) VALUES (?)", k); err != nil {
					t.Fatal(err)
				}
				res, err := settle(mysql.Tx(tx))
				if err != nil {
					t.Fatalf("%s: %v", k, err)
				}
				// The transaction is still the caller's to use and end.
				if _, err := tx.Exec("INSERT INTO "+marker+" (k) VALUES (?)", k); err != nil {
					t.Fatalf("%s: the transaction after the settle: %v", k, err)
				}
				if commit {
					err = tx.Commit()
				} else {
					err = tx.Rollback()
				}
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			i := 0
			if pool.name == "caller's pool" {
				i = 4
			}
			ack := func(tx driver.Tx, leases ...driver.Lease) (driver.SettleResult, error) {
				return f.drv.Ack(ctx, driver.AckParams{StreamID: f.stream.ID, Group: f.group, Now: f.now, Tx: tx, Leases: leases})
			}
			// Rolled back: nothing changes.
			res := step(pool.name+" ack rollback", false, func(tx driver.Tx) (driver.SettleResult, error) {
				return ack(tx, driver.Lease{ID: id[i], Token: "tok"}, driver.Lease{ID: id[i+1], Token: "tok"})
			})
			if len(res.Lost) != 0 || markers(pool.name+" ack rollback") != 0 {
				t.Fatalf("ack rolled back: %v", res)
			}
			if ex := f.exceptions(t); ex[id[i]].state != "leased" || ex[id[i+1]].state != "leased" {
				t.Fatalf("after an ack rolled back: %+v %+v; want both leased", ex[id[i]], ex[id[i+1]])
			}
			// Committed, with one lost lease: the others settle.
			res = step(pool.name+" ack commit", true, func(tx driver.Tx) (driver.SettleResult, error) {
				return ack(tx, driver.Lease{ID: id[i], Token: "tok"}, driver.Lease{ID: id[i+1], Token: "wrong"})
			})
			if !slices.Equal(res.Lost, []int64{id[i+1]}) || markers(pool.name+" ack commit") != 2 {
				t.Fatalf("ack committed: lost %v; want %d", res.Lost, id[i+1])
			}
			if ex := f.exceptions(t); ex[id[i]].state != "" || ex[id[i+1]].state != "leased" {
				t.Fatalf("after the ack: %+v %+v; want the first gone and the second leased", ex[id[i]], ex[id[i+1]])
			}
			// Fail: one (the one-statement path outside a transaction),
			// rolled back, then committed; then two committed.
			fail := func(tx driver.Tx, fs ...driver.Failure) (driver.SettleResult, error) {
				return f.drv.Fail(ctx, driver.FailParams{StreamID: f.stream.ID, Group: f.group, Now: f.now, Tx: tx, Failures: fs})
			}
			res = step(pool.name+" fail rollback", false, func(tx driver.Tx) (driver.SettleResult, error) {
				return fail(tx, driver.Failure{Lease: driver.Lease{ID: id[i+1], Token: "tok"}, Error: "boom", Dead: true})
			})
			if ex := f.exceptions(t); len(res.Lost) != 0 || ex[id[i+1]].state != "leased" {
				t.Fatalf("fail rolled back: %v, %+v", res, ex[id[i+1]])
			}
			res = step(pool.name+" fail commit", true, func(tx driver.Tx) (driver.SettleResult, error) {
				return fail(tx, driver.Failure{Lease: driver.Lease{ID: id[i+1], Token: "tok"}, Error: "boom", Dead: true},
					driver.Failure{Lease: driver.Lease{ID: id[i+2], Token: "tok"}, Error: "later", Due: f.now.Add(time.Minute)},
					driver.Failure{Lease: driver.Lease{ID: id[i+3], Token: "nope"}, Error: "lost"})
			})
			if !slices.Equal(res.Lost, []int64{id[i+3]}) {
				t.Fatalf("fail committed: lost %v; want %d", res.Lost, id[i+3])
			}
			ex := f.exceptions(t)
			if ex[id[i+1]].state != "dead" || ex[id[i+1]].err != "boom" || ex[id[i+2]].state != "delayed" || ex[id[i+3]].state != "leased" {
				t.Fatalf("after the fail: %+v %+v %+v", ex[id[i+1]], ex[id[i+2]], ex[id[i+3]])
			}
			dead, err := f.drv.ListDead(ctx, driver.ListDeadParams{StreamID: f.stream.ID, Group: f.group, AfterID: id[i], Limit: 1, History: true})
			if err != nil || len(dead) != 1 || len(dead[0].History) != 1 || dead[0].History[0].Error != "boom" || dead[0].History[0].Holder != "holder-tok" {
				t.Errorf("history of a failure in the caller's transaction: %+v, %v", dead, err)
			}
		})
	}
	// Nothing to settle, or another driver's transaction.
	tx, err := f.drv.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if res, err := f.drv.Ack(ctx, driver.AckParams{StreamID: f.stream.ID, Group: f.group, Now: f.now, Tx: mysql.Tx(tx)}); err != nil || len(res.Lost) != 0 {
		t.Errorf("ack of nothing in a transaction: %v, %v", res, err)
	}
	for name, err := range map[string]error{
		"ack": func() error {
			_, err := f.drv.Ack(ctx, driver.AckParams{StreamID: f.stream.ID, Group: f.group, Now: f.now, Tx: foreignTx{}, Leases: []driver.Lease{{ID: id[3], Token: "tok"}}})
			return err
		}(),
		"fail": func() error {
			_, err := f.drv.Fail(ctx, driver.FailParams{StreamID: f.stream.ID, Group: f.group, Now: f.now, Tx: foreignTx{}, Failures: []driver.Failure{{Lease: driver.Lease{ID: id[3], Token: "tok"}}}})
			return err
		}(),
		"ack of nothing": func() error {
			_, err := f.drv.Ack(ctx, driver.AckParams{StreamID: f.stream.ID, Group: f.group, Now: f.now, Tx: foreignTx{}})
			return err
		}(),
		"nil *sql.Tx": func() error {
			_, err := f.drv.Ack(ctx, driver.AckParams{StreamID: f.stream.ID, Group: f.group, Now: f.now, Tx: mysql.Tx(nil), Leases: []driver.Lease{{ID: id[3], Token: "tok"}}})
			return err
		}(),
	} {
		if !errors.Is(err, driver.ErrForeignTx) {
			t.Errorf("%s with another driver's transaction: %v; want ErrForeignTx", name, err)
		}
	}
	if got, ok := mysql.UnwrapTx(mysql.Tx(tx)); !ok || got != tx {
		t.Errorf("UnwrapTx: %v %v", got, ok)
	}
	if _, ok := mysql.UnwrapTx(foreignTx{}); ok {
		t.Error("UnwrapTx of another driver's transaction reports true")
	}
}

// mysqlDSN is the DSN of a fixture's database.
func mysqlDSN(t *testing.T, f *settleFixture) string {
	_, cfg := adminDB(t)
	c := cfg.Clone()
	c.DBName = f.name
	return c.FormatDSN()
}

func tableExists(t *testing.T, dsn, table string) bool {
	t.Helper()
	db, _ := adminDB(t)
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?`, dbName(t, dsn), table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

func columnExists(t *testing.T, dsn, table, column string) bool {
	t.Helper()
	db, _ := adminDB(t)
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COLUMN_NAME = ?`,
		dbName(t, dsn), table, column).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// TestMigrationAPI: the migrations with their SQL, the list of what is
// applied, one migration up or down, the refusals, 0002 down and up again
// on a fresh database, 0004 down and up; and a tool that runs Up and
// Record itself gets a schema the driver accepts without migrating.
func TestMigrationAPI(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	drv := mysql.Open(dsn)
	defer drv.Close()
	ctx := testCtx(t)
	ms, err := drv.Migrations()
	if err != nil || len(ms) < 10 {
		t.Fatalf("migrations: %d, %v", len(ms), err)
	}
	for i, m := range ms {
		wantDown := m.Version == 2 || m.Version >= 4
		if m.Version != i+1 || m.Up == "" || (m.Down != "") != wantDown || !strings.Contains(m.Record, "sqlstreams_migration") {
			t.Errorf("migration %d: %s, down %v, record %q", i, m.Name, m.Down != "", m.Record)
		}
	}
	applied := func() []int {
		t.Helper()
		got, err := drv.AppliedMigrations(ctx, driver.AppliedMigrationsParams{})
		if err != nil {
			t.Fatal(err)
		}
		var vs []int
		for _, a := range got {
			vs = append(vs, a.Version)
			if a.AppliedAt.Location() != time.UTC || time.Since(a.AppliedAt).Abs() > time.Minute {
				t.Errorf("migration %d applied at %v; want about now, UTC", a.Version, a.AppliedAt)
			}
		}
		return vs
	}
	if got := applied(); got != nil {
		t.Fatalf("applied on an empty database: %v", got)
	}
	apply := func(v int, down bool) error {
		return drv.ApplyMigration(ctx, driver.ApplyMigrationParams{Version: v, Down: down})
	}
	refused := func(what string, err error, words string) {
		t.Helper()
		var de *driver.Error
		if !errors.Is(err, driver.ErrDatabase) || !errors.As(err, &de) || de.Advice == "" || !strings.Contains(err.Error(), words) {
			t.Errorf("%s: %v; want ErrDatabase with advice, saying %q", what, err, words)
		}
	}
	refused("up 2 before 1", apply(2, false), "needs 0001_init.sql first")
	refused("down 2 not applied", apply(2, true), "is not applied")
	refused("unknown version", apply(99, false), "no migration 99")
	if err := apply(1, false); err != nil {
		t.Fatal(err)
	}
	refused("up 1 again", apply(1, false), "already applied")
	refused("down 1", apply(1, true), "has no down migration")
	if err := apply(2, false); err != nil {
		t.Fatal(err)
	}
	if got := applied(); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("applied: %v", got)
	}
	// 0002 down and up again.
	if err := apply(2, true); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"registry_setting", "schema_revision", "schema_reader"} {
		if tableExists(t, dsn, table) {
			t.Errorf("table %s left after 0002 down", table)
		}
	}
	if !tableExists(t, dsn, "stream_config") {
		t.Error("0002 down dropped a table of 0001")
	}
	if got := applied(); !slices.Equal(got, []int{1}) {
		t.Fatalf("applied after 0002 down: %v", got)
	}
	refused("up 3 after 0002 down", apply(3, false), "needs 0002_registry.sql first")
	if err := apply(2, false); err != nil {
		t.Fatal(err)
	}
	if !tableExists(t, dsn, "schema_revision") {
		t.Error("0002 up again did not create schema_revision")
	}
	// The rest with Migrate; 0002 down is refused while later ones are
	// applied; 0004 down and up.
	if err := drv.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	all := make([]int, len(ms))
	for i := range all {
		all[i] = i + 1
	}
	if got := applied(); !slices.Equal(got, all) {
		t.Fatalf("applied after Migrate: %v", got)
	}
	// The migrations after 0007 go down first, newest first (API_Migrations
	// takes each down and up); then the refusals below are about 1-7.
	refused("down 7 under later ones", apply(7, true), "later migrations applied (versions 8, ")
	for v := len(ms); v > 7; v-- {
		if err := apply(v, true); err != nil {
			t.Fatalf("migration %d down: %v", v, err)
		}
	}
	refused("down 2 under 3 to 7", apply(2, true), "later migrations applied (versions 3, 4, 5, 6, 7)")
	refused("down 4 under 5, 6 and 7", apply(4, true), "later migrations applied (versions 5, 6, 7)")
	refused("down 6 under 7", apply(6, true), "later migrations applied (versions 7)")
	// 0007 down drops the batches (TestBatchLeasesDown: with their leases
	// kept); up puts the table back.
	if err := apply(7, true); err != nil {
		t.Fatal(err)
	}
	if tableExists(t, dsn, "delivery_batch") {
		t.Error("0007 down left delivery_batch")
	}
	if err := apply(7, false); err != nil {
		t.Fatal(err)
	}
	if !tableExists(t, dsn, "delivery_batch") {
		t.Error("0007 up again did not create delivery_batch")
	}
	if err := apply(7, true); err != nil {
		t.Fatal(err)
	}
	refused("down 5 under 6", apply(5, true), "later migrations applied (versions 6)")
	// 0006 down drops the row counts; up puts them back.
	if err := apply(6, true); err != nil {
		t.Fatal(err)
	}
	if tableExists(t, dsn, "row_count") || tableExists(t, dsn, "row_count_mark") {
		t.Error("0006 down left row_count or row_count_mark")
	}
	if err := apply(6, false); err != nil {
		t.Fatal(err)
	}
	if !tableExists(t, dsn, "row_count") || !tableExists(t, dsn, "row_count_mark") {
		t.Error("0006 up again did not create row_count and row_count_mark")
	}
	if err := apply(6, true); err != nil {
		t.Fatal(err)
	}
	// 0005 down drops the schema ids and references; up puts them back.
	if err := apply(5, true); err != nil {
		t.Fatal(err)
	}
	if tableExists(t, dsn, "schema_id") || tableExists(t, dsn, "schema_reference") || !tableExists(t, dsn, "schema_revision") {
		t.Error("0005 down: schema_id or schema_reference left, or schema_revision dropped")
	}
	if err := apply(5, false); err != nil {
		t.Fatal(err)
	}
	if !tableExists(t, dsn, "schema_id") || !tableExists(t, dsn, "schema_reference") {
		t.Error("0005 up again did not create schema_id and schema_reference")
	}
	if err := apply(5, true); err != nil {
		t.Fatal(err)
	}
	if err := apply(4, true); err != nil {
		t.Fatal(err)
	}
	if columnExists(t, dsn, "delivery_exception", "failures") {
		t.Error("0004 down left the failures column")
	}
	if got := applied(); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("applied after 0004 down: %v", got)
	}
	if err := apply(4, false); err != nil {
		t.Fatal(err)
	}
	if !columnExists(t, dsn, "delivery_exception", "failures") {
		t.Error("0004 up again did not add the failures column")
	}
	if err := drv.Migrate(ctx); err != nil {
		t.Fatalf("Migrate with nothing pending: %v", err)
	}

	// A tool that runs the SQL itself, statement by statement as most do
	// (multiStatements here), with the directives left as comments.
	t.Run("own tool", func(t *testing.T) {
		dsn := newDatabase(t)
		cfg, _ := gomysql.ParseDSN(dsn)
		cfg.MultiStatements = true
		db, err := sql.Open("mysql", cfg.FormatDSN())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for _, m := range ms {
			if _, err := db.ExecContext(ctx, m.Up); err != nil {
				t.Fatalf("%s: %v", m.Name, err)
			}
			if _, err := db.ExecContext(ctx, m.Record); err != nil {
				t.Fatalf("%s record: %v", m.Name, err)
			}
		}
		c, err := sqlstreams.Open(ctx, mysql.Open(dsn), sqlstreams.WithoutMigrate(), sqlstreams.WithMaintenanceInterval(0))
		if err != nil {
			t.Fatalf("open without migrating on a schema a tool made: %v", err)
		}
		defer c.Close()
		p, err := c.Stream[event]("tool").Producer().Register(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		id, err := p.Produce(ctx, event{N: 1})
		if err != nil {
			t.Fatal(err)
		}
		cons, err := c.Stream[event]("tool").Consumer("g").Register(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := drainIDs(t, cons); !slices.Equal(got, []int64{id}) {
			t.Errorf("consumed %v; want [%d]", got, id)
		}
		// The server was learned without Migrate.
		if !mysql.IsMariaDB(c.Driver().(*mysql.Driver)) && mysql.IsMariaDB(drv) {
			t.Error("a driver opened without Migrate did not find out it talks to MariaDB")
		}
	})
}

// TestCheckPrivileges: a user that cannot create or drop tables in its
// database is refused with the GRANT to run, and accepted once it can,
// whether the privilege is the user's own or comes through a role.
func TestCheckPrivileges(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	name := dbName(t, dsn)
	admin, cfg := adminDB(t)
	ctx := testCtx(t)
	if err := mysql.Open(dsn).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	user, role, password := uniqueName("sqls_u_"), uniqueName("sqls_r_"), uniqueName("pw")
	host := "%"
	exec := func(stmt string) {
		t.Helper()
		if _, err := admin.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	exec(fmt.Sprintf("CREATE USER '%s'@'%s' IDENTIFIED BY '%s'", user, host, password))
	t.Cleanup(func() {
		if _, err := admin.Exec(fmt.Sprintf("DROP USER IF EXISTS '%s'@'%s'", user, host)); err != nil {
			t.Errorf("drop user %s: %v", user, err)
		}
	})
	exec(fmt.Sprintf("GRANT SELECT, INSERT, UPDATE, DELETE ON `%s`.* TO '%s'@'%s'", name, user, host))
	c := cfg.Clone()
	c.User, c.Passwd, c.DBName = user, password, name
	userDSN := c.FormatDSN()
	check := func() error {
		d := mysql.Open(userDSN)
		defer d.Close()
		return d.CheckPrivileges(ctx, driver.CheckPrivilegesParams{})
	}
	missing := func(what string, err error, privileges string) {
		t.Helper()
		var de *driver.Error
		if !errors.Is(err, driver.ErrDatabase) || !errors.As(err, &de) || !strings.Contains(err.Error(), "lacks the "+privileges+" privilege") ||
			!strings.Contains(de.Advice, "GRANT") || !strings.Contains(de.Advice, name) || !strings.Contains(de.Advice, user) {
			t.Errorf("%s: %v; want ErrDatabase naming %s with the GRANT to run", what, err, privileges)
		}
		var me *gomysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1142 {
			t.Errorf("%s: the server's refusal is not inside: %v", what, err)
		}
	}
	probes := func(want int64) error {
		t.Helper()
		d := mysql.Open(userDSN)
		defer d.Close()
		err := d.CheckPrivileges(ctx, driver.CheckPrivilegesParams{})
		if got := mysql.PrivilegeProbes(d); got != want {
			t.Errorf("the check asked the server with DDL %d times; want %d", got, want)
		}
		return err
	}
	missing("no CREATE or DROP", probes(1), "CREATE and DROP")
	// An administrator needs no probe.
	root := mysql.Open(dsn)
	defer root.Close()
	if err := root.CheckPrivileges(ctx, driver.CheckPrivilegesParams{}); err != nil || mysql.PrivilegeProbes(root) != 0 {
		t.Errorf("the administrator's check: %v, %d probes; want none", err, mysql.PrivilegeProbes(root))
	}
	// A pattern grant counts only where no grant names the database
	// itself (the server takes the most specific): the user's grant on
	// exactly this database (SELECT...) wins over CREATE, DROP on a pattern.
	pattern := strings.NewReplacer("_", `\_`).Replace(name[:len(name)-2]) + "%"
	exec(fmt.Sprintf("GRANT CREATE, DROP ON `%s`.* TO '%s'@'%s'", pattern, user, host))
	missing("CREATE and DROP on a pattern only", probes(1), "CREATE and DROP")
	exec(fmt.Sprintf("REVOKE SELECT, INSERT, UPDATE, DELETE ON `%s`.* FROM '%s'@'%s'", name, user, host))
	exec(fmt.Sprintf("GRANT SELECT, INSERT, UPDATE, DELETE ON `%s`.* TO '%s'@'%s'", pattern, user, host))
	if err := probes(1); err != nil {
		t.Errorf("with every privilege on a pattern: %v", err)
	}
	exec(fmt.Sprintf("REVOKE ALL PRIVILEGES ON `%s`.* FROM '%s'@'%s'", pattern, user, host))
	exec(fmt.Sprintf("GRANT SELECT, INSERT, UPDATE, DELETE ON `%s`.* TO '%s'@'%s'", name, user, host))
	// sqlstreams.Open checks too (the schema is already migrated).
	if _, err := sqlstreams.Open(ctx, mysql.Open(userDSN), sqlstreams.WithoutMigrate(), sqlstreams.WithMaintenanceInterval(0)); !errors.Is(err, sqlstreams.ErrDatabase) {
		t.Errorf("sqlstreams.Open as a user without CREATE: %v; want ErrDatabase", err)
	}
	exec(fmt.Sprintf("GRANT CREATE ON `%s`.* TO '%s'@'%s'", name, user, host))
	missing("no DROP", check(), "DROP")
	exec(fmt.Sprintf("GRANT DROP ON `%s`.* TO '%s'@'%s'", name, user, host))
	if err := probes(0); err != nil {
		t.Errorf("with CREATE and DROP: %v", err)
	}
	var tables int
	if err := admin.QueryRow(`SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME LIKE 'sqlstreams\_privilege%'`, name).Scan(&tables); err != nil || tables != 0 {
		t.Errorf("the check left %d tables (%v)", tables, err)
	}
	// Through a role (MariaDB and MySQL 8 both have roles; the default
	// role is active at login).
	exec(fmt.Sprintf("REVOKE CREATE, DROP ON `%s`.* FROM '%s'@'%s'", name, user, host))
	missing("revoked", check(), "CREATE and DROP")
	exec("CREATE ROLE " + role)
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP ROLE IF EXISTS " + role); err != nil {
			t.Errorf("drop role %s: %v", role, err)
		}
	})
	exec(fmt.Sprintf("GRANT CREATE, DROP ON `%s`.* TO %s", name, role))
	exec(fmt.Sprintf("GRANT %s TO '%s'@'%s'", role, user, host))
	exec(fmt.Sprintf("SET DEFAULT ROLE %s FOR '%s'@'%s'", role, user, host))
	if err := probes(1); err != nil {
		t.Errorf("with CREATE and DROP through a role: %v", err)
	}
	// The whole client works as that user.
	cl, err := sqlstreams.Open(ctx, mysql.Open(userDSN), sqlstreams.WithoutMigrate(), sqlstreams.WithMaintenanceInterval(0))
	if err != nil {
		t.Fatalf("open as the user: %v", err)
	}
	defer cl.Close()
	if _, err := cl.Stream[event]("priv").Producer().Register(ctx, nil); err != nil {
		t.Errorf("create a stream as the user: %v", err)
	}
	if err := cl.Stream[event]("priv").Destroy(ctx); err != nil {
		t.Errorf("destroy a stream as the user: %v", err)
	}
}

// TestResetNamespace: a database a test used (streams, groups,
// deliveries, registry rows, a table of its own, a migration undone) is
// made exactly like a freshly migrated one, and works; a database whose
// migration records name a version the driver does not have is refused.
func TestResetNamespace(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	ctx := testCtx(t)
	c := openClient(t, mysql.Open(dsn))
	p, err := c.Stream[event]("used").Producer().Register(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Produce(ctx, event{N: 1}); err != nil {
		t.Fatal(err)
	}
	cons, err := c.Stream[event]("used").Consumer("g").Register(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ds, err := cons.Claim(ctx, 10); err != nil || len(ds) != 1 {
		t.Fatalf("claim: %v %v", ds, err)
	}
	drv := c.Driver().(*mysql.Driver)
	for _, q := range []string{"CREATE TABLE conformance_marker (k VARCHAR(64))", "INSERT INTO conformance_marker VALUES ('x')", "CREATE VIEW v AS SELECT 1 AS one"} {
		if err := mysqltest.ExecTx(ctx, drv, nil, q); err != nil {
			t.Fatal(err)
		}
	}
	ms, err := drv.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	for i := len(ms) - 1; i >= 0 && ms[i].Version >= 4; i-- {
		if err := drv.ApplyMigration(ctx, driver.ApplyMigrationParams{Version: ms[i].Version, Down: true}); err != nil {
			t.Fatalf("migration %d down: %v", ms[i].Version, err)
		}
	}
	c.Close()
	if err := mysqltest.ResetNamespace(dsn); err != nil {
		t.Fatalf("reset: %v", err)
	}
	if tableExists(t, dsn, "conformance_marker") || tableExists(t, dsn, "v") || !columnExists(t, dsn, "delivery_exception", "failures") {
		t.Error("the reset left the test's tables or did not restore the schema")
	}
	c = openClient(t, mysql.Open(dsn))
	if infos, err := c.Streams(ctx); err != nil || len(infos) != 0 {
		t.Errorf("streams after the reset: %v %v", infos, err)
	}
	p, err = c.Stream[event]("used").Producer().Register(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := p.Produce(ctx, event{N: 2})
	if err != nil {
		t.Fatal(err)
	}
	cons, err = c.Stream[event]("used").Consumer("g").Register(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := drainIDs(t, cons); !slices.Equal(got, []int64{id}) {
		t.Errorf("after the reset: consumed %v; want [%d]", got, id)
	}
	c.Close()
	// ExecTx refuses DDL inside a transaction (MySQL would commit it).
	drv = mysql.Open(dsn)
	defer drv.Close()
	tx, err := drv.DB().BeginTx(ctx, nil)
	if err == nil {
		if err := mysqltest.ExecTx(ctx, drv, mysql.Tx(tx), "CREATE TABLE IF NOT EXISTS conformance_marker (k VARCHAR(64))"); err == nil {
			t.Error("ExecTx ran DDL inside a transaction")
		}
		tx.Rollback()
	}
	if n, err := mysqltest.QueryInt(ctx, drv, "SELECT COUNT(*) FROM stream_config"); err != nil || n != 1 {
		t.Errorf("QueryInt: %d %v", n, err)
	}
	db, _ := adminDB(t)
	if _, err := db.Exec("INSERT INTO " + dbName(t, dsn) + ".sqlstreams_migration (version, applied_at) VALUES (99, UTC_TIMESTAMP(6))"); err != nil {
		t.Fatal(err)
	}
	if err := mysqltest.ResetNamespace(dsn); err == nil || !strings.Contains(err.Error(), "migrations recorded") {
		t.Errorf("reset with a record of an unknown migration: %v; want a refusal", err)
	}
}
