package conformance

import (
	"context"
	"fmt"
	"testing"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// benchIdlePoll measures what a consumer pays to find out that nothing is
// claimable: one Claim that returns nothing, which is Run's poll while the
// group is caught up (Run only claims; an empty claim makes it wait for the
// poll interval or a wake-up). The stream holds a few rows per partition,
// all acked, so that every cursor is at its partition's head. The cost must
// not grow with the partition count: a poll that locks every cursor row
// (MariaDB) or takes the single write lock (SQLite) to find nothing makes
// every idle consumer a load on producers and busy groups.
func benchIdlePoll(b *testing.B, target BenchTarget) {
	for _, parts := range []int{1, 512} {
		cons := idleGroup(b, target.Target, parts)
		b.Run(fmt.Sprintf("partitions=%d", parts), func(b *testing.B) {
			for b.Loop() {
				ds, err := cons.Claim(context.Background(), benchBatch)
				if err != nil {
					b.Fatal(err)
				}
				if len(ds) != 0 {
					b.Fatalf("an idle poll claimed %d deliveries", len(ds))
				}
			}
		})
	}
}

// idleGroup creates a stream of parts partitions on a namespace of b's,
// four rows per partition, and a group that has claimed and acked them all.
func idleGroup(b *testing.B, target Target, parts int) *sqlstreams.Consumer[benchEvent] {
	c := benchClient(b, target, target.NewNamespace(b))
	if _, err := c.Stream[benchEvent]("idle").Create(context.Background(), &sqlstreams.StreamOptions{Partitions: parts}); err != nil {
		b.Fatal(err)
	}
	p := producer[benchEvent](b, c, "idle")
	msgs := make([]sqlstreams.Message[benchEvent], 4*parts)
	for i := range msgs {
		msgs[i] = sqlstreams.NewMessage(newBenchEvent(i), sqlstreams.Key(fmt.Sprintf("k%d", i)), sqlstreams.RoutingKey("eu.web"))
	}
	if _, err := p.ProduceBatch(context.Background(), msgs...); err != nil {
		b.Fatal(err)
	}
	cons := consumer[benchEvent](b, c, "idle", "idle-group", nil)
	for got := 0; got < len(msgs); {
		ds, err := cons.Claim(context.Background(), 1000)
		if err != nil {
			b.Fatal(err)
		}
		if len(ds) == 0 {
			b.Fatalf("the group claimed %d of %d rows, then nothing", got, len(msgs))
		}
		if err := cons.Ack(context.Background(), ds...); err != nil {
			b.Fatal(err)
		}
		got += len(ds)
	}
	return cons
}
