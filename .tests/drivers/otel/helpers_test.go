// Package otelsqlstreams_test checks contrib/otel on every SQL driver: the
// spans and metrics on each engine, through each one's transactions and
// across processes. The module contrib/otel requires no driver; its own
// tests and examples run on core/memdriver.
package otelsqlstreams_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/sqlstreams/sqlstreams/conformance"
	otelsqlstreams "github.com/sqlstreams/sqlstreams/contrib/otel"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/tests/drivers/targets"
)

// OrderV1 is the message type of the tests.
type OrderV1 struct {
	ID string `json:"id"`
}

func (OrderV1) SchemaVersion() int { return 1 }

// drivers are the drivers the middleware is checked on: it must name each
// engine in its spans and carry traces through each one's transactions.
func drivers() []conformance.Target {
	return []conformance.Target{targets.SQLite(), targets.Postgres(), targets.MySQL()}
}

func targetNamed(name string) (conformance.Target, bool) {
	for _, t := range drivers() {
		if t.Name == name {
			return t, true
		}
	}
	return conformance.Target{}, false
}

// forEachDriver runs test on every driver, in parallel.
func forEachDriver(t *testing.T, test func(t *testing.T, target conformance.Target)) {
	t.Parallel()
	for _, target := range drivers() {
		t.Run(target.Name, func(t *testing.T) {
			t.Parallel()
			test(t, target)
		})
	}
}

// env is a client on a fresh namespace with the middleware on a real SDK.
type env struct {
	client *sqlstreams.Client
	mw     *otelsqlstreams.Middleware
	spans  *tracetest.InMemoryExporter
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	prop   propagation.TextMapPropagator
	target conformance.Target
	ns     string
}

var testProp = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

