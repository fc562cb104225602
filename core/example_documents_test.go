package sqlstreams_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// Compare two stored versions of a free subject as the registry would
// judge them, the way the console's diff view does: SubjectDocument gives
// each version as a schema.Document, and schema.Judge names the problems
// per direction.
func ExampleRegistry_SubjectDocument() {
	ctx := context.Background()
	client := exampleClient()
	defer client.Close()
	reg := client.Registry()
	// NONE lets the breaking version 2 in, so there is something to show.
	if err := reg.SetSubjectLevel(ctx, "orders-value", schema.None); err != nil {
		log.Fatal(err)
	}
	for _, doc := range []string{
		`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`,
		`{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}`,
	} {
		if _, err := reg.RegisterSubject(ctx, sqlstreams.SubjectRegistration{Subject: "orders-value", Schema: []byte(doc)}); err != nil {
			log.Fatal(err)
		}
	}
	v1, err := reg.SubjectDocument(ctx, "orders-value", 1)
	if err != nil {
		log.Fatal(err)
	}
	v2, err := reg.SubjectDocument(ctx, "orders-value", 2)
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range schema.Judge(schema.Full, []schema.Document{v1}, v2).Problems {
		fmt.Println("full:", p.Direction, p.Kind, p.Path)
	}
	_, err = reg.SubjectDocument(ctx, "orders-value", 9)
	fmt.Println("version 9:", errors.Is(err, sqlstreams.ErrSubjectVersionNotFound))
	// Output:
	// full: new reader, old data TYPE_CHANGED #/properties/id/type
	// full: old reader, new data TYPE_CHANGED #/properties/id/type
	// version 9: true
}
