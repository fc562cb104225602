package conformance

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// WakeLatency measures produce-to-handler latency between two clients on
// one database (as two processes), so that only the driver's wake-ups
// across processes, or else Run's poll every poll, bring each message in.
// open returns a new client on that database, each call its own. Messages
// go one at a time while the consumer waits idle, each at a random point of
// the consumer's poll cycle (10ms plus up to poll after the last one was
// handled): a producer does not know when the consumer polls, and one that
// produced at a fixed time after each handler would meet the poll at the
// same point every time. It reports p50-µs and p99-µs, and what the
// consumer's claims cost while it waits: claims/s (almost all of them the
// idle polls) and claim-ms/s, the time spent in them per second, from a
// ClaimHook; claim-p50-µs is the median time of the claims that brought a
// message, the part of the latency the claim itself costs. A driver runs it
// with and without its wake-ups.
func WakeLatency(b *testing.B, poll time.Duration, open func(testing.TB) *sqlstreams.Client) {
	pc, cc := open(b), open(b)
	p := producer[benchEvent](b, pc, "latency")
	claims := &claimCounter{}
	found := &deliveringClaims{}
	cons := consumer[benchEvent](b, cc, "latency", "g", &sqlstreams.ConsumerOptions{PollInterval: poll,
		Middleware: []sqlstreams.Middleware{claims, found}})
	got := make(chan time.Time, 1)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = cons.Run(ctx, func(context.Context, sqlstreams.Delivery[benchEvent]) error {
			got <- time.Now()
			return nil
		})
	})
	time.Sleep(200 * time.Millisecond)
	lat := make([]time.Duration, 0, b.N)
	claims.n.Store(0)
	claims.spent.Store(0)
	began := time.Now()
	for i := 0; b.Loop(); i++ {
		// Produce the next message while the consumer waits idle, not while
		// it is still acking the last one, at a random point of its poll.
		time.Sleep(10*time.Millisecond + rand.N(poll))
		start := time.Now()
		if _, err := p.Produce(context.Background(), newBenchEvent(i)); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, (<-got).Sub(start))
	}
	elapsed := time.Since(began).Seconds()
	cancel()
	wg.Wait()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(claims.n.Load())/elapsed, "claims/s")
	found.mu.Lock()
	if len(found.d) > 0 {
		slices.Sort(found.d)
		b.ReportMetric(float64(found.d[len(found.d)/2].Microseconds()), "claim-p50-µs")
	}
	found.mu.Unlock()
	b.ReportMetric(time.Duration(claims.spent.Load()).Seconds()*1000/elapsed, "claim-ms/s")
}

// deliveringClaims records how long each claim that brought deliveries
// took: the part of the latency the claim itself costs.
type deliveringClaims struct {
	sqlstreams.MiddlewareDefaults
	mu sync.Mutex
	d  []time.Duration
}

func (c *deliveringClaims) Claimed(_ context.Context, e sqlstreams.ClaimEvent) {
	if len(e.Deliveries) > 0 {
		c.mu.Lock()
		c.d = append(c.d, e.Duration)
		c.mu.Unlock()
	}
}
