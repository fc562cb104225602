package conformance

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

func init() {
	register("D5_LeaseModel", testDriverLeaseModel)
	register("D6_OrderedLeaseModel", testDriverOrderedLeaseModel)
}

// modelState is where the model says one delivery is.
type modelState int

const (
	modelUnread modelState = iota
	modelLeased
	modelDelayed
	modelDead
	modelResolved
)

// modelDelivery is the model's record of one row for the group.
type modelDelivery struct {
	state   modelState
	token   string    // the current lease's token while leased
	until   time.Time // the lease's expiry while leased
	due     time.Time // when a delayed delivery is due
	attempt int       // attempts used (a release gives one back)
}

// leaseModel is the expected lease state of every row of a driverFixture's
// group, driven by the same calls as the driver, on a clock of its own.
type leaseModel struct {
	f      *driverFixture
	rng    *rand.Rand
	now    time.Time
	start  time.Time
	lease  time.Duration
	ids    []int64
	rows   map[int64]*modelDelivery
	issued []driver.Lease // every lease ever handed out, stale ones too
	// ordered claims as an ordered group does (C10); maxAttempts is the
	// claims' MaxAttempts.
	ordered     bool
	maxAttempts int
}

// testDriverLeaseModel drives claims, acks, failures, releases, extensions
// and lease expiry in random order (fixed seeds, so every run makes the
// same calls) on a clock the test moves, and checks each result against a
// model of the lease rules: a claim hands out exactly the rows that are new,
// due or expired (burying an expired lease on its last attempt), with the
// right attempt; a settle changes exactly the deliveries whose token is the
// current lease's, expired or not, and reports the others lost; nothing
// resolved comes back; Health's counts match the model after every step.
// These are the rules a change to how leases are stored (batch leases,
// docs/decisions.md) must keep.
func testDriverLeaseModel(t *testing.T, h *harness) {
	runLeaseModel(t, h, false, 3)
}

// testDriverOrderedLeaseModel is D5 for an ordered group: a claim hands out
// the lowest unresolved delivery of the partition alone when it is due or
// expired, and new rows, in id order, only when nothing of the partition is
// leased or delayed. No MaxAttempts, so that no claim buries.
func testDriverOrderedLeaseModel(t *testing.T, h *harness) {
	runLeaseModel(t, h, true, 0)
}

func runLeaseModel(t *testing.T, h *harness, ordered bool, maxAttempts int) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			m := newLeaseModel(t, &harness{target: h.target}, seed)
			m.ordered, m.maxAttempts = ordered, maxAttempts
			for step := range 120 {
				m.step(t, step)
				m.checkHealth(t, step)
			}
			m.drain(t)
		})
	}
}

func newLeaseModel(t *testing.T, h *harness, seed uint64) *leaseModel {
	f := newDriverFixture(t, h)
	m := &leaseModel{f: f, rng: rand.New(rand.NewPCG(seed, 11)), now: time.Now().UTC().Truncate(time.Second),
		lease: 10 * time.Second, rows: map[int64]*modelDelivery{}}
	m.start = m.now
	m.ids = f.append(1, 40)
	for _, id := range m.ids {
		m.rows[id] = &modelDelivery{}
	}
	return m
}

// step makes one random call and checks it.
func (m *leaseModel) step(t *testing.T, step int) {
	t.Helper()
	m.now = m.now.Add(time.Duration(m.rng.IntN(4)) * time.Second)
	switch op := m.rng.IntN(10); {
	case op < 3:
		m.claim(t, step, 1+m.rng.IntN(8))
	case op < 5:
		m.settle(t, step, "Ack")
	case op < 7:
		m.settle(t, step, "Fail")
	case op < 8:
		m.settle(t, step, "Release")
	default:
		m.settle(t, step, "Extend")
	}
}

// claimable lists what a claim now may hand out and what it must bury:
// new rows, due delayed deliveries and expired leases. For an ordered group
// it is the lowest leased or delayed delivery alone, when that is due or
// expired, and otherwise the new rows only when there is no such delivery.
func (m *leaseModel) claimable() (out []int64, bury []int64) {
	if m.ordered {
		for _, id := range m.ids {
			switch d := m.rows[id]; d.state {
			case modelLeased, modelDelayed:
				if d.state == modelDelayed && !d.due.After(m.now) || d.state == modelLeased && !d.until.After(m.now) {
					return []int64{id}, nil
				}
				return nil, nil
			}
		}
		for _, id := range m.ids {
			if m.rows[id].state == modelUnread {
				out = append(out, id)
			}
		}
		return out, nil
	}
	for _, id := range m.ids {
		d := m.rows[id]
		switch {
		case d.state == modelUnread, d.state == modelDelayed && !d.due.After(m.now):
			out = append(out, id)
		case d.state == modelLeased && !d.until.After(m.now):
			if m.maxAttempts > 0 && d.attempt >= m.maxAttempts {
				bury = append(bury, id)
			} else {
				out = append(out, id)
			}
		}
	}
	return out, bury
}

