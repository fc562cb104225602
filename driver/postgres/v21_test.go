package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/postgres"
	"github.com/sqlstreams/sqlstreams/driver/postgres/postgrestest"
)

// testMode is a way of opening the driver that tests run under.
type testMode struct {
	name string
	opts []postgres.Option
}

// execModes are pgx's default exec mode and the simple protocol (as behind
// PgBouncer).
var execModes = []testMode{{"default", nil}, {"simple-protocol", []postgres.Option{postgres.WithSimpleProtocol()}}}

// eachMode runs test in execModes.
func eachMode(t *testing.T, test func(*testing.T, ...postgres.Option)) {
	runModes(t, execModes, test)
}

func runModes(t *testing.T, modes []testMode, test func(*testing.T, ...postgres.Option)) {
	t.Parallel()
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			test(t, mode.opts...)
		})
	}
}

// fixture is a migrated schema with one stream, driven through the driver
// itself, with times the test chooses.
type fixture struct {
	t      testing.TB
	ns     string
	drv    *postgres.Driver
	stream driver.StreamConfig
	now    time.Time
}

func newFixture(t testing.TB, partitions int, opts ...postgres.Option) *fixture {
	t.Helper()
	ns := newSchema(t, nil)
	drv := postgres.Open(ns, opts...)
	t.Cleanup(func() { _ = drv.Close() })
	if err := drv.Migrate(tctx(t)); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	stream, err := drv.CreateStream(tctx(t), driver.CreateStreamParams{Config: driver.StreamConfig{Name: "s", Partitions: partitions, CreatedAt: now}})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, ns: ns, drv: drv, stream: stream, now: now}
}

func (f *fixture) group(name string, g driver.GroupConfig) {
	f.t.Helper()
	g.StreamID, g.Name, g.CreatedAt = f.stream.ID, name, f.now
	if g.SchemaVersion == 0 && !g.AllVersions {
		g.SchemaVersion = 1
	}
	if _, err := f.drv.RegisterGroup(tctx(f.t), driver.RegisterGroupParams{Group: g}); err != nil {
		f.t.Fatal(err)
	}
}

// appendRows appends rows and returns their ids.
func (f *fixture) appendRows(rows ...driver.AppendRow) []int64 {
	f.t.Helper()
	for i := range rows {
		if rows[i].SchemaVersion == 0 {
			rows[i].SchemaVersion = 1
		}
		if rows[i].Payload == nil {
			rows[i].Payload = []byte(fmt.Sprintf(`{"n":%d}`, i))
		}
		rows[i].ProducedAt = f.now
	}
	ids, err := f.drv.Append(tctx(f.t), driver.AppendParams{Stream: f.stream, Rows: rows})
	if err != nil {
		f.t.Fatal(err)
	}
	return ids
}

// appendN appends n rows to a partition.
func (f *fixture) appendN(part, n int) []int64 {
	rows := make([]driver.AppendRow, n)
	for i := range rows {
		rows[i].Partition = part
	}
	return f.appendRows(rows...)
}

type claimOpt func(*driver.ClaimParams)

func (f *fixture) claim(group, holder string, limit int, at time.Time, lease time.Duration, opts ...claimOpt) (driver.ClaimResult, string) {
	f.t.Helper()
	token := randomName("tok-")
	p := driver.ClaimParams{Stream: f.stream, Group: group, Member: driver.Member{SchemaVersion: 1}, Limit: limit, Token: token,
		Holder: holder, Now: at, LeaseUntil: at.Add(lease)}
	for _, o := range opts {
		o(&p)
	}
	res, err := f.drv.Claim(tctx(f.t), p)
	if err != nil {
		f.t.Fatal(err)
	}
	return res, token
}

// claimAll claims n rows for group as holder "h" at f.now, leased for
// lease, and returns the claim and its leases; the test fails unless all n
// were claimed.
func (f *fixture) claimAll(group string, n int, lease time.Duration, opts ...claimOpt) (driver.ClaimResult, []driver.Lease) {
	f.t.Helper()
	res, tok := f.claim(group, "h", n, f.now, lease, opts...)
	if len(res.Deliveries) != n {
		f.t.Fatalf("claimed %d of %d", len(res.Deliveries), n)
	}
	return res, leases(res.Deliveries, tok)
}

func ids(ds []driver.Delivery) []int64 {
	var out []int64
	for _, d := range ds {
		out = append(out, d.ID)
	}
	return out
}

func leases(ds []driver.Delivery, token string) []driver.Lease {
	var out []driver.Lease
	for _, d := range ds {
		out = append(out, driver.Lease{ID: d.ID, Token: token})
	}
	return out
}

// exception reads a delivery's exception row ("gone" when it has none), or
// the leased row its batch stands for.
func (f *fixture) exception(group string, id int64) (state string, attempt int, token string) {
	f.t.Helper()
	var tok *string
	var a int32
	err := f.drv.Pool().QueryRow(tctx(f.t), `SELECT state, attempt, lease_token FROM delivery_exception WHERE stream_id = $1 AND group_name = $2 AND msg_id = $3
		UNION ALL SELECT 'leased', 1, lease_token FROM delivery_batch WHERE stream_id = $1 AND group_name = $2 AND $3 = ANY(ids)`,
		f.stream.ID, group, id).Scan(&state, &a, &tok)
	if errors.Is(err, pgx.ErrNoRows) {
		return "gone", 0, ""
	}
	if err != nil {
		f.t.Fatal(err)
	}
	if tok != nil {
		token = *tok
	}
	return state, int(a), token
}

func (f *fixture) cursor(group string, part int) int64 {
	f.t.Helper()
	var pos int64
	if err := f.drv.Pool().QueryRow(tctx(f.t), `SELECT position FROM group_cursor WHERE stream_id = $1 AND group_name = $2 AND partition = $3`,
		f.stream.ID, group, part).Scan(&pos); err != nil {
		f.t.Fatal(err)
	}
	return pos
}

