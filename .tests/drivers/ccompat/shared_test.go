package ccompat_test

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sqlstreams/sqlstreams/core/schema"
)

// Price is a shared Go type: recorded once on stream "price" at version 1.
type Price struct {
	Cents    int64  `json:"cents"`
	Currency string `json:"currency"`
}

func (Price) SharedSchema() schema.SharedName { return schema.SharedName{Stream: "price", Version: 1} }

type Quote struct {
	ID    string `json:"id"`
	Price Price  `json:"price"`
}

func (Quote) SchemaVersion() int { return 1 }

// TestGoSharedTypes: what Go producers record with a shared type is served
// with Confluent references, and referencedby leads back to it.
func TestGoSharedTypes(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			c := b.open(t)
			if _, err := c.Stream[Quote]("quotes").Producer().Register(ctx(t), nil); err != nil {
				t.Fatal(err)
			}
			cl := newSR(t, serve(t, c, nil).URL)
			q, err := cl.SchemaByVersion(ctx(t), "quotes-v1", -1)
			want := []sr.SchemaReference{{Name: "price-v1", Subject: "price-v1", Version: 1}}
			if err != nil || !slices.Equal(q.References, want) {
				t.Fatalf("quotes-v1: %+v, %v; want references %+v", q, err, want)
			}
			price, err := cl.SchemaByVersion(ctx(t), "price-v1", 1)
			if own, _ := schema.For[Price](); err != nil || price.Schema.Schema != string(own.Canonical()) {
				t.Errorf("price-v1: %+v, %v; want Price's own schema", price, err)
			}
			users, err := cl.SchemaReferences(ctx(t), "price-v1", 1)
			if err != nil || len(users) != 1 || users[0].Subject != "quotes-v1" || users[0].ID != q.ID {
				t.Errorf("SchemaReferences(price-v1): %+v, %v", users, err)
			}
			// Registering the same document with its reference through the
			// API is the same schema: same id, no new revision.
			again, err := cl.CreateSchema(ctx(t), "quotes-v1", sr.Schema{Schema: q.Schema.Schema, Type: sr.TypeJSON, References: want})
			if err != nil || again.ID != q.ID || again.Version != 1 {
				t.Errorf("re-registering quotes-v1 through the API: %+v, %v; want id %d, version 1", again, err, q.ID)
			}
			// The same text without the reference is another schema.
			if found, err := cl.LookupSchema(ctx(t), "quotes-v1", sr.Schema{Schema: q.Schema.Schema, Type: sr.TypeJSON}); srCode(err) != 40403 {
				t.Errorf("lookup without the reference: %+v, %v; want 40403", found, err)
			}
		})
	}
}
