package avro_test

import (
	"context"
	"fmt"

	"github.com/sqlstreams/sqlstreams/contrib/avro"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/memdriver"
)

// An order record uses shop.Customer, registered under a subject of its
// own: the order's registration names it as a reference (the type's full
// name, its subject and version), as Confluent's clients do.
func Example_references() {
	ctx := context.Background()
	client, err := sqlstreams.Open(ctx, memdriver.Open(), sqlstreams.WithFormats(avro.Format()), sqlstreams.WithMaintenanceInterval(0))
	if err != nil {
		panic(err)
	}
	defer client.Close()
	reg := client.Registry()

	customer, err := reg.RegisterSubject(ctx, sqlstreams.SubjectRegistration{Subject: "shop.Customer", Type: "AVRO",
		Schema: []byte(`{"type":"record","name":"Customer","namespace":"shop","fields":[{"name":"id","type":"string"}]}`)})
	if err != nil {
		panic(err)
	}
	order := []byte(`{"type":"record","name":"OrderPlaced","namespace":"shop.orders","fields":[
		{"name":"orderId","type":"string"},{"name":"customer","type":"shop.Customer"}]}`)
	_, err = reg.RegisterSubject(ctx, sqlstreams.SubjectRegistration{Subject: "orders-value", Type: "AVRO", Schema: order})
	fmt.Println("without the reference:", err != nil)
	v, err := reg.RegisterSubject(ctx, sqlstreams.SubjectRegistration{Subject: "orders-value", Type: "AVRO", Schema: order,
		References: []sqlstreams.SubjectReference{{Name: "shop.Customer", Subject: customer.Subject, Version: customer.Version}}})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s version %d uses %s version %d\n", v.Subject, v.Version, v.References[0].Subject, v.References[0].Version)
	// Output:
	// without the reference: true
	// orders-value version 1 uses shop.Customer version 1
}
