package otelsqlstreams

import (
	"context"
	"strconv"
	"sync"
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

// Handle implements sqlstreams.HandleMiddleware: a process span around the
// handler, linked to (or, with ParentFromMessage, parented on) the
// message's creation context, and the process metrics. The handler's
// context carries the process span, so a message it produces (a bridge)
// continues the trace, and the message's baggage.
func (m *Middleware) Handle(ctx context.Context, d *sqlstreams.DeliveryInfo, next func(context.Context) error) error {
	start := time.Now()
	creation := m.propagator().Extract(context.Background(), propagation.MapCarrier(d.Headers))
	csc := trace.SpanContextFromContext(creation)

	attrs := make([]attribute.KeyValue, 0, 16)
	attrs = append(attrs, systemAttr, semconv.MessagingOperationName(OpProcess), semconv.MessagingOperationTypeProcess,
		semconv.MessagingDestinationName(d.Stream), semconv.MessagingConsumerGroupName(d.Group),
		semconv.MessagingDestinationPartitionID(strconv.Itoa(d.Partition)),
		semconv.MessagingMessageID(strconv.FormatInt(d.ID, 10)),
		SchemaVersionKey.Int(d.SchemaVersion), DeliveryAttemptKey.Int(d.Attempt))
	attrs = append(attrs, m.ident()...)
	if d.Key != "" {
		attrs = append(attrs, MessageKeyKey.String(d.Key))
	}
	if d.RoutingKey != "" {
		attrs = append(attrs, RoutingKeyKey.String(d.RoutingKey))
	}
	if d.CompactionRank != 0 {
		attrs = append(attrs, CompactionRankKey.Int64(d.CompactionRank))
	}
	if m.cfg.RecordBodySize {
		attrs = append(attrs, semconv.MessagingMessageBodySize(d.PayloadSize))
	}
	parent := ctx
	var links []trace.Link
	if m.cfg.ParentFromMessage && csc.IsValid() {
		if rsc := trace.SpanContextFromContext(ctx); rsc.IsValid() {
			links = append(links, trace.Link{SpanContext: rsc})
		}
		parent = trace.ContextWithRemoteSpanContext(ctx, csc)
	} else if csc.IsValid() {
		links = append(links, trace.Link{SpanContext: csc})
	}
	if bg := baggage.FromContext(creation); bg.Len() > 0 {
		parent = baggage.ContextWithBaggage(parent, bg)
	}
	hctx, span := m.tracer.Start(parent, OpProcess+" "+d.Stream, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attrs...), trace.WithLinks(links...), trace.WithTimestamp(start))

	group := []attribute.KeyValue{systemAttr, semconv.MessagingDestinationName(d.Stream), semconv.MessagingConsumerGroupName(d.Group)}
	m.consumed.Add(ctx, 1, metric.WithAttributes(append(group, semconv.MessagingOperationName(OpProcess))...))
	if !d.ProducedAt.IsZero() {
		m.age.Record(ctx, max(start.Sub(d.ProducedAt), 0).Seconds(), metric.WithAttributes(group...))
	}

	key := deliveryKey{stream: d.Stream, group: d.Group, id: d.ID}
	st := m.inflight.begin(key, span)
	err := next(hctx)

	mattrs := append(group, semconv.MessagingOperationName(OpProcess))
	outcome := ""
	switch {
	case err == nil:
		outcome = sqlstreams.OutcomeAck
	case hasType(err, retryType):
		// Flow control, like a snooze: not a failure.
		outcome = sqlstreams.OutcomeRetry
	default:
		et := errorType(err)
		span.SetAttributes(semconv.ErrorTypeKey.String(et))
		span.SetStatus(codes.Error, err.Error())
		span.RecordError(err)
		mattrs = append(mattrs, semconv.ErrorTypeKey.String(et))
		if hasType(err, deadType) {
			outcome = sqlstreams.OutcomeDead
		}
	}
	m.procDuration.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(mattrs...))
	// A failure's outcome (retry, or dead after MaxAttempts, or release at
	// a stop) is decided by the settle that Run records right after the
	// handler returns: the span ends when the settle hook reports it.
	m.inflight.returned(key, st, err == nil || outcome == sqlstreams.OutcomeDead, outcome)
	return err
}

