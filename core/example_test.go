package sqlstreams_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/memdriver"
)

// The examples of this package run on core/memdriver, an in-memory driver:
// the same code runs on driver/sqlite, driver/postgres or driver/mysql with
// their Open in place of memdriver.Open.

// OrderPlacedV1 is the first shape of an order event: the total in cents.
type OrderPlacedV1 struct {
	OrderID string `json:"order_id"`
	Total   int64  `json:"total"`
}

func (OrderPlacedV1) SchemaVersion() int { return 1 }

// Money is an amount with its currency.
type Money struct {
	Cents    int64  `json:"cents"`
	Currency string `json:"currency"`
}

// OrderPlacedV2 changed Total to Money: a new shape, so a new version.
type OrderPlacedV2 struct {
	OrderID string `json:"order_id"`
	Total   Money  `json:"total"`
}

func (OrderPlacedV2) SchemaVersion() int { return 2 }

// exampleClient opens a client on a new in-memory store.
func exampleClient() *sqlstreams.Client {
	client, err := sqlstreams.Open(context.Background(), memdriver.Open())
	if err != nil {
		log.Fatal(err)
	}
	return client
}

// produceOrders produces one OrderPlacedV1 per id on the stream.
func produceOrders(ctx context.Context, client *sqlstreams.Client, stream string, ids ...string) {
	producer, err := client.Stream[OrderPlacedV1](stream).Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, id := range ids {
		if _, err := producer.Produce(ctx, OrderPlacedV1{OrderID: id, Total: 995}); err != nil {
			log.Fatal(err)
		}
	}
}

