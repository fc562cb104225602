package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/sqlstreams/sqlstreams/driver/sqlite"
)

// By default a claim is leased as one batch record per partition; with
// WithPerDeliveryLeases each claimed delivery gets a lease row of its own.
// Deliveries are acked, retried and extended exactly alike in both modes,
// and each mode reads the other's leases.
func ExampleWithPerDeliveryLeases() {
	for _, mode := range []struct {
		name string
		opts []sqlite.Option
	}{{"default", nil}, {"per-delivery", []sqlite.Option{sqlite.WithPerDeliveryLeases()}}} {
		claimAndCount(mode.name, mode.opts...)
	}
	// Output:
	// default: claimed 3 deliveries, leased by 1 batch record and 0 lease rows
	// default: claimed o-2 attempt 2
	// per-delivery: claimed 3 deliveries, leased by 0 batch records and 3 lease rows
	// per-delivery: claimed o-2 attempt 2
}

func claimAndCount(mode string, opts ...sqlite.Option) {
	ctx := context.Background()
	client, drv, done := exampleClient(opts...)
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
	var records, rows int64
	if err := drv.DB().QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM delivery_batch),
		(SELECT COUNT(*) FROM delivery_exception WHERE state = 'leased')`).Scan(&records, &rows); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: claimed %d deliveries, leased by %d batch record%s and %d lease rows\n", mode, len(batch), records, plural(records), rows)

	// One delivery fails: it gets a row of its own and comes back; the
	// others are acked.
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
		fmt.Println(mode+": claimed", d.Value.OrderID, "attempt", d.Attempt)
	}
}

func plural(n int64) string {
	if n == 1 {
		return ""
	}
	return "s"
}
