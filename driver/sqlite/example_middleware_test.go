package sqlite_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/driver/sqlite"
)

// requestID stamps every produced message with the request id found in the
// context, and puts it back into the handler's context: the shape of a
// tracing middleware, which injects and extracts a trace context the same
// way.
type requestID struct {
	sqlstreams.MiddlewareDefaults
	mu       sync.Mutex
	outcomes []string
}

type requestKey struct{}

func (*requestID) Produce(ctx context.Context, call *sqlstreams.ProduceCall, next func(context.Context) ([]int64, error)) ([]int64, error) {
	if id, ok := ctx.Value(requestKey{}).(string); ok {
		for _, m := range call.Messages {
			m.Headers["request-id"] = id // written to the row
		}
	}
	return next(ctx)
}

func (m *requestID) Handle(ctx context.Context, d *sqlstreams.DeliveryInfo, next func(context.Context) error) error {
	err := next(context.WithValue(ctx, requestKey{}, d.Headers["request-id"]))
	m.mu.Lock()
	m.outcomes = append(m.outcomes, fmt.Sprintf("%s #%d attempt %d: error=%v", d.Stream, d.ID, d.Attempt, err != nil))
	m.mu.Unlock()
	return err
}

// Settled is a hook: it only observes.
func (m *requestID) Settled(_ context.Context, e sqlstreams.SettleEvent) {
	m.mu.Lock()
	m.outcomes = append(m.outcomes, fmt.Sprintf("%s %v", e.Outcome, e.IDs))
	m.mu.Unlock()
}

// Install middleware client-wide with WithMiddleware: it wraps every produce
// path and every handler call in Run, and hooks observe claims, settles and
// maintenance. ConsumerOptions.Middleware adds middleware to one consumer.
func ExampleWithMiddleware() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "sqlstreams-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	mw := &requestID{}
	client, err := sqlstreams.Open(ctx, sqlite.Open(filepath.Join(dir, "app.db")), sqlstreams.WithMiddleware(mw))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	orders := client.Stream[OrderPlacedV1]("orders.placed")
	producer, err := orders.Producer().Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := producer.Produce(context.WithValue(ctx, requestKey{}, "req-42"), OrderPlacedV1{OrderID: "o-1", Total: 1250}); err != nil {
		log.Fatal(err)
	}
	consumer, err := orders.Consumer("billing").Register(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() {
		done <- consumer.Run(runCtx, func(ctx context.Context, d sqlstreams.Delivery[OrderPlacedV1]) error {
			fmt.Println("handling", d.Value.OrderID, "for request", ctx.Value(requestKey{}))
			stop()
			return nil
		})
	}()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	mw.mu.Lock()
	defer mw.mu.Unlock()
	for _, o := range mw.outcomes {
		fmt.Println(o)
	}
	// Output:
	// handling o-1 for request req-42
	// orders.placed #1 attempt 1: error=false
	// ack [1]
}
