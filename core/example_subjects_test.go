package sqlstreams_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// Register JSON Schema documents under a free subject, as a Kafka client
// using TopicNameStrategy would under "orders-value": the same document
// again is the version that has it, a compatible change is the next
// version, a breaking one is refused with its problems, and a soft
// deletion rolls "latest" back.
func ExampleRegistry_RegisterSubject() {
	ctx := context.Background()
	client := exampleClient()
	defer client.Close()
	reg := client.Registry()
	register := func(doc string) (sqlstreams.SubjectVersion, error) {
		return reg.RegisterSubject(ctx, sqlstreams.SubjectRegistration{Subject: "orders-value", Schema: []byte(doc)})
	}
	v1, err := register(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`)
	if err != nil {
		log.Fatal(err)
	}
	again, _ := register(`{"required":["id"],"properties":{"id":{"type":"string"}},"type":"object"}`)
	fmt.Println("v1:", v1.Version, "same document again:", again.Version, again.ID == v1.ID)

	v2, err := register(`{"type":"object","properties":{"id":{"type":"string"},"note":{"type":"string"}},"required":["id"]}`)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("an optional member added:", v2.Version)

	_, err = register(`{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}`)
	var ie *sqlstreams.IncompatibleSchemaError
	if errors.As(err, &ie) {
		fmt.Println("id made an integer:", ie.Problems[0].Kind, "at", ie.Problems[0].Path, "against", ie.Problems[0].Against)
	}

	if _, err := reg.DeleteSubjectVersion(ctx, "orders-value", 2, false); err != nil {
		log.Fatal(err)
	}
	live, _ := reg.SubjectVersions(ctx, "orders-value", false)
	fmt.Println("latest after deleting version 2:", live[len(live)-1].Version)
	// Output:
	// v1: 1 same document again: 1 true
	// an optional member added: 2
	// id made an integer: TYPE_CHANGED at #/properties/id/type against version 2
	// latest after deleting version 2: 1
}
