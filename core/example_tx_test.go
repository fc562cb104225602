package sqlstreams_test

import (
	"context"
	"fmt"
	"log"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/memdriver"
)

// ProduceTx writes in the caller's transaction: the message exists exactly
// when the transaction commits (the outbox pattern). Each driver adapts its
// own transactions; here memdriver.Begin, on PostgreSQL postgres.Tx.
func ExampleProducer_ProduceTx() {
	ctx := context.Background()
	drv := memdriver.Open()
	client, err := sqlstreams.Open(ctx, drv)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	stream := client.Stream[OrderPlacedV1]("orders.placed")
	producer, err := stream.Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}

	for _, commit := range []bool{false, true} {
		tx, err := memdriver.Begin(ctx, drv)
		if err != nil {
			log.Fatal(err)
		}
		if _, err := producer.ProduceTx(ctx, tx, OrderPlacedV1{OrderID: fmt.Sprint("committed=", commit)}); err != nil {
			log.Fatal(err)
		}
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			log.Fatal(err)
		}
	}
	consumer, err := stream.Consumer("g").Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	batch, err := consumer.Claim(ctx, 10)
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range batch {
		fmt.Println(d.Value.OrderID)
	}
	// Output:
	// committed=true
}

// AckTx records the outcome in the caller's transaction, beside the
// handler's own writes: both happen or neither does. A rolled-back ack
// leaves the delivery leased, to come back when its lease ends.
func ExampleDelivery_AckTx() {
	ctx := context.Background()
	drv := memdriver.Open()
	client, err := sqlstreams.Open(ctx, drv)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	produceOrders(ctx, client, "orders.placed", "o-1", "o-2")
	consumer, err := client.Stream[OrderPlacedV1]("orders.placed").Consumer("invoicing").Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	batch, err := consumer.Claim(ctx, 10)
	if err != nil {
		log.Fatal(err)
	}

	invoiced := map[string]bool{} // the application's state
	for i, d := range batch {
		tx, err := memdriver.Begin(ctx, drv)
		if err != nil {
			log.Fatal(err)
		}
		if err := tx.OnCommit(func() { invoiced[d.Value.OrderID] = true }); err != nil {
			log.Fatal(err)
		}
		if err := d.AckTx(ctx, tx); err != nil {
			log.Fatal(err)
		}
		if i == 0 {
			err = tx.Commit()
		} else {
			err = tx.Rollback() // the invoice failed: neither it nor the ack happened
		}
		if err != nil {
			log.Fatal(err)
		}
	}
	health, err := client.Stream[sqlstreams.RawPayload]("orders.placed").Health(ctx)
	if err != nil {
		log.Fatal(err)
	}
	vh, _ := health.Version(1)
	fmt.Println("invoiced:", invoiced)
	fmt.Println("still leased:", vh.Groups[0].Leased)
	// Output:
	// invoiced: map[o-1:true]
	// still leased: 1
}
