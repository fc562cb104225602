package otelsqlstreams_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/sqlstreams/sqlstreams/conformance"
	otelsqlstreams "github.com/sqlstreams/sqlstreams/contrib/otel"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

var (
	sys       = semconv.MessagingSystemKey.String("sqlstreams")
	clientID  = semconv.MessagingClientID("test-client")
	opSend    = []attribute.KeyValue{semconv.MessagingOperationName("send"), semconv.MessagingOperationTypeSend}
	opProcess = []attribute.KeyValue{semconv.MessagingOperationName("process"), semconv.MessagingOperationTypeProcess}
)

func drvAttr(target conformance.Target) attribute.KeyValue {
	return otelsqlstreams.DriverKey.String(target.Name)
}

func kv(groups ...[]attribute.KeyValue) []attribute.KeyValue {
	var out []attribute.KeyValue
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

// One message, produced then handled by Run: the send and process spans
// with their exact names, kinds, attributes and link, the stored
// traceparent, and the metrics.
func TestSendAndProcess(t *testing.T) {
	forEachDriver(t, func(t *testing.T, target conformance.Target) {
		e := newEnv(t, target, nil)
		ctx := ctxT(t)
		p := e.producer(t, "orders.placed")
		c := e.consumer(t, "orders.placed", "billing", nil)
		id, err := p.Produce(ctx, OrderV1{ID: "o-1"}, sqlstreams.Key("k1"))
		if err != nil {
			t.Fatal(err)
		}
		var handled atomic.Int64
		var handlerSpan trace.SpanContext
		stop := run(t, c, func(ctx context.Context, d sqlstreams.Delivery[OrderV1]) error {
			handlerSpan = trace.SpanContextFromContext(ctx)
			handled.Add(1)
			return nil
		})
		procs := e.waitSpans(t, "process orders.placed", 1)
		stop()

		sends := e.named("send orders.placed")
		if len(sends) != 1 || len(procs) != 1 {
			t.Fatalf("spans: %s", spanNames(e.spans.GetSpans()))
		}
		send, proc := sends[0], procs[0]
		if send.SpanKind != trace.SpanKindProducer || proc.SpanKind != trace.SpanKindConsumer {
			t.Errorf("kinds: send %v, process %v", send.SpanKind, proc.SpanKind)
		}
		ids := strconv.FormatInt(id, 10)
		wantAttrs(t, send, kv([]attribute.KeyValue{sys, clientID, drvAttr(target), semconv.MessagingDestinationName("orders.placed"),
			semconv.MessagingDestinationPartitionID("0"), semconv.MessagingMessageID(ids),
			otelsqlstreams.SchemaVersionKey.Int(1), otelsqlstreams.MessageKeyKey.String("k1")}, opSend)...)
		wantAttrs(t, proc, kv([]attribute.KeyValue{sys, clientID, drvAttr(target), semconv.MessagingDestinationName("orders.placed"),
			semconv.MessagingConsumerGroupName("billing"), semconv.MessagingDestinationPartitionID("0"), semconv.MessagingMessageID(ids),
			otelsqlstreams.SchemaVersionKey.Int(1), otelsqlstreams.MessageKeyKey.String("k1"),
			otelsqlstreams.DeliveryAttemptKey.Int(1), otelsqlstreams.OutcomeKey.String("ack")}, opProcess)...)
		if len(proc.Links) != 1 || !sameSpan(proc.Links[0].SpanContext, send.SpanContext) {
			t.Errorf("process links %v, want the send span %v", proc.Links, send.SpanContext)
		}
		if proc.Parent.IsValid() {
			t.Errorf("process span has parent %v; Run's context has none", proc.Parent)
		}
		if proc.Status.Code != codes.Unset {
			t.Errorf("process status %v", proc.Status)
		}
		if handlerSpan.SpanID() != proc.SpanContext.SpanID() {
			t.Errorf("the handler's context carries span %v, not the process span", handlerSpan.SpanID())
		}
		if proc.InstrumentationScope.Name != otelsqlstreams.ScopeName || proc.InstrumentationScope.SchemaURL != semconv.SchemaURL {
			t.Errorf("scope %+v", proc.InstrumentationScope)
		}
		rows := e.stored(t, "orders.placed")
		if len(rows) != 1 {
			t.Fatalf("%d rows", len(rows))
		}
		if sc := traceparentOf(t, rows[0].Headers); sc.TraceID() != send.SpanContext.TraceID() || sc.SpanID() != send.SpanContext.SpanID() {
			t.Errorf("stored traceparent %v, want the send span %v", sc, send.SpanContext)
		}
		if len(e.named("receive orders.placed")) != 0 {
			t.Errorf("Run's own claims made receive spans")
		}

		rm := e.collect(t)
		dest := semconv.MessagingDestinationName("orders.placed")
		sent, _ := findMetric(rm, "messaging.client.sent.messages")
		metricdatatest.AssertEqual(t, metricdata.Metrics{
			Name: "messaging.client.sent.messages", Unit: "{message}", Description: "Number of messages producer attempted to send to the broker.",
			Data: metricdata.Sum[int64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true,
				DataPoints: []metricdata.DataPoint[int64]{{Attributes: attribute.NewSet(sys, semconv.MessagingOperationName("send"), dest), Value: 1}}},
		}, sent, metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
		if n := sumOf(t, rm, "messaging.client.sent.messages", sys, semconv.MessagingOperationName("send"), dest); n != 1 {
			t.Errorf("sent.messages %d, want 1", n)
		}
		if n := sumOf(t, rm, "messaging.client.consumed.messages", semconv.MessagingOperationName("process"),
			semconv.MessagingConsumerGroupName("billing")); n != 1 {
			t.Errorf("consumed.messages %d, want 1", n)
		}
		for name, unit := range map[string]string{"messaging.client.sent.messages": "{message}", "messaging.client.consumed.messages": "{message}",
			"messaging.client.operation.duration": "s", "messaging.process.duration": "s"} {
			m, ok := findMetric(rm, name)
			if !ok || m.Unit != unit {
				t.Errorf("metric %s: found %v, unit %q, want %q", name, ok, m.Unit, unit)
			}
		}
		for _, name := range []string{"messaging.client.operation.duration", "messaging.process.duration"} {
			m, _ := findMetric(rm, name)
			h, ok := m.Data.(metricdata.Histogram[float64])
			if !ok || len(h.DataPoints) == 0 {
				t.Fatalf("%s: %T with no points", name, m.Data)
			}
			for _, p := range h.DataPoints {
				if fmt.Sprint(p.Bounds) != fmt.Sprint(otelsqlstreams.DurationBuckets) {
					t.Errorf("%s bounds %v", name, p.Bounds)
				}
			}
		}
		m, _ := findMetric(rm, "messaging.client.operation.duration")
		ops := map[string]bool{}
		for _, p := range m.Data.(metricdata.Histogram[float64]).DataPoints {
			v, _ := p.Attributes.Value(semconv.MessagingOperationNameKey)
			ops[v.AsString()] = true
		}
		for _, op := range []string{"send", "receive", "ack"} {
			if !ops[op] {
				t.Errorf("operation.duration has no %s point; has %v", op, ops)
			}
		}
		noHighCardinality(t, rm)
	})
}

// A handler error fails attempt 1 (status Error, error.type, outcome
// retry); attempt 2 succeeds; both link to the one send span.
func TestRetryAttemptTwo(t *testing.T) {
	forEachDriver(t, func(t *testing.T, target conformance.Target) {
		e := newEnv(t, target, nil)
		p := e.producer(t, "s")
		c := e.consumer(t, "s", "g", &sqlstreams.ConsumerOptions{Backoff: func(int) time.Duration { return 0 }})
		if _, err := p.Produce(ctxT(t), OrderV1{ID: "o"}); err != nil {
			t.Fatal(err)
		}
		stop := run(t, c, func(ctx context.Context, d sqlstreams.Delivery[OrderV1]) error {
			if d.Attempt == 1 {
				return fmt.Errorf("wrapped: %w", errBoom)
			}
			return nil
		})
		procs := e.waitSpans(t, "process s", 2)
		stop()
		send := e.named("send s")[0]
		first, second := procs[0], procs[1]
		a1, a2 := attrMap(first.Attributes), attrMap(second.Attributes)
		if a1[otelsqlstreams.DeliveryAttemptKey].AsInt64() != 1 || a2[otelsqlstreams.DeliveryAttemptKey].AsInt64() != 2 {
			t.Fatalf("attempts %v, %v", a1[otelsqlstreams.DeliveryAttemptKey], a2[otelsqlstreams.DeliveryAttemptKey])
		}
		if first.Status.Code != codes.Error || first.Status.Description != "wrapped: boom" {
			t.Errorf("attempt 1 status %+v", first.Status)
		}
		if got := a1[semconv.ErrorTypeKey].AsString(); got != "_OTHER" {
			t.Errorf("error.type %q", got)
		}
		if got := a1[otelsqlstreams.OutcomeKey].AsString(); got != "retry" {
			t.Errorf("attempt 1 outcome %q", got)
		}
		if got := a2[otelsqlstreams.OutcomeKey].AsString(); got != "ack" || second.Status.Code != codes.Unset {
			t.Errorf("attempt 2 outcome %q status %v", got, second.Status)
		}
		if _, ok := a2[semconv.ErrorTypeKey]; ok {
			t.Errorf("attempt 2 has error.type")
		}
		for _, s := range procs[:2] {
			if len(s.Links) != 1 || !sameSpan(s.Links[0].SpanContext, send.SpanContext) {
				t.Errorf("attempt links %v, want %v", s.Links, send.SpanContext)
			}
		}
		rm := e.collect(t)
		m, _ := findMetric(rm, "messaging.process.duration")
		var failed uint64
		for _, p := range m.Data.(metricdata.Histogram[float64]).DataPoints {
			if v, ok := p.Attributes.Value(semconv.ErrorTypeKey); ok && v.AsString() == "_OTHER" {
				failed += p.Count
			}
		}
		if failed != 1 {
			t.Errorf("process.duration with error.type: %d, want 1", failed)
		}
		noHighCardinality(t, rm)
	})
}

// Dead(err) dead-letters at once: outcome dead, status Error. The dead
// letter keeps the headers, and its replay links to the same send span.
func TestDeadAndReplay(t *testing.T) {
	forEachDriver(t, func(t *testing.T, target conformance.Target) {
		e := newEnv(t, target, &otelsqlstreams.Config{SettleSpans: true})
		p := e.producer(t, "s")
		c := e.consumer(t, "s", "g", nil)
		if _, err := p.Produce(ctxT(t), OrderV1{ID: "o"}); err != nil {
			t.Fatal(err)
		}
		var calls atomic.Int64
		stop := run(t, c, func(ctx context.Context, d sqlstreams.Delivery[OrderV1]) error {
			if calls.Add(1) == 1 {
				return sqlstreams.Dead(errBoom)
			}
			return nil
		})
		e.waitSpans(t, "dead s", 1)
		send := e.named("send s")[0]
		dl, err := e.client.Stream[OrderV1]("s").Group("g").DeadLetters(ctxT(t), 0, 10)
		if err != nil || len(dl) != 1 {
			t.Fatalf("dead letters %v, %v", dl, err)
		}
		if sc := traceparentOf(t, dl[0].Headers); sc.TraceID() != send.SpanContext.TraceID() || sc.SpanID() != send.SpanContext.SpanID() {
			t.Errorf("dead letter traceparent %v, want the send span", sc)
		}
		if _, err := e.client.Stream[OrderV1]("s").Group("g").Replay(ctxT(t), dl[0].ID); err != nil {
			t.Fatal(err)
		}
		procs := e.waitSpans(t, "process s", 2)
		stop()
		dead := attrMap(procs[0].Attributes)
		if dead[otelsqlstreams.OutcomeKey].AsString() != "dead" || procs[0].Status.Code != codes.Error {
			t.Errorf("dead attempt: outcome %v status %v", dead[otelsqlstreams.OutcomeKey], procs[0].Status)
		}
		if attrMap(procs[1].Attributes)[otelsqlstreams.OutcomeKey].AsString() != "ack" {
			t.Errorf("replay outcome %v", attrMap(procs[1].Attributes)[otelsqlstreams.OutcomeKey])
		}
		for _, s := range procs {
			if len(s.Links) != 1 || !sameSpan(s.Links[0].SpanContext, send.SpanContext) {
				t.Errorf("links %v, want the send span", s.Links)
			}
		}
		ds := e.named("dead s")[0]
		if ds.SpanKind != trace.SpanKindClient {
			t.Errorf("dead span kind %v", ds.SpanKind)
		}
		wantAttrs(t, ds, sys, clientID, drvAttr(target), semconv.MessagingOperationName("dead"), semconv.MessagingOperationTypeSettle,
			semconv.MessagingDestinationName("s"), semconv.MessagingConsumerGroupName("g"), semconv.MessagingBatchMessageCount(1),
			semconv.MessagingMessageID(strconv.FormatInt(dl[0].ID, 10)))
	})
}

// A panic is error.type=panic; with MaxAttempts 1 the settle decides the
// outcome: dead, which the handler's return alone would not tell.
func TestPanicExhaustsAttempts(t *testing.T) {
	forEachDriver(t, func(t *testing.T, target conformance.Target) {
		e := newEnv(t, target, nil)
		p := e.producer(t, "s")
		c := e.consumer(t, "s", "g", &sqlstreams.ConsumerOptions{MaxAttempts: 1})
		if _, err := p.Produce(ctxT(t), OrderV1{ID: "o"}); err != nil {
			t.Fatal(err)
		}
		stop := run(t, c, func(ctx context.Context, d sqlstreams.Delivery[OrderV1]) error { panic("kaboom") })
		procs := e.waitSpans(t, "process s", 1)
		stop()
		a := attrMap(procs[0].Attributes)
		if a[semconv.ErrorTypeKey].AsString() != "panic" || procs[0].Status.Code != codes.Error {
			t.Errorf("error.type %v status %v", a[semconv.ErrorTypeKey], procs[0].Status)
		}
		if a[otelsqlstreams.OutcomeKey].AsString() != "dead" {
			t.Errorf("outcome %v, want dead (MaxAttempts 1)", a[otelsqlstreams.OutcomeKey])
		}
	})
}

// A rolled-back ProduceTx: a transactional send span, and nothing to
// consume; a pull Claim makes a receive span with 0 messages.
func TestRolledBackProduceTx(t *testing.T) {
	forEachDriver(t, func(t *testing.T, target conformance.Target) {
		e := newEnv(t, target, nil)
		p := e.producer(t, "s")
		c := e.consumer(t, "s", "g", nil)
		tx, _, rollback, err := target.BeginTx(ctxT(t), e.client.Driver())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.ProduceTx(ctxT(t), tx, OrderV1{ID: "o"}); err != nil {
			t.Fatal(err)
		}
		if err := rollback(); err != nil {
			t.Fatal(err)
		}
		ds, err := c.Claim(ctxT(t), 5)
		if err != nil || len(ds) != 0 {
			t.Fatalf("claimed %d, %v", len(ds), err)
		}
		send := e.named("send s")
		if len(send) != 1 || !attrMap(send[0].Attributes)[otelsqlstreams.TransactionalKey].AsBool() {
			t.Fatalf("send spans %v", send)
		}
		recv := e.named("receive s")
		if len(recv) != 1 {
			t.Fatalf("spans: %s", spanNames(e.spans.GetSpans()))
		}
		if recv[0].SpanKind != trace.SpanKindClient || len(recv[0].Links) != 0 {
			t.Errorf("receive kind %v links %v", recv[0].SpanKind, recv[0].Links)
		}
		wantAttrs(t, recv[0], sys, clientID, drvAttr(target), semconv.MessagingOperationName("receive"), semconv.MessagingOperationTypeReceive,
			semconv.MessagingDestinationName("s"), semconv.MessagingConsumerGroupName("g"), semconv.MessagingBatchMessageCount(0))
		rm := e.collect(t)
		if n := sumOf(t, rm, "messaging.client.sent.messages"); n != 1 {
			t.Errorf("sent %d", n)
		}
		if n := sumOf(t, rm, "messaging.client.consumed.messages"); n != 0 {
			t.Errorf("consumed %d, want 0", n)
		}
	})
}

// Deliveries Run claimed but gave back unstarted at its stop get no process
// span, and are not counted as consumed.
func TestReleasedUnstarted(t *testing.T) {
	forEachDriver(t, func(t *testing.T, target conformance.Target) {
		e := newEnv(t, target, &otelsqlstreams.Config{SettleSpans: true})
		p := e.producer(t, "s")
		// The first handler waits for its context, which Run cancels only
		// ShutdownTimeout after it stopped claiming, so the two queued
		// deliveries are given back unstarted. The timeout also bounds the
		// handler's return and those releases, so it is not tight.
		c := e.consumer(t, "s", "g", &sqlstreams.ConsumerOptions{Concurrency: 1, BatchSize: 3, ShutdownTimeout: 2 * time.Second})
		for i := range 3 {
			if _, err := p.Produce(ctxT(t), OrderV1{ID: strconv.Itoa(i)}); err != nil {
				t.Fatal(err)
			}
		}
		started := make(chan struct{})
		var calls atomic.Int64
		stop := run(t, c, func(ctx context.Context, d sqlstreams.Delivery[OrderV1]) error {
			if calls.Add(1) == 1 {
				close(started)
			}
			<-ctx.Done()
			return ctx.Err()
		})
		<-started
		stop()
		if n := calls.Load(); n != 1 {
			t.Fatalf("%d handlers ran", n)
		}
		procs := e.named("process s")
		if len(procs) != 1 {
			t.Fatalf("process spans: %d, want 1", len(procs))
		}
		if got := attrMap(procs[0].Attributes)[otelsqlstreams.OutcomeKey].AsString(); got != "release" {
			t.Errorf("the cut-off handler's outcome %q, want release", got)
		}
		var released int64
		for _, s := range e.named("release s") {
			released += attrMap(s.Attributes)[semconv.MessagingBatchMessageCountKey].AsInt64()
		}
		if released != 3 {
			t.Errorf("released %d deliveries, want 3; spans %s", released, spanNames(e.spans.GetSpans()))
		}
		if n := sumOf(t, e.collect(t), "messaging.client.consumed.messages"); n != 1 {
			t.Errorf("consumed %d, want 1", n)
		}
	})
}

// A pull Claim: one receive span linking to each message's send span; the
// consumed counter counts what Claim returned.
func TestPullClaim(t *testing.T) {
	forEachDriver(t, func(t *testing.T, target conformance.Target) {
		e := newEnv(t, target, nil)
		p := e.producer(t, "s")
		c := e.consumer(t, "s", "g", nil)
		for i := range 2 {
			if _, err := p.Produce(ctxT(t), OrderV1{ID: strconv.Itoa(i)}); err != nil {
				t.Fatal(err)
			}
		}
		ds, err := c.Claim(ctxT(t), 10)
		if err != nil || len(ds) != 2 {
			t.Fatalf("claimed %d, %v", len(ds), err)
		}
		if err := c.Ack(ctxT(t), ds...); err != nil {
			t.Fatal(err)
		}
		sends, recv := e.named("send s"), e.named("receive s")
		if len(recv) != 1 || len(recv[0].Links) != 2 {
			t.Fatalf("receive spans %v", recv)
		}
		for i, l := range recv[0].Links {
			if !sameSpan(l.SpanContext, sends[i].SpanContext) {
				t.Errorf("link %d %v, want send %v", i, l.SpanContext, sends[i].SpanContext)
			}
		}
		if got := attrMap(recv[0].Attributes)[semconv.MessagingBatchMessageCountKey].AsInt64(); got != 2 {
			t.Errorf("batch count %d", got)
		}
		rm := e.collect(t)
		if n := sumOf(t, rm, "messaging.client.consumed.messages", semconv.MessagingOperationName("receive")); n != 2 {
			t.Errorf("consumed %d, want 2", n)
		}
		noHighCardinality(t, rm)
	})
}

// AckAndClaim: a receive span for what it claimed and, with settle spans,
// an ack span for the batch it acked in the same transaction.
func TestAckAndClaim(t *testing.T) {
	forEachDriver(t, func(t *testing.T, target conformance.Target) {
		e := newEnv(t, target, &otelsqlstreams.Config{SettleSpans: true})
		p := e.producer(t, "s")
		c := e.consumer(t, "s", "g", nil)
		for i := range 4 {
			if _, err := p.Produce(ctxT(t), OrderV1{ID: strconv.Itoa(i)}); err != nil {
				t.Fatal(err)
			}
		}
		first, err := c.Claim(ctxT(t), 2)
		if err != nil || len(first) != 2 {
			t.Fatalf("claimed %d, %v", len(first), err)
		}
		next, err := c.AckAndClaim(ctxT(t), 10, first...)
		if err != nil || len(next) != 2 {
			t.Fatalf("AckAndClaim claimed %d, %v", len(next), err)
		}
		recv, acks := e.named("receive s"), e.named("ack s")
		if len(recv) != 2 || attrMap(recv[1].Attributes)[semconv.MessagingBatchMessageCountKey].AsInt64() != 2 {
			t.Errorf("receive spans %v; want two, the second for 2 messages", recv)
		}
		if len(acks) != 1 || attrMap(acks[0].Attributes)[semconv.MessagingBatchMessageCountKey].AsInt64() != 2 {
			t.Errorf("ack spans %v; want one for the 2 acked messages", acks)
		}
		if n := sumOf(t, e.collect(t), "messaging.client.consumed.messages", semconv.MessagingOperationName("receive")); n != 4 {
			t.Errorf("consumed %d, want 4", n)
		}
	})
}

// ProduceBatch: a create span per message, injected into it, and a CLIENT
// send span linking to them; with DisableCreateSpans one PRODUCER send span
// injected into every message.
func TestBatch(t *testing.T) {
	forEachDriver(t, func(t *testing.T, target conformance.Target) {
		for _, disable := range []bool{false, true} {
			e := newEnv(t, target, &otelsqlstreams.Config{DisableCreateSpans: disable})
			p := e.producer(t, "s")
			ids, err := p.ProduceBatch(ctxT(t), sqlstreams.Message[OrderV1]{Value: OrderV1{ID: "a"}}, sqlstreams.Message[OrderV1]{Value: OrderV1{ID: "b"}})
			if err != nil {
				t.Fatal(err)
			}
			send := e.named("send s")
			creates := e.named("create s")
			rows := e.stored(t, "s")
			if len(send) != 1 || len(rows) != 2 || len(ids) != 2 {
				t.Fatalf("send %d rows %d", len(send), len(rows))
			}
			wantCount := semconv.MessagingBatchMessageCount(2)
			if attrMap(send[0].Attributes)[wantCount.Key] != wantCount.Value {
				t.Errorf("batch count %v", send[0].Attributes)
			}
			if _, ok := attrMap(send[0].Attributes)[semconv.MessagingDestinationPartitionIDKey]; ok {
				t.Errorf("batch send span carries a partition")
			}
			if disable {
				if len(creates) != 0 || send[0].SpanKind != trace.SpanKindProducer {
					t.Errorf("creates %d kind %v", len(creates), send[0].SpanKind)
				}
				for _, r := range rows {
					if sc := traceparentOf(t, r.Headers); sc.SpanID() != send[0].SpanContext.SpanID() {
						t.Errorf("row %d traceparent %v, want send", r.ID, sc)
					}
				}
				continue
			}
			if len(creates) != 2 || send[0].SpanKind != trace.SpanKindClient || len(send[0].Links) != 2 {
				t.Fatalf("creates %d kind %v links %d", len(creates), send[0].SpanKind, len(send[0].Links))
			}
			for i, r := range rows {
				cs := creates[i]
				if cs.SpanKind != trace.SpanKindProducer || cs.Parent.IsValid() {
					t.Errorf("create kind %v parent %v", cs.SpanKind, cs.Parent)
				}
				if sc := traceparentOf(t, r.Headers); sc.SpanID() != cs.SpanContext.SpanID() {
					t.Errorf("row %d traceparent %v, want its create span %v", r.ID, sc, cs.SpanContext)
				}
				if !sameSpan(send[0].Links[i].SpanContext, cs.SpanContext) {
					t.Errorf("send link %d is not create span %d", i, i)
				}
				wantAttrs(t, cs, sys, clientID, drvAttr(target), semconv.MessagingOperationName("create"), semconv.MessagingOperationTypeCreate,
					semconv.MessagingDestinationName("s"), semconv.MessagingDestinationPartitionID("0"), otelsqlstreams.SchemaVersionKey.Int(1))
			}
			if n := sumOf(t, e.collect(t), "messaging.client.sent.messages"); n != 2 {
				t.Errorf("sent %d", n)
			}
		}
	})
}

// A traceparent the application set is written as it is; the send span
// links to it instead.
func TestUserTraceparentKept(t *testing.T) {
	forEachDriver(t, func(t *testing.T, target conformance.Target) {
		e := newEnv(t, target, nil)
		p := e.producer(t, "s")
		const user = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
		if _, err := p.Produce(ctxT(t), OrderV1{ID: "o"}, sqlstreams.Header("traceparent", user)); err != nil {
			t.Fatal(err)
		}
		rows := e.stored(t, "s")
		if got := rows[0].Headers["traceparent"]; got != user {
			t.Errorf("stored traceparent %q, want the user's %q", got, user)
		}
		send := e.named("send s")[0]
		if len(send.Links) != 1 || send.Links[0].SpanContext.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" {
			t.Errorf("send links %v", send.Links)
		}
	})
}

// A bridge: a handler that produces continues the trace; with
// ParentFromMessage the process span is a child of the send span; baggage
// reaches the handler.
func TestBridgeContinuesTrace(t *testing.T) {
	forEachDriver(t, func(t *testing.T, target conformance.Target) {
		e := newEnv(t, target, &otelsqlstreams.Config{ParentFromMessage: true})
		in, out := e.producer(t, "v1"), e.producer(t, "v2")
		c := e.consumer(t, "v1", "bridge", nil)
		member, err := baggage.NewMember("tenant", "acme")
		if err != nil {
			t.Fatal(err)
		}
		bg, _ := baggage.New(member)
		ctx := baggage.ContextWithBaggage(ctxT(t), bg)
		ctx, root := e.tp.Tracer("test").Start(ctx, "request")
		if _, err := in.Produce(ctx, OrderV1{ID: "o"}); err != nil {
			t.Fatal(err)
		}
		root.End()
		tenant := make(chan string, 1)
		stop := run(t, c, func(ctx context.Context, d sqlstreams.Delivery[OrderV1]) error {
			tenant <- baggage.FromContext(ctx).Member("tenant").Value()
			_, err := out.Produce(ctx, d.Value)
			return err
		})
		e.waitSpans(t, "send v2", 1)
		stop()
		if got := <-tenant; got != "acme" {
			t.Errorf("baggage in the handler: %q", got)
		}
		send1, proc, send2 := e.named("send v1")[0], e.named("process v1")[0], e.named("send v2")[0]
		if proc.Parent.SpanID() != send1.SpanContext.SpanID() || proc.SpanContext.TraceID() != root.SpanContext().TraceID() {
			t.Errorf("process parent %v, want the send span %v", proc.Parent, send1.SpanContext)
		}
		if send2.Parent.SpanID() != proc.SpanContext.SpanID() || send2.SpanContext.TraceID() != root.SpanContext().TraceID() {
			t.Errorf("bridge send parent %v, want the process span", send2.Parent)
		}
		rows := e.stored(t, "v2")
		if rows[0].Headers["baggage"] != "tenant=acme" {
			t.Errorf("bridged row's baggage header %q", rows[0].Headers["baggage"])
		}
	})
}

// Backlog gauges from Health, read on an interval; Close stops the reader.
func TestHealthGauges(t *testing.T) {
	forEachDriver(t, func(t *testing.T, target conformance.Target) {
		e := newEnv(t, target, &otelsqlstreams.Config{HealthInterval: 20 * time.Millisecond})
		p := e.producer(t, "s")
		c := e.consumer(t, "s", "g", nil)
		for i := range 3 {
			if _, err := p.Produce(ctxT(t), OrderV1{ID: strconv.Itoa(i)}); err != nil {
				t.Fatal(err)
			}
		}
		ds, err := c.Claim(ctxT(t), 1)
		if err != nil || len(ds) != 1 {
			t.Fatal(ds, err)
		}
		gauge := func(name string, match ...attribute.KeyValue) (int64, bool) {
			m, ok := findMetric(e.collect(t), name)
			if !ok {
				return 0, false
			}
			for _, p := range m.Data.(metricdata.Gauge[int64]).DataPoints {
				if hasAll(p.Attributes, match) {
					return p.Value, true
				}
			}
			return 0, false
		}
		at := []attribute.KeyValue{semconv.MessagingDestinationName("s"), semconv.MessagingConsumerGroupName("g"), otelsqlstreams.SchemaVersionKey.Int(1)}
		waitFor(t, "gauges", func() bool {
			u, ok1 := gauge("sqlstreams.consumer.unread", at...)
			l, ok2 := gauge("sqlstreams.deliveries.unresolved", append(at, otelsqlstreams.DeliveryStateKey.String("leased"))...)
			return ok1 && ok2 && u == 2 && l == 1
		})
		noHighCardinality(t, e.collect(t))
		if err := e.mw.Close(); err != nil {
			t.Fatal(err)
		}
		if _, ok := gauge("sqlstreams.consumer.unread"); ok {
			t.Errorf("gauges still reported after Close")
		}
	})
}

// Maintenance removals by kind, and lost leases.
func TestMaintenanceAndLostLeases(t *testing.T) {
	forEachDriver(t, func(t *testing.T, target conformance.Target) {
		e := newEnv(t, target, nil)
		if _, err := e.client.Stream[OrderV1]("r").Create(ctxT(t), &sqlstreams.StreamOptions{Retention: sqlstreams.Retention{MaxRows: 1}}); err != nil {
			t.Fatal(err)
		}
		pr := e.producer(t, "r")
		for i := range 3 {
			if _, err := pr.Produce(ctxT(t), OrderV1{ID: strconv.Itoa(i)}); err != nil {
				t.Fatal(err)
			}
		}
		rep, err := e.client.Maintain(ctxT(t))
		if err != nil || rep.Retained != 2 {
			t.Fatalf("maintain %+v, %v", rep, err)
		}
		if n := sumOf(t, e.collect(t), "sqlstreams.maintenance.removed", otelsqlstreams.MaintenanceKindKey.String("retain"),
			otelsqlstreams.MaintenanceUnreadKey.Bool(false)); n != 2 {
			t.Errorf("maintenance.removed %d, want 2", n)
		}

		p := e.producer(t, "s")
		if _, err := p.Produce(ctxT(t), OrderV1{ID: "o"}); err != nil {
			t.Fatal(err)
		}
		a := e.consumer(t, "s", "g", &sqlstreams.ConsumerOptions{LeaseDuration: 50 * time.Millisecond})
		b := e.consumer(t, "s", "g", &sqlstreams.ConsumerOptions{LeaseDuration: time.Minute})
		held, err := a.Claim(ctxT(t), 1)
		if err != nil || len(held) != 1 {
			t.Fatal(held, err)
		}
		waitFor(t, "the lease to lapse and b to take it", func() bool {
			ds, err := b.Claim(ctxT(t), 1)
			return err == nil && len(ds) == 1
		})
		if err := a.Ack(ctxT(t), held...); !errors.Is(err, sqlstreams.ErrLeaseLost) {
			t.Fatalf("ack after takeover: %v", err)
		}
		if n := sumOf(t, e.collect(t), "sqlstreams.lease.lost", semconv.MessagingConsumerGroupName("g")); n != 1 {
			t.Errorf("lease.lost %d, want 1", n)
		}
	})
}

// A handler that settles its delivery itself: the span's outcome is what
// it recorded, not its return.
func TestHandlerSettlesItself(t *testing.T) {
	forEachDriver(t, func(t *testing.T, target conformance.Target) {
		e := newEnv(t, target, nil)
		p := e.producer(t, "s")
		c := e.consumer(t, "s", "g", nil)
		if _, err := p.Produce(ctxT(t), OrderV1{ID: "o"}); err != nil {
			t.Fatal(err)
		}
		stop := run(t, c, func(ctx context.Context, d sqlstreams.Delivery[OrderV1]) error {
			return d.Dead(ctx, errBoom)
		})
		procs := e.waitSpans(t, "process s", 1)
		stop()
		if got := attrMap(procs[0].Attributes)[otelsqlstreams.OutcomeKey].AsString(); got != "dead" {
			t.Errorf("outcome %q, want dead", got)
		}
	})
}

// A failed append: the send span has status Error and error.type, and the
// counters carry error.type.
func TestFailedSend(t *testing.T) {
	forEachDriver(t, func(t *testing.T, target conformance.Target) {
		e := newEnv(t, target, nil)
		p := e.producer(t, "s")
		tx, commit, _, err := target.BeginTx(ctxT(t), e.client.Driver())
		if err != nil {
			t.Fatal(err)
		}
		if err := commit(); err != nil {
			t.Fatal(err)
		}
		if _, err := p.ProduceTx(ctxT(t), tx, OrderV1{ID: "o"}); err == nil {
			t.Fatal("ProduceTx in a committed transaction succeeded")
		}
		send := e.named("send s")
		if len(send) != 1 || send[0].Status.Code != codes.Error {
			t.Fatalf("send spans %v", send)
		}
		et, ok := attrMap(send[0].Attributes)[semconv.ErrorTypeKey]
		if !ok || !errorTypes[et.AsString()] {
			t.Fatalf("error.type on the failed send: %v; want one of the documented classes", send[0].Attributes)
		}
		if _, ok := attrMap(send[0].Attributes)[semconv.MessagingMessageIDKey]; ok {
			t.Errorf("a failed send has a message id")
		}
		rm := e.collect(t)
		if n := sumOf(t, rm, "messaging.client.sent.messages", semconv.ErrorTypeKey.String(et.AsString())); n != 1 {
			t.Errorf("sent with error.type %d, want 1", n)
		}
		noHighCardinality(t, rm)
	})
}

// A failed pull claim: the receive span has status Error and error.type,
// and so does the claim's duration.
func TestFailedClaim(t *testing.T) {
	forEachDriver(t, func(t *testing.T, target conformance.Target) {
		e := newEnv(t, target, nil)
		c := e.consumer(t, "s", "g", nil)
		if err := e.client.Stream[OrderV1]("s").DeleteGroup(ctxT(t), "g"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Claim(ctxT(t), 1); !errors.Is(err, sqlstreams.ErrGroupNotFound) {
			t.Fatalf("Claim on a deleted group: %v", err)
		}
		recv := e.named("receive s")
		if len(recv) != 1 || recv[0].Status.Code != codes.Error {
			t.Fatalf("receive spans %v", recv)
		}
		if got := attrMap(recv[0].Attributes)[semconv.ErrorTypeKey].AsString(); got != "group_not_found" {
			t.Errorf("error.type %q", got)
		}
		m, _ := findMetric(e.collect(t), "messaging.client.operation.duration")
		var n uint64
		for _, p := range m.Data.(metricdata.Histogram[float64]).DataPoints {
			if hasAll(p.Attributes, []attribute.KeyValue{semconv.MessagingOperationName("receive"),
				semconv.ErrorTypeKey.String("group_not_found")}) {
				n += p.Count
			}
		}
		if n != 1 {
			t.Errorf("failed claims measured: %d, want 1", n)
		}
	})
}
