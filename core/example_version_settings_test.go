package sqlstreams_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// Give one stream version a level of its own: it judges that version's
// revisions only (version 2 keeps the stream's), it can be set before the
// version's first revision, and clearing it falls back to the stream's.
func ExampleRegistry_SetVersionLevel() {
	ctx := context.Background()
	client := exampleClient()
	defer client.Close()
	reg := client.Registry()
	doc := `{"type":"object","properties":{"id":{"type":"string"}}}`
	required := `{"type":"object","properties":{"id":{"type":"string"},"sku":{"type":"string"}},"required":["sku"]}`
	for _, version := range []int{1, 2} {
		if _, err := reg.Register(ctx, "invoices", version, []byte(doc)); err != nil {
			log.Fatal(err)
		}
	}
	if err := reg.SetVersionLevel(ctx, "invoices", 1, schema.None); err != nil {
		log.Fatal(err)
	}
	for _, version := range []int{1, 2} {
		level, _ := reg.VersionLevel(ctx, "invoices", version)
		_, err := reg.Register(ctx, "invoices", version, []byte(required))
		fmt.Printf("v%d: %s (set by %s), a required field: incompatible %v\n", version, level.Value, level.Scope, errors.Is(err, sqlstreams.ErrIncompatibleSchema))
	}

	if err := reg.SetVersionMode(ctx, "invoices", 3, sqlstreams.ModeReadOnly, false); err != nil {
		log.Fatal(err)
	}
	_, err := reg.Register(ctx, "invoices", 3, []byte(doc))
	fmt.Println("v3 READONLY before its first revision refuses it:", errors.Is(err, sqlstreams.ErrReadOnly))

	if err := reg.ClearVersionLevel(ctx, "invoices", 1); err != nil {
		log.Fatal(err)
	}
	level, _ := reg.VersionLevel(ctx, "invoices", 1)
	fmt.Printf("v1 after clearing: %s (set by %s)\n", level.Value, level.Scope)
	// Output:
	// v1: NONE (set by version), a required field: incompatible false
	// v2: BACKWARD (set by default), a required field: incompatible true
	// v3 READONLY before its first revision refuses it: true
	// v1 after clearing: BACKWARD (set by default)
}