// Open a client, produce typed messages and consume them with Run. The
// handler's nil return resolves each delivery.
func ExampleOpen() {
	ctx := context.Background()
	client, err := sqlstreams.Open(ctx, memdriver.Open())
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	stream := client.Stream[OrderPlacedV2]("orders.placed")
	producer, err := stream.Producer().Register(ctx, nil) // creates the stream
	if err != nil {
		log.Fatal(err)
	}
	for i, id := range []string{"o-1", "o-2", "o-3"} {
		order := OrderPlacedV2{OrderID: id, Total: Money{Cents: int64(1000 * (i + 1)), Currency: "EUR"}}
		if _, err := producer.Produce(ctx, order); err != nil {
			log.Fatal(err)
		}
	}

	consumer, err := stream.Consumer("fraud-scoring").Register(ctx, &sqlstreams.ConsumerOptions{PollInterval: 10 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	handled := 0
	err = consumer.Run(runCtx, func(ctx context.Context, d sqlstreams.Delivery[OrderPlacedV2]) error {
		fmt.Printf("%s %d %s (schema v%d, attempt %d)\n", d.Value.OrderID, d.Value.Total.Cents, d.Value.Total.Currency, d.SchemaVersion, d.Attempt)
		if handled++; handled == 3 {
			stop() // Run returns nil once its context ends
		}
		return nil
	})
	fmt.Println("run:", err)
	// Output:
	// o-1 1000 EUR (schema v2, attempt 1)
	// o-2 2000 EUR (schema v2, attempt 1)
	// o-3 3000 EUR (schema v2, attempt 1)
	// run: <nil>
}

// Produce one message with options: a key (its partition, and its identity
// on a compacted stream), a routing key for bindings, and headers.
func ExampleProducer_Produce() {
	ctx := context.Background()
	client := exampleClient()
	defer client.Close()

	stream := client.Stream[OrderPlacedV1]("orders.placed")
	producer, err := stream.Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	id, err := producer.Produce(ctx, OrderPlacedV1{OrderID: "o-1", Total: 995},
		sqlstreams.Key("acct-1"), sqlstreams.RoutingKey("eu.retail"), sqlstreams.Header("trace", "t-42"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("produced row", id)

	consumer, err := stream.Consumer("audit").Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	batch, err := consumer.Claim(ctx, 10)
	if err != nil {
		log.Fatal(err)
	}
	d := batch[0]
	fmt.Printf("row %d: %s key %s routing key %s trace %s\n", d.ID, d.Value.OrderID, d.Key, d.RoutingKey, d.Headers["trace"])
	// Output:
	// produced row 1
	// row 1: o-1 key acct-1 routing key eu.retail trace t-42
}

// ProduceBatch writes several messages in one transaction: all or none,
// with ids in the order given.
func ExampleProducer_ProduceBatch() {
	ctx := context.Background()
	client := exampleClient()
	defer client.Close()

	producer, err := client.Stream[OrderPlacedV1]("orders.placed").Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	ids, err := producer.ProduceBatch(ctx,
		sqlstreams.NewMessage(OrderPlacedV1{OrderID: "o-1", Total: 100}, sqlstreams.Key("acct-1")),
		sqlstreams.NewMessage(OrderPlacedV1{OrderID: "o-2", Total: 200}, sqlstreams.Key("acct-2")),
		sqlstreams.NewMessage(OrderPlacedV1{OrderID: "o-3", Total: 300}, sqlstreams.Key("acct-1")),
	)
	fmt.Println(ids, err)
	// Output:
	// [1 2 3] <nil>
}

// Pull deliveries with Claim and record each outcome yourself: Ack resolves,
// Retry schedules another attempt, Dead buries.
func ExampleConsumer_Claim() {
	ctx := context.Background()
	client := exampleClient()
	defer client.Close()
	produceOrders(ctx, client, "orders.placed", "o-1", "o-2", "o-3")

	consumer, err := client.Stream[OrderPlacedV1]("orders.placed").Consumer("billing").Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	batch, err := consumer.Claim(ctx, 10)
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range batch {
		fmt.Println("claimed", d.Value.OrderID, "attempt", d.Attempt)
	}
	if err := batch[0].Ack(ctx); err != nil {
		log.Fatal(err)
	}
	if err := batch[1].Retry(ctx, 0, errors.New("ledger busy")); err != nil {
		log.Fatal(err)
	}
	if err := batch[2].Dead(ctx, errors.New("no such account")); err != nil {
		log.Fatal(err)
	}

	again, err := consumer.Claim(ctx, 10) // the retry is due at once
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range again {
		fmt.Println("claimed", d.Value.OrderID, "attempt", d.Attempt)
	}
	if err := consumer.Ack(ctx, again...); err != nil {
		log.Fatal(err)
	}
	dead, err := consumer.DeadLetters(ctx, 0, 10)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("dead: row %d: %s\n", dead[0].ID, dead[0].Error)
	// Output:
	// claimed o-1 attempt 1
	// claimed o-2 attempt 1
	// claimed o-3 attempt 1
	// claimed o-2 attempt 2
	// dead: row 3: no such account
}

// Run's handler decides each outcome by what it returns: nil resolves,
// sqlstreams.Dead buries at once, sqlstreams.RetryAfter retries after a
// delay of its choosing (any other error retries with the group's backoff).
func ExampleConsumer_Run() {
	ctx := context.Background()
	client := exampleClient()
	defer client.Close()

	stream := client.Stream[OrderPlacedV2]("orders.placed")
	producer, err := stream.Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, o := range []OrderPlacedV2{
		{OrderID: "o-1", Total: Money{Cents: 500, Currency: "EUR"}},
		{OrderID: "o-2", Total: Money{Cents: 500, Currency: "XXX"}},
		{OrderID: "o-3", Total: Money{Cents: 900, Currency: "USD"}},
	} {
		if _, err := producer.Produce(ctx, o); err != nil {
			log.Fatal(err)
		}
	}
	consumer, err := stream.Consumer("payments").Register(ctx, &sqlstreams.ConsumerOptions{PollInterval: 10 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}

	runCtx, stop := context.WithCancel(ctx)
	err = consumer.Run(runCtx, func(ctx context.Context, d sqlstreams.Delivery[OrderPlacedV2]) error {
		switch {
		case d.Value.Total.Currency == "XXX":
			fmt.Println(d.Value.OrderID, "dead-lettered")
			return sqlstreams.Dead(fmt.Errorf("unknown currency %q", d.Value.Total.Currency))
		case d.Value.Total.Currency == "USD" && d.Attempt == 1:
			fmt.Println(d.Value.OrderID, "retry later")
			return sqlstreams.RetryAfter(20*time.Millisecond, errors.New("exchange rate service busy"))
		}
		fmt.Println(d.Value.OrderID, "paid on attempt", d.Attempt)
		if d.Value.OrderID == "o-3" {
			stop()
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	dead, err := consumer.DeadLetters(ctx, 0, 10)
	if err != nil {
		log.Fatal(err)
	}
	for _, dl := range dead {
		fmt.Printf("dead: %s after %d attempt(s): %s\n", dl.Payload, dl.Attempt, dl.Error)
	}
	// Output:
	// o-1 paid on attempt 1
	// o-2 dead-lettered
	// o-3 retry later
	// o-3 paid on attempt 2
	// dead: {"order_id":"o-2","total":{"cents":500,"currency":"XXX"}} after 1 attempt(s): unknown currency "XXX"
}
