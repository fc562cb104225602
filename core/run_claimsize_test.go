package sqlstreams

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/memdriver"
)

// runClaims records what Run's claims asked for.
type runClaims struct {
	MiddlewareDefaults
	mu        sync.Mutex
	requested []int
}

func (c *runClaims) Claimed(_ context.Context, e ClaimEvent) {
	if e.Source == ClaimSourceRun {
		c.mu.Lock()
		c.requested = append(c.requested, e.Requested)
		c.mu.Unlock()
	}
}

// serverDriver is the in-memory driver presented as an engine outside the
// process.
type serverDriver struct{ *memdriver.Driver }

func (serverDriver) Capabilities() driver.Capabilities {
	return driver.Capabilities{SingleWriter: true}
}

// TestRunClaimSize: on an engine in the process, Run's claims ask for at
// most half its budget (BatchSize 100: 50), so that a claim overlaps the
// handling of the one before; against a server the first claim asks for all
// of it.
func TestRunClaimSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		drv            driver.Driver
		first, largest int
	}{
		{"in process", memdriver.Open(), 50, 50},
		{"server", serverDriver{memdriver.Open()}, 100, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			claims := &runClaims{}
			client := runClient(t, tc.drv, WithMiddleware(claims))
			const total = 300
			produceOrders(t, client, total)
			cons, err := client.Stream[benchOrder]("bench").Consumer("g").Register(context.Background(), &ConsumerOptions{Concurrency: 1, BatchSize: 100})
			if err != nil {
				t.Fatal(err)
			}
			runUntil(t, cons, total)
			claims.mu.Lock()
			defer claims.mu.Unlock()
			if len(claims.requested) == 0 || claims.requested[0] != tc.first || slices.Max(claims.requested) != tc.largest {
				t.Errorf("claims asked for %v; want the first %d, the largest %d", claims.requested, tc.first, tc.largest)
			}
		})
	}
}
