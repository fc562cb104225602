package conformance

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

func init() {
	registerNeeding(needSQL, "D9_BatchLeaseStorage", testDriverBatchLeaseStorage)
	register("D10_LeasedRowsUnderMaintenance", testDriverLeasedRowsUnderMaintenance)
	registerNeeding(needSQL, "D12_LeaseRowsOfTheirOwn", testDriverLeaseRowsOfTheirOwn)
}

// testDriverBatchLeaseStorage pins how leases are stored: a main claim
// leases its rows as one batch record per partition, with no row of its own
// for a delivery that is acked or extended with its whole batch
// (docs/contracts.md, "Data model"; docs/decisions.md, "Performance: batch
// leases").
func testDriverBatchLeaseStorage(t *testing.T, h *harness) {
	if h.target.QueryInt == nil {
		t.Fatalf("target %s has no QueryInt", h.target.Name)
	}
	f := newDriverFixture(t, h)
	count := func(table string) int64 { return f.count(h, table) }
	f.append(1, 100)
	res, token := f.claim(100, time.Hour)
	if len(res.Deliveries) != 100 {
		t.Fatalf("claimed %d of 100", len(res.Deliveries))
	}
	leases := leasesOf(res, token)
	exceptions, batches := count("delivery_exception"), count("delivery_batch")
	if exceptions != 0 || batches != 1 {
		t.Fatalf("a claim of 100 from one partition wrote %d exception rows and %d batches; want 0 and 1", exceptions, batches)
	}
	ack := func(part []driver.Lease) {
		t.Helper()
		got, err := f.drv.Ack(ctx(t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Leases: part, Now: time.Now().UTC()})
		if err != nil || len(got.Lost) != 0 {
			t.Fatalf("ack: lost %v, %v", got.Lost, err)
		}
	}
	// Acks of parts of the batch, as Run's completer sends them, and a
	// heartbeat extending what is left of it.
	ack(leases[:40])
	got, err := f.drv.Extend(ctx(t), driver.ExtendParams{StreamID: f.stream.ID, Group: "g", Leases: leases[40:], Until: time.Now().Add(2 * time.Hour), Now: time.Now().UTC()})
	if err != nil || len(got.Lost) != 0 {
		t.Fatalf("extend: lost %v, %v", got.Lost, err)
	}
	ack(leases[40:70])
	if n := count("delivery_exception"); n != 0 {
		t.Fatalf("acks and an extension of the batch's remaining members wrote %d exception rows; want none", n)
	}
	ack(leases[70:])
	if exceptions, batches := count("delivery_exception"), count("delivery_batch"); exceptions != 0 || batches != 0 {
		t.Fatalf("after every delivery was acked %d exception rows and %d batches are left; want none", exceptions, batches)
	}
}

