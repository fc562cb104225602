package protobuf_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/contrib/protobuf"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

const (
	customerProto = `syntax = "proto3"; package shop; message Customer { string id = 1; }`
	orderProto    = `syntax = "proto3"; package shop.orders; import "shop/customer.proto"; import "google/protobuf/timestamp.proto";
message OrderPlaced { string order_id = 1; shop.Customer customer = 2; google.protobuf.Timestamp at = 3; }`
)

// Imports of references resolve, with the well-known types; any other
// import is still ErrImportNotAvailable, and names that would shadow the
// file itself or the well-known types are refused.
func TestParseReferences(t *testing.T) {
	t.Parallel()
	if _, err := protobuf.Parse([]byte(orderProto)); !errors.Is(err, protobuf.ErrImportNotAvailable) {
		t.Errorf("an order without its reference: %v; want ErrImportNotAvailable", err)
	}
	refs := []schema.Referenced{{Name: "shop/customer.proto", Text: []byte(customerProto)}}
	doc, err := protobuf.ParseReferences([]byte(orderProto), refs)
	if err != nil {
		t.Fatal(err)
	}
	customer := doc.Descriptor().Messages().ByName("OrderPlaced").Fields().ByName("customer").Message()
	if customer == nil || customer.FullName() != "shop.Customer" {
		t.Errorf("field customer is %v; want shop.Customer", customer)
	}
	if got := doc.MessageNames(); len(got) != 1 || got[0] != "shop.orders.OrderPlaced" {
		t.Errorf("MessageNames = %v; want the file's own message only", got)
	}
	for _, name := range []string{protobuf.FileName, "google/protobuf/timestamp.proto"} {
		if _, err := protobuf.ParseReferences([]byte(orderProto), []schema.Referenced{{Name: name, Text: []byte(customerProto)}}); err == nil ||
			!strings.Contains(err.Error(), "reserved") {
			t.Errorf("a reference named %q: %v; want it refused as reserved", name, err)
		}
	}
	f := protobuf.Format()
	if _, ok := f.(schema.ReferenceParser); !ok {
		t.Error("the PROTOBUF format is no schema.ReferenceParser")
	}
}
