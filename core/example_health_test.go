package sqlstreams_test

import (
	"context"
	"fmt"
	"log"
	"os"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// Health reads a stream per schema version: rows, compaction heads, and each
// group's unread and unresolved deliveries, with the retirement verdict. A
// version whose groups are drained is retirable even while its rows remain.
func ExampleStream_Health() {
	ctx := context.Background()
	client := exampleClient()
	defer client.Close()

	v1, err := client.Stream[OrderPlacedV1]("orders.placed").Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	v2, err := client.Stream[OrderPlacedV2]("orders.placed").Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	old, err := client.Stream[OrderPlacedV1]("orders.placed").Consumer("fraud-scoring").Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := client.Stream[OrderPlacedV2]("orders.placed").Consumer("fraud-scoring-v2").Register(ctx, nil); err != nil {
		log.Fatal(err)
	}
	for i := range 3 {
		if _, err := v1.Produce(ctx, OrderPlacedV1{OrderID: fmt.Sprint("a-", i), Total: 100}); err != nil {
			log.Fatal(err)
		}
	}
	if _, err := v2.Produce(ctx, OrderPlacedV2{OrderID: "b-0", Total: Money{Cents: 100, Currency: "EUR"}}); err != nil {
		log.Fatal(err)
	}
	// The v1 group drains its version; the v2 group has not started.
	batch, err := old.Claim(ctx, 10)
	if err != nil {
		log.Fatal(err)
	}
	if err := old.Ack(ctx, batch...); err != nil {
		log.Fatal(err)
	}

	health, err := client.Stream[sqlstreams.RawPayload]("orders.placed").Health(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, vh := range health.Versions {
		fmt.Printf("v%d: %d rows, retirable %v: %s\n", vh.Version, vh.Rows, vh.Retirable, vh.Verdict())
	}
	if err := health.WriteTable(os.Stdout); err != nil {
		log.Fatal(err)
	}
	// Output:
	// v1: 3 rows, retirable true: retirable
	// v2: 1 rows, retirable false: group fraud-scoring-v2 has 1 unread
	// stream orders.placed (high-water id 4)
	// VERSION  ROWS  HEADS  GROUP             UNREAD  LEASED  DELAYED  DEAD  DISTANCE  VERDICT
	// v1       3     0      fraud-scoring     0       0       0        0     0         retirable
	// v2       1     0      fraud-scoring-v2  1       0       0        0     4         group fraud-scoring-v2 has 1 unread
}

// A RawPayload group reads every version as its JSON, without knowing the
// types: an archiver, a bridge to another system, an operator's tool.
func ExampleRawPayload() {
	ctx := context.Background()
	client := exampleClient()
	defer client.Close()

	v1, err := client.Stream[OrderPlacedV1]("orders.placed").Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	v2, err := client.Stream[OrderPlacedV2]("orders.placed").Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := v1.Produce(ctx, OrderPlacedV1{OrderID: "o-1", Total: 100}); err != nil {
		log.Fatal(err)
	}
	if _, err := v2.Produce(ctx, OrderPlacedV2{OrderID: "o-2", Total: Money{Cents: 200, Currency: "EUR"}}); err != nil {
		log.Fatal(err)
	}

	archive, err := client.Stream[sqlstreams.RawPayload]("orders.placed").Consumer("archive").Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	batch, err := archive.Claim(ctx, 10)
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range batch {
		fmt.Printf("v%d %s\n", d.Value.Version, d.Value.Data)
	}
	if err := archive.Ack(ctx, batch...); err != nil {
		log.Fatal(err)
	}
	// Output:
	// v1 {"order_id":"o-1","total":100}
	// v2 {"order_id":"o-2","total":{"cents":200,"currency":"EUR"}}
}

// A group's bindings select the routing keys it reads: '*' matches one
// word, '#' zero or more. Rows it does not read are passed over, not
// leased.
func ExampleRoutingKey() {
	ctx := context.Background()
	client := exampleClient()
	defer client.Close()

	stream := client.Stream[OrderPlacedV1]("orders.placed")
	producer, err := stream.Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, rk := range []string{"eu.retail", "us.retail", "eu.wholesale.large"} {
		if _, err := producer.Produce(ctx, OrderPlacedV1{OrderID: rk}, sqlstreams.RoutingKey(rk)); err != nil {
			log.Fatal(err)
		}
	}
	europe, err := stream.Consumer("eu-tax").Register(ctx, &sqlstreams.ConsumerOptions{Bindings: []string{"eu.#"}})
	if err != nil {
		log.Fatal(err)
	}
	retail, err := stream.Consumer("retail-stats").Register(ctx, &sqlstreams.ConsumerOptions{Bindings: []string{"*.retail"}})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range []*sqlstreams.Consumer[OrderPlacedV1]{europe, retail} {
		batch, err := c.Claim(ctx, 10)
		if err != nil {
			log.Fatal(err)
		}
		for _, d := range batch {
			fmt.Println(c.Group(), "reads", d.RoutingKey)
		}
	}
	// Output:
	// eu-tax reads eu.retail
	// eu-tax reads eu.wholesale.large
	// retail-stats reads eu.retail
	// retail-stats reads us.retail
}

// Messages with one key go to one partition, so a group reads each key's
// messages in the order they were produced, however many partitions the
// stream has.
func ExampleKey() {
	ctx := context.Background()
	client := exampleClient()
	defer client.Close()

	stream := client.Stream[OrderPlacedV1]("orders.placed")
	if _, err := stream.Create(ctx, &sqlstreams.StreamOptions{Partitions: 4}); err != nil {
		log.Fatal(err)
	}
	producer, err := stream.Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for i, acct := range []string{"acct-1", "acct-2", "acct-1", "acct-1"} {
		if _, err := producer.Produce(ctx, OrderPlacedV1{OrderID: fmt.Sprint("o-", i+1)}, sqlstreams.Key(acct)); err != nil {
			log.Fatal(err)
		}
	}
	consumer, err := stream.Consumer("ledger").Register(ctx, &sqlstreams.ConsumerOptions{Ordered: true})
	if err != nil {
		log.Fatal(err)
	}
	seen := map[string][]string{}
	for {
		batch, err := consumer.Claim(ctx, 10)
		if err != nil {
			log.Fatal(err)
		}
		if len(batch) == 0 {
			break
		}
		for _, d := range batch {
			seen[d.Key] = append(seen[d.Key], d.Value.OrderID)
		}
		if err := consumer.Ack(ctx, batch...); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("acct-1:", seen["acct-1"], "partition", sqlstreams.PartitionForKey("acct-1", 4))
	fmt.Println("acct-2:", seen["acct-2"], "partition", sqlstreams.PartitionForKey("acct-2", 4))
	// Output:
	// acct-1: [o-1 o-3 o-4] partition 0
	// acct-2: [o-2] partition 1
}

// A compacted stream keeps each key's head: the greatest (schema version,
// compaction rank, id). A bridge re-produces an old head as the new type
// at rank -1, so that the copy beats the v1 head and loses to a live v2
// write of the same key.
func ExampleCompactionRank() {
	ctx := context.Background()
	client := exampleClient()
	defer client.Close()

	accounts := client.Stream[OrderPlacedV2]("accounts.balance")
	if _, err := accounts.Create(ctx, &sqlstreams.StreamOptions{Compacted: true}); err != nil {
		log.Fatal(err)
	}
	v2, err := accounts.Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	live := OrderPlacedV2{OrderID: "acct-1", Total: Money{Cents: 650, Currency: "EUR"}}
	if _, err := v2.Produce(ctx, live, sqlstreams.Key("acct-1")); err != nil {
		log.Fatal(err)
	}
	// The bridge's copy of an older value comes later, at rank -1: it loses.
	copied := OrderPlacedV2{OrderID: "acct-1", Total: Money{Cents: 700, Currency: "EUR"}}
	if _, err := v2.Produce(ctx, copied, sqlstreams.Key("acct-1"), sqlstreams.CompactionRank(-1)); err != nil {
		log.Fatal(err)
	}
	readers, err := accounts.Consumer("balances").Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	current, err := readers.Claim(ctx, 100)
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range current {
		fmt.Printf("%s: %d %s (rank %d)\n", d.Key, d.Value.Total.Cents, d.Value.Total.Currency, d.CompactionRank)
	}
	// Output:
	// acct-1: 650 EUR (rank 0)
}
