package sqlstreams

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// extendDriver answers Extend only: it reports lost the ids in lost, and
// makes its first late calls come back after the expiry they were given.
type extendDriver struct {
	driver.Driver
	mu    sync.Mutex
	lost  map[int64]bool
	late  int       // how many calls, from the first, come back late
	calls [][]int64 // the ids each call named
}

func (d *extendDriver) Extend(_ context.Context, p driver.ExtendParams) (driver.SettleResult, error) {
	d.mu.Lock()
	var ids, lost []int64
	for _, l := range p.Leases {
		ids = append(ids, l.ID)
		if d.lost[l.ID] {
			lost = append(lost, l.ID)
		}
	}
	d.calls = append(d.calls, ids)
	late := len(d.calls) <= d.late
	d.mu.Unlock()
	if late {
		time.Sleep(time.Until(p.Until) + time.Millisecond) // as if it waited for a lock
	}
	return driver.SettleResult{Lost: lost}, nil
}

// TestExtendOnlyReportsLostLeases: the heartbeat's extension reports as lost
// only leases this process still held open, never one being settled (Run's
// handed-off acks, whose claim recorded them first: issue 25 §4); it never
// names a lease being settled in a caller's transaction, whose row that
// transaction may hold locked; and one that came back after its own expiry
// is applied again, and reports its leases lost when late again (Run's
// heartbeat; Delivery.Extend keeps what it asked for).
func TestExtendOnlyReportsLostLeases(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		state     int32 // of lease 1; lease 2 is open
		inTx      bool  // lease 1 is being settled in a caller's transaction
		lost      []int64
		late      int
		keepLate  bool    // Delivery.Extend's call: a late expiry is kept
		wantLost  []int64 // in the returned error
		wantState int32   // of lease 1 afterwards
		wantCalls [][]int64
	}{
		{name: "all extended", state: leaseOpen, wantState: leaseOpen, wantCalls: [][]int64{{1, 2}}},
		{name: "an open lease the database lost", state: leaseOpen, lost: []int64{1}, wantLost: []int64{1}, wantState: leaseLost,
			wantCalls: [][]int64{{1, 2}}},
		{name: "a handed-off ack its claim recorded first", state: leaseSettling, lost: []int64{1}, wantState: leaseSettling,
			wantCalls: [][]int64{{1, 2}}},
		{name: "a lease settled in a caller's transaction", state: leaseSettling, inTx: true, wantState: leaseSettling,
			wantCalls: [][]int64{{2}}},
		{name: "late once: applied again", state: leaseOpen, late: 1, wantState: leaseOpen, wantCalls: [][]int64{{1, 2}, {1, 2}}},
		{name: "late twice: lost", state: leaseOpen, late: 2, wantLost: []int64{1, 2}, wantState: leaseLost, wantCalls: [][]int64{{1, 2}, {1, 2}}},
		{name: "late for Delivery.Extend: kept", state: leaseOpen, late: 1, keepLate: true, wantState: leaseOpen, wantCalls: [][]int64{{1, 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// An extension that is meant to come back in time but took the
			// whole of by (a loaded machine) counts as late: such a run
			// proves nothing, and runs again with a longer by.
			by := 300 * time.Millisecond
			var (
				drv   *extendDriver
				ls    []*lease
				err   error
				start time.Time
			)
			for {
				drv = &extendDriver{lost: map[int64]bool{}, late: tc.late}
				for _, id := range tc.lost {
					drv.lost[id] = true
				}
				g := &group{client: &Client{drv: drv}, name: "g"}
				ls = []*lease{{group: g, id: 1}, {group: g, id: 2}}
				ls[0].state.Store(tc.state)
				ls[0].inTx.Store(tc.inTx)
				start = time.Now()
				err = g.extend(context.Background(), ls, by, !tc.keepLate)
				if time.Since(start) < time.Duration(tc.late+1)*by || by >= time.Minute {
					break
				}
				t.Logf("extend took %v with by %v: too slow to tell a late call from one in time; again with %v", time.Since(start), by, 4*by)
				by *= 4
			}
			var se *SettleError
			switch {
			case len(tc.wantLost) == 0 && err != nil:
				t.Fatalf("extend: %v; want nil", err)
			case len(tc.wantLost) > 0 && (!errors.As(err, &se) || !slices.Equal(se.Lost, tc.wantLost)):
				t.Fatalf("extend: %v; want lost %v", err, tc.wantLost)
			}
			if got := ls[0].state.Load(); got != tc.wantState {
				t.Errorf("lease 1 is in state %d, want %d", got, tc.wantState)
			}
			if !slices.EqualFunc(drv.calls, tc.wantCalls, slices.Equal) {
				t.Errorf("Extend named %v, want %v", drv.calls, tc.wantCalls)
			}
			// A late extension's expiry is not kept: the one applied again
			// began after it came back, past the first expiry.
			if after := start.Add(time.Duration(tc.late) * by); tc.wantState == leaseOpen && !tc.keepLate && ls[0].expired(after) {
				t.Errorf("lease 1 runs until %v, want past %v", time.Unix(0, ls[0].until.Load()), after)
			}
		})
	}
}
