package conformance

import (
	"context"
	"sync"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// faultDriver wraps the driver under test to make chosen calls fail or
// hang, so that tests can prove what sqlstreams does when the database
// misbehaves, identically on every driver.
type faultDriver struct {
	driver.Driver
	driver.Registry

	mu sync.Mutex
	// failAcks, failFails and failExtends make the next n calls of each
	// fail with ErrUnavailable before they reach the database.
	failAcks, failFails, failExtends int
	// failAckClaims makes the next n claims that carry acks fail the same
	// way.
	failAckClaims int
	// failPlainClaims makes the next n claims that carry no acks fail the
	// same way (AckAndClaim's second claim, after its first recorded the
	// acks).
	failPlainClaims int
	// hangClaims makes Claim wait until its context ends while set; hung
	// records when each such claim began and ended.
	hangClaims bool
	hung       []span
	// hangsOnlyTimeOut runs the calls that reach the database free of the
	// caller's deadline (a minute bounds them instead): a test may then give
	// the client an operation timeout short enough to end hung claims soon
	// without the real calls timing out too on a loaded machine.
	hangsOnlyTimeOut bool
	claims           int // Claim calls seen
	ackClaims        int // of those, claims that carried acks
	// extendDuringAckClaim makes the next claim that carries acks wait (at
	// most 10 s) for an extension naming one of them, and that extension
	// wait until the claim recorded them; the claim returns once the
	// extension did: the heartbeat extends acks that their claim records
	// first. raced says that it happened.
	extendDuringAckClaim, raced      bool
	racing                           map[int64]bool // the acks of that claim
	extendSeen, claimDone, extendEnd chan struct{}
}

var errInjected = &driver.Error{Kind: driver.ErrUnavailable, Err: errorString("conformance: injected outage")}

func (f *faultDriver) take(n *int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if *n > 0 {
		*n--
		return true
	}
	return false
}

func (f *faultDriver) set(fn func(*faultDriver)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *faultDriver) Claim(ctx context.Context, p driver.ClaimParams) (driver.ClaimResult, error) {
	f.mu.Lock()
	f.claims++
	hang := f.hangClaims
	fail := false
	if len(p.Acks) > 0 {
		f.ackClaims++
		if f.failAckClaims > 0 {
			f.failAckClaims--
			fail = true
		}
	} else if f.failPlainClaims > 0 {
		f.failPlainClaims--
		fail = true
	}
	race := len(p.Acks) > 0 && !fail && f.extendDuringAckClaim
	if race {
		f.extendDuringAckClaim, f.racing = false, map[int64]bool{}
		for _, l := range p.Acks {
			f.racing[l.ID] = true
		}
		f.extendSeen, f.claimDone, f.extendEnd = make(chan struct{}), make(chan struct{}), make(chan struct{})
	}
	seen, done, end := f.extendSeen, f.claimDone, f.extendEnd
	f.mu.Unlock()
	if fail {
		return driver.ClaimResult{}, errInjected
	}
	if hang {
		began := time.Now()
		<-ctx.Done()
		f.mu.Lock()
		f.hung = append(f.hung, span{began, time.Now()})
		f.mu.Unlock()
		return driver.ClaimResult{}, ctx.Err()
	}
	ctx, cancel := f.unhurried(ctx)
	defer cancel()
	if !race {
		return f.Driver.Claim(ctx, p)
	}
	select {
	case <-seen:
	case <-time.After(10 * time.Second):
		return f.Driver.Claim(ctx, p)
	}
	res, err := f.Driver.Claim(ctx, p)
	close(done)
	select {
	case <-end:
	case <-time.After(10 * time.Second):
	}
	return res, err
}

func (f *faultDriver) Ack(ctx context.Context, p driver.AckParams) (driver.SettleResult, error) {
	if f.take(&f.failAcks) {
		return driver.SettleResult{}, errInjected
	}
	ctx, cancel := f.unhurried(ctx)
	defer cancel()
	return f.Driver.Ack(ctx, p)
}

func (f *faultDriver) Fail(ctx context.Context, p driver.FailParams) (driver.SettleResult, error) {
	if f.take(&f.failFails) {
		return driver.SettleResult{}, errInjected
	}
	ctx, cancel := f.unhurried(ctx)
	defer cancel()
	return f.Driver.Fail(ctx, p)
}

func (f *faultDriver) Release(ctx context.Context, p driver.ReleaseParams) (driver.SettleResult, error) {
	ctx, cancel := f.unhurried(ctx)
	defer cancel()
	return f.Driver.Release(ctx, p)
}

func (f *faultDriver) Extend(ctx context.Context, p driver.ExtendParams) (driver.SettleResult, error) {
	if f.take(&f.failExtends) {
		return driver.SettleResult{}, errInjected
	}
	f.mu.Lock()
	race := false
	for _, l := range p.Leases {
		race = race || (f.racing[l.ID] && !f.raced)
	}
	if race {
		f.raced = true
		close(f.extendSeen)
	}
	done, end := f.claimDone, f.extendEnd
	f.mu.Unlock()
	ctx, cancel := f.unhurried(ctx)
	defer cancel()
	if !race {
		return f.Driver.Extend(ctx, p)
	}
	defer close(end)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
	return f.Driver.Extend(ctx, p)
}

// span is when something began and ended.
type span struct{ began, ended time.Time }

// unhurried is the context a call that reaches the database runs under:
// ctx, or under hangsOnlyTimeOut ctx's values with a minute's deadline.
func (f *faultDriver) unhurried(ctx context.Context) (context.Context, context.CancelFunc) {
	f.mu.Lock()
	free := f.hangsOnlyTimeOut
	f.mu.Unlock()
	if !free {
		return ctx, func() {}
	}
	return context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
}

// faultyClient opens a client on the test's namespace through a faultDriver.
func (h *harness) faultyClient(t testing.TB, opts ...sqlstreams.ClientOption) (*sqlstreams.Client, *faultDriver) {
	t.Helper()
	drv, err := h.target.Open(h.ns(t))
	if err != nil {
		t.Fatalf("open %s driver: %v", h.target.Name, err)
	}
	reg, ok := drv.(driver.Registry)
	if !ok {
		t.Fatalf("%s driver has no registry", h.target.Name)
	}
	f := &faultDriver{Driver: drv, Registry: reg}
	return h.clientOn(t, f, opts...), f
}

// clientOn opens a client on drv, closed at cleanup.
func (h *harness) clientOn(t testing.TB, drv driver.Driver, opts ...sqlstreams.ClientOption) *sqlstreams.Client {
	t.Helper()
	opts = append([]sqlstreams.ClientOption{sqlstreams.WithMaintenanceInterval(0), sqlstreams.WithLogger(testLogger(t))}, opts...)
	c, err := sqlstreams.Open(context.Background(), drv, opts...)
	if err != nil {
		t.Fatalf("sqlstreams.Open on %s: %v", h.target.Name, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
