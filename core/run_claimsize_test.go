package sqlstreams_test

import (
	"context"
	"sync"
	"testing"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/memdriver"
)

// runClaims records what Run's claims asked for.
type runClaims struct {
	sqlstreams.MiddlewareDefaults
	mu        sync.Mutex
	requested []int
}

func (c *runClaims) Claimed(_ context.Context, e sqlstreams.ClaimEvent) {
	if e.Source == sqlstreams.ClaimSourceRun {
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
		name    string
		drv     driver.Driver
		first   int
		largest int
	}{
		{"in process", memdriver.Open(), 50, 50},
		{"server", serverDriver{memdriver.Open()}, 100, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			claims := &runClaims{}
			client, err := sqlstreams.Open(ctx, tc.drv, sqlstreams.WithMaintenanceInterval(0), sqlstreams.WithMiddleware(claims))
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			p, err := client.Stream[runEvent]("s").Producer().Register(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			const total = 300
			batch := make([]sqlstreams.Message[runEvent], total)
			for i := range batch {
				batch[i] = sqlstreams.NewMessage(runEvent{Cents: int64(i)})
			}
			if _, err := p.ProduceBatch(ctx, batch...); err != nil {
				t.Fatal(err)
			}
			cons, err := client.Stream[runEvent]("s").Consumer("g").Register(ctx, &sqlstreams.ConsumerOptions{Concurrency: 1, BatchSize: 100})
			if err != nil {
				t.Fatal(err)
			}
			runCtx, stop := context.WithCancel(ctx)
			handled := 0
			if err := cons.Run(runCtx, func(context.Context, sqlstreams.Delivery[runEvent]) error {
				if handled++; handled == total {
					stop()
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			claims.mu.Lock()
			defer claims.mu.Unlock()
			if len(claims.requested) == 0 || claims.requested[0] != tc.first || slicesMax(claims.requested) != tc.largest {
				t.Errorf("claims asked for %v; want the first %d, the largest %d", claims.requested, tc.first, tc.largest)
			}
		})
	}
}

func slicesMax(s []int) int {
	m := 0
	for _, v := range s {
		m = max(m, v)
	}
	return m
}