// Health counts unread rows per partition and leases per holder, with the
// latest expiry of each holder's leases, in one snapshot.
func TestHealthHoldersAndPartitions(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 3)
	f.group("g", driver.GroupConfig{})
	f.group("h", driver.GroupConfig{})
	f.appendN(0, 4)
	f.appendN(2, 3)
	f.appendRows(driver.AppendRow{Partition: 2, RoutingKey: "eu"})
	a, _ := f.claim("g", "pod-a:1", 2, f.now, time.Minute)
	b, _ := f.claim("g", "pod-b:2", 3, f.now, time.Hour)
	c, _ := f.claim("g", "pod-a:1", 1, f.now.Add(time.Second), 10*time.Minute)
	if len(a.Deliveries) != 2 || len(b.Deliveries) != 3 || len(c.Deliveries) != 1 {
		t.Fatalf("claims: %v %v %v", ids(a.Deliveries), ids(b.Deliveries), ids(c.Deliveries))
	}
	st, err := f.drv.Health(tctx(t), driver.HealthParams{StreamID: f.stream.ID, Now: f.now})
	if err != nil {
		t.Fatal(err)
	}
	want := []driver.HolderCount{
		{Group: "g", Holder: "pod-a:1", Leases: 3, Until: f.now.Add(time.Second + 10*time.Minute).Truncate(time.Microsecond)},
		{Group: "g", Holder: "pod-b:2", Leases: 3, Until: f.now.Add(time.Hour).Truncate(time.Microsecond)},
	}
	if !slices.Equal(st.Holders, want) {
		t.Errorf("holders %+v; want %+v", st.Holders, want)
	}
	// Per (group, partition, version, routing key): g has read 6 of the 8
	// rows, h none.
	unread := map[string]int64{}
	for _, u := range st.Unread {
		unread[fmt.Sprintf("%s/%d/%d/%s", u.Group, u.Partition, u.Version, u.RoutingKey)] = u.Rows
	}
	total := func(group string) (n int64) {
		for _, u := range st.Unread {
			if u.Group == group {
				n += u.Rows
			}
		}
		return n
	}
	if unread["h/0/1/"] != 4 || unread["h/2/1/"] != 3 || unread["h/2/1/eu"] != 1 || unread["h/1/1/"] != 0 || total("h") != 8 || total("g") != 2 {
		t.Errorf("unread %v", unread)
	}
}

// Each failure goes to the delivery's history with its attempt, holder and
// time, its error cut to MaxHistoryError bytes at a rune boundary; burying
// an expired lease on its last attempt adds one too; replay keeps it.
func TestFailureHistory(t *testing.T) { eachMode(t, testFailureHistory) }

func testFailureHistory(t *testing.T, opts ...postgres.Option) {
	f := newFixture(t, 1, opts...)
	f.group("g", driver.GroupConfig{})
	id := f.appendN(0, 1)[0]
	other := f.appendN(0, 1)[0]
	long := "é" + strings.Repeat("ü", driver.MaxHistoryError) // 2 bytes a rune, a rune across the bound
	t1, t2, t3 := f.now, f.now.Add(time.Minute), f.now.Add(2*time.Minute)

	r, tok := f.claim("g", "pod-a:1", 1, t1, time.Minute)
	if !slices.Equal(ids(r.Deliveries), []int64{id}) {
		t.Fatalf("claim: %v", ids(r.Deliveries))
	}
	fail := func(at time.Time, tok, msg string, dead bool) {
		t.Helper()
		res, err := f.drv.Fail(tctx(t), driver.FailParams{StreamID: f.stream.ID, Group: "g", Now: at,
			Failures: []driver.Failure{{Lease: driver.Lease{ID: id, Token: tok}, Error: msg, Dead: dead, Due: at}}})
		if err != nil || len(res.Lost) != 0 {
			t.Fatalf("fail: %v, %v", res.Lost, err)
		}
	}
	fail(t1, tok, "first", false)
	r, tok = f.claim("g", "pod-b:2", 1, t2, time.Minute)
	if !slices.Equal(ids(r.Deliveries), []int64{id}) || r.Deliveries[0].Attempt != 2 {
		t.Fatalf("second claim: %+v", r.Deliveries)
	}
	fail(t2, tok, long, true)

	dead, err := f.drv.ListDead(tctx(t), driver.ListDeadParams{StreamID: f.stream.ID, Group: "g", Limit: 10})
	if err != nil || len(dead) != 1 || dead[0].Holder != "pod-b:2" || dead[0].History != nil || dead[0].Error != long {
		t.Fatalf("list dead without history: %+v, %v", dead, err)
	}
	dead, err = f.drv.ListDead(tctx(t), driver.ListDeadParams{StreamID: f.stream.ID, Group: "g", Limit: 10, History: true})
	if err != nil || len(dead) != 1 {
		t.Fatalf("list dead: %+v, %v", dead, err)
	}
	h := dead[0].History
	if len(h) != 2 {
		t.Fatalf("history %+v; want two entries", h)
	}
	if h[0] != (driver.FailureRecord{Attempt: 1, Error: "first", At: t1.Truncate(time.Microsecond), Holder: "pod-a:1"}) {
		t.Errorf("first entry %+v", h[0])
	}
	if h[1].Attempt != 2 || h[1].Holder != "pod-b:2" || !h[1].At.Equal(t2.Truncate(time.Microsecond)) || h[1].At.Location() != time.UTC {
		t.Errorf("second entry %+v", h[1])
	}
	if e := h[1].Error; len(e) > driver.MaxHistoryError || len(e) < driver.MaxHistoryError-1 || !utf8.ValidString(e) || !strings.HasPrefix(long, e) {
		t.Errorf("second entry's error is %d bytes (valid UTF-8: %v); want the error cut to at most %d at a rune boundary",
			len(e), utf8.ValidString(e), driver.MaxHistoryError)
	}

	// Replay keeps the history; an expired lease on the last attempt is
	// buried with the claim's LastError and the lease's holder.
	if n, err := f.drv.Replay(tctx(t), driver.ReplayParams{StreamID: f.stream.ID, Group: "g", IDs: []int64{id}, Now: t3}); err != nil || n != 1 {
		t.Fatalf("replay: %d, %v", n, err)
	}
	if r, _ = f.claim("g", "pod-c:3", 1, t3, time.Second); !slices.Equal(ids(r.Deliveries), []int64{id}) || r.Deliveries[0].Attempt != 1 {
		t.Fatalf("claim after replay: %+v", r.Deliveries)
	}
	later := t3.Add(time.Minute)
	r, tok = f.claim("g", "pod-d:4", 1, later, time.Minute, func(p *driver.ClaimParams) { p.MaxAttempts, p.LastError = 1, "lease expired" })
	if !slices.Equal(ids(r.Deliveries), []int64{other}) {
		t.Fatalf("claim burying the expired lease on its last attempt: %v; want only the next row %d", ids(r.Deliveries), other)
	}
	dead, err = f.drv.ListDead(tctx(t), driver.ListDeadParams{StreamID: f.stream.ID, Group: "g", Limit: 10, History: true})
	if err != nil || len(dead) != 1 || len(dead[0].History) != 3 {
		t.Fatalf("after burying: %+v, %v", dead, err)
	}
	if got := dead[0].History[2]; got != (driver.FailureRecord{Attempt: 1, Error: "lease expired", At: later.Truncate(time.Microsecond), Holder: "pod-c:3"}) {
		t.Errorf("buried entry %+v", got)
	}
	if dead[0].Holder != "pod-c:3" || dead[0].Error != "lease expired" {
		t.Errorf("buried dead letter: holder %q error %q", dead[0].Holder, dead[0].Error)
	}

	// Error text PostgreSQL text cannot hold (NUL, invalid UTF-8) is stored
	// with U+FFFD in their place rather than failing the settle.
	res, err := f.drv.Fail(tctx(t), driver.FailParams{StreamID: f.stream.ID, Group: "g", Now: later,
		Failures: []driver.Failure{{Lease: driver.Lease{ID: other, Token: tok}, Error: "a\x00b\xffc", Dead: true}}})
	if err != nil || len(res.Lost) != 0 {
		t.Fatalf("fail with NUL and invalid UTF-8: %v, %v", res.Lost, err)
	}
	dead, err = f.drv.ListDead(tctx(t), driver.ListDeadParams{StreamID: f.stream.ID, Group: "g", AfterID: id, Limit: 10, History: true})
	if err != nil || len(dead) != 1 || dead[0].Error != "a\uFFFDb\uFFFDc" || len(dead[0].History) != 1 || dead[0].History[0].Error != "a\uFFFDb\uFFFDc" {
		t.Errorf("dead letter with unstorable error text: %+v, %v", dead, err)
	}
}

