package sqlstreams_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// Errors carry a sentinel to match with errors.Is, and words that say what
// to do: Get on a stream nobody created is ErrStreamNotFound.
func ExampleStream_Get() {
	ctx := context.Background()
	client := exampleClient()
	defer client.Close()

	_, err := client.Stream[OrderPlacedV1]("orders.missing").Get(ctx)
	fmt.Println("not found:", errors.Is(err, sqlstreams.ErrStreamNotFound))

	produceOrders(ctx, client, "orders.placed", "o-1")
	info, err := client.Stream[OrderPlacedV1]("orders.placed").Get(ctx)
	fmt.Println(info.Name, info.Partitions, err)
	// Output:
	// not found: true
	// orders.placed 1 <nil>
}

// A group reads one schema version: registering it with a type of another
// version fails with ErrGroupVersion, and the message names a new group to
// use instead.
func ExampleConsumerBuilder_Register() {
	ctx := context.Background()
	client := exampleClient()
	defer client.Close()

	if _, err := client.Stream[OrderPlacedV1]("orders.placed").Consumer("billing").Register(ctx, nil); err != nil {
		log.Fatal(err)
	}
	_, err := client.Stream[OrderPlacedV2]("orders.placed").Consumer("billing").Register(ctx, nil)
	fmt.Println("another version:", errors.Is(err, sqlstreams.ErrGroupVersion))
	_, err = client.Stream[OrderPlacedV2]("orders.placed").Consumer("billing-v2").Register(ctx, nil)
	fmt.Println("a new group:", err)
	// Output:
	// another version: true
	// a new group: <nil>
}

// OrderPlacedV2Edited is OrderPlacedV2 edited in place: Total became a
// number, but the version stayed 2.
type OrderPlacedV2Edited struct {
	OrderID string `json:"order_id"`
	Total   int64  `json:"total"`
}

func (OrderPlacedV2Edited) SchemaVersion() int { return 2 }

// CheckSchema is the registry's dry run: it checks a type as registering it
// would, and records nothing. A struct edited without bumping its version
// is refused with ErrIncompatibleSchema, listing each problem.
func ExampleStream_CheckSchema() {
	ctx := context.Background()
	client := exampleClient()
	defer client.Close()
	const stream = "orders.placed"
	if err := client.Registry().SetLevel(ctx, sqlstreams.RegistryWide, schema.Full); err != nil {
		log.Fatal(err)
	}
	if _, err := client.Stream[OrderPlacedV2](stream).Producer().Register(ctx, nil); err != nil {
		log.Fatal(err)
	}

	err := client.Stream[OrderPlacedV2Edited](stream).CheckSchema(ctx)
	fmt.Println("refused:", errors.Is(err, sqlstreams.ErrIncompatibleSchema))
	var incompatible *sqlstreams.IncompatibleSchemaError
	if errors.As(err, &incompatible) {
		p := incompatible.Problems[0]
		fmt.Printf("level %s against %s: %s at %s\n", incompatible.Level, p.Against, p.Kind, p.Path)
	}
	revisions, err := client.Registry().Revisions(ctx, stream, 2)
	fmt.Println("revisions recorded:", len(revisions), err)
	// Output:
	// refused: true
	// level FULL against revision 1: TYPE_CHANGED at #/properties/total/type
	// revisions recorded: 1 <nil>
}
