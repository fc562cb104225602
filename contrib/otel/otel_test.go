package otelsqlstreams_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	otelsqlstreams "github.com/sqlstreams/sqlstreams/contrib/otel"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/memdriver"
)

// The tests here use the package's unexported hooks (export_test.go), so
// they run in this module, on core/memdriver. The middleware's tests on
// every SQL engine, in several processes and in drivers' transactions are
// in the test-only module: .tests/drivers/otel.

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// OrderV1 is the message type of the tests.
type OrderV1 struct {
	ID string `json:"id"`
}

func (OrderV1) SchemaVersion() int { return 1 }

var errBoom = errors.New("boom")

// memEnv is a client on a new in-memory store with the middleware on a
// real SDK, and the spans it ended.
type memEnv struct {
	client *sqlstreams.Client
	mw     *otelsqlstreams.Middleware
	spans  *tracetest.InMemoryExporter
}

func newMemEnv(t *testing.T, cfg otelsqlstreams.Config) *memEnv {
	t.Helper()
	e := &memEnv{spans: tracetest.NewInMemoryExporter()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(e.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
	cfg.TracerProvider, cfg.MeterProvider = tp, mp
	e.mw = otelsqlstreams.NewMiddleware(&cfg)
	var err error
	e.client, err = sqlstreams.Open(testCtx(t), memdriver.Open(), e.mw.ClientOption())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.client.Close(); _ = e.mw.Close() })
	return e
}

// testCtx bounds what a test waits for.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// The backlog reader ends by itself once the client is closed, without
// Middleware.Close.
func TestHealthStopsWithClient(t *testing.T) {
	t.Parallel()
	e := newMemEnv(t, otelsqlstreams.Config{HealthInterval: 10 * time.Millisecond})
	if otelsqlstreams.HealthDone(e.mw) != nil {
		t.Fatal("the reader started before the client was used")
	}
	p, err := e.client.Stream[OrderV1]("s").Producer().Register(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Produce(testCtx(t), OrderV1{ID: "o"}); err != nil {
		t.Fatal(err)
	}
	done := otelsqlstreams.HealthDone(e.mw)
	if done == nil {
		t.Fatal("the reader did not start with the first produce")
	}
	if err := e.client.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the backlog reader still runs after the client closed")
	}
}

// error.type is one of a fixed set of classes, never a Go type's name.
func TestErrorType(t *testing.T) {
	t.Parallel()
	type custom struct{ error }
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&sqlstreams.PanicError{Value: "x"}, "panic"},
		{fmt.Errorf("settle: %w", sqlstreams.ErrLeaseLost), "lease_lost"},
		{fmt.Errorf("run: %w", sqlstreams.ErrClosed), "closed"},
		{sqlstreams.ErrGroupNotFound, "group_not_found"},
		{fmt.Errorf("append: %w", sqlstreams.ErrDatabase), "database"},
		{context.DeadlineExceeded, "timeout"},
		{fmt.Errorf("call: %w", context.Canceled), "canceled"},
		{sqlstreams.Dead(fmt.Errorf("ctx: %w", errBoom)), "dead"},
		{sqlstreams.Dead(context.DeadlineExceeded), "dead"}, // the handler's verdict wins
		{errors.Join(errBoom, sqlstreams.Dead(errBoom)), "dead"},
		{sqlstreams.Dead(custom{}), "dead"},
		{errors.Join(errBoom, sqlstreams.ErrInvalidMessage), "invalid_message"},
		{errBoom, "_OTHER"},
		{fmt.Errorf("wrapped: %w", errBoom), "_OTHER"},
		{custom{errBoom}, "_OTHER"},
		{errors.Join(custom{}, errBoom), "_OTHER"},
		{sqlstreams.RetryAfter(time.Second, errBoom), "_OTHER"}, // Handle records no error.type for it
	} {
		if got := otelsqlstreams.ErrorType(tc.err); got != tc.want {
			t.Errorf("errorType(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// A delivery whose group is deleted while its handler runs: no settle will
// ever record its outcome (the lease is gone), and its process span still
// ends, without an outcome.
func TestLeaseGoneWhileHandling(t *testing.T) {
	t.Parallel()
	e := newMemEnv(t, otelsqlstreams.Config{})
	otelsqlstreams.SetSettleWait(e.mw, 0)
	stream := e.client.Stream[OrderV1]("s")
	p, err := stream.Producer().Register(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := stream.Consumer("g").Register(testCtx(t), &sqlstreams.ConsumerOptions{PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Produce(testCtx(t), OrderV1{ID: "o"}); err != nil {
		t.Fatal(err)
	}
	started, deleted := make(chan struct{}), make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- c.Run(ctx, func(ctx context.Context, d sqlstreams.Delivery[OrderV1]) error {
			close(started)
			<-deleted
			return errBoom
		})
	}()
	<-started
	if err := stream.DeleteGroup(testCtx(t), "g"); err != nil {
		t.Fatal(err)
	}
	close(deleted)
	proc := e.waitSpan(t, "process s")
	cancel()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, sqlstreams.ErrGroupNotFound) {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not return")
	}
	for _, kv := range proc.Attributes {
		if kv.Key == otelsqlstreams.OutcomeKey {
			t.Errorf("outcome %q for a delivery nobody settled", kv.Value.AsString())
		}
	}
	if proc.Status.Code != codes.Error {
		t.Errorf("status %v", proc.Status)
	}
}

// waitSpan waits, for a bounded time, until a span called name has ended.
func (e *memEnv) waitSpan(t *testing.T, name string) tracetest.SpanStub {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		for _, s := range e.spans.GetSpans() {
			if s.Name == name {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for span %s", name)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
