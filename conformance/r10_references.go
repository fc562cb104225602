package conformance

import (
	"errors"
	"slices"
	"strings"
	"testing"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

func init() { register("R10_References", testReferences) }

// SharedMoney is shared: its schema is recorded once, on stream r10-money at
// version 1, and the messages that contain it refer to it by name.
type SharedMoney struct {
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
}

func (SharedMoney) SharedSchema() schema.SharedName {
	return schema.SharedName{Stream: "r10-money", Version: 1}
}

// OrderM and InvoiceM both contain a SharedMoney.
type OrderM struct {
	ID    string      `json:"id"`
	Price SharedMoney `json:"price"`
}

func (OrderM) SchemaVersion() int { return 1 }

type InvoiceM struct {
	Number string       `json:"number"`
	Total  SharedMoney  `json:"total"`
	Tax    *SharedMoney `json:"tax,omitempty"`
}

func (InvoiceM) SchemaVersion() int { return 1 }

// SharedMoneyText is SharedMoney edited in place: the amount became text.
type SharedMoneyText struct {
	Amount   string `json:"amount"`
	Currency string `json:"currency"`
}

func (SharedMoneyText) SharedSchema() schema.SharedName {
	return schema.SharedName{Stream: "r10-money", Version: 1}
}

// OrderMText is OrderM with the edited shared type.
type OrderMText struct {
	ID    string          `json:"id"`
	Price SharedMoneyText `json:"price"`
}

func (OrderMText) SchemaVersion() int { return 1 }

// R10: a shared Go type (schema.Shared) is recorded once as its own
// schema and referenced by name; a new revision of it is checked against
// every schema that references it and their deployed readers; documents
// registered by hand bind their "$ref" names to recorded revisions.
func testReferences(t *testing.T, h *harness) {
	c := h.client(t)
	reg := c.Registry()

	producer[OrderM](t, c, "r10-orders")
	consumer[OrderM](t, c, "r10-orders", "billing", nil)
	producer[InvoiceM](t, c, "r10-invoices")

	money := revisions(t, c, "r10-money", 1)
	if len(money) != 1 || money[0].Fingerprint != fingerprintOf[SharedMoney](t) {
		t.Fatalf("r10-money revisions: %+v; want SharedMoney's schema once", money)
	}
	ref := sqlstreams.Reference{Name: "r10-money-v1", Stream: "r10-money", Version: 1, Revision: 1}
	for _, stream := range []string{"r10-orders", "r10-invoices"} {
		revs := revisions(t, c, stream, 1)
		text := string(revs[0].Schema.Canonical())
		if len(revs) != 1 || !slices.Equal(revs[0].References, []sqlstreams.Reference{ref}) {
			t.Errorf("%s: %+v; want one revision referencing %+v", stream, revs, ref)
		}
		if !strings.Contains(text, `"$ref":"r10-money-v1"`) || strings.Contains(text, `"currency"`) {
			t.Errorf("%s's schema copies SharedMoney instead of referring to it: %s", stream, text)
		}
	}
	users, err := reg.ReferencedBy(ctx(t), "r10-money", 1, 1)
	wantUsers := []sqlstreams.SchemaUsage{{Stream: "r10-invoices", Version: 1, Revision: 1}, {Stream: "r10-orders", Version: 1, Revision: 1}}
	if err != nil || !slices.Equal(users, wantUsers) {
		t.Errorf("ReferencedBy(r10-money v1 r1): %+v, %v; want %+v", users, err, wantUsers)
	}
	// Registering again changes nothing.
	producer[OrderM](t, c, "r10-orders")
	if n := len(revisions(t, c, "r10-money", 1)); n != 1 {
		t.Errorf("re-registering recorded SharedMoney %d times", n)
	}

	// SharedMoney without currency passes SharedMoney's own level (a removed field) but
	// group billing reads orders and needs price.currency.
	noCurrency := []byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","additionalProperties":true,
		"properties":{"amount":{"type":"integer"}},"required":["amount"]}`)
	_, err = reg.Register(ctx(t), "r10-money", 1, noCurrency)
	incompatible(t, "SharedMoney without currency", err, schema.Backward, 1,
		wantProblem{"the reader of group billing on stream r10-orders (revision 1), which references it", schema.RequiredAttributeAdded, "#/properties/price/required/currency"})
	if n := len(revisions(t, c, "r10-money", 1)); n != 1 {
		t.Errorf("a refused shared revision was recorded: %d revisions", n)
	}
	// Amount as a string breaks SharedMoney's own level and, through the
	// reference, both messages' levels.
	amountText := []byte(`{"type":"object","properties":{"amount":{"type":"string"},"currency":{"type":"string"}},"required":["amount","currency"]}`)
	_, err = reg.Register(ctx(t), "r10-money", 1, amountText)
	incompatible(t, "SharedMoney with a string amount", err, schema.Backward, 1,
		wantProblem{"revision 1", schema.TypeChanged, "#/properties/amount/type"},
		wantProblem{"stream r10-orders version 1 revision 1, which references it", schema.TypeChanged, "#/properties/price/properties/amount/type"},
		wantProblem{"stream r10-invoices version 1 revision 1, which references it", schema.TypeChanged, "#/properties/total/properties/amount/type"})
	if err := reg.Check(ctx(t), "r10-money", 1, amountText); !errors.Is(err, sqlstreams.ErrIncompatibleSchema) {
		t.Errorf("the dry run of the string amount: %v; want the same refusal", err)
	}
	// A compatible change: an optional note.
	withNote := []byte(`{"type":"object","additionalProperties":true,"properties":{"amount":{"type":"integer"},"currency":{"type":"string"},"note":{"type":"string"}},"required":["amount","currency"]}`)
	rev, err := reg.Register(ctx(t), "r10-money", 1, withNote)
	if err != nil || rev.Revision != 2 {
		t.Fatalf("SharedMoney with an optional note: %+v, %v", rev, err)
	}

	// A Go type whose shared type changed incompatibly: its dry run and its
	// registration are refused, and the refusal records nothing, neither
	// the shared type's revision nor the message's.
	for what, err := range map[string]error{
		"CheckSchema":       c.Stream[OrderMText]("r10-orders").CheckSchema(ctx(t)),
		"producer Register": regProducer[OrderMText](t, c, "r10-orders"),
	} {
		incompatible(t, what+" of OrderMText", err, schema.Backward, 1,
			wantProblem{"revision 2", schema.TypeChanged, "#/properties/amount/type"})
	}
	if n, m := len(revisions(t, c, "r10-money", 1)), len(revisions(t, c, "r10-orders", 1)); n != 2 || m != 1 {
		t.Errorf("after the refusals: %d money revisions (want 2), %d order revisions (want 1)", n, m)
	}
	// On a stream that does not exist yet, the shared type is still checked.
	incompatible(t, "CheckSchema of OrderMText on a new stream", c.Stream[OrderMText]("r10-new").CheckSchema(ctx(t)), schema.Backward, 1,
		wantProblem{"revision 2", schema.TypeChanged, "#/properties/amount/type"})
	// The unchanged type's dry run passes; it binds to the recorded Money.
	if err := c.Stream[OrderM]("r10-orders").CheckSchema(ctx(t)); err != nil {
		t.Errorf("CheckSchema of OrderM: %v", err)
	}

	// A document registered by hand names its reference; the reference
	// must exist.
	doc := []byte(`{"type":"object","properties":{"cost":{"$ref":"money.json"}},"required":["cost"]}`)
	byHand, err := reg.RegisterSchema(ctx(t), sqlstreams.SchemaRegistration{Stream: "r10-docs", Version: 1, Schema: doc,
		References: []sqlstreams.Reference{{Name: "money.json", Stream: "r10-money", Version: 1}}})
	wantRef := sqlstreams.Reference{Name: "money.json", Stream: "r10-money", Version: 1, Revision: 2}
	if err != nil || !slices.Equal(byHand.References, []sqlstreams.Reference{wantRef}) {
		t.Fatalf("a document with a reference to the latest SharedMoney: %+v, %v; want it bound to %+v", byHand, err, wantRef)
	}
	if users, err := reg.ReferencedBy(ctx(t), "r10-money", 1, 2); err != nil || !slices.Equal(users, []sqlstreams.SchemaUsage{{Stream: "r10-docs", Version: 1, Revision: 1}}) {
		t.Errorf("ReferencedBy(r10-money v1 r2): %+v, %v", users, err)
	}
	// The same text bound to another revision is another schema.
	other, err := reg.RegisterSchema(ctx(t), sqlstreams.SchemaRegistration{Stream: "r10-docs2", Version: 1, Schema: doc,
		References: []sqlstreams.Reference{{Name: "money.json", Stream: "r10-money", Version: 1, Revision: 1}}})
	if err != nil || other.ID == byHand.ID {
		t.Errorf("the same text bound to revision 1: %+v, %v; want a schema id other than %d", other, err, byHand.ID)
	}
	_, err = reg.RegisterSchema(ctx(t), sqlstreams.SchemaRegistration{Stream: "r10-docs", Version: 1, Schema: doc,
		References: []sqlstreams.Reference{{Name: "money.json", Stream: "r10-money", Version: 9}}})
	if !errors.Is(err, sqlstreams.ErrReferenceNotFound) {
		t.Errorf("a reference to a missing version: %v, want ErrReferenceNotFound", err)
	}
	// Removing currency is now refused against r10-docs' level too: cost
	// requires it through the reference... only when a reader needs it.
	// The document's own gate compares the bundled schemas: a cost whose
	// amount becomes a string breaks r10-docs.
	_, err = reg.Register(ctx(t), "r10-money", 1, amountText)
	incompatible(t, "the string amount after the documents", err, schema.Backward, 1,
		wantProblem{"stream r10-docs version 1 revision 1, which references it", schema.TypeChanged, "#/properties/cost/properties/amount/type"})
}
