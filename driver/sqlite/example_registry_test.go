package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/schema"
	"github.com/sqlstreams/sqlstreams/driver/sqlite"
)

// OrderPlacedV2Edited is OrderPlacedV2 edited in place: Total became a
// number, but the version stayed 2.
type OrderPlacedV2Edited struct {
	OrderID string `json:"order_id"`
	Total   int64  `json:"total"`
}

func (OrderPlacedV2Edited) SchemaVersion() int { return 2 }

// OrderPlacedV2Channel evolves version 2 compatibly: the new member has a
// default, which readers apply to rows written without it.
type OrderPlacedV2Channel struct {
	OrderID string `json:"order_id"`
	Total   Money  `json:"total"`
	Channel string `json:"channel" sqlstreams:"default=\"web\""`
}

func (OrderPlacedV2Channel) SchemaVersion() int { return 2 }

// The registry refuses a struct edited without bumping its version, at
// Register and in a dry run, and accepts a compatible evolution.
func Example_registry() {
	ctx := context.Background()
	client, _, done := exampleClient()
	defer done()
	const stream = "orders.placed"
	if err := client.Registry().SetLevel(ctx, sqlstreams.RegistryWide, schema.Full); err != nil {
		log.Fatal(err)
	}
	if _, err := client.Stream[OrderPlacedV2](stream).Producer().Register(ctx, nil); err != nil {
		log.Fatal(err)
	}

	err := client.Stream[OrderPlacedV2Edited](stream).CheckSchema(ctx) // dry run: records nothing
	fmt.Println("dry run refuses:", errors.Is(err, sqlstreams.ErrIncompatibleSchema))
	_, err = client.Stream[OrderPlacedV2Edited](stream).Producer().Register(ctx, nil)
	var incompatible *sqlstreams.IncompatibleSchemaError
	if errors.As(err, &incompatible) {
		fmt.Printf("refused at level %s against %s: %s at %s\n", incompatible.Level,
			incompatible.Problems[0].Against, incompatible.Problems[0].Kind, incompatible.Problems[0].Path)
	}

	if _, err := client.Stream[OrderPlacedV2Channel](stream).Producer().Register(ctx, nil); err != nil {
		log.Fatal(err)
	}
	revisions, err := client.Registry().Revisions(ctx, stream, 2)
	if err != nil {
		log.Fatal(err)
	}
	level, err := client.Registry().Level(ctx, stream)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("version 2 has %d revisions; level %s from the %s setting\n", len(revisions), level.Value, level.Scope)
	// Output:
	// dry run refuses: true
	// refused at level FULL against revision 1: TYPE_CHANGED at #/properties/total/type
	// version 2 has 2 revisions; level FULL from the registry setting
}

// A group of the new type reads older versions through a converter, so its
// handler sees one type whatever version wrote the row.
func Example_converter() {
	ctx := context.Background()
	client, _, done := exampleClient()
	defer done()
	const stream = "orders.placed"
	v1, err := client.Stream[OrderPlacedV1](stream).Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	v2, err := client.Stream[OrderPlacedV2](stream).Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := v1.Produce(ctx, OrderPlacedV1{OrderID: "o-1", Total: 1999}); err != nil {
		log.Fatal(err)
	}
	if _, err := v2.Produce(ctx, OrderPlacedV2{OrderID: "o-2", Total: Money{Cents: 2599, Currency: "USD"}}); err != nil {
		log.Fatal(err)
	}
	billing, err := client.Stream[OrderPlacedV2](stream).Consumer("billing").Register(ctx, &sqlstreams.ConsumerOptions{
		Converters: []sqlstreams.Converter{
			sqlstreams.ConvertFrom(func(ctx context.Context, old OrderPlacedV1) (OrderPlacedV2, error) {
				return OrderPlacedV2{OrderID: old.OrderID, Total: Money{Cents: old.Total, Currency: "EUR"}}, nil
			}),
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	ds, err := billing.Claim(ctx, 10)
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range ds {
		fmt.Printf("%s written at v%d: %d %s\n", d.Value.OrderID, d.SchemaVersion, d.Value.Total.Cents, d.Value.Total.Currency)
	}
	if err := billing.Ack(ctx, ds...); err != nil {
		log.Fatal(err)
	}
	// Output:
	// o-1 written at v1: 1999 EUR
	// o-2 written at v2: 2599 USD
}

// Judge the schema documents that people register by hand (Register, the
// Confluent-compatible API) by Confluent's rules, for streams whose readers
// are not Go: adding an optional property to an open model is then a break.
func ExampleWithDocumentPolicy() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "sqlstreams-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	client, err := sqlstreams.Open(ctx, sqlite.Open(filepath.Join(dir, "app.db")), sqlstreams.WithDocumentPolicy(schema.Strict))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	v1 := []byte(`{"type": "object", "properties": {"id": {"type": "string"}}}`)
	v2 := []byte(`{"type": "object", "properties": {"id": {"type": "string"}, "note": {"type": "string"}}}`)
	if _, err := client.Registry().Register(ctx, "payments", 1, v1); err != nil {
		log.Fatal(err)
	}
	var incompatible *sqlstreams.IncompatibleSchemaError
	if errors.As(client.Registry().Check(ctx, "payments", 1, v2), &incompatible) {
		fmt.Println(incompatible.Problems[0].Kind, "at", incompatible.Problems[0].Path)
	}
	// Output:
	// OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL at #/properties/note
}