func (m *leaseModel) claim(t *testing.T, step, limit int) {
	t.Helper()
	f := m.f
	f.n++
	token := fmt.Sprintf("model-%d", f.n)
	want, bury := m.claimable()
	res, err := f.drv.Claim(ctx(t), driver.ClaimParams{Stream: f.stream, Group: "g", Member: driver.Member{SchemaVersion: 1},
		Decodes: []int{1}, Limit: limit, Ordered: m.ordered, Token: token, Holder: "model", Now: m.now, LeaseUntil: m.now.Add(m.lease),
		MaxAttempts: m.maxAttempts, LastError: "lease expired on the last attempt"})
	if err != nil {
		t.Fatalf("step %d: Claim(%d): %v", step, limit, err)
	}
	t.Logf("step %d at +%s: Claim(%d) -> %v (claimable %v, to bury %v)", step, m.now.Sub(m.start), limit, deliveryIDs(res.Deliveries), want, bury)
	// A claim buries the expired leases on their last attempt that it comes
	// across while filling its limit; the others wait for a later claim.
	dead, err := f.drv.ListDead(ctx(t), driver.ListDeadParams{StreamID: f.stream.ID, Group: "g", Limit: len(m.ids)})
	if err != nil {
		t.Fatalf("step %d: ListDead: %v", step, err)
	}
	for _, dl := range dead {
		d := m.rows[dl.ID]
		if d.state == modelDead {
			continue
		}
		if !slices.Contains(bury, dl.ID) {
			t.Fatalf("step %d: Claim(%d) buried %d, which was not an expired lease on its last attempt (those: %v)", step, limit, dl.ID, bury)
		}
		d.state, d.token = modelDead, ""
	}
	if n := min(limit, len(want)); len(res.Deliveries) != n {
		t.Fatalf("step %d: Claim(%d) handed out %v; want %d of the claimable %v", step, limit, deliveryIDs(res.Deliveries), n, want)
	}
	if got := deliveryIDs(res.Deliveries); m.ordered && !slices.Equal(got, want[:len(got)]) {
		t.Fatalf("step %d: ordered Claim(%d) handed out %v; want %v, in id order", step, limit, got, want[:len(got)])
	}
	for _, dl := range res.Deliveries {
		d, ok := m.rows[dl.ID]
		if !ok || !slices.Contains(want, dl.ID) {
			t.Fatalf("step %d: Claim handed out %d, which is not claimable (claimable %v)", step, dl.ID, want)
		}
		if d.state == modelUnread {
			d.attempt = 0
		}
		d.attempt++
		if dl.Attempt != d.attempt {
			t.Fatalf("step %d: Claim handed out %d at attempt %d; want %d", step, dl.ID, dl.Attempt, d.attempt)
		}
		d.state, d.token, d.until = modelLeased, token, m.now.Add(m.lease)
		m.issued = append(m.issued, driver.Lease{ID: dl.ID, Token: token})
	}
}

// pick chooses a few of the leases ever issued, the current ones more
// often than stale ones, one lease per id.
func (m *leaseModel) pick() []driver.Lease {
	var out []driver.Lease
	seen := map[int64]bool{}
	for range 1 + m.rng.IntN(6) {
		if len(m.issued) == 0 {
			break
		}
		// The newest leases are the likeliest to be current.
		i := len(m.issued) - 1 - m.rng.IntN(min(len(m.issued), 12))
		if m.rng.IntN(4) == 0 {
			i = m.rng.IntN(len(m.issued))
		}
		l := m.issued[i]
		if !seen[l.ID] {
			seen[l.ID] = true
			out = append(out, l)
		}
	}
	return out
}

