package avro_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/sqlstreams/sqlstreams/contrib/avro"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/memdriver"
)

// Enable Avro on a client and evolve a record under BACKWARD: a field with
// a default is accepted, one without is refused, naming the field.
func Example() {
	ctx := context.Background()
	client, err := sqlstreams.Open(ctx, memdriver.Open(), sqlstreams.WithFormats(avro.Format()), sqlstreams.WithMaintenanceInterval(0))
	if err != nil {
		panic(err)
	}
	defer client.Close()
	reg := client.Registry()
	register := func(doc string) (sqlstreams.Revision, error) {
		return reg.RegisterSchema(ctx, sqlstreams.SchemaRegistration{Stream: "orders", Version: 1, Type: "AVRO", Schema: []byte(doc)})
	}

	v1 := `{"type":"record","name":"OrderPlaced","namespace":"shop.orders","fields":[
		{"name":"orderId","type":"string"},{"name":"totalCents","type":"int"}]}`
	v2 := `{"type":"record","name":"OrderPlaced","namespace":"shop.orders","fields":[
		{"name":"orderId","type":"string"},{"name":"totalCents","type":"int"},
		{"name":"currency","type":"string","default":"EUR"}]}`
	v3 := `{"type":"record","name":"OrderPlaced","namespace":"shop.orders","fields":[
		{"name":"orderId","type":"string"},{"name":"totalCents","type":"int"},
		{"name":"currency","type":"string","default":"EUR"},{"name":"channel","type":"string"}]}`

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
			fmt.Println(p.Message)
		}
	}
	// Output:
	// revision 1: AVRO
	// revision 2: AVRO
	// refused: READER_FIELD_MISSING_DEFAULT_VALUE at /fields/3
	// reader field shop.orders.OrderPlaced.channel has no default and the writer has no field channel; give it a default, or add it under a new schema version
}
