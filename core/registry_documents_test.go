package sqlstreams_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// TestStoredDocuments: RevisionDocument and SubjectDocument give stored
// schemas as the registry judges them (references resolved), and name
// what is missing with the registry's sentinels.
func TestStoredDocuments(t *testing.T) {
	ctx := context.Background()
	client := exampleClient()
	defer client.Close()
	reg := client.Registry()
	if _, err := reg.Register(ctx, "orders", 1, []byte(`{"type":"object","properties":{"id":{"type":"string"}}}`)); err != nil {
		t.Fatal(err)
	}
	revs, err := reg.Revisions(ctx, "orders", 1)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := reg.RevisionDocument(ctx, "orders", 1, 1)
	if err != nil || doc.Type() != schema.TypeJSON || string(doc.Canonical()) != string(revs[0].Schema.Canonical()) {
		t.Fatalf("revision 1: %v, %v", doc, err)
	}
	if _, err := reg.RevisionDocument(ctx, "orders", 1, 9); !errors.Is(err, sqlstreams.ErrSchemaNotFound) {
		t.Errorf("revision 9: %v, want ErrSchemaNotFound", err)
	}
	if _, err := reg.RevisionDocument(ctx, "nobody", 1, 1); !errors.Is(err, sqlstreams.ErrStreamNotFound) {
		t.Errorf("a missing stream: %v, want ErrStreamNotFound", err)
	}

	for _, p := range []sqlstreams.SubjectRegistration{
		{Subject: "customer-value", Schema: []byte(`{"type":"object","properties":{"nickname":{"type":"string"}}}`)},
		{Subject: "orders-value", Schema: []byte(`{"type":"object","properties":{"customer":{"$ref":"customer.json"}}}`),
			References: []sqlstreams.SubjectReference{{Name: "customer.json", Subject: "customer-value", Version: 1}}},
	} {
		if _, err := reg.RegisterSubject(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	doc, err = reg.SubjectDocument(ctx, "orders-value", 1)
	if err != nil || !strings.Contains(string(doc.Canonical()), "nickname") {
		t.Fatalf("a version with a reference, resolved: %v, %v", doc, err)
	}
	if _, err := reg.SubjectDocument(ctx, "orders-value", 2); !errors.Is(err, sqlstreams.ErrSubjectVersionNotFound) {
		t.Errorf("version 2: %v, want ErrSubjectVersionNotFound", err)
	}
	if _, err := reg.SubjectDocument(ctx, "nobody-value", 1); !errors.Is(err, sqlstreams.ErrSubjectNotFound) {
		t.Errorf("a missing subject: %v, want ErrSubjectNotFound", err)
	}
}
