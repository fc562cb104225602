package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/sqlstreams/sqlstreams/driver/sqlite"
)

// With batch leases a claim is leased as one record per partition instead
// of one row per delivery; deliveries are acked, retried and extended
// exactly as without. Turn it on once every process sharing the database
// runs a release that reads batch leases (migration 0007 and later).
func ExampleWithBatchLeases() {
	ctx := context.Background()
	client, drv, done := exampleClient(sqlite.WithBatchLeases())
	defer done()

	stream := client.Stream[OrderPlacedV1]("orders.placed")
	producer, err := stream.Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, id := range []string{"o-1", "o-2", "o-3"} {
		if _, err := producer.Produce(ctx, OrderPlacedV1{OrderID: id, Total: 995}); err != nil {
			log.Fatal(err)
		}
	}
	consumer, err := stream.Consumer("billing").Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	batch, err := consumer.Claim(ctx, 10)
	if err != nil {
		log.Fatal(err)
	}
	var leases int64
	if err := drv.DB().QueryRowContext(ctx, `SELECT COUNT(*) FROM delivery_batch`).Scan(&leases); err != nil {
		log.Fatal(err)
	}
	fmt.Println("claimed", len(batch), "deliveries, stored as", leases, "lease record")

	// One delivery fails: it gets a row of its own and comes back; the
	// others are acked with their batch.
	if err := batch[1].Retry(ctx, 0, errors.New("ledger busy")); err != nil {
		log.Fatal(err)
	}
	if err := consumer.Ack(ctx, batch[0], batch[2]); err != nil {
		log.Fatal(err)
	}
	again, err := consumer.Claim(ctx, 10)
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range again {
		fmt.Println("claimed", d.Value.OrderID, "attempt", d.Attempt)
	}
	// Output:
	// claimed 3 deliveries, stored as 1 lease record
	// claimed o-2 attempt 2
}
