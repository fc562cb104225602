package otelsqlstreams

import (
	"context"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// Produce implements sqlstreams.ProduceMiddleware: a send span per call
// (and a create span per message of a batch), the creation context written
// into each message's headers, and the send metrics.
//
// The attributes a sampler needs (messaging.system, operation name and
// type, destination name) are given when a span starts; the others are
// added only to a span that records, so that an application with tracing
// off pays little.
func (m *Middleware) Produce(ctx context.Context, call *sqlstreams.ProduceCall, next func(context.Context) ([]int64, error)) ([]int64, error) {
	sa := m.streamAttrs(call.Stream.Name)
	prop := m.propagator()
	start := time.Now()

	kind := trace.SpanKindProducer
	var links []trace.Link
	var creates []trace.Span
	single := !call.Batch && len(call.Messages) == 1
	if !single && !m.cfg.DisableCreateSpans {
		kind = trace.SpanKindClient
		// One create span per message, injected into it; the send span
		// links to them all.
		for _, msg := range call.Messages {
			if sc, set := userContext(prop, msg); set {
				links = append(links, trace.Link{SpanContext: sc})
				continue
			}
			cctx, cs := m.tracer.Start(ctx, sa.createName, trace.WithSpanKind(trace.SpanKindProducer),
				trace.WithAttributes(sa.create...), trace.WithTimestamp(start))
			if cs.IsRecording() {
				cs.SetAttributes(m.ident()...)
				if call.Tx {
					cs.SetAttributes(TransactionalKey.Bool(true))
				}
				cs.SetAttributes(m.messageAttrs(msg)...)
			}
			inject(prop, cctx, msg)
			creates = append(creates, cs)
			links = append(links, trace.Link{SpanContext: cs.SpanContext()})
		}
	}
	ctx, span := m.tracer.Start(ctx, sa.sendName, trace.WithSpanKind(kind), trace.WithAttributes(sa.send...),
		trace.WithLinks(links...), trace.WithTimestamp(start))
	recording := span.IsRecording()
	if recording {
		span.SetAttributes(m.ident()...)
		if call.Tx {
			span.SetAttributes(TransactionalKey.Bool(true))
		}
		if single {
			span.SetAttributes(m.messageAttrs(call.Messages[0])...)
		} else {
			span.SetAttributes(semconv.MessagingBatchMessageCount(len(call.Messages)))
		}
	}
	if single || m.cfg.DisableCreateSpans {
		for _, msg := range call.Messages {
			if sc, set := userContext(prop, msg); set {
				// The application's own creation context stays as it is;
				// the send span links to it.
				span.AddLink(trace.Link{SpanContext: sc})
				continue
			}
			inject(prop, ctx, msg)
		}
	}
	for _, cs := range creates {
		cs.End()
	}

	ids, err := next(ctx)

	if recording && single && len(ids) == 1 {
		span.SetAttributes(semconv.MessagingMessageID(strconv.FormatInt(ids[0], 10)))
	}
	sent, dur := sa.sentOK, sa.durationOK
	if err != nil {
		et := semconv.ErrorTypeKey.String(errorType(err))
		span.SetAttributes(et)
		span.SetStatus(codes.Error, err.Error())
		span.RecordError(err)
		sent = metric.WithAttributes(systemAttr, semconv.MessagingOperationName(OpSend), semconv.MessagingDestinationName(call.Stream.Name), et)
		dur = metric.WithAttributes(systemAttr, semconv.MessagingOperationName(OpSend), semconv.MessagingOperationTypeSend,
			semconv.MessagingDestinationName(call.Stream.Name), et)
	}
	span.End()
	m.sent.Add(ctx, int64(len(call.Messages)), sent)
	m.opDuration.Record(ctx, time.Since(start).Seconds(), dur)
	return ids, err
}

// producerAttrs are the attributes of one stream's produce calls, made
// once: names and attribute sets would otherwise be built on every call.
type producerAttrs struct {
	sendName, createName string
	send, create         []attribute.KeyValue
	sentOK, durationOK   metric.MeasurementOption
}

func (m *Middleware) streamAttrs(stream string) *producerAttrs {
	if a, ok := m.producers.Load(stream); ok {
		return a.(*producerAttrs)
	}
	dest := semconv.MessagingDestinationName(stream)
	a := &producerAttrs{
		sendName:   OpSend + " " + stream,
		createName: OpCreate + " " + stream,
		send:       []attribute.KeyValue{systemAttr, semconv.MessagingOperationName(OpSend), semconv.MessagingOperationTypeSend, dest},
		create:     []attribute.KeyValue{systemAttr, semconv.MessagingOperationName(OpCreate), semconv.MessagingOperationTypeCreate, dest},
		sentOK:     metric.WithAttributeSet(attribute.NewSet(systemAttr, semconv.MessagingOperationName(OpSend), dest)),
		durationOK: metric.WithAttributeSet(attribute.NewSet(systemAttr, semconv.MessagingOperationName(OpSend), semconv.MessagingOperationTypeSend, dest)),
	}
	actual, _ := m.producers.LoadOrStore(stream, a)
	return actual.(*producerAttrs)
}

// messageAttrs are the attributes of one outgoing message.
func (m *Middleware) messageAttrs(msg *sqlstreams.OutgoingMessage) []attribute.KeyValue {
	a := []attribute.KeyValue{semconv.MessagingDestinationPartitionID(strconv.Itoa(msg.Partition)),
		SchemaVersionKey.Int(msg.SchemaVersion)}
	if msg.HasKey {
		a = append(a, MessageKeyKey.String(msg.Key))
	}
	if msg.RoutingKey != "" {
		a = append(a, RoutingKeyKey.String(msg.RoutingKey))
	}
	if msg.CompactionRank != 0 {
		a = append(a, CompactionRankKey.Int64(msg.CompactionRank))
	}
	if m.cfg.RecordBodySize {
		a = append(a, semconv.MessagingMessageBodySize(msg.PayloadSize))
	}
	return a
}

// userContext reports whether the application set a creation context in
// the message's headers itself (headers that the propagator reads as a
// valid span context), and that context.
func userContext(prop propagation.TextMapPropagator, msg *sqlstreams.OutgoingMessage) (trace.SpanContext, bool) {
	if len(msg.Headers) == 0 {
		return trace.SpanContext{}, false
	}
	sc := trace.SpanContextFromContext(prop.Extract(context.Background(), propagation.MapCarrier(msg.Headers)))
	return sc, sc.IsValid()
}

// inject writes ctx's trace context into the message's headers, never
// replacing a header that is already there.
func inject(prop propagation.TextMapPropagator, ctx context.Context, msg *sqlstreams.OutgoingMessage) {
	if !trace.SpanContextFromContext(ctx).IsValid() && baggage.FromContext(ctx).Len() == 0 {
		return // nothing to carry (tracing off and no baggage)
	}
	if msg.Headers == nil {
		msg.Headers = map[string]string{}
	}
	out := propagation.MapCarrier{}
	prop.Inject(ctx, out)
	for k, v := range out {
		if _, set := msg.Headers[k]; !set {
			msg.Headers[k] = v
		}
	}
}
