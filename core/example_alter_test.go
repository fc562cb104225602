package sqlstreams_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// A stream grows from 2 to 4 partitions and becomes compacted while a
// producer made before the change keeps writing: its next message is placed
// with the new count. Fewer partitions are refused.
func ExampleStream_Alter() {
	ctx := context.Background()
	client := exampleClient()
	defer client.Close()

	orders := client.Stream[OrderPlacedV1]("orders.placed")
	if _, err := orders.Create(ctx, &sqlstreams.StreamOptions{Partitions: 2}); err != nil {
		log.Fatal(err)
	}
	producer, err := orders.Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}

	compacted := true
	info, err := orders.Alter(ctx, sqlstreams.StreamChanges{Partitions: 4, Compacted: &compacted})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("partitions:", info.Partitions, "compacted:", info.Compacted)

	if _, err := producer.Produce(ctx, OrderPlacedV1{OrderID: "o-1", Total: 100}, sqlstreams.Key("acct-7")); err != nil {
		log.Fatal(err)
	}
	fmt.Println("the producer now places keys over", producer.Stream().Partitions, "partitions")

	_, err = orders.Alter(ctx, sqlstreams.StreamChanges{Partitions: 3})
	fmt.Println("fewer partitions refused:", errors.Is(err, sqlstreams.ErrFewerPartitions))
	// Output:
	// partitions: 4 compacted: true
	// the producer now places keys over 4 partitions
	// fewer partitions refused: true
}
