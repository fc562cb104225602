package jsonschema_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sqlstreams/sqlstreams/contrib/jsonschema"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/memdriver"
)

// A client opened with the JSON Schema compiler validates messages against
// registered JSON Schemas, references included: a RawPayload producer with
// Validate refuses a message that breaks its version's schema, and
// Registry.Validate names the path of each problem.
func Example() {
	ctx := context.Background()
	client, err := sqlstreams.Open(ctx, memdriver.Open(),
		sqlstreams.WithJSONValidation(jsonschema.Compiler()), sqlstreams.WithMaintenanceInterval(0))
	if err != nil {
		panic(err)
	}
	defer client.Close()
	reg := client.Registry()
	// money is a shared schema; orders refers to it by name.
	if _, err := reg.Register(ctx, "money", 1, []byte(`{"type":"object","properties":{"cents":{"type":"integer"}},"required":["cents"]}`)); err != nil {
		panic(err)
	}
	if _, err := reg.RegisterSchema(ctx, sqlstreams.SchemaRegistration{
		Stream: "orders", Version: 1,
		Schema:     []byte(`{"type":"object","properties":{"id":{"type":"string"},"total":{"$ref":"money.json"}},"required":["id","total"]}`),
		References: []sqlstreams.Reference{{Name: "money.json", Stream: "money", Version: 1}},
	}); err != nil {
		panic(err)
	}

	err = reg.Validate(ctx, "orders", 1, []byte(`{"id":7,"total":{"cents":"12"}}`))
	var invalid *sqlstreams.ValidationError
	if errors.As(err, &invalid) {
		for _, v := range invalid.Violations {
			fmt.Println(v)
		}
	}

	p, err := client.Stream[sqlstreams.RawPayload]("orders").Producer().Register(ctx, &sqlstreams.ProducerOptions{Validate: true})
	if err != nil {
		panic(err)
	}
	_, err = p.Produce(ctx, sqlstreams.RawPayload{Version: 1, Data: json.RawMessage(`{"id":"o-1"}`)})
	fmt.Println(errors.Is(err, sqlstreams.ErrInvalidMessage))
	_, err = p.Produce(ctx, sqlstreams.RawPayload{Version: 1, Data: json.RawMessage(`{"id":"o-1","total":{"cents":1200}}`)})
	fmt.Println(err)
	// Output:
	// /id: got number, want string
	// /total/cents: got string, want integer
	// true
	// <nil>
}
