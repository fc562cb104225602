package conformance

import (
	"context"
	"sort"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// EventV1 and EventV2 are two versions of one message, with shapes that do
// not decode into each other: V1's Total is a number, V2's an object.
type EventV1 struct {
	Seq   int   `json:"seq"`
	Total int64 `json:"total"`
}

func (EventV1) SchemaVersion() int { return 1 }

type Money struct {
	Cents    int64  `json:"cents"`
	Currency string `json:"currency"`
}

type EventV2 struct {
	Seq   int   `json:"seq"`
	Total Money `json:"total"`
}

func (EventV2) SchemaVersion() int { return 2 }

// produceV1 appends n V1 events with sequence numbers from 1 and returns ids.
func produceV1(t testing.TB, p *sqlstreams.Producer[EventV1], n int, opts ...sqlstreams.ProduceOption) []int64 {
	t.Helper()
	ids := make([]int64, n)
	for i := range n {
		id, err := p.Produce(ctx(t), EventV1{Seq: i + 1, Total: int64(100 * (i + 1))}, opts...)
		if err != nil {
			t.Fatalf("produce v1 #%d: %v", i+1, err)
		}
		ids[i] = id
	}
	return ids
}

func produceV2(t testing.TB, p *sqlstreams.Producer[EventV2], n int, opts ...sqlstreams.ProduceOption) []int64 {
	t.Helper()
	ids := make([]int64, n)
	for i := range n {
		id, err := p.Produce(ctx(t), EventV2{Seq: i + 1, Total: Money{Cents: int64(100 * (i + 1)), Currency: "EUR"}}, opts...)
		if err != nil {
			t.Fatalf("produce v2 #%d: %v", i+1, err)
		}
		ids[i] = id
	}
	return ids
}

func producer[T sqlstreams.Versioned](t testing.TB, c *sqlstreams.Client, stream string) *sqlstreams.Producer[T] {
	t.Helper()
	p, err := c.Stream[T](stream).Producer().Register(ctx(t), nil)
	if err != nil {
		t.Fatalf("register producer of %T on %q: %v", *new(T), stream, err)
	}
	return p
}

func consumer[T sqlstreams.Versioned](t testing.TB, c *sqlstreams.Client, stream, group string, opts *sqlstreams.ConsumerOptions) *sqlstreams.Consumer[T] {
	t.Helper()
	cons, err := c.Stream[T](stream).Consumer(group).Register(ctx(t), opts)
	if err != nil {
		t.Fatalf("register consumer of %T as %q on %q: %v", *new(T), group, stream, err)
	}
	return cons
}

// drain claims and acks until a claim returns nothing, and returns what it
// got in claim order.
func drain[T sqlstreams.Versioned](t testing.TB, c *sqlstreams.Consumer[T]) []sqlstreams.Delivery[T] {
	t.Helper()
	var all []sqlstreams.Delivery[T]
	for {
		ds, err := c.Claim(ctx(t), 50)
		if err != nil {
			t.Fatalf("claim: %v", err)
		}
		if len(ds) == 0 {
			return all
		}
		if err := c.Ack(ctx(t), ds...); err != nil {
			t.Fatalf("ack: %v", err)
		}
		all = append(all, ds...)
	}
}

func idsOf[T sqlstreams.Versioned](ds []sqlstreams.Delivery[T]) []int64 {
	out := make([]int64, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

func sortedIDs(ids []int64) []int64 {
	out := append([]int64(nil), ids...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func equalIDs(a, b []int64) bool {
	a, b = sortedIDs(a), sortedIDs(b)
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// health reads the stream's health through a RawPayload handle.
func health(t testing.TB, c *sqlstreams.Client, stream string) sqlstreams.Health {
	t.Helper()
	h, err := c.Stream[sqlstreams.RawPayload](stream).Health(ctx(t))
	if err != nil {
		t.Fatalf("health of %q: %v", stream, err)
	}
	return h
}

func groupAt(t testing.TB, h sqlstreams.Health, version int, group string) sqlstreams.GroupHealth {
	t.Helper()
	vh, ok := h.Version(version)
	if !ok {
		t.Fatalf("health has no version %d: %+v", version, h)
	}
	for _, g := range vh.Groups {
		if g.Group == group {
			return g
		}
	}
	t.Fatalf("health of version %d has no group %q: %+v", version, group, vh)
	return sqlstreams.GroupHealth{}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// settleLease is the lease of a test that settles what it claimed and later
// waits for the lease to run out: its settles must land while it holds, and
// on a loaded machine (load 30 on two cores) a claim or a settle can take a
// second. A lease shorter than the steps that rely on it makes the test
// measure the machine's pace.
const settleLease = 3 * time.Second

// pastLeases sleeps until the leases of ds have run out.
func pastLeases[T sqlstreams.Versioned](ds ...sqlstreams.Delivery[T]) {
	var end time.Time
	for _, d := range ds {
		if d.LeaseExpires().After(end) {
			end = d.LeaseExpires()
		}
	}
	time.Sleep(time.Until(end) + 50*time.Millisecond)
}

// fastRetry are consumer options for tests: short polls and backoff.
func fastRetry(o sqlstreams.ConsumerOptions) *sqlstreams.ConsumerOptions {
	if o.LeaseDuration == 0 {
		// Long enough that a heartbeat late on a loaded machine does not
		// lapse it: tests that need a lease to lapse set their own.
		o.LeaseDuration = 10 * time.Second
	}
	if o.PollInterval == 0 {
		o.PollInterval = 20 * time.Millisecond
	}
	if o.Backoff == nil {
		o.Backoff = func(int) time.Duration { return 10 * time.Millisecond }
	}
	return &o
}

func runFor[T sqlstreams.Versioned](t testing.TB, c *sqlstreams.Consumer[T], h sqlstreams.Handler[T]) (stop func()) {
	t.Helper()
	rctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(rctx, h) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run returned %v", err)
		}
	}
}

var errTest = errorString("conformance: induced failure")

type errorString string

func (e errorString) Error() string { return string(e) }
