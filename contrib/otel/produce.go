package otelsqlstreams

import (
	"context"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
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
func (m *Middleware) Produce(ctx context.Context, call *sqlstreams.ProduceCall, next func(context.Context) ([]int64, error)) ([]int64, error) {
	stream := call.Stream.Name
	prop := m.propagator()
	ident := m.ident()
	start := time.Now()

	attrs := make([]attribute.KeyValue, 0, 16)
	attrs = append(attrs, systemAttr, semconv.MessagingOperationName(OpSend), semconv.MessagingOperationTypeSend,
		semconv.MessagingDestinationName(stream))
	attrs = append(attrs, ident...)
	if call.Tx {
		attrs = append(attrs, TransactionalKey.Bool(true))
	}
	kind := trace.SpanKindProducer
	var links []trace.Link
	var creates []trace.Span
	single := !call.Batch && len(call.Messages) == 1
	if single {
		attrs = append(attrs, m.messageAttrs(call.Messages[0])...)
	} else {
		attrs = append(attrs, semconv.MessagingBatchMessageCount(len(call.Messages)))
		if !m.cfg.DisableCreateSpans {
			kind = trace.SpanKindClient
			// One create span per message, injected into it; the send span
			// links to them all.
			for _, msg := range call.Messages {
				if sc, set := userContext(prop, msg); set {
					links = append(links, trace.Link{SpanContext: sc})
					continue
				}
				cattrs := append([]attribute.KeyValue{systemAttr, semconv.MessagingOperationName(OpCreate),
					semconv.MessagingOperationTypeCreate, semconv.MessagingDestinationName(stream)}, ident...)
				if call.Tx {
					cattrs = append(cattrs, TransactionalKey.Bool(true))
				}
				cattrs = append(cattrs, m.messageAttrs(msg)...)
				cctx, cs := m.tracer.Start(ctx, OpCreate+" "+stream, trace.WithSpanKind(trace.SpanKindProducer),
					trace.WithAttributes(cattrs...), trace.WithTimestamp(start))
				inject(prop, cctx, msg)
				creates = append(creates, cs)
				links = append(links, trace.Link{SpanContext: cs.SpanContext()})
			}
		}
	}
	ctx, span := m.tracer.Start(ctx, OpSend+" "+stream, trace.WithSpanKind(kind), trace.WithAttributes(attrs...),
		trace.WithLinks(links...), trace.WithTimestamp(start))
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

	if single && len(ids) == 1 {
		span.SetAttributes(semconv.MessagingMessageID(strconv.FormatInt(ids[0], 10)))
	}
	mattrs := []attribute.KeyValue{systemAttr, semconv.MessagingOperationName(OpSend), semconv.MessagingDestinationName(stream)}
	if err != nil {
		et := errorType(err)
		span.SetAttributes(semconv.ErrorTypeKey.String(et))
		span.SetStatus(codes.Error, err.Error())
		span.RecordError(err)
		mattrs = append(mattrs, semconv.ErrorTypeKey.String(et))
	}
	span.End()
	m.sent.Add(ctx, int64(len(call.Messages)), metric.WithAttributes(mattrs...))
	m.opDuration.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(append(mattrs, semconv.MessagingOperationTypeSend)...))
	return ids, err
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