// Claimed implements sqlstreams.ClaimHook: a receive span for a pull Claim
// (none for Run's prefetching claims, as the conventions require), and the
// claim metrics for both.
func (m *Middleware) Claimed(ctx context.Context, e sqlstreams.ClaimEvent) {
	attrs := []attribute.KeyValue{systemAttr, semconv.MessagingOperationName(OpReceive), semconv.MessagingOperationTypeReceive,
		semconv.MessagingDestinationName(e.Stream), semconv.MessagingConsumerGroupName(e.Group)}
	var et string
	if e.Err != nil {
		et = errorType(e.Err)
	}
	if e.Source == sqlstreams.ClaimSourcePull {
		end := time.Now()
		prop := m.propagator()
		links := make([]trace.Link, 0, len(e.Deliveries))
		for _, d := range e.Deliveries {
			sc := trace.SpanContextFromContext(prop.Extract(context.Background(), propagation.MapCarrier(d.Headers)))
			if sc.IsValid() {
				links = append(links, trace.Link{SpanContext: sc,
					Attributes: []attribute.KeyValue{semconv.MessagingMessageID(strconv.FormatInt(d.ID, 10))}})
			}
		}
		sattrs := append(append(append([]attribute.KeyValue{}, attrs...), m.ident()...),
			semconv.MessagingBatchMessageCount(len(e.Deliveries)))
		_, span := m.tracer.Start(ctx, OpReceive+" "+e.Stream, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(sattrs...), trace.WithLinks(links...), trace.WithTimestamp(end.Add(-e.Duration)))
		if e.Err != nil {
			span.SetAttributes(semconv.ErrorTypeKey.String(et))
			span.SetStatus(codes.Error, e.Err.Error())
		}
		span.End(trace.WithTimestamp(end))
		if len(e.Deliveries) > 0 {
			m.consumed.Add(ctx, int64(len(e.Deliveries)), metric.WithAttributes(systemAttr,
				semconv.MessagingOperationName(OpReceive), semconv.MessagingDestinationName(e.Stream),
				semconv.MessagingConsumerGroupName(e.Group)))
		}
	} else {
		m.inflight.sweep(e.Stream, e.Group)
	}
	if et != "" {
		attrs = append(attrs, semconv.ErrorTypeKey.String(et))
	}
	m.opDuration.Record(ctx, e.Duration.Seconds(), metric.WithAttributes(attrs...))
}

// Settled implements sqlstreams.SettleHook: the settle metrics, lost
// leases, the outcome of process spans, and settle spans when enabled.
func (m *Middleware) Settled(ctx context.Context, e sqlstreams.SettleEvent) {
	attrs := []attribute.KeyValue{systemAttr, semconv.MessagingOperationName(e.Outcome), semconv.MessagingOperationTypeSettle,
		semconv.MessagingDestinationName(e.Stream), semconv.MessagingConsumerGroupName(e.Group)}
	var et string
	if e.Err != nil {
		et = errorType(e.Err)
	}
	if e.Err == nil {
		lost := map[int64]bool{}
		for _, id := range e.Lost {
			lost[id] = true
		}
		for _, id := range e.IDs {
			outcome := e.Outcome
			if lost[id] {
				outcome = ""
			}
			m.inflight.settled(deliveryKey{stream: e.Stream, group: e.Group, id: id}, outcome)
		}
	}
	if m.cfg.SettleSpans {
		end := time.Now()
		sattrs := append(append(append([]attribute.KeyValue{}, attrs...), m.ident()...),
			semconv.MessagingBatchMessageCount(len(e.IDs)))
		if len(e.IDs) == 1 {
			sattrs = append(sattrs, semconv.MessagingMessageID(strconv.FormatInt(e.IDs[0], 10)))
		}
		_, span := m.tracer.Start(ctx, e.Outcome+" "+e.Stream, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(sattrs...), trace.WithTimestamp(end.Add(-e.Duration)))
		if e.Err != nil {
			span.SetAttributes(semconv.ErrorTypeKey.String(et))
			span.SetStatus(codes.Error, e.Err.Error())
		}
		span.End(trace.WithTimestamp(end))
	}
	if len(e.Lost) > 0 {
		m.leaseLost.Add(ctx, int64(len(e.Lost)), metric.WithAttributes(systemAttr,
			semconv.MessagingDestinationName(e.Stream), semconv.MessagingConsumerGroupName(e.Group)))
	}
	if et != "" {
		attrs = append(attrs, semconv.ErrorTypeKey.String(et))
	}
	m.opDuration.Record(ctx, e.Duration.Seconds(), metric.WithAttributes(attrs...))
}

