package conformance

import (
	"context"
	"fmt"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// healthSizes are the two logs Health and Maintain are measured on: rows in
// the log, and how many of them are dead letters of the group.
var healthSizes = []struct {
	name       string
	rows, dead int
}{
	{"rows=10k", 10_000, 100},
	{"rows=1M", 1_000_000, 10_000},
}

// benchHealth measures one Health read of a stream whose group has read the
// whole log but for its dead letters. Health reports rows per version, and
// those counts are the one figure that is the size of the log by nature;
// everything else (high-water marks, unread rows, exceptions) must be read
// from indexes, at a cost of the work outstanding, not of the log.
func benchHealth(b *testing.B, target BenchTarget) {
	for _, size := range healthSizes {
		c := healthLog(b, target.Target, size.rows, size.dead)
		s := c.Stream[sqlstreams.RawPayload]("log")
		b.Run(size.name, func(b *testing.B) {
			for b.Loop() {
				h, err := s.Health(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				if len(h.Versions) != 1 || len(h.Versions[0].Groups) != 1 || h.Versions[0].Groups[0].Dead != int64(size.dead) {
					b.Fatalf("health: %+v, want one version with one group of %d dead", h.Versions, size.dead)
				}
			}
		})
	}
}

// benchMaintain measures one maintenance pass (Client.Maintain) over the
// same log, under age and row limits it is well within: the steady state of
// a stream whose retention has nothing to remove. Finding that out must not
// cost a scan of the log.
func benchMaintain(b *testing.B, target BenchTarget) {
	for _, size := range healthSizes {
		c := healthLog(b, target.Target, size.rows, size.dead)
		b.Run(size.name, func(b *testing.B) {
			for b.Loop() {
				rep, err := c.Maintain(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				if rep.Retained != 0 || rep.Compacted != 0 {
					b.Fatalf("maintenance removed rows: %+v", rep)
				}
			}
		})
	}
}

// healthLog creates, on a namespace of b's, a stream "log" of four
// partitions holding rows rows under retention limits it is within, and a
// group "g" whose cursors are at the head, with dead of the rows dead
// letters. The dead letters come from a member with one attempt and leases
// that expire at once: the next claim buries them all, in batches.
func healthLog(b *testing.B, target Target, rows, dead int) *sqlstreams.Client {
	ctx := context.Background()
	c := benchClient(b, target, target.NewNamespace(b))
	if _, err := c.Stream[benchEvent]("log").Create(ctx, &sqlstreams.StreamOptions{Partitions: 4,
		Retention: sqlstreams.Retention{MaxAge: 30 * 24 * time.Hour, MaxRows: 10 * int64(rows)}}); err != nil {
		b.Fatal(err)
	}
	p := producer[benchEvent](b, c, "log")
	produce := func(from, to int) {
		const batch = 2000
		for start := from; start < to; start += batch {
			msgs := make([]sqlstreams.Message[benchEvent], min(batch, to-start))
			for j := range msgs {
				msgs[j] = sqlstreams.NewMessage(newBenchEvent(start+j), sqlstreams.Key(fmt.Sprintf("k%d", start+j)), sqlstreams.RoutingKey("eu.web"))
			}
			if _, err := p.ProduceBatch(ctx, msgs...); err != nil {
				b.Fatal(err)
			}
		}
	}
	produce(0, dead)
	cons := consumer[benchEvent](b, c, "log", "g", &sqlstreams.ConsumerOptions{MaxAttempts: 1, LeaseDuration: time.Microsecond})
	for leased := 0; leased < dead; {
		ds, err := cons.Claim(ctx, min(1000, dead-leased))
		if err != nil {
			b.Fatal(err)
		}
		if len(ds) == 0 {
			b.Fatalf("leased %d of %d rows, then nothing", leased, dead)
		}
		leased += len(ds)
	}
	// Every lease has expired on its last attempt: this claim buries them.
	if ds, err := cons.Claim(ctx, 1000); err != nil || len(ds) != 0 {
		b.Fatalf("claim after the leases expired: %d deliveries, %v", len(ds), err)
	}
	produce(dead, rows)
	if _, err := c.Stream[benchEvent]("log").Group("g").ResetCursors(ctx, sqlstreams.ResetOptions{To: sqlstreams.ResetToLatest()}); err != nil {
		b.Fatal(err)
	}
	return c
}
