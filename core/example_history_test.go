package sqlstreams_test

import (
	"context"
	"fmt"
	"log"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/memdriver"
)

// History reads the samples maintenance takes of a stream (one per stream
// per sample interval) as points with rates: produce rate, and per group
// its lag, consume rate and dead-letter arrivals. Here the interval is a
// millisecond so that two maintenance passes sample two buckets; in
// production it is a minute and the background loop takes them.
func ExampleStream_History() {
	ctx := context.Background()
	client, err := sqlstreams.Open(ctx, memdriver.Open(),
		sqlstreams.WithMaintenanceInterval(0), sqlstreams.WithSampleInterval(time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	consumer, err := client.Stream[OrderPlacedV1]("orders.placed").Consumer("billing").Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	// sample runs maintenance until it stores a sample of a new bucket.
	sample := func() {
		for {
			rep, err := client.Maintain(ctx)
			if err != nil {
				log.Fatal(err)
			}
			if rep.Sampled > 0 {
				return
			}
		}
	}
	sample()
	produceOrders(ctx, client, "orders.placed", "a-1", "a-2", "a-3")
	batch, err := consumer.Claim(ctx, 1)
	if err != nil {
		log.Fatal(err)
	}
	if err := consumer.Ack(ctx, batch...); err != nil {
		log.Fatal(err)
	}
	sample()

	points, err := client.Stream[sqlstreams.RawPayload]("orders.placed").History(ctx, time.Now().Add(-time.Hour))
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range points {
		fmt.Printf("high water %d, produced %.0f rows in the span\n", p.HighWater, p.ProduceRate*p.Span.Seconds())
		for _, g := range p.Groups {
			fmt.Printf("%s: lag %d, consumed %.0f rows in the span\n", g.Group, g.Unread, g.ConsumeRate*p.Span.Seconds())
		}
	}
	// Output:
	// high water 3, produced 3 rows in the span
	// billing: lag 2, consumed 1 rows in the span
}
