package conformance

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Driver-level tests call the driver contract directly, below the public
// API, to pin down what a driver must do when core asks in ways the public
// API rarely does. They are named D<n>_<Method><Behaviour>.
func init() {
	register("D1_AckWrongTokenChangesNothing", testDriverAckWrongToken)
	register("D2_ReleaseRestoresAttempt", testDriverReleaseRestoresAttempt)
	register("D3_ListDeadPages", testDriverListDeadPages)
	register("D4_ClaimScanIsBounded", testDriverClaimScanBounded)
}

// driverFixture is a migrated driver with one stream and one group.
type driverFixture struct {
	t      testing.TB
	drv    driver.Driver
	stream driver.StreamConfig
	group  driver.GroupConfig
	n      int // claims made, for tokens
}

func newDriverFixture(t *testing.T, h *harness) *driverFixture {
	drv, err := h.target.Open(h.ns(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drv.Close() })
	if err := drv.Migrate(ctx(t)); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	st, err := drv.CreateStream(ctx(t), driver.CreateStreamParams{Config: driver.StreamConfig{Name: "drv", Partitions: 1, CreatedAt: now}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := drv.RegisterGroup(ctx(t), driver.RegisterGroupParams{Group: driver.GroupConfig{StreamID: st.ID, Name: "g", SchemaVersion: 1, CreatedAt: now}})
	if err != nil {
		t.Fatal(err)
	}
	return &driverFixture{t: t, drv: drv, stream: st, group: g}
}

func (f *driverFixture) append(version, n int) []int64 {
	f.t.Helper()
	rows := make([]driver.AppendRow, n)
	for i := range rows {
		rows[i] = driver.AppendRow{SchemaVersion: version, Payload: []byte(fmt.Sprintf(`{"seq":%d}`, i)), ProducedAt: time.Now().UTC()}
	}
	var ids []int64
	for start := 0; start < n; start += 500 {
		got, err := f.drv.Append(ctx(f.t), driver.AppendParams{Stream: f.stream, Rows: rows[start:min(start+500, n)]})
		if err != nil {
			f.t.Fatal(err)
		}
		ids = append(ids, got...)
	}
	return ids
}

func (f *driverFixture) claim(limit int, lease time.Duration) (driver.ClaimResult, string) {
	f.t.Helper()
	f.n++
	token := fmt.Sprintf("token-%d", f.n)
	now := time.Now().UTC()
	res, err := f.drv.Claim(ctx(f.t), driver.ClaimParams{Stream: f.stream, Group: "g", Member: driver.Member{SchemaVersion: 1},
		Decodes: []int{1}, Limit: limit, Token: token, Holder: "fixture", Now: now, LeaseUntil: now.Add(lease), MaxAttempts: 10})
	if err != nil {
		f.t.Fatal(err)
	}
	return res, token
}

// claimLeases claims exactly n deliveries with an hour's lease and names
// them.
func (f *driverFixture) claimLeases(n int) []driver.Lease {
	f.t.Helper()
	res, token := f.claim(n, time.Hour)
	if len(res.Deliveries) != n {
		f.t.Fatalf("claimed %d, want %d", len(res.Deliveries), n)
	}
	return leasesOf(res, token)
}

// leasesOf names what a claim leased with its token.
func leasesOf(res driver.ClaimResult, token string) []driver.Lease {
	leases := make([]driver.Lease, len(res.Deliveries))
	for i, d := range res.Deliveries {
		leases[i] = driver.Lease{ID: d.ID, Token: token}
	}
	return leases
}

func (f *driverFixture) exceptions() map[driver.ExceptionState]int64 {
	f.t.Helper()
	st, err := f.drv.Health(ctx(f.t), driver.HealthParams{StreamID: f.stream.ID, Now: time.Now().UTC()})
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[driver.ExceptionState]int64{}
	for _, e := range st.Exceptions {
		out[e.State] += e.Count
	}
	return out
}

func testDriverAckWrongToken(t *testing.T, h *harness) {
	f := newDriverFixture(t, h)
	ids := f.append(1, 2)
	res, token := f.claim(2, time.Hour)
	if len(res.Deliveries) != 2 {
		t.Fatalf("claimed %d", len(res.Deliveries))
	}
	for name, call := range map[string]func([]driver.Lease) (driver.SettleResult, error){
		"Ack": func(ls []driver.Lease) (driver.SettleResult, error) {
			return f.drv.Ack(ctx(t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Leases: ls, Now: time.Now().UTC()})
		},
		"Fail": func(ls []driver.Lease) (driver.SettleResult, error) {
			return f.drv.Fail(ctx(t), driver.FailParams{StreamID: f.stream.ID, Group: "g", Now: time.Now().UTC(),
				Failures: []driver.Failure{{Lease: ls[0], Error: "x", Dead: true}, {Lease: ls[1], Error: "y", Due: time.Now()}}})
		},
		"Release": func(ls []driver.Lease) (driver.SettleResult, error) {
			return f.drv.Release(ctx(t), driver.ReleaseParams{StreamID: f.stream.ID, Group: "g", Leases: ls, Now: time.Now().UTC()})
		},
		"Extend": func(ls []driver.Lease) (driver.SettleResult, error) {
			return f.drv.Extend(ctx(t), driver.ExtendParams{StreamID: f.stream.ID, Group: "g", Leases: ls, Until: time.Now().Add(2 * time.Hour), Now: time.Now().UTC()})
		},
	} {
		wrong := []driver.Lease{{ID: ids[0], Token: "not-" + token}, {ID: ids[1], Token: ""}}
		got, err := call(wrong)
		if err != nil || !slices.Equal(got.Lost, ids) {
			t.Errorf("%s with wrong tokens: lost %v, err %v; want both reported lost", name, got.Lost, err)
		}
		if ex := f.exceptions(); ex[driver.StateLeased] != 2 || len(ex) != 1 {
			t.Fatalf("after %s with wrong tokens: %v; want both still leased", name, ex)
		}
	}
	// One right and one wrong: exactly one settles.
	got, err := f.drv.Ack(ctx(t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Now: time.Now().UTC(),
		Leases: []driver.Lease{{ID: ids[0], Token: token}, {ID: ids[1], Token: "wrong"}}})
	if err != nil || !slices.Equal(got.Lost, []int64{ids[1]}) {
		t.Errorf("mixed ack: lost %v, err %v; want only %d lost", got.Lost, err, ids[1])
	}
	if ex := f.exceptions(); ex[driver.StateLeased] != 1 {
		t.Errorf("after the mixed ack: %v; want one still leased", ex)
	}
}

func testDriverReleaseRestoresAttempt(t *testing.T, h *harness) {
	f := newDriverFixture(t, h)
	ids := f.append(1, 1)
	for round := 1; round <= 3; round++ {
		res, token := f.claim(1, time.Hour)
		if len(res.Deliveries) != 1 || res.Deliveries[0].ID != ids[0] || res.Deliveries[0].Attempt != 1 {
			t.Fatalf("claim %d: %+v; want row %d at attempt 1", round, res.Deliveries, ids[0])
		}
		got, err := f.drv.Release(ctx(t), driver.ReleaseParams{StreamID: f.stream.ID, Group: "g", Now: time.Now().UTC(),
			Leases: []driver.Lease{{ID: ids[0], Token: token}}})
		if err != nil || len(got.Lost) != 0 {
			t.Fatalf("release %d: %v, %v", round, got, err)
		}
	}
	// Release by claim token: every lease of that claim, none lost.
	res, token := f.claim(1, time.Hour)
	if len(res.Deliveries) != 1 || res.Deliveries[0].Attempt != 1 {
		t.Fatalf("claim before a token release: %+v", res.Deliveries)
	}
	if _, err := f.drv.Release(ctx(t), driver.ReleaseParams{StreamID: f.stream.ID, Group: "g", ClaimToken: token, Now: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	if res, _ := f.claim(1, time.Hour); len(res.Deliveries) != 1 || res.Deliveries[0].Attempt != 1 {
		t.Errorf("after releasing by claim token: %+v; want the row back at attempt 1", res.Deliveries)
	}
}

func testDriverListDeadPages(t *testing.T, h *harness) {
	f := newDriverFixture(t, h)
	ids := f.append(1, 25)
	res, token := f.claim(25, time.Hour)
	var fs []driver.Failure
	for _, d := range res.Deliveries {
		fs = append(fs, driver.Failure{Lease: driver.Lease{ID: d.ID, Token: token}, Error: fmt.Sprintf("dead %d", d.ID), Dead: true})
	}
	if got, err := f.drv.Fail(ctx(t), driver.FailParams{StreamID: f.stream.ID, Group: "g", Failures: fs, Now: time.Now().UTC()}); err != nil || len(got.Lost) != 0 {
		t.Fatalf("fail: %v, %v", got, err)
	}
	var seen []int64
	pages := 0
	for after := int64(0); ; pages++ {
		page, err := f.drv.ListDead(ctx(t), driver.ListDeadParams{StreamID: f.stream.ID, Group: "g", AfterID: after, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, dl := range page {
			seen = append(seen, dl.ID)
			if dl.Error != fmt.Sprintf("dead %d", dl.ID) || dl.Attempt != 1 || dl.Holder != "fixture" || dl.History != nil {
				t.Errorf("dead letter %+v", dl)
			}
		}
		after = page[len(page)-1].ID
	}
	if !slices.Equal(seen, ids) || pages != 3 {
		t.Errorf("paged %d times through %v; want 3 pages in id order %v", pages, seen, ids)
	}
	withHistory, err := f.drv.ListDead(ctx(t), driver.ListDeadParams{StreamID: f.stream.ID, Group: "g", Limit: 1, History: true})
	if err != nil || len(withHistory) != 1 || len(withHistory[0].History) != 1 || withHistory[0].History[0].Holder != "fixture" {
		t.Errorf("with history: %+v, %v", withHistory, err)
	}
}

func testDriverClaimScanBounded(t *testing.T, h *harness) {
	// 30000 rows the group does not read, then one it reads: a claim does a
	// bounded amount of work, so it takes more than one claim to get there,
	// and each claim moves the cursor past what it examined.
	f := newDriverFixture(t, h)
	other := f.append(2, 30000)
	want := f.append(1, 1)
	var got []int64
	claims := 0
	var cursors []int64
	for ; claims < 10 && len(got) == 0; claims++ {
		res, _ := f.claim(10, time.Hour)
		for _, d := range res.Deliveries {
			got = append(got, d.ID)
		}
		st, err := f.drv.Health(ctx(t), driver.HealthParams{StreamID: f.stream.ID, Now: time.Now().UTC()})
		if err != nil {
			t.Fatal(err)
		}
		cursors = append(cursors, st.Groups[0].Cursors[0])
	}
	if !slices.Equal(got, want) {
		t.Fatalf("claimed %v; want %v", got, want)
	}
	if claims < 2 {
		t.Errorf("one claim scanned past all %d rows the group does not read (cursors %v): a claim's work must be bounded", len(other), cursors)
	}
	for i := 1; i < len(cursors); i++ {
		if cursors[i] <= cursors[i-1] {
			t.Errorf("cursors %v: each claim must move the cursor past what it examined", cursors)
		}
	}
}