func (m *leaseModel) settle(t *testing.T, step int, op string) {
	t.Helper()
	f := m.f
	leases := m.pick()
	if len(leases) == 0 {
		return
	}
	var wantLost []int64
	held := func(l driver.Lease) bool {
		d := m.rows[l.ID]
		return d.state == modelLeased && d.token == l.Token
	}
	for _, l := range leases {
		if !held(l) {
			wantLost = append(wantLost, l.ID)
		}
	}
	var res driver.SettleResult
	var err error
	switch op {
	case "Ack":
		res, err = f.drv.Ack(ctx(t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Leases: leases, Now: m.now})
		for _, l := range leases {
			if held(l) {
				m.rows[l.ID].state, m.rows[l.ID].token = modelResolved, ""
			}
		}
	case "Fail":
		failures := make([]driver.Failure, len(leases))
		for i, l := range leases {
			dead := m.rng.IntN(5) == 0 || m.maxAttempts > 0 && m.rows[l.ID].attempt >= m.maxAttempts
			failures[i] = driver.Failure{Lease: l, Error: fmt.Sprintf("failure %d", step), Dead: dead,
				Due: m.now.Add(time.Duration(m.rng.IntN(3)) * time.Second)}
		}
		res, err = f.drv.Fail(ctx(t), driver.FailParams{StreamID: f.stream.ID, Group: "g", Failures: failures, Now: m.now})
		for _, fl := range failures {
			if !held(fl.Lease) {
				continue
			}
			d := m.rows[fl.Lease.ID]
			d.token = ""
			if fl.Dead {
				d.state = modelDead
			} else {
				d.state, d.due = modelDelayed, fl.Due
			}
		}
	case "Release":
		res, err = f.drv.Release(ctx(t), driver.ReleaseParams{StreamID: f.stream.ID, Group: "g", Leases: leases, Now: m.now})
		for _, l := range leases {
			if held(l) {
				d := m.rows[l.ID]
				d.state, d.token, d.due = modelDelayed, "", m.now
				d.attempt--
			}
		}
	case "Extend":
		until := m.now.Add(m.lease)
		res, err = f.drv.Extend(ctx(t), driver.ExtendParams{StreamID: f.stream.ID, Group: "g", Leases: leases, Until: until, Now: m.now})
		for _, l := range leases {
			if held(l) {
				m.rows[l.ID].until = until
			}
		}
	}
	if err != nil {
		t.Fatalf("step %d: %s(%v): %v", step, op, leases, err)
	}
	t.Logf("step %d at +%s: %s(%v) -> lost %v", step, m.now.Sub(m.start), op, leases, res.Lost)
	lost := slices.Sorted(slices.Values(res.Lost))
	slices.Sort(wantLost)
	if !slices.Equal(lost, wantLost) {
		t.Fatalf("step %d: %s(%v) reported lost %v; want %v (only leases whose token is the current one settle)", step, op, leases, lost, wantLost)
	}
}

// checkHealth compares Health's unread rows and exception counts with the
// model.
func (m *leaseModel) checkHealth(t *testing.T, step int) {
	t.Helper()
	st, err := m.f.drv.Health(ctx(t), driver.HealthParams{StreamID: m.f.stream.ID, Now: m.now})
	if err != nil {
		t.Fatalf("step %d: Health: %v", step, err)
	}
	got := map[modelState]int64{}
	for _, u := range st.Unread {
		got[modelUnread] += u.Rows
	}
	for _, e := range st.Exceptions {
		switch e.State {
		case driver.StateLeased:
			got[modelLeased] += e.Count
		case driver.StateDelayed:
			got[modelDelayed] += e.Count
		case driver.StateDead:
			got[modelDead] += e.Count
		}
	}
	want := map[modelState]int64{}
	for _, d := range m.rows {
		if d.state != modelResolved {
			want[d.state]++
		}
	}
	if !mapsEqual(got, want) {
		t.Fatalf("step %d: Health counts unread/leased/delayed/dead %d/%d/%d/%d; the model has %d/%d/%d/%d", step,
			got[modelUnread], got[modelLeased], got[modelDelayed], got[modelDead],
			want[modelUnread], want[modelLeased], want[modelDelayed], want[modelDead])
	}
}

// drain moves the clock past every lease and retry and acks whatever comes
// back until nothing does: then every row is resolved or dead, as the model
// says.
func (m *leaseModel) drain(t *testing.T) {
	t.Helper()
	for round := 0; ; round++ {
		if round > 4*len(m.ids) {
			t.Fatalf("claims kept handing out deliveries after %d rounds", round)
		}
		m.now = m.now.Add(time.Hour)
		before := len(m.issued)
		m.claim(t, -1, 50)
		if len(m.issued) == before {
			break
		}
		var leases []driver.Lease
		for _, l := range m.issued[before:] {
			leases = append(leases, l)
			m.rows[l.ID].state = modelResolved
		}
		res, err := m.f.drv.Ack(ctx(t), driver.AckParams{StreamID: m.f.stream.ID, Group: "g", Leases: leases, Now: m.now})
		if err != nil || len(res.Lost) != 0 {
			t.Fatalf("draining: Ack: lost %v, %v", res.Lost, err)
		}
	}
	m.checkHealth(t, -1)
	for _, id := range m.ids {
		if s := m.rows[id].state; s != modelResolved && s != modelDead {
			t.Errorf("row %d left in state %d after draining", id, s)
		}
	}
}

func deliveryIDs(ds []driver.Delivery) []int64 {
	out := make([]int64, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	for k, v := range a {
		if v != *new(V) && b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if v != *new(V) && a[k] != v {
			return false
		}
	}
	return true
}