// Maintained implements sqlstreams.MaintainHook: rows removed by compaction
// and retention, and among those retention removed, the ones still unread.
func (m *Middleware) Maintained(ctx context.Context, r sqlstreams.MaintenanceReport, _ error) {
	add := func(n int64, kind string, unread bool) {
		if n > 0 {
			m.removed.Add(ctx, n, metric.WithAttributes(systemAttr, MaintenanceKindKey.String(kind), MaintenanceUnreadKey.Bool(unread)))
		}
	}
	add(r.Compacted, "compact", false)
	add(r.Retained-r.RemovedUnread, "retain", false)
	add(r.RemovedUnread, "retain", true)
}

type deliveryKey struct {
	stream, group string
	id            int64
}

// procState is one process span between its handler's start and its
// outcome.
type procState struct {
	span    trace.Span
	running bool      // the handler has not returned
	settled string    // an outcome recorded while it ran (the handler settled itself)
	lost    bool      // a settle while it ran found the lease lost
	waiting time.Time // when the handler returned without a final outcome
}

// inflight tracks process spans whose outcome is not known yet.
type inflight struct {
	mu   sync.Mutex
	m    map[deliveryKey]*procState
	wait time.Duration // settleWait; tests shorten it
}

func (f *inflight) begin(k deliveryKey, span trace.Span) *procState {
	st := &procState{span: span, running: true}
	f.mu.Lock()
	if old, ok := f.m[k]; ok && !old.running {
		// The same delivery again (its earlier span never heard its settle).
		old.span.End(trace.WithTimestamp(old.waiting))
	}
	f.m[k] = st
	f.mu.Unlock()
	return st
}

// returned ends the span when its outcome is known (final), or waits for
// the settle Run records next.
func (f *inflight) returned(k deliveryKey, st *procState, final bool, outcome string) {
	f.mu.Lock()
	st.running = false
	st.waiting = time.Now()
	if st.settled != "" {
		outcome, final = st.settled, true
	} else if st.lost {
		outcome, final = "", true
	}
	if f.m[k] != st {
		final = true // replaced by a later run of the same delivery: nothing will settle this one
	} else if final {
		delete(f.m, k)
	}
	f.mu.Unlock()
	if final {
		if outcome != "" {
			st.span.SetAttributes(OutcomeKey.String(outcome))
		}
		st.span.End(trace.WithTimestamp(st.waiting))
	}
}

// settled gives a waiting span its outcome and ends it, or records the
// outcome of a handler that settled its delivery itself. An empty outcome
// says the settle found the lease lost: nothing this client does will
// settle the delivery, so the span ends without one.
func (f *inflight) settled(k deliveryKey, outcome string) {
	f.mu.Lock()
	st, ok := f.m[k]
	if !ok {
		f.mu.Unlock()
		return
	}
	if st.running {
		if outcome == "" {
			st.lost = true
		} else if st.settled == "" {
			st.settled = outcome
		}
		f.mu.Unlock()
		return
	}
	delete(f.m, k)
	f.mu.Unlock()
	if outcome != "" {
		st.span.SetAttributes(OutcomeKey.String(outcome))
	}
	st.span.End(trace.WithTimestamp(st.waiting)) // the span covers the handler, not the settle
}

// settleWait bounds how long a process span waits for its settle: Run
// records a failure right after the handler returns, within the client's
// operation timeout and a few retries; a span still waiting after this is
// one whose lease was lost while the handler ran (Run records nothing).
const settleWait = 2 * time.Minute

// sweep ends, without an outcome, the group's spans that waited longer
// than settleWait.
func (f *inflight) sweep(stream, group string) {
	var ended []*procState
	now := time.Now()
	f.mu.Lock()
	for k, st := range f.m {
		if k.stream == stream && k.group == group && !st.running && now.Sub(st.waiting) > f.wait {
			delete(f.m, k)
			ended = append(ended, st)
		}
	}
	f.mu.Unlock()
	for _, st := range ended {
		st.span.End(trace.WithTimestamp(st.waiting))
	}
}

func (f *inflight) endAll() {
	type ending struct {
		span trace.Span
		opts []trace.SpanEndOption
	}
	var ends []ending
	f.mu.Lock()
	for _, st := range f.m {
		e := ending{span: st.span}
		if !st.running {
			e.opts = []trace.SpanEndOption{trace.WithTimestamp(st.waiting)}
		}
		ends = append(ends, e)
	}
	f.m = map[deliveryKey]*procState{}
	f.mu.Unlock()
	for _, e := range ends {
		e.span.End(e.opts...)
	}
}
