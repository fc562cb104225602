package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/sqlstreams/sqlstreams/driver/sqlite"
)

// A claim is leased as one batch record per partition, however many
// deliveries it takes. A delivery failed, released or extended alone gets a
// lease row of its own; the others stay in the batch until they are acked.
func Example_batchLeases() {
	ctx := context.Background()
	client, drv, done := exampleClient()
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
	printLeases(ctx, drv, fmt.Sprintf("claimed %d deliveries", len(batch)))

	// One delivery fails: it gets a row of its own and comes back.
	if err := batch[1].Retry(ctx, 0, errors.New("ledger busy")); err != nil {
		log.Fatal(err)
	}
	printLeases(ctx, drv, "retried "+batch[1].Value.OrderID)
	if err := consumer.Ack(ctx, batch[0], batch[2]); err != nil {
		log.Fatal(err)
	}
	again, err := consumer.Claim(ctx, 10)
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range again {
		printLeases(ctx, drv, fmt.Sprintf("acked the others, claimed %s attempt %d", d.Value.OrderID, d.Attempt))
	}
	// Output:
	// claimed 3 deliveries: 1 batch record (3 members), 0 rows of their own
	// retried o-2: 1 batch record (2 members), 1 row of its own
	// acked the others, claimed o-2 attempt 2: 0 batch records (0 members), 1 row of its own
}

// printLeases prints how the group's deliveries are held: batch records
// and their members, and exception rows of their own.
func printLeases(ctx context.Context, drv *sqlite.Driver, what string) {
	var records, members, rows int64
	if err := drv.DB().QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM delivery_batch),
		(SELECT COALESCE(SUM(json_array_length(ids)), 0) FROM delivery_batch),
		(SELECT COUNT(*) FROM delivery_exception)`).Scan(&records, &members, &rows); err != nil {
		log.Fatal(err)
	}
	record, own := "batch records", "rows of their own"
	if records == 1 {
		record = "batch record"
	}
	if rows == 1 {
		own = "row of its own"
	}
	fmt.Printf("%s: %d %s (%d members), %d %s\n", what, records, record, members, rows, own)
}
