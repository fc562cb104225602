package otelsqlstreams_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	otelsqlstreams "github.com/sqlstreams/sqlstreams/contrib/otel"
)

// lockedBuffer is a log destination safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// While the global propagator is OpenTelemetry's no-op default, the
// creation context travels as W3C TraceContext, and the logger says so
// once; a propagator set globally later takes over. Not parallel: it sets
// the global propagator. It starts from one that carries no fields, as the
// no-op default does, whatever another test (or an earlier -count run) set.
func TestDefaultPropagator(t *testing.T) {
	prev := otel.GetTextMapPropagator()
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator())
	t.Cleanup(func() { otel.SetTextMapPropagator(prev) })
	if f := otel.GetTextMapPropagator().Fields(); len(f) != 0 {
		t.Fatalf("the global propagator carries fields %v; this test needs one with none, as the no-op default", f)
	}
	var logs lockedBuffer
	e := newMemEnv(t, otelsqlstreams.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	stream := e.client.Stream[OrderV1]("s")
	p, err := stream.Producer().Register(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := stream.Consumer("g").Register(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	member, err := baggage.NewMember("tenant", "t-1")
	if err != nil {
		t.Fatal(err)
	}
	bg, err := baggage.New(member)
	if err != nil {
		t.Fatal(err)
	}
	ctx := baggage.ContextWithBaggage(testCtx(t), bg)
	for _, id := range []string{"a", "b"} {
		if _, err := p.Produce(ctx, OrderV1{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := c.Claim(testCtx(t), 2)
	if err != nil || len(ds) != 2 {
		t.Fatalf("claimed %d, %v", len(ds), err)
	}
	sends := e.spansNamed("send s")
	for i, d := range ds {
		sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier(d.Headers)))
		if !sc.IsValid() || sc.SpanID() != sends[i].SpanContext.SpanID() {
			t.Errorf("message %d: traceparent %q, want the send span %v", i, d.Headers["traceparent"], sends[i].SpanContext.SpanID())
		}
		if _, ok := d.Headers["baggage"]; ok {
			t.Errorf("message %d carries baggage under the TraceContext default: %v", i, d.Headers)
		}
	}
	if recv := e.spansNamed("receive s"); len(recv) != 1 || len(recv[0].Links) != 2 {
		t.Errorf("the receive span does not link to both messages: %v", recv)
	}
	if n := strings.Count(logs.String(), "no-op default"); n != 1 {
		t.Errorf("the default was logged %d times, want once; logs:\n%s", n, logs.String())
	}
	for _, d := range ds {
		if err := d.Ack(testCtx(t)); err != nil {
			t.Fatal(err)
		}
	}

	// A propagator set globally afterwards is used from the next call on;
	// the composite one is a slice, which the middleware must not compare
	// with ==.
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	for _, id := range []string{"c", "d"} {
		if _, err := p.Produce(ctx, OrderV1{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	ds, err = c.Claim(testCtx(t), 2)
	if err != nil || len(ds) != 2 {
		t.Fatalf("claimed %d, %v", len(ds), err)
	}
	for i, d := range ds {
		if d.Headers["baggage"] != "tenant=t-1" || d.Headers["traceparent"] == "" {
			t.Errorf("message %d under the global propagator: headers %v", i, d.Headers)
		}
		if err := d.Ack(testCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(logs.String(), "no-op default"); n != 1 {
		t.Errorf("logged %d times after the global propagator was set; logs:\n%s", n, logs.String())
	}
}

// spansNamed are the ended spans called name, in the order they ended.
func (e *memEnv) spansNamed(name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range e.spans.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}