// SetCursors moves cursors under their locks; a claim after moving one back
// delivers the acked rows again and passes over rows the group holds an
// exception for (leased, delayed, dead or deferred), leaving those as they
// are, and still fills its limit.
func TestSetCursors(t *testing.T) { eachMode(t, testSetCursors) }

func testSetCursors(t *testing.T, opts ...postgres.Option) {
	f := newFixture(t, 2, append(opts, postgres.WithLockTimeout(300*time.Millisecond))...)
	f.group("g", driver.GroupConfig{AllVersions: true})
	all := f.appendN(0, 6)
	v2 := f.appendRows(driver.AppendRow{Partition: 0, SchemaVersion: 2})[0]
	raw := func(p *driver.ClaimParams) { p.Member, p.Decodes = driver.Member{AllVersions: true}, []int{1} }
	r, tok := f.claim("g", "h", 10, f.now, time.Hour, raw)
	if !slices.Equal(ids(r.Deliveries), all) || r.Deferred != 1 {
		t.Fatalf("claim: %v deferred %d", ids(r.Deliveries), r.Deferred)
	}
	ack := func(tok string, ids ...int64) {
		t.Helper()
		var ls []driver.Lease
		for _, id := range ids {
			ls = append(ls, driver.Lease{ID: id, Token: tok})
		}
		if res, err := f.drv.Ack(tctx(t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Leases: ls, Now: f.now}); err != nil || len(res.Lost) != 0 {
			t.Fatalf("ack %v: %v, %v", ids, res.Lost, err)
		}
	}
	// 0, 1 and 5 acked; 2 dead; 3 leased; 4 delayed for an hour.
	ack(tok, all[0], all[1], all[5])
	if res, err := f.drv.Fail(tctx(t), driver.FailParams{StreamID: f.stream.ID, Group: "g", Now: f.now, Failures: []driver.Failure{
		{Lease: driver.Lease{ID: all[2], Token: tok}, Error: "x", Dead: true},
		{Lease: driver.Lease{ID: all[4], Token: tok}, Error: "y", Due: f.now.Add(time.Hour)}}}); err != nil || len(res.Lost) != 0 {
		t.Fatalf("fail: %v, %v", res.Lost, err)
	}
	if err := f.drv.SetCursors(tctx(t), driver.SetCursorsParams{StreamID: f.stream.ID, Group: "g", Positions: map[int]int64{0: 0, 1: 0}}); err != nil {
		t.Fatal(err)
	}
	if c := f.cursor("g", 0); c != 0 {
		t.Fatalf("cursor %d after SetCursors; want 0", c)
	}
	// Limit 2: the first two rows come, then the claim passes over 2, 3, 4
	// and the deferred v2 row and finds none.
	again, tok2 := f.claim("g", "h2", 2, f.now, time.Hour, raw)
	if !slices.Equal(ids(again.Deliveries), []int64{all[0], all[1]}) || again.Deliveries[0].Attempt != 1 {
		t.Fatalf("after moving back: %+v", again.Deliveries)
	}
	again2, _ := f.claim("g", "h2", 10, f.now, time.Hour, raw)
	if !slices.Equal(ids(again2.Deliveries), []int64{all[5]}) || again2.Deferred != 0 {
		t.Fatalf("second claim after moving back: %v deferred %d; want only %d", ids(again2.Deliveries), again2.Deferred, all[5])
	}
	if c := f.cursor("g", 0); c != v2 {
		t.Errorf("cursor %d; want past every row (%d)", c, v2)
	}
	for _, w := range []struct {
		id      int64
		state   string
		attempt int
		token   string
	}{{all[2], "dead", 1, ""}, {all[3], "leased", 1, tok}, {all[4], "delayed", 1, ""}, {v2, "delayed", 0, ""}, {all[0], "leased", 1, tok2}} {
		if st, a, tk := f.exception("g", w.id); st != w.state || a != w.attempt || tk != w.token {
			t.Errorf("row %d: %s attempt %d token %q; want %s attempt %d token %q", w.id, st, a, tk, w.state, w.attempt, w.token)
		}
	}
	ack(tok, all[3]) // the original lease still holds

	// When the first rows a claim finds are all passed over, it looks
	// further and still fills its limit.
	f2 := newFixture(t, 1, opts...)
	f2.group("k", driver.GroupConfig{})
	rows := f2.appendN(0, 8)
	r2, tok3 := f2.claim("k", "h", 8, f2.now, time.Hour)
	if !slices.Equal(ids(r2.Deliveries), rows) {
		t.Fatalf("claim: %v", ids(r2.Deliveries))
	}
	if _, err := f2.drv.Ack(tctx(t), driver.AckParams{StreamID: f2.stream.ID, Group: "k", Leases: leases(r2.Deliveries[3:], tok3), Now: f2.now}); err != nil {
		t.Fatal(err)
	}
	if err := f2.drv.SetCursors(tctx(t), driver.SetCursorsParams{StreamID: f2.stream.ID, Group: "k", Positions: map[int]int64{0: 0}}); err != nil {
		t.Fatal(err)
	}
	if r2, _ = f2.claim("k", "h", 3, f2.now, time.Hour); !slices.Equal(ids(r2.Deliveries), rows[3:6]) {
		t.Errorf("limit 3 after passing over the 3 leased rows: %v; want %v", ids(r2.Deliveries), rows[3:6])
	}

	// A missing group or cursor; a cursor another transaction holds.
	for _, p := range []driver.SetCursorsParams{{StreamID: f.stream.ID, Group: "nope", Positions: map[int]int64{0: 1}},
		{StreamID: f.stream.ID, Group: "g", Positions: map[int]int64{2: 1}}, {StreamID: f.stream.ID + 1, Group: "g"}} {
		if err := f.drv.SetCursors(tctx(t), p); !errors.Is(err, driver.ErrGroupNotFound) {
			t.Errorf("SetCursors %+v: %v; want ErrGroupNotFound", p, err)
		}
	}
	tx, err := f.drv.Pool().Begin(tctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(tctx(t), `SELECT 1 FROM group_cursor WHERE group_name = 'g' AND partition = 1 FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = f.drv.SetCursors(tctx(t), driver.SetCursorsParams{StreamID: f.stream.ID, Group: "g", Positions: map[int]int64{0: 3}})
	if !errors.Is(err, driver.ErrConflict) || time.Since(start) > 10*time.Second {
		t.Errorf("SetCursors while a claim holds a cursor: %v after %v; want ErrConflict after the lock timeout", err, time.Since(start))
	}
	_ = tx.Rollback(tctx(t))
	if c := f.cursor("g", 0); c != v2 {
		t.Errorf("cursor %d after a failed SetCursors; want it unchanged (%d)", c, v2)
	}
}

// ReadRows reads in id order (or descending), filtered by partition, id
// range, versions and key, at most Limit rows and MaxScan examined, saying
// where it stopped (Last) and whether anything is left past it (Done).
// Payloads come back byte for byte, headers decoded.
func TestReadRows(t *testing.T) { eachMode(t, testReadRows) }

func testReadRows(t *testing.T, opts ...postgres.Option) {
	f := newFixture(t, 2, opts...)
	odd := []byte(`{"a": "\u0000",  "b":[1, 2]}`)
	all := f.appendRows(
		driver.AppendRow{Partition: 0, Key: "k1", HasKey: true, Payload: odd, Headers: map[string]string{"h": "v"}},
		driver.AppendRow{Partition: 1, Key: "k2", HasKey: true, SchemaVersion: 2},
		driver.AppendRow{Partition: 0, Key: "k1", HasKey: true, SchemaVersion: 2, RoutingKey: "eu.web", CompactionRank: 7},
		driver.AppendRow{Partition: 1},
		driver.AppendRow{Partition: 0, Key: "k2", HasKey: true},
		driver.AppendRow{Partition: 1, Key: "k1", HasKey: true},
	)
	read := func(p driver.ReadRowsParams) driver.ReadRowsResult {
		t.Helper()
		p.StreamID = f.stream.ID
		res, err := f.drv.ReadRows(tctx(t), p)
		if err != nil {
			t.Fatalf("ReadRows %+v: %v", p, err)
		}
		return res
	}
	rowIDs := func(r driver.ReadRowsResult) []int64 {
		var out []int64
		for _, row := range r.Rows {
			out = append(out, row.ID)
		}
		return out
	}
	pick := func(i ...int) []int64 {
		var out []int64
		for _, j := range i {
			out = append(out, all[j])
		}
		return out
	}
	for _, tc := range []struct {
		name string
		p    driver.ReadRowsParams
		want []int64
		last int64
		done bool
	}{
		{"everything", driver.ReadRowsParams{Partition: -1, Limit: 100}, all, all[5], true},
		{"one partition", driver.ReadRowsParams{Partition: 1, Limit: 100}, pick(1, 3, 5), all[5], true},
		{"a partition without rows", driver.ReadRowsParams{Partition: 7, Limit: 100}, nil, 0, true},
		{"versions", driver.ReadRowsParams{Partition: -1, Versions: []int{2}, Limit: 100}, pick(1, 2), all[5], true},
		{"no version", driver.ReadRowsParams{Partition: -1, Versions: []int{}, Limit: 100}, nil, all[5], true},
		{"key", driver.ReadRowsParams{Partition: -1, Key: "k1", HasKey: true, Limit: 100}, pick(0, 2, 5), all[5], true},
		{"key in a partition", driver.ReadRowsParams{Partition: 0, Key: "k1", HasKey: true, Limit: 100}, pick(0, 2), all[4], true},
		{"after and before", driver.ReadRowsParams{Partition: -1, AfterID: all[1], BeforeID: all[4], Limit: 100}, pick(2, 3), all[3], true},
		{"after and before, limit", driver.ReadRowsParams{Partition: -1, AfterID: all[0], BeforeID: all[4], Limit: 2}, pick(1, 2), all[2], false},
		{"limit", driver.ReadRowsParams{Partition: -1, Limit: 2}, pick(0, 1), all[1], false},
		{"limit reached at the end", driver.ReadRowsParams{Partition: -1, AfterID: all[3], Limit: 2}, pick(4, 5), all[5], true},
		{"limit with a filter examines Limit rows", driver.ReadRowsParams{Partition: -1, Key: "k1", HasKey: true, Limit: 2}, pick(0), all[1], false},
		{"limit with a filter", driver.ReadRowsParams{Partition: -1, Key: "k1", HasKey: true, Limit: 2, MaxScan: 10}, pick(0, 2), all[2], false},
		{"max scan", driver.ReadRowsParams{Partition: -1, Key: "k1", HasKey: true, Limit: 10, MaxScan: 2}, pick(0), all[1], false},
		{"max scan of a filter matching nothing", driver.ReadRowsParams{Partition: -1, Key: "none", HasKey: true, Limit: 10, MaxScan: 3}, nil, all[2], false},
		{"max scan to the end", driver.ReadRowsParams{Partition: -1, Key: "none", HasKey: true, AfterID: all[2], Limit: 10, MaxScan: 3}, nil, all[5], true},
		{"descending", driver.ReadRowsParams{Partition: -1, Descending: true, Limit: 3}, pick(5, 4, 3), all[3], false},
		{"descending before", driver.ReadRowsParams{Partition: -1, Descending: true, BeforeID: all[2], Limit: 3}, pick(1, 0), all[0], true},
		{"descending in a partition with a filter", driver.ReadRowsParams{Partition: 0, Descending: true, Versions: []int{1}, Limit: 1}, pick(4), all[4], false},
		{"descending above an id", driver.ReadRowsParams{Partition: -1, Descending: true, AfterID: all[3], Limit: 10}, pick(5, 4), all[4], true},
		{"limit 0", driver.ReadRowsParams{Partition: -1}, nil, 0, false},
		{"nothing in range", driver.ReadRowsParams{Partition: -1, AfterID: all[5], Limit: 10}, nil, 0, true},
	} {
		res := read(tc.p)
		if !slices.Equal(rowIDs(res), tc.want) || res.Last != tc.last || res.Done != tc.done {
			t.Errorf("%s: rows %v last %d done %v; want %v last %d done %v", tc.name, rowIDs(res), res.Last, res.Done, tc.want, tc.last, tc.done)
		}
	}
	res := read(driver.ReadRowsParams{Partition: -1, Limit: 3})
	first, third := res.Rows[0], res.Rows[2]
	if string(first.Payload) != string(odd) || first.Headers["h"] != "v" || first.Key != "k1" || !first.HasKey || !first.ProducedAt.Equal(f.now.Truncate(time.Microsecond)) {
		t.Errorf("first row %+v", first)
	}
	if third.SchemaVersion != 2 || third.RoutingKey != "eu.web" || third.CompactionRank != 7 || third.Partition != 0 || res.Rows[1].Partition != 1 {
		t.Errorf("third row %+v", third)
	}
	if row := read(driver.ReadRowsParams{Partition: 1, Limit: 1}).Rows[0]; row.HasKey != true || row.Headers != nil || string(row.Payload) != `{"n":1}` {
		t.Errorf("row without headers %+v", row)
	}
	// Paging a filter that matches little with a small scan bound visits
	// every row once.
	var got []int64
	after := int64(0)
	for n := 0; ; n++ {
		r := read(driver.ReadRowsParams{Partition: -1, Key: "k1", HasKey: true, AfterID: after, Limit: 10, MaxScan: 2})
		got = append(got, rowIDs(r)...)
		if r.Done {
			break
		}
		if r.Last <= after || n > 10 {
			t.Fatalf("paging stuck at %d: %+v", after, r)
		}
		after = r.Last
	}
	if !slices.Equal(got, pick(0, 2, 5)) {
		t.Errorf("paged key k1: %v", got)
	}
	if _, err := f.drv.ReadRows(tctx(t), driver.ReadRowsParams{StreamID: f.stream.ID + 100, Partition: -1, Limit: 1}); !errors.Is(err, driver.ErrStreamNotFound) {
		t.Errorf("ReadRows of a missing stream: %v; want ErrStreamNotFound", err)
	}
}

// The scan reads the (partition, id) index for one partition and the
// primary key otherwise, in order, examining at most MaxScan rows, even on
// a log without statistics.
func TestReadRowsPlan(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 4)
	rows := make([]driver.AppendRow, 4000)
	for i := range rows {
		rows[i] = driver.AppendRow{Partition: i % 4, Key: fmt.Sprint(i % 7), HasKey: true}
	}
	f.appendRows(rows...)
	res, err := f.drv.ReadRows(tctx(t), driver.ReadRowsParams{StreamID: f.stream.ID, Partition: 2, Key: "none", HasKey: true, Limit: 10, MaxScan: 50})
	if err != nil || len(res.Rows) != 0 || res.Done || res.Last == 0 {
		t.Fatalf("read: %+v, %v", res, err)
	}
	var examined int64
	if err := f.drv.Pool().QueryRow(tctx(t), fmt.Sprintf(`SELECT count(*) FROM message_log_%d WHERE partition = 2 AND id <= $1`, f.stream.ID), res.Last).Scan(&examined); err != nil {
		t.Fatal(err)
	}
	if examined != 50 {
		t.Errorf("Last %d is past %d rows of the partition; want MaxScan (50)", res.Last, examined)
	}
	// The plan of the very statement ReadRows runs, before and after the
	// log has statistics.
	for _, analyzed := range []bool{false, true} {
		if analyzed {
			if _, err := f.drv.Pool().Exec(tctx(t), fmt.Sprintf(`ANALYZE message_log_%d`, f.stream.ID)); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range []struct {
			p     driver.ReadRowsParams
			index string
		}{
			{driver.ReadRowsParams{StreamID: f.stream.ID, Partition: 2, Key: "x", HasKey: true, Limit: 10, MaxScan: 50}, "_partition"},
			{driver.ReadRowsParams{StreamID: f.stream.ID, Partition: 2, Descending: true, Limit: 10}, "_partition"},
			{driver.ReadRowsParams{StreamID: f.stream.ID, Partition: -1, Versions: []int{3}, Limit: 10, MaxScan: 50}, "_pkey"},
			{driver.ReadRowsParams{StreamID: f.stream.ID, Partition: -1, AfterID: 100, BeforeID: 3000, Descending: true, Limit: 10}, "_pkey"},
		} {
			// The scan under the Limit node walks the expected index, in
			// the read's direction; nothing reads the log otherwise.
			plan := explain(t, f, tc.p)
			scan := fmt.Sprintf(`(?m)-> +Limit .*\n +-> +Index (Only )?Scan %susing message_log_%d%s on `,
				map[bool]string{true: "Backward ", false: ""}[tc.p.Descending], f.stream.ID, tc.index)
			if !regexp.MustCompile(scan).MatchString(plan) || strings.Contains(plan, "Seq Scan") || strings.Contains(plan, "Bitmap") {
				t.Errorf("analyzed %v, %+v: plan\n%s\nwant %q and no sequential or bitmap scan", analyzed, tc.p, plan, scan)
			}
		}
	}
}

// explain returns the plan of ReadRows' statement for p.
func explain(t *testing.T, f *fixture, p driver.ReadRowsParams) string {
	t.Helper()
	query, args := postgres.ReadRowsQuery(p)
	tx, err := f.drv.Pool().BeginTx(tctx(t), postgres.ReadRowsTx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	rows, err := tx.Query(tctx(t), `EXPLAIN `+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// Ack and Fail with a caller's transaction settle in it: nothing shows
// until it commits, a rollback leaves the leases as they were, lost leases
// are reported as usual, and the driver never ends the transaction.
func TestSettleInCallerTx(t *testing.T) { eachMode(t, testSettleInCallerTx) }

func testSettleInCallerTx(t *testing.T, opts ...postgres.Option) {
	f := newFixture(t, 1, opts...)
	f.group("g", driver.GroupConfig{})
	rows := f.appendN(0, 4)
	r, tok := f.claim("g", "pod-a:1", 4, f.now, time.Hour)
	if !slices.Equal(ids(r.Deliveries), rows) {
		t.Fatalf("claim: %v", ids(r.Deliveries))
	}
	begin := func() pgx.Tx {
		t.Helper()
		tx, err := f.drv.Pool().Begin(tctx(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
		return tx
	}

	// Commit: one acked, one dead with its history, one lost.
	tx := begin()
	res, err := f.drv.Ack(tctx(t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Now: f.now, Tx: postgres.Tx(tx),
		Leases: []driver.Lease{{ID: rows[0], Token: tok}, {ID: rows[1], Token: "other"}}})
	if err != nil || !slices.Equal(res.Lost, []int64{rows[1]}) {
		t.Fatalf("ack in tx: %v, %v", res.Lost, err)
	}
	res, err = f.drv.Fail(tctx(t), driver.FailParams{StreamID: f.stream.ID, Group: "g", Now: f.now, Tx: postgres.Tx(tx),
		Failures: []driver.Failure{{Lease: driver.Lease{ID: rows[2], Token: tok}, Error: "boom", Dead: true}}})
	if err != nil || len(res.Lost) != 0 {
		t.Fatalf("fail in tx: %v, %v", res.Lost, err)
	}
	for _, id := range rows[:3] {
		if st, _, _ := f.exception("g", id); st != "leased" {
			t.Errorf("row %d is %s before the commit; want leased", id, st)
		}
	}
	if _, err := tx.Exec(tctx(t), `SELECT 1`); err != nil {
		t.Fatalf("the caller's transaction after settling in it: %v", err)
	}
	if err := tx.Commit(tctx(t)); err != nil {
		t.Fatal(err)
	}
	if st, _, _ := f.exception("g", rows[0]); st != "gone" {
		t.Errorf("acked row after commit: %s", st)
	}
	if st, _, _ := f.exception("g", rows[2]); st != "dead" {
		t.Errorf("failed row after commit: %s", st)
	}
	dead, err := f.drv.ListDead(tctx(t), driver.ListDeadParams{StreamID: f.stream.ID, Group: "g", Limit: 10, History: true})
	if err != nil || len(dead) != 1 || len(dead[0].History) != 1 || dead[0].History[0].Holder != "pod-a:1" {
		t.Errorf("dead letters after commit: %+v, %v", dead, err)
	}

	// Rollback: the leases stay, and settle afterwards.
	tx = begin()
	if res, err := f.drv.Ack(tctx(t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Now: f.now, Tx: postgres.Tx(tx),
		Leases: []driver.Lease{{ID: rows[1], Token: tok}, {ID: rows[3], Token: tok}}}); err != nil || len(res.Lost) != 0 {
		t.Fatalf("ack in tx: %v, %v", res.Lost, err)
	}
	if err := tx.Rollback(tctx(t)); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{rows[1], rows[3]} {
		if st, _, tk := f.exception("g", id); st != "leased" || tk != tok {
			t.Errorf("row %d after rollback: %s token %q; want leased with its token", id, st, tk)
		}
	}

	// A lease lost in the caller's transaction leaves it usable.
	tx = begin()
	if res, err := f.drv.Ack(tctx(t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Now: f.now, Tx: postgres.Tx(tx),
		Leases: []driver.Lease{{ID: rows[0], Token: tok}}}); err != nil || !slices.Equal(res.Lost, []int64{rows[0]}) {
		t.Errorf("ack of an acked row in tx: %v, %v; want it lost", res.Lost, err)
	}
	if _, err := tx.Exec(tctx(t), `SELECT 1`); err != nil {
		t.Errorf("the caller's transaction after a lost lease: %v", err)
	}
	_ = tx.Rollback(tctx(t))

	// A failed caller's transaction: the error is the database's; another
	// driver's transaction: ErrForeignTx, also with nothing to settle.
	tx = begin()
	_, _ = tx.Exec(tctx(t), `SELECT 1/0`)
	_, err = f.drv.Ack(tctx(t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Now: f.now, Tx: postgres.Tx(tx), Leases: []driver.Lease{{ID: rows[1], Token: tok}}})
	if !errors.Is(err, driver.ErrDatabase) {
		t.Errorf("ack in an aborted transaction: %v; want ErrDatabase", err)
	}
	for _, ls := range [][]driver.Lease{nil, {{ID: rows[1], Token: tok}}} {
		if _, err := f.drv.Ack(tctx(t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Now: f.now, Tx: foreignTx{}, Leases: ls}); !errors.Is(err, driver.ErrForeignTx) {
			t.Errorf("ack with another driver's transaction (%d leases): %v; want ErrForeignTx", len(ls), err)
		}
		if _, err := f.drv.Fail(tctx(t), driver.FailParams{StreamID: f.stream.ID, Group: "g", Now: f.now, Tx: foreignTx{}}); !errors.Is(err, driver.ErrForeignTx) {
			t.Errorf("fail with another driver's transaction: %v; want ErrForeignTx", err)
		}
	}
	if native, ok := postgres.UnwrapTx(postgres.Tx(tx)); !ok || native != tx {
		t.Errorf("UnwrapTx(Tx(tx)) = %v, %v", native, ok)
	}
	if _, ok := postgres.UnwrapTx(foreignTx{}); ok {
		t.Error("UnwrapTx of another driver's transaction succeeded")
	}

	// A settle waiting for a lock in the caller's transaction ends with its
	// lock_timeout as ErrConflict.
	holder := begin()
	if _, err := holder.Exec(tctx(t), `SELECT 1 FROM delivery_exception WHERE msg_id = $1 FOR UPDATE`, rows[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(tctx(t), `SELECT 1 FROM delivery_batch WHERE $1 = ANY(ids) FOR UPDATE`, rows[1]); err != nil {
		t.Fatal(err)
	}
	tx = begin()
	if _, err := tx.Exec(tctx(t), `SET LOCAL lock_timeout = '200ms'`); err != nil {
		t.Fatal(err)
	}
	_, err = f.drv.Ack(tctx(t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Now: f.now, Tx: postgres.Tx(tx), Leases: []driver.Lease{{ID: rows[1], Token: tok}}})
	var de *driver.Error
	if !errors.Is(err, driver.ErrConflict) || !errors.As(err, &de) || !strings.Contains(de.Advice, "roll it back") {
		t.Errorf("ack waiting for a lock in the caller's transaction: %v; want ErrConflict advising a rollback", err)
	}
}

// The migration API: the embedded migrations with their down SQL, the
// applied ones, one applied up or down at a time with refusals, and Migrate
// for every pending one.
func TestMigrationAPI(t *testing.T) {
	t.Parallel()
	ns := newSchema(t, nil)
	drv := postgres.Open(ns)
	t.Cleanup(func() { _ = drv.Close() })
	ms, err := drv.Migrations()
	if err != nil || len(ms) < 10 {
		t.Fatalf("migrations: %+v, %v", ms, err)
	}
	for i, m := range ms {
		if m.Version != i+1 || m.Up == "" || (m.Down != "") != (m.Version == 2 || m.Version >= 4) || !strings.Contains(m.Record, fmt.Sprintf("VALUES (%d, now())", m.Version)) {
			t.Errorf("migration %d: %s, up %d bytes, down %q, record %q", m.Version, m.Name, len(m.Up), m.Down, m.Record)
		}
	}
	applied := func() []int {
		t.Helper()
		as, err := drv.AppliedMigrations(tctx(t), driver.AppliedMigrationsParams{})
		if err != nil {
			t.Fatal(err)
		}
		var out []int
		for _, a := range as {
			out = append(out, a.Version)
			if a.AppliedAt.Location() != time.UTC || time.Since(a.AppliedAt) > time.Hour || time.Since(a.AppliedAt) < -time.Minute {
				t.Errorf("migration %d applied at %v", a.Version, a.AppliedAt)
			}
		}
		return out
	}
	if got := applied(); got != nil {
		t.Fatalf("applied on an empty schema: %v", got)
	}
	// A tool running Up and Record itself: the driver sees it applied.
	tool, err := pgx.Connect(tctx(t), ns)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tool.PgConn().Exec(tctx(t), ms[0].Up+";\n"+ms[0].Record).ReadAll(); err != nil {
		t.Fatalf("run migration 1 and its record: %v", err)
	}
	_ = tool.Close(tctx(t))
	if got := applied(); !slices.Equal(got, []int{1}) {
		t.Fatalf("applied after a tool ran migration 1: %v", got)
	}
	if err := drv.ApplyMigration(tctx(t), driver.ApplyMigrationParams{Version: 1}); !errors.Is(err, driver.ErrDatabase) {
		t.Fatalf("apply 1 after a tool did: %v; want a refusal", err)
	}
	// Start over on the migrations' own path.
	if _, err := drv.Pool().Exec(tctx(t), `DROP TABLE stream_config, stream_partition, consumer_group, group_cursor, delivery_exception, compaction_head, sqlstreams_migration`); err != nil {
		t.Fatal(err)
	}
	apply := func(v int, down bool) error {
		return drv.ApplyMigration(tctx(t), driver.ApplyMigrationParams{Version: v, Down: down})
	}
	refused := func(v int, down bool, want string) {
		t.Helper()
		err := apply(v, down)
		var de *driver.Error
		if !errors.Is(err, driver.ErrDatabase) || !errors.As(err, &de) || de.Advice == "" || !strings.Contains(err.Error(), want) {
			t.Errorf("apply %d (down %v): %v; want a refusal wrapping ErrDatabase with advice, saying %q", v, down, err, want)
		}
	}
	columnExists := func(table, column string) bool {
		var ok bool
		if err := drv.Pool().QueryRow(tctx(t), `SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
			AND table_name = $1 AND column_name = $2)`, table, column).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	tableExists := func(table string) bool {
		return columnExists(table, map[string]string{"registry_setting": "mode", "schema_revision": "fingerprint", "schema_reader": "revision"}[table])
	}
	refused(2, false, "not applied")
	refused(len(ms)+1, false, fmt.Sprintf("no migration %d", len(ms)+1))
	refused(1, true, "no down migration")
	refused(2, true, "not applied")
	if err := apply(1, false); err != nil {
		t.Fatal(err)
	}
	refused(1, false, "already applied")
	refused(3, false, "not applied")
	if err := apply(2, false); err != nil {
		t.Fatal(err)
	}
	if got := applied(); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("applied %v; want 1 and 2", got)
	}
	// 0002 down drops the registry; applying it puts it back.
	for _, table := range []string{"registry_setting", "schema_revision", "schema_reader"} {
		if !tableExists(table) {
			t.Errorf("%s missing after 0002 up", table)
		}
	}
	if err := apply(2, true); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"registry_setting", "schema_revision", "schema_reader"} {
		if tableExists(table) {
			t.Errorf("%s after 0002 down", table)
		}
	}
	if got := applied(); !slices.Equal(got, []int{1}) {
		t.Errorf("applied %v after 0002 down", got)
	}
	if err := apply(2, false); err != nil {
		t.Fatal(err)
	}
	// Two processes applying the same one: one applies it, the other is
	// refused.
	other := postgres.Open(ns)
	t.Cleanup(func() { _ = other.Close() })
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, d := range []*postgres.Driver{drv, other} {
		wg.Go(func() { errs[i] = d.ApplyMigration(tctx(t), driver.ApplyMigrationParams{Version: 3}) })
	}
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) || !errors.Is(errors.Join(errs...), driver.ErrDatabase) {
		t.Errorf("concurrent applies of 3: %v; want one applied and one refused", errs)
	}
	if err := drv.Migrate(tctx(t)); err != nil {
		t.Fatal(err)
	}
	all := make([]int, len(ms))
	for i := range all {
		all[i] = i + 1
	}
	if got := applied(); !slices.Equal(got, all) {
		t.Fatalf("applied %v after Migrate", got)
	}
	refused(3, true, "no down migration")
	refused(4, true, "later migrations applied")
	refused(5, true, "later migrations applied")
	refused(6, true, "later migrations applied")
	refused(7, true, "later migrations applied")
	// The migrations after 0007 go down first, newest first (each has tests
	// of its own: API_Migrations takes every one down and up).
	for v := len(ms); v > 7; v-- {
		if err := apply(v, true); err != nil {
			t.Fatalf("migration %d down: %v", v, err)
		}
	}

	// 0007 down drops the batch leases; up puts them back
	// (TestBatchLeasesDown checks what happens to held batches).
	if err := apply(7, true); err != nil {
		t.Fatal(err)
	}
	if columnExists("delivery_batch", "ids") {
		t.Error("0007 down left delivery_batch")
	}
	if err := apply(7, false); err != nil || !columnExists("delivery_batch", "ids") {
		t.Errorf("0007 up again: %v", err)
	}
	if err := apply(7, true); err != nil {
		t.Fatal(err)
	}

	// 0006 down drops the row counts; up puts them back.
	if err := apply(6, true); err != nil {
		t.Fatal(err)
	}
	if columnExists("row_count", "row_count") || columnExists("row_count_mark", "counted_to") {
		t.Error("0006 down left row_count or row_count_mark")
	}
	if err := apply(6, false); err != nil || !columnExists("row_count", "row_count") || !columnExists("row_count_mark", "counted_to") {
		t.Errorf("0006 up again: %v", err)
	}
	if err := apply(6, true); err != nil {
		t.Fatal(err)
	}

	// 0005 down drops the schema ids and references; up puts them back.
	if err := apply(5, true); err != nil {
		t.Fatal(err)
	}
	if columnExists("schema_id", "fingerprint") || columnExists("schema_reference", "ref_fingerprint") || !columnExists("schema_revision", "fingerprint") {
		t.Error("0005 down: schema_id or schema_reference left, or schema_revision dropped")
	}
	if err := apply(5, false); err != nil || !columnExists("schema_id", "fingerprint") || !columnExists("schema_reference", "ref_fingerprint") {
		t.Errorf("0005 up again: %v", err)
	}
	if err := apply(5, true); err != nil {
		t.Fatal(err)
	}

	// 0004 down and up.
	if err := apply(4, true); err != nil {
		t.Fatal(err)
	}
	if columnExists("delivery_exception", "failures") || !slices.Equal(applied(), []int{1, 2, 3}) {
		t.Errorf("after 0004 down: failures column %v, applied %v", columnExists("delivery_exception", "failures"), applied())
	}
	refused(4, true, "not applied")
	if err := apply(4, false); err != nil || !columnExists("delivery_exception", "failures") {
		t.Errorf("0004 up again: %v", err)
	}
	if err := apply(5, false); err != nil {
		t.Fatal(err)
	}
	if err := apply(6, false); err != nil {
		t.Fatal(err)
	}
	if err := apply(7, false); err != nil {
		t.Fatal(err)
	}
	// 0002 cannot go down under later migrations; it went down and up
	// above, before 0003 was applied.
	refused(2, true, "later migrations applied")
	// The schema works: a client registers schemas and consumes.
	c := open(t, ns)
	p, err := c.Stream[event]("after").Producer().Register(tctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := c.Stream[event]("after").Consumer("g").Register(tctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Produce(tctx(t), event{N: 1}); err != nil {
		t.Fatal(err)
	}
	if ds, err := cons.Claim(tctx(t), 10); err != nil || len(ds) != 1 {
		t.Errorf("claim after the migrations: %d, %v", len(ds), err)
	}
	// AppliedMigrations on a schema without the records table, and on a
	// search_path with no schema: none.
	for _, u := range []string{newSchema(t, nil), withParams(t, baseURL(), map[string]string{"search_path": randomName("missing_")})} {
		d := postgres.Open(u)
		as, err := d.AppliedMigrations(tctx(t), driver.AppliedMigrationsParams{})
		_ = d.Close()
		if err != nil || as != nil {
			t.Errorf("applied migrations without records: %v, %v", as, err)
		}
	}
}

// CheckPrivileges names the missing privilege and the GRANT that gives it:
// CREATE and USAGE on the schema, and the use of the driver's tables.
func TestCheckPrivileges(t *testing.T) {
	t.Parallel()
	ns := newSchema(t, nil)
	schema := mustQuery(t, ns, "search_path")
	migrated := postgres.Open(ns)
	t.Cleanup(func() { _ = migrated.Close() })
	if err := migrated.Migrate(tctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := migrated.CheckPrivileges(tctx(t), driver.CheckPrivilegesParams{}); err != nil {
		t.Errorf("the server's superuser: %v", err)
	}
	conn := admin(t)
	role := randomName("sqlstreams_priv_")
	if _, err := conn.Exec(tctx(t), `CREATE ROLE `+role+` LOGIN`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		if _, err := conn.Exec(ctx, `DROP OWNED BY `+role); err != nil {
			t.Errorf("drop owned by %s: %v", role, err)
		}
		if _, err := conn.Exec(ctx, `DROP ROLE `+role); err != nil {
			t.Errorf("drop role %s: %v", role, err)
		}
	})
	asRole, _ := url.Parse(ns)
	asRole.User = url.User(role)
	check := func() error {
		d := postgres.Open(asRole.String())
		defer d.Close()
		return d.CheckPrivileges(tctx(t), driver.CheckPrivilegesParams{})
	}
	expect := func(step string, want ...string) {
		t.Helper()
		err := check()
		if len(want) == 0 {
			if err != nil {
				t.Errorf("%s: %v; want no error", step, err)
			}
			return
		}
		var de *driver.Error
		if !errors.Is(err, driver.ErrDatabase) || !errors.As(err, &de) {
			t.Fatalf("%s: %v; want ErrDatabase", step, err)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v; want it to say %q", step, err, w)
			}
		}
	}
	grant := func(sql string) {
		t.Helper()
		if _, err := conn.Exec(tctx(t), sql); err != nil {
			t.Fatal(err)
		}
	}
	expect("no usage", "permission denied for schema "+schema, "GRANT USAGE, CREATE ON SCHEMA "+schema)
	grant(`GRANT USAGE ON SCHEMA ` + schema + ` TO ` + role)
	expect("usage only", "no CREATE privilege", `GRANT USAGE, CREATE ON SCHEMA "`+schema+`" TO "`+role+`"`)
	grant(`GRANT CREATE ON SCHEMA ` + schema + ` TO ` + role)
	expect("no table privileges", "stream_config", "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA")
	grant(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ` + schema + ` TO ` + role)
	expect("no sequence privileges", "stream_config_id_seq", "GRANT USAGE ON ALL SEQUENCES")
	grant(`GRANT USAGE ON ALL SEQUENCES IN SCHEMA ` + schema + ` TO ` + role)
	expect("every privilege")
	// What it vouches for: the role creates and destroys a stream.
	d := postgres.Open(asRole.String())
	defer d.Close()
	cfg, err := d.CreateStream(tctx(t), driver.CreateStreamParams{Config: driver.StreamConfig{Name: "mine", Partitions: 2, CreatedAt: time.Now()}})
	if err != nil {
		t.Fatalf("create a stream as %s: %v", role, err)
	}
	if err := d.DestroyStream(tctx(t), driver.DestroyStreamParams{StreamID: cfg.ID}); err != nil {
		t.Errorf("destroy a stream as %s: %v", role, err)
	}
	grant(`REVOKE CREATE ON SCHEMA ` + schema + ` FROM ` + role)
	expect("create revoked", "no CREATE privilege")
}

