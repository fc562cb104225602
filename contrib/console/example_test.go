package console_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/sqlstreams/sqlstreams/contrib/console"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/memdriver"
)

// OrderPlaced is what the application produces.
type OrderPlaced struct {
	OrderID string `json:"order_id"`
}

func (OrderPlaced) SchemaVersion() int { return 1 }

// Mount the console under a prefix of the application's own mux, behind
// the application's authentication. It is read-only unless AllowActions is
// set.
func ExampleNew() {
	ctx := context.Background()
	client, err := sqlstreams.Open(ctx, memdriver.Open(), sqlstreams.WithMaintenanceInterval(0))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	if _, err := client.Stream[OrderPlaced]("orders.placed").Producer().Register(ctx, nil); err != nil {
		log.Fatal(err)
	}

	h, err := console.New(client, console.Options{Prefix: "/ops/sqlstreams"})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/ops/sqlstreams/", h)

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ops/sqlstreams/api/streams", nil))
	fmt.Println(rec.Code, strings.Contains(rec.Body.String(), `"name": "orders.placed"`))
	// Output:
	// 200 true
}

// ChartRefresh sets how often an open stream page redraws its Activity
// charts from the history, without a reload; 0 keeps the default of 30s,
// and a negative interval is refused.
func ExampleOptions_chartRefresh() {
	ctx := context.Background()
	client, err := sqlstreams.Open(ctx, memdriver.Open(), sqlstreams.WithMaintenanceInterval(0))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	_, err = console.New(client, console.Options{ChartRefresh: 5 * time.Second})
	fmt.Println(err)
	_, err = console.New(client, console.Options{ChartRefresh: -time.Second})
	fmt.Println(errors.Is(err, console.ErrInvalidOptions))
	// Output:
	// <nil>
	// true
}

// The standalone console (sqlstreams console --listen) wraps the handler in
// basic authentication.
func ExampleBasicAuth() {
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "console") })
	h := console.BasicAuth(inner, "ops", "correct horse")

	req := httptest.NewRequest(http.MethodGet, "/", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	fmt.Println(rec.Code)

	req.SetBasicAuth("ops", "correct horse")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	fmt.Println(rec.Code, rec.Body.String())
	// Output:
	// 401
	// 200 console
}

// Subject names a stream version as the Confluent-compatible registry API
// and the registry page do.
func ExampleSubject() {
	fmt.Println(console.Subject("orders.placed", 2))
	// Output:
	// orders.placed-v2
}
