package avro_test

import (
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/contrib/avro"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

const (
	customerV1 = `{"type":"record","name":"Customer","namespace":"shop","fields":[{"name":"id","type":"string"}]}`
	customerV2 = `{"type":"record","name":"Customer","namespace":"shop","fields":[{"name":"id","type":"string"},{"name":"email","type":"string"}]}`
	address    = `{"type":"record","name":"Address","namespace":"shop","fields":[{"name":"city","type":"string"}]}`
	withHome   = `{"type":"record","name":"Customer","namespace":"shop","fields":[{"name":"id","type":"string"},{"name":"home","type":"shop.Address"}]}`
	order      = `{"type":"record","name":"OrderPlaced","namespace":"shop.orders","fields":[{"name":"orderId","type":"string"},{"name":"customer","type":"shop.Customer"}]}`
)

// Named types of references resolve, transitively and only from the
// references given; the judge sees through them.
func TestParseReferences(t *testing.T) {
	t.Parallel()
	if _, err := avro.Parse([]byte(order)); err == nil || !strings.Contains(err.Error(), "shop.Customer") {
		t.Errorf("an order without its reference: %v; want an error naming shop.Customer", err)
	}
	v1, err := avro.ParseReferences([]byte(order), []schema.Referenced{{Name: "shop.Customer", Text: []byte(customerV1)}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(v1.Canonical()), `"name":"shop.Customer"`) {
		t.Errorf("the canonical form lacks the referenced record: %s", v1.Canonical())
	}
	// A reference of a reference: listed before the document using it.
	nested, err := avro.ParseReferences([]byte(order), []schema.Referenced{{Name: "shop.Address", Text: []byte(address)}, {Name: "shop.Customer", Text: []byte(withHome)}})
	if err != nil || !strings.Contains(string(nested.Canonical()), "shop.Address") {
		t.Fatalf("nested references: %v", err)
	}
	v2, err := avro.ParseReferences([]byte(order), []schema.Referenced{{Name: "shop.Customer", Text: []byte(customerV2)}})
	if err != nil {
		t.Fatal(err)
	}
	diffs := v2.ReadsFrom(v1)
	var found bool
	for _, d := range diffs {
		found = found || (!d.Compatible && d.Kind == "READER_FIELD_MISSING_DEFAULT_VALUE" && strings.Contains(d.Message, "shop.Customer.email"))
	}
	if !found {
		t.Errorf("an order reading with customer v2 (email without a default) from v1: %+v; want a missing default of shop.Customer.email", diffs)
	}
	if _, err := avro.ParseReferences([]byte(order), []schema.Referenced{{Name: "shop.Customer", Text: []byte(`{"type":`)}}); err == nil ||
		!strings.Contains(err.Error(), `reference "shop.Customer"`) {
		t.Errorf("a malformed reference: %v; want an error naming it", err)
	}
	f := avro.Format()
	if _, ok := f.(schema.ReferenceParser); !ok {
		t.Error("the AVRO format is no schema.ReferenceParser")
	}
}