// mustQuery returns a query parameter of a URL.
func mustQuery(t testing.TB, u, key string) string {
	t.Helper()
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return parsed.Query().Get(key)
}

// ResetNamespace leaves a used schema exactly as a freshly migrated one:
// the same tables, columns and indexes, no rows but the migration records,
// every migration applied; stream ids go on growing.
func TestResetNamespace(t *testing.T) {
	t.Parallel()
	fresh := newSchema(t, nil)
	d := postgres.Open(fresh)
	t.Cleanup(func() { _ = d.Close() })
	if err := d.Migrate(tctx(t)); err != nil {
		t.Fatal(err)
	}
	ns := newSchema(t, nil)
	c := open(t, ns)
	p, err := c.Stream[event]("used").Producer().Register(tctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := c.Stream[event]("used").Consumer("g").Register(tctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := p.Produce(tctx(t), event{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	if ds, err := cons.Claim(tctx(t), 1); err != nil || len(ds) != 1 {
		t.Fatalf("claim: %v", err)
	}
	drv := c.Driver()
	if err := postgrestest.ExecTx(tctx(t), drv, nil, `CREATE TABLE IF NOT EXISTS conformance_marker (k VARCHAR(64))`); err != nil {
		t.Fatal(err)
	}
	if n, err := postgrestest.QueryInt(tctx(t), drv, `SELECT count(*) FROM conformance_marker`); err != nil || n != 0 {
		t.Fatalf("QueryInt: %d, %v", n, err)
	}
	// Read before going down: the driver reads streams with the columns of
	// every migration (stream_config.generation came with 0013).
	info, err := c.Stream[event]("used").Get(tctx(t))
	if err != nil {
		t.Fatal(err)
	}
	downTo(t, drv, 4)
	_ = c.Close()

	if err := postgrestest.ResetNamespace(ns); err != nil {
		t.Fatal(err)
	}
	layout := func(u string) []string {
		t.Helper()
		conn, err := pgx.Connect(tctx(t), u)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		rows, err := conn.Query(tctx(t), `SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || COALESCE(column_default, '')
				FROM information_schema.columns WHERE table_schema = current_schema()
			UNION ALL SELECT 'index ' || indexname || ' ' || replace(indexdef, current_schema() || '.', '') FROM pg_indexes WHERE schemaname = current_schema()
			UNION ALL SELECT 'relation ' || relname || ' ' || relkind::text FROM pg_class WHERE relnamespace = to_regnamespace(current_schema())
			UNION ALL SELECT 'migration ' || version FROM sqlstreams_migration
			ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got, want := layout(ns), layout(fresh); !slices.Equal(got, want) {
		t.Errorf("after the reset:\n%s\nwant as freshly migrated:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	conn, err := pgx.Connect(tctx(t), ns)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, table := range []string{"stream_config", "stream_partition", "consumer_group", "group_cursor", "delivery_exception", "compaction_head",
		"registry_setting", "schema_revision", "schema_reader"} {
		var n int64
		if err := conn.QueryRow(tctx(t), `SELECT count(*) FROM `+table).Scan(&n); err != nil || n != 0 {
			t.Errorf("%s: %d rows, %v", table, n, err)
		}
	}
	// The namespace serves the next test; ids go on.
	c = open(t, ns)
	p, err = c.Stream[event]("used").Producer().Register(tctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Stream[event]("used").Get(tctx(t))
	if err != nil || again.ID <= info.ID {
		t.Errorf("stream after the reset: %+v, %v; want an id above %d", again, err, info.ID)
	}
	if next, err := p.Produce(tctx(t), event{N: 2}); err != nil || next != 1 {
		t.Errorf("first row after the reset: %d, %v (the old log had %d)", next, err, id)
	}
	// A transaction holding a lock makes the reset fail rather than hang.
	tx, err := conn.Begin(tctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(tctx(t), `LOCK TABLE stream_config IN ACCESS SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	if testing.Short() {
		return
	}
	if err := postgrestest.ResetNamespace(ns); err == nil {
		t.Error("reset while another transaction holds a lock: no error")
	}
}