func newEnv(t testing.TB, target conformance.Target, cfg *otelsqlstreams.Config) *env {
	t.Helper()
	e := &env{spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader(), prop: testProp, target: target}
	e.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(e.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(e.reader))
	t.Cleanup(func() { _ = e.tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
	var c otelsqlstreams.Config
	if cfg != nil {
		c = *cfg
	}
	c.TracerProvider, c.MeterProvider, c.Propagator = e.tp, mp, e.prop
	e.mw = otelsqlstreams.NewMiddleware(&c)
	e.ns = target.NewNamespace(t)
	drv, err := target.Open(e.ns)
	if err != nil {
		t.Fatal(err)
	}
	e.client, err = sqlstreams.Open(ctxT(t), drv, e.mw.ClientOption(), sqlstreams.WithIdentity("test-client"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.client.Close(); _ = e.mw.Close() })
	return e
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond until it holds, failing the test after a bound.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// named returns the ended spans called name, in end order.
func (e *env) named(name string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range e.spans.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// waitSpans waits until n spans called name have ended.
func (e *env) waitSpans(t testing.TB, name string, n int) tracetest.SpanStubs {
	t.Helper()
	waitFor(t, "spans "+name, func() bool { return len(e.named(name)) >= n })
	return e.named(name)
}

func (e *env) producer(t testing.TB, stream string) *sqlstreams.Producer[OrderV1] {
	t.Helper()
	p, err := e.client.Stream[OrderV1](stream).Producer().Register(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *env) consumer(t testing.TB, stream, group string, opts *sqlstreams.ConsumerOptions) *sqlstreams.Consumer[OrderV1] {
	t.Helper()
	if opts == nil {
		opts = &sqlstreams.ConsumerOptions{}
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = 20 * time.Millisecond
	}
	c, err := e.client.Stream[OrderV1](stream).Consumer(group).Register(ctxT(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// run runs the consumer in the background; the returned stop ends Run and
// waits for it.
func run(t testing.TB, c *sqlstreams.Consumer[OrderV1], h sqlstreams.Handler[OrderV1]) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, h) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(60 * time.Second):
				t.Errorf("Run did not return")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func attrMap(kvs []attribute.KeyValue) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

// wantAttrs checks that the span has exactly the attributes want.
func wantAttrs(t testing.TB, s tracetest.SpanStub, want ...attribute.KeyValue) {
	t.Helper()
	got := attribute.NewSet(s.Attributes...)
	w := attribute.NewSet(want...)
	if !got.Equals(&w) {
		t.Errorf("span %q attributes:\n got %s\nwant %s", s.Name, got.Encoded(attribute.DefaultEncoder()), w.Encoded(attribute.DefaultEncoder()))
	}
}

// traceparentOf decodes a stored traceparent header.
func traceparentOf(t testing.TB, headers map[string]string) trace.SpanContext {
	t.Helper()
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier(headers))
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		t.Fatalf("headers %v hold no valid traceparent", headers)
	}
	return sc
}

// stored reads the rows of a stream without claiming.
func (e *env) stored(t testing.TB, stream string) []sqlstreams.Record {
	t.Helper()
	page, err := e.client.Stream[sqlstreams.RawPayload](stream).Browse(ctxT(t), sqlstreams.BrowseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return page.Records
}

// collect reads the metrics.
func (e *env) collect(t testing.TB) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := e.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return rm
}

func findMetric(rm metricdata.ResourceMetrics, name string) (metricdata.Metrics, bool) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// sumOf adds up the points of an Int64 sum whose attributes include match.
func sumOf(t testing.TB, rm metricdata.ResourceMetrics, name string, match ...attribute.KeyValue) int64 {
	t.Helper()
	m, ok := findMetric(rm, name)
	if !ok {
		return 0
	}
	s, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s is %T, not an int64 sum", name, m.Data)
	}
	var n int64
	for _, p := range s.DataPoints {
		if hasAll(p.Attributes, match) {
			n += p.Value
		}
	}
	return n
}

func hasAll(set attribute.Set, match []attribute.KeyValue) bool {
	for _, kv := range match {
		if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

// noHighCardinality fails when any metric point carries a key, id or
// partition.
// errorTypes are the error.type values the package documents.
var errorTypes = map[string]bool{"panic": true, "dead": true, "lease_lost": true, "closed": true, "conflict": true,
	"unavailable": true, "outcome_unknown": true, "stream_not_found": true, "group_not_found": true, "group_version": true,
	"invalid_message": true, "invalid_option": true, "foreign_tx": true, "database": true, "timeout": true, "canceled": true,
	"_OTHER": true}

func noHighCardinality(t testing.TB, rm metricdata.ResourceMetrics) {
	t.Helper()
	banned := []attribute.Key{"messaging.message.id", "messaging.destination.partition.id", "messaging.sqlstreams.message.key",
		"messaging.sqlstreams.routing_key", "messaging.client.id"}
	check := func(name string, set attribute.Set) {
		for _, k := range banned {
			if set.HasValue(k) {
				t.Errorf("metric %s carries %s", name, k)
			}
		}
		if v, ok := set.Value(semconv.ErrorTypeKey); ok && !errorTypes[v.AsString()] {
			t.Errorf("metric %s: error.type %q is not one of the documented classes", name, v.AsString())
		}
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					check(m.Name, p.Attributes)
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					check(m.Name, p.Attributes)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					check(m.Name, p.Attributes)
				}
			default:
				t.Errorf("metric %s has unexpected data %T", m.Name, m.Data)
			}
		}
	}
}

func spanNames(ss tracetest.SpanStubs) string {
	var n []string
	for _, s := range ss {
		n = append(n, s.Name)
	}
	slices.Sort(n)
	return strings.Join(n, ", ")
}

var errBoom = errors.New("boom")

// sameSpan compares span identities, ignoring the remote flag a span
// context read from headers carries.
func sameSpan(a, b trace.SpanContext) bool {
	return a.TraceID() == b.TraceID() && a.SpanID() == b.SpanID()
}
