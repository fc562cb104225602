package sqlstreams_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// Roll a stream version back by deleting a bad revision no row was
// written with: softly first (hidden, "latest" rolls back), then for
// good. A revision rows of the log still need is refused with the reason.
func ExampleRegistry_DeleteRevision() {
	ctx := context.Background()
	client := exampleClient()
	defer client.Close()
	reg := client.Registry()
	produceOrders(ctx, client, "orders", "o-1") // revision 1 of version 1, in a row
	bad, err := reg.Register(ctx, "orders", 1, []byte(`{"type":"object","properties":{"order_id":{"type":"string"},"total":{"type":"integer"},"note":{}}}`))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := reg.DeleteRevision(ctx, "orders", 1, bad.Revision, false); err != nil {
		log.Fatal(err)
	}
	live, _ := reg.Revisions(ctx, "orders", 1)
	fmt.Println("latest after deleting revision", bad.Revision, "is", live[len(live)-1].Revision)
	if _, err := reg.DeleteRevision(ctx, "orders", 1, bad.Revision, true); err != nil {
		log.Fatal(err)
	}
	_, err = reg.DeleteRevision(ctx, "orders", 1, 1, false)
	fmt.Println("revision 1 in use:", errors.Is(err, sqlstreams.ErrSchemaInUse))
	// Output:
	// latest after deleting revision 2 is 1
	// revision 1 in use: true
}
