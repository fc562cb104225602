package ccompat_test

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
)

// Schema references of Avro and Protobuf documents as Confluent's clients
// send them: each names a type another subject's document defines, by the
// version of that subject.
const (
	customerAvro      = `{"type":"record","name":"Customer","namespace":"shop","fields":[{"name":"id","type":"string"}]}`
	customerAvroEmail = `{"type":"record","name":"Customer","namespace":"shop","fields":[{"name":"id","type":"string"},{"name":"email","type":"string"}]}`
	orderAvro         = `{"type":"record","name":"OrderPlaced","namespace":"shop.orders","fields":[{"name":"orderId","type":"string"},{"name":"customer","type":"shop.Customer"}]}`

	customerProto     = `syntax = "proto3"; package shop; message Customer { string id = 1; }`
	orderProto        = `syntax = "proto3"; package shop.orders; import "shop/customer.proto"; message OrderPlaced { string order_id = 1; shop.Customer customer = 2; }`
	orderProtoMore    = `syntax = "proto3"; package shop.orders; import "shop/customer.proto"; message OrderPlaced { string order_id = 1; shop.Customer customer = 2; string note = 3; }`
	orderProtoChanged = `syntax = "proto3"; package shop.orders; import "shop/customer.proto"; message OrderPlaced { string order_id = 1; string customer = 2; }`
)

// TestAvroReferences: an order schema under orders-value uses shop.Customer
// from the subject shop.Customer (RecordNameStrategy). Without the
// reference it is invalid (42201); with it it registers, answers its
// references by id, is judged through the referenced type (a reference to
// a customer version whose new field lacks a default is refused under
// BACKWARD, naming the field), and keeps the referenced subject from being
// deleted (42206). A JSON Schema cannot be an Avro document's reference.
func TestAvroReferences(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			cl := newSR(t, serve(t, b.open(t), nil).URL)
			customer, err := cl.CreateSchema(ctx(t), "shop.Customer", avroSchema(customerAvro))
			if err != nil {
				t.Fatal(err)
			}
			_, err = cl.CreateSchema(ctx(t), "orders-value", avroSchema(orderAvro))
			wantCode(t, "an order without its reference", err, 42201, "shop.Customer")
			ref := sr.SchemaReference{Name: "shop.Customer", Subject: "shop.Customer", Version: customer.Version}
			withRef := sr.Schema{Schema: orderAvro, References: []sr.SchemaReference{ref}}
			v1, err := cl.CreateSchema(ctx(t), "orders-value", withRef)
			if err != nil || v1.Version != 1 || v1.Type != sr.TypeAvro {
				t.Fatalf("an order with its reference: %+v, %v", v1, err)
			}
			again, err := cl.CreateSchema(ctx(t), "orders-value", withRef)
			if err != nil || again.ID != v1.ID || again.Version != 1 {
				t.Errorf("the same order again: %+v, %v; want id %d version 1", again, err, v1.ID)
			}
			byID, err := cl.SchemaByID(ctx(t), v1.ID)
			if err != nil || byID.Schema != orderAvro || !slices.Equal(byID.References, []sr.SchemaReference{ref}) {
				t.Errorf("SchemaByID(%d) = %+v, %v; want the text and its reference", v1.ID, byID, err)
			}

			// A customer version whose new field has no default: accepted
			// under its own subject at NONE, refused where an order reads
			// through it under BACKWARD.
			if r := cl.SetCompatibility(ctx(t), sr.SetCompatibility{Level: sr.CompatNone}, "shop.Customer"); r[0].Err != nil {
				t.Fatal(r[0].Err)
			}
			email, err := cl.CreateSchema(ctx(t), "shop.Customer", avroSchema(customerAvroEmail))
			if err != nil {
				t.Fatal(err)
			}
			_, err = cl.CreateSchema(ctx(t), "orders-value", sr.Schema{Schema: orderAvro,
				References: []sr.SchemaReference{{Name: "shop.Customer", Subject: "shop.Customer", Version: email.Version}}})
			wantCode(t, "an order reading through a customer with a new field without a default", err, 409, "READER_FIELD_MISSING_DEFAULT_VALUE", "shop.Customer.email")

			_, err = cl.DeleteSubject(ctx(t), "shop.Customer", sr.SoftDelete)
			wantCode(t, "deleting the referenced subject", err, 42206)
			if _, err := cl.CreateSchema(ctx(t), "ids-json", jsonSchema(t, []byte(`{"type":"string"}`))); err != nil {
				t.Fatal(err)
			}
			_, err = cl.CreateSchema(ctx(t), "mixed-value", sr.Schema{Schema: orderAvro,
				References: []sr.SchemaReference{{Name: "shop.Customer", Subject: "ids-json", Version: 1}}})
			wantCode(t, "an Avro document referring to a JSON Schema", err, 42201, "refers to AVRO documents only")
		})
	}
}

// TestProtobufReferences: an order file under orders-value imports
// shop/customer.proto, registered under the subject of that name (the
// subject Confluent's serializers register an import under). Without the
// reference the import is refused (42201); with it the file registers, and
// its evolution is judged with the imported type resolved: a field added
// passes BACKWARD, a message field turned into a string is refused naming
// the field; the imported subject cannot be deleted while referenced.
func TestProtobufReferences(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			cl := newSR(t, serve(t, b.open(t), nil).URL)
			customer, err := cl.CreateSchema(ctx(t), "shop/customer.proto", protoSchema(customerProto))
			if err != nil {
				t.Fatal(err)
			}
			_, err = cl.CreateSchema(ctx(t), "orders-value", protoSchema(orderProto))
			wantCode(t, "an order without its reference", err, 42201, "shop/customer.proto")
			refs := []sr.SchemaReference{{Name: "shop/customer.proto", Subject: "shop/customer.proto", Version: customer.Version}}
			v1, err := cl.CreateSchema(ctx(t), "orders-value", sr.Schema{Schema: orderProto, Type: sr.TypeProtobuf, References: refs})
			if err != nil || v1.Version != 1 || v1.Type != sr.TypeProtobuf {
				t.Fatalf("an order with its reference: %+v, %v", v1, err)
			}
			if v2, err := cl.CreateSchema(ctx(t), "orders-value", sr.Schema{Schema: orderProtoMore, Type: sr.TypeProtobuf, References: refs}); err != nil || v2.Version != 2 {
				t.Errorf("a field added: %+v, %v; want version 2", v2, err)
			}
			_, err = cl.CreateSchema(ctx(t), "orders-value", sr.Schema{Schema: orderProtoChanged, Type: sr.TypeProtobuf, References: refs})
			wantCode(t, "a message field turned into a string", err, 409, "customer")
			byID, err := cl.SchemaByID(ctx(t), v1.ID)
			if err != nil || !slices.Equal(byID.References, refs) {
				t.Errorf("SchemaByID(%d) = %+v, %v; want its reference", v1.ID, byID, err)
			}
			_, err = cl.DeleteSubject(ctx(t), "shop/customer.proto", sr.SoftDelete)
			wantCode(t, "deleting the imported subject", err, 42206)
		})
	}
}