// testDriverLeaseRowsOfTheirOwn is the upgrade from the retired
// per-delivery lease model, whose claim wrote a leased exception row for
// each delivery: a member extending each delivery of its batch but the last
// alone leaves that layout (a row each) beside a one-member batch, and while
// members claim
// and ack the rest of the stream around it, none of those rows is handed out
// before its holder acks it, and every row is delivered once. So a database
// an older member leased that way needs no conversion (docs/decisions.md,
// "One lease model").
func testDriverLeaseRowsOfTheirOwn(t *testing.T, h *harness) {
	f := newDriverFixture(t, h)
	count := func(table string) int64 { return f.count(h, table) }
	f.append(1, 300)
	held := f.claimLeases(100)
	for _, l := range held[:99] {
		got, err := f.drv.Extend(ctx(t), driver.ExtendParams{StreamID: f.stream.ID, Group: "g", Leases: []driver.Lease{l},
			Until: time.Now().Add(time.Hour), Now: time.Now().UTC()})
		if err != nil || len(got.Lost) != 0 {
			t.Fatalf("extend %d alone: lost %v, %v", l.ID, got.Lost, err)
		}
	}
	if exceptions, batches := count("delivery_exception"), count("delivery_batch"); exceptions != 99 || batches != 1 {
		t.Fatalf("99 of a batch's 100 deliveries extended alone left %d exception rows and %d batches; want 99 and 1", exceptions, batches)
	}

	var mu sync.Mutex
	handed := map[int64]int{}
	heldIDs := map[int64]bool{}
	for _, l := range held {
		heldIDs[l.ID] = true
		handed[l.ID]++
	}
	var wg sync.WaitGroup
	wg.Go(func() { // the older member acks what it holds, ten at a time
		for start := 0; start < len(held); start += 10 {
			got, err := f.drv.Ack(ctx(t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Leases: held[start : start+10], Now: time.Now().UTC()})
			if err != nil || len(got.Lost) != 0 {
				t.Errorf("the older member's ack: lost %v, %v", got.Lost, err)
				return
			}
		}
	})
	for m := range 4 {
		wg.Go(func() {
			for n := 0; ; n++ {
				now := time.Now().UTC()
				token := fmt.Sprintf("member-%d-%d", m, n)
				res, err := f.drv.Claim(ctx(t), driver.ClaimParams{Stream: f.stream, Group: "g", Member: driver.Member{SchemaVersion: 1},
					Decodes: []int{1}, Limit: 20, Token: token, Holder: fmt.Sprintf("member-%d", m), Now: now, LeaseUntil: now.Add(time.Hour), MaxAttempts: 10})
				if err != nil {
					t.Errorf("member %d: claim: %v", m, err)
					return
				}
				if len(res.Deliveries) == 0 {
					return
				}
				mu.Lock()
				for _, d := range res.Deliveries {
					if heldIDs[d.ID] {
						t.Errorf("member %d was handed %d, which the older member holds for another hour", m, d.ID)
					}
					handed[d.ID]++
				}
				mu.Unlock()
				got, err := f.drv.Ack(ctx(t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Leases: leasesOf(res, token), Now: time.Now().UTC()})
				if err != nil || len(got.Lost) != 0 {
					t.Errorf("member %d: ack: lost %v, %v", m, got.Lost, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if len(handed) != 300 {
		t.Errorf("%d of 300 rows were delivered", len(handed))
	}
	for id, n := range handed {
		if n != 1 {
			t.Errorf("row %d was delivered %d times; want once", id, n)
		}
	}
	if exceptions, batches := count("delivery_exception"), count("delivery_batch"); exceptions != 0 || batches != 0 {
		t.Errorf("after every delivery was acked %d exception rows and %d batches are left; want none", exceptions, batches)
	}
}

// count counts the rows of one of the driver's tables.
func (f *driverFixture) count(h *harness, table string) int64 {
	f.t.Helper()
	n, err := h.target.QueryInt(ctx(f.t), f.drv, "SELECT COUNT(*) FROM "+table)
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

// testDriverLeasedRowsUnderMaintenance pins what cursor resets, Health,
// retention and per-delivery settles do to leased deliveries, whichever
// way the driver stores the leases: a reset does not hand out a row that is
// still leased, Health counts leases by version and holder, soft retention
// keeps leased rows and hard retention removes them, after which the holder
// finds them lost.
func testDriverLeasedRowsUnderMaintenance(t *testing.T, h *harness) {
	f := newDriverFixture(t, h)
	now := time.Now().UTC()
	ids := f.append(1, 10)
	res, token := f.claim(10, time.Hour)
	if len(res.Deliveries) != 10 {
		t.Fatalf("claimed %d of 10", len(res.Deliveries))
	}
	lease := func(i int) driver.Lease { return driver.Lease{ID: ids[i], Token: token} }
	leaseOf := func(is ...int) []driver.Lease {
		out := make([]driver.Lease, len(is))
		for k, i := range is {
			out[k] = lease(i)
		}
		return out
	}
	health := func() driver.HealthStats {
		t.Helper()
		st, err := f.drv.Health(ctx(t), driver.HealthParams{StreamID: f.stream.ID, Now: time.Now().UTC()})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	wantLeased := func(step string, n int64) {
		t.Helper()
		st := health()
		var leased, holders, unread int64
		for _, e := range st.Exceptions {
			if e.State == driver.StateLeased {
				leased += e.Count
				if e.Version != 1 {
					t.Errorf("%s: leases counted at version %d; want 1", step, e.Version)
				}
			}
		}
		for _, hc := range st.Holders {
			if hc.Holder != "fixture" || hc.Group != "g" {
				t.Errorf("%s: holder %+v; want fixture in g", step, hc)
			}
			holders += hc.Leases
		}
		for _, u := range st.Unread {
			unread += u.Rows
		}
		if leased != n || holders != n || unread != 0 {
			t.Errorf("%s: Health counts %d leased, %d held, %d unread; want %d, %d, 0", step, leased, holders, unread, n, n)
		}
	}
	wantLeased("after the claim", 10)

	// A reset to before the leased rows: they count as exceptions, not as
	// unread, and the main claim passes over them while they are leased.
	if err := f.drv.SetCursors(ctx(t), driver.SetCursorsParams{StreamID: f.stream.ID, Group: "g", Positions: map[int]int64{0: ids[0] - 1}}); err != nil {
		t.Fatal(err)
	}
	wantLeased("after a reset over the leases", 10)
	if again, _ := f.claim(10, time.Hour); len(again.Deliveries) != 0 {
		t.Fatalf("a claim after a reset handed out %d rows still leased", len(again.Deliveries))
	}

	settle := func(step string, got driver.SettleResult, err error, lost ...int64) {
		t.Helper()
		if err != nil || !slices.Equal(got.Lost, lost) {
			t.Fatalf("%s: lost %v, %v; want lost %v", step, got.Lost, err, lost)
		}
	}
	got, err := f.drv.Ack(ctx(t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Leases: leaseOf(0, 1, 2), Now: now})
	settle("ack 3", got, err)
	got, err = f.drv.Ack(ctx(t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Leases: leaseOf(0), Now: now})
	settle("ack again", got, err, ids[0])
	got, err = f.drv.Fail(ctx(t), driver.FailParams{StreamID: f.stream.ID, Group: "g", Now: now,
		Failures: []driver.Failure{{Lease: lease(3), Error: "later", Due: now.Add(5 * time.Hour)}}})
	settle("fail one", got, err)
	got, err = f.drv.Extend(ctx(t), driver.ExtendParams{StreamID: f.stream.ID, Group: "g", Leases: leaseOf(4), Until: now.Add(3 * time.Hour), Now: now})
	settle("extend one", got, err)
	got, err = f.drv.Release(ctx(t), driver.ReleaseParams{StreamID: f.stream.ID, Group: "g", Leases: leaseOf(5), Now: now})
	settle("release one", got, err)
	got, err = f.drv.Fail(ctx(t), driver.FailParams{StreamID: f.stream.ID, Group: "g", Now: now,
		Failures: []driver.Failure{{Lease: lease(3), Error: "twice", Due: now}}})
	settle("fail a failed delivery again", got, err, ids[3])
	wantLeased("after settles of single deliveries", 5) // 4, 6, 7, 8, 9

	// Two hours on, the batch's lease (one hour) expired and the lone
	// extension (three hours) did not: a claim then hands out the released
	// row and the expired ones, each once, never the acked, failed or
	// extended ones.
	later := now.Add(2 * time.Hour)
	again, err := f.drv.Claim(ctx(t), driver.ClaimParams{Stream: f.stream, Group: "g", Member: driver.Member{SchemaVersion: 1}, Decodes: []int{1},
		Limit: 10, Token: "later", Holder: "fixture", Now: later, LeaseUntil: later.Add(time.Hour), MaxAttempts: 10})
	if err != nil {
		t.Fatal(err)
	}
	var gotIDs []int64
	attempts := map[int64]int{}
	for _, d := range again.Deliveries {
		gotIDs = append(gotIDs, d.ID)
		attempts[d.ID] = d.Attempt
	}
	slices.Sort(gotIDs)
	if want := []int64{ids[5], ids[6], ids[7], ids[8], ids[9]}; !slices.Equal(gotIDs, want) {
		t.Fatalf("after expiry a claim handed out %v; want the released row and the expired leases %v", gotIDs, want)
	}
	if attempts[ids[5]] != 1 || attempts[ids[6]] != 2 {
		t.Errorf("attempts %v; want 1 for the released row and 2 for an expired lease", attempts)
	}
	got, err = f.drv.Ack(ctx(t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Leases: leaseOf(6, 7, 4), Now: later})
	settle("the old holder acks after expiry", got, err, ids[6], ids[7])

	retention := func(hard bool) {
		t.Run(fmt.Sprintf("hard=%v", hard), func(t *testing.T) {
			st, err := f.drv.CreateStream(ctx(t), driver.CreateStreamParams{Config: driver.StreamConfig{Name: fmt.Sprintf("kept-%v", hard), Partitions: 1,
				CreatedAt: now, Retention: driver.Retention{MaxRows: 2, Hard: hard}}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.drv.RegisterGroup(ctx(t), driver.RegisterGroupParams{Group: driver.GroupConfig{StreamID: st.ID, Name: "g", SchemaVersion: 1, CreatedAt: now}}); err != nil {
				t.Fatal(err)
			}
			rows := make([]driver.AppendRow, 10)
			for i := range rows {
				rows[i] = driver.AppendRow{SchemaVersion: 1, Payload: []byte(fmt.Sprintf(`{"seq":%d}`, i)), ProducedAt: now}
			}
			ids, err := f.drv.Append(ctx(t), driver.AppendParams{Stream: st, Rows: rows})
			if err != nil {
				t.Fatal(err)
			}
			res, err := f.drv.Claim(ctx(t), driver.ClaimParams{Stream: st, Group: "g", Member: driver.Member{SchemaVersion: 1}, Decodes: []int{1},
				Limit: 10, Token: "kept", Holder: "fixture", Now: now, LeaseUntil: now.Add(time.Hour)})
			if err != nil || len(res.Deliveries) != 10 {
				t.Fatalf("claim: %d of 10, %v", len(res.Deliveries), err)
			}
			rep, err := f.drv.Retain(ctx(t), driver.RetainParams{StreamID: st.ID, Now: now, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			leases := make([]driver.Lease, len(ids))
			for i, id := range ids {
				leases[i] = driver.Lease{ID: id, Token: "kept"}
			}
			ack, err := f.drv.Ack(ctx(t), driver.AckParams{StreamID: st.ID, Group: "g", Leases: leases, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			if !hard {
				if rep.Removed != 0 || len(ack.Lost) != 0 {
					t.Fatalf("soft retention removed %d leased rows and the holder lost %v; want neither", rep.Removed, ack.Lost)
				}
				if rep, err = f.drv.Retain(ctx(t), driver.RetainParams{StreamID: st.ID, Now: now, Limit: 1000}); err != nil || rep.Removed != 8 {
					t.Fatalf("soft retention after the acks removed %d, %v; want 8", rep.Removed, err)
				}
				return
			}
			if rep.Removed != 8 || !slices.Equal(ack.Lost, ids[:8]) {
				t.Fatalf("hard retention removed %d leased rows and the holder lost %v; want 8 removed and %v lost", rep.Removed, ack.Lost, ids[:8])
			}
		})
	}
	retention(false)
	retention(true)
}
