package protobuf_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/sqlstreams/sqlstreams/contrib/protobuf"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/memdriver"
)

// Enable Protobuf on a client and evolve a message under BACKWARD: a new
// field is accepted, a field whose type changes encoding is refused,
// naming its number.
func Example() {
	ctx := context.Background()
	client, err := sqlstreams.Open(ctx, memdriver.Open(), sqlstreams.WithFormats(protobuf.Format()), sqlstreams.WithMaintenanceInterval(0))
	if err != nil {
		panic(err)
	}
	defer client.Close()
	reg := client.Registry()
	register := func(doc string) (sqlstreams.Revision, error) {
		return reg.RegisterSchema(ctx, sqlstreams.SchemaRegistration{Stream: "orders", Version: 1, Type: "PROTOBUF", Schema: []byte(doc)})
	}

	v1 := `syntax = "proto3";
package shop.orders;
message OrderPlaced {
  string order_id = 1;
  int64 total_cents = 2;
}`
	v2 := `syntax = "proto3";
package shop.orders;
message OrderPlaced {
  string order_id = 1;
  int64 total_cents = 2;
  string currency = 3;
}`
	v3 := `syntax = "proto3";
package shop.orders;
message OrderPlaced {
  string order_id = 1;
  string total_cents = 2;
  string currency = 3;
}`
	for _, doc := range []string{v1, v2} {
		rev, err := register(doc)
		if err != nil {
			panic(err)
		}
		fmt.Printf("revision %d: %s\n", rev.Revision, rev.Type)
	}
	_, err = register(v3)
	var ie *sqlstreams.IncompatibleSchemaError
	if errors.As(err, &ie) {
		for _, p := range ie.Problems {
			fmt.Printf("refused: %s at %s\n", p.Kind, p.Path)
		}
	}
	// Output:
	// revision 1: PROTOBUF
	// revision 2: PROTOBUF
	// refused: FIELD_SCALAR_KIND_CHANGED at #/OrderPlaced/2
}
