package ccompat_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/sqlstreams/sqlstreams/contrib/ccompat"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/memdriver"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// OrderPlaced is what a Go producer registers at version 2.
type OrderPlaced struct {
	OrderID string `json:"order_id"`
}

func (OrderPlaced) SchemaVersion() int { return 2 }

// exampleClient opens a client on an in-memory store; an application opens
// its SQL driver instead.
func exampleClient() (*sqlstreams.Client, func()) {
	c, err := sqlstreams.Open(context.Background(), memdriver.Open(), sqlstreams.WithMaintenanceInterval(0))
	if err != nil {
		log.Fatal(err)
	}
	return c, func() { _ = c.Close() }
}

// Mount the API next to an application's own routes; a Go producer's
// schema is then visible to any Confluent client.
func ExampleNewHandler() {
	ctx := context.Background()
	client, done := exampleClient()
	defer done()
	if _, err := client.Stream[OrderPlaced]("orders.placed").Producer().Register(ctx, nil); err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", ccompat.NewHandler(client, &ccompat.Options{BearerToken: "ci-token"}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	req, _ := http.NewRequest("GET", srv.URL+"/subjects/orders.placed-v2/versions/latest", nil)
	req.Header.Set("Authorization", "Bearer ci-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, resp.Header.Get("Content-Type"))
	fmt.Println(strings.Contains(string(body), `"subject":"orders.placed-v2","version":1`))
	// Output:
	// 200 application/vnd.schemaregistry.v1+json
	// true
}

// Subjects are {stream}-v{version}, split at the last -v<digits>.
func ExampleParseSubject() {
	fmt.Println(ccompat.ParseSubject("orders-v2-v1"))
	fmt.Println(ccompat.ParseSubject("orders-value"))
	fmt.Println(ccompat.SubjectName("orders.placed", 2))
	// Output:
	// orders-v2 1 true
	//  0 false
	// orders.placed-v2
}

// A CI job registers a hand-written schema through the same gate as a
// producer, and reads back its global id and where else it is used.
func Example_registerDocument() {
	ctx := context.Background()
	client, done := exampleClient()
	defer done()
	reg := client.Registry()
	doc := []byte(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`)
	a, err := reg.Register(ctx, "orders.placed", 1, doc)
	if err != nil {
		log.Fatal(err)
	}
	b, err := reg.Register(ctx, "orders.audit", 1, doc)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("same id in two streams:", a.ID == b.ID)
	usages, _ := reg.SchemaUsages(ctx, a.ID)
	fmt.Println(usages)
	subjects, _ := reg.Subjects(ctx)
	fmt.Println(subjects)
	byID, _ := reg.SchemaByID(ctx, a.ID)
	fmt.Println(string(byID.Schema.Canonical()))

	// Dropping the required id breaks FORWARD readers of revision 1.
	if err := reg.SetLevel(ctx, "orders.placed", schema.Forward); err != nil {
		log.Fatal(err)
	}
	err = reg.CheckAgainst(ctx, "orders.placed", 1, 1, []byte(`{"type":"object","properties":{}}`))
	fmt.Println(err != nil)
	// Output:
	// same id in two streams: true
	// [{orders.audit 1 1 false} {orders.placed 1 1 false}]
	// [{orders.audit 1} {orders.placed 1}]
	// {"properties":{"id":{"type":"string"}},"required":["id"],"type":"object"}
	// true
}

// A shared schema is recorded once and referenced by name; ReferencedBy
// lists who refers to it.
func Example_references() {
	ctx := context.Background()
	client, done := exampleClient()
	defer done()
	reg := client.Registry()
	money := []byte(`{"type":"object","properties":{"cents":{"type":"integer"}},"required":["cents"]}`)
	if _, err := reg.Register(ctx, "money", 1, money); err != nil {
		log.Fatal(err)
	}
	invoice := []byte(`{"type":"object","properties":{"total":{"$ref":"money.json"}}}`)
	refs := []sqlstreams.Reference{{Name: "money.json", Stream: "money", Version: 1}}
	if err := reg.CheckWithReferences(ctx, "invoices", 1, invoice, refs); err != nil {
		log.Fatal(err)
	}
	rev, err := reg.RegisterSchema(ctx, sqlstreams.SchemaRegistration{Stream: "invoices", Version: 1, Schema: invoice, References: refs})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rev.References)
	users, _ := reg.ReferencedBy(ctx, "money", 1, 1)
	fmt.Println(users)
	// cents as a string would break the invoice, which references money.
	_, err = reg.Register(ctx, "money", 1, []byte(`{"type":"object","properties":{"cents":{"type":"string"}},"required":["cents"]}`))
	fmt.Println(strings.Contains(err.Error(), "stream invoices version 1 revision 1, which references it"))
	// Output:
	// [{money.json money 1 1}]
	// [{invoices 1 1 false}]
	// true
}

// A Kafka client with TopicNameStrategy registers under "{topic}-value":
// a free subject of its own, with versions 1, 2, ... and its own level. A
// breaking version is refused with 409 (the message goes on with each
// problem and the field it is at), and a soft
// deletion rolls "latest" back.
func Example_freeSubject() {
	client, done := exampleClient()
	defer done()
	srv := httptest.NewServer(ccompat.NewHandler(client, nil))
	defer srv.Close()
	call := func(method, path, body string) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", ccompat.ContentType)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		answer, _ := io.ReadAll(resp.Body)
		short, _, _ := strings.Cut(string(answer), "; details")
		fmt.Println(resp.StatusCode, short)
	}
	record := func(fields string) string {
		return fmt.Sprintf(`{"schema": %q}`, `{"type":"record","name":"OrderPlaced","fields":[`+fields+`]}`)
	}
	call("PUT", "/config/orders-value", `{"compatibility": "BACKWARD"}`)
	call("POST", "/subjects/orders-value/versions", record(`{"name":"id","type":"string"}`))
	call("POST", "/subjects/orders-value/versions", record(`{"name":"id","type":"string"},{"name":"note","type":"string","default":""}`))
	call("POST", "/subjects/orders-value/versions", record(`{"name":"id","type":"string"},{"name":"total","type":"int"}`))
	call("DELETE", "/subjects/orders-value/versions/2", "")
	call("GET", "/subjects/orders-value/versions", "")
	// Output:
	// 200 {"compatibility":"BACKWARD"}
	// 200 {"id":1}
	// 200 {"id":2}
	// 409 {"error_code":409,"message":"Schema being registered is incompatible with an earlier schema for subject \"orders-value\"
	// 200 2
	// 200 [1]
}
