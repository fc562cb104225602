// Package otelsqlstreams traces produce and claim with OpenTelemetry, and
// records the messaging metrics of the OpenTelemetry semantic conventions.
//
// Install it with one client option:
//
//	client, err := sqlstreams.Open(ctx, drv, otelsqlstreams.Option(nil))
//
// Spans: "send {stream}" (PRODUCER) for Produce and ProduceTx; for
// ProduceBatch one "create {stream}" (PRODUCER) per message and a
// "send {stream}" (CLIENT) that links to them; "receive {stream}" (CLIENT)
// for a pull Consumer.Claim; "process {stream}" (CONSUMER) around each
// handler call in Run, linked to the message's creation context. Run's own
// claims make no span (the conventions forbid receive spans for prefetched
// messages): they are measured by metrics only. Settle spans ("ack",
// "retry", "dead", "release") are off by default.
//
// The creation context travels in the message headers through the
// configured propagator: Config.Propagator, else the global one. While the
// global propagator is OpenTelemetry's no-op default (nothing called
// otel.SetTextMapPropagator), W3C TraceContext (traceparent, tracestate) is
// used, and Config.Logger says so once; baggage travels when the
// propagator includes it. A header the application set itself is never
// overwritten. Headers are stored with the row, so every attempt, a
// dead letter and its replay all link to the same creation context, and a
// handler that produces (a bridge) continues the trace of the process span.
//
// The messaging conventions are still at "Development" status. This package
// pins go.opentelemetry.io/otel/semconv/v1.43.0 and emits that schema URL;
// names change only with a new major version of this module.
//
// Metrics never carry a message key, id or partition: those would make one
// time series per message. error.type, on a failed operation's span and
// metrics alike, is one of a fixed set of classes, never a Go type's name;
// the first that applies wins:
//
//	panic             the handler panicked
//	dead              the handler returned sqlstreams.Dead
//	lease_lost        the error wraps sqlstreams.ErrLeaseLost
//	closed            ErrClosed
//	conflict          ErrConflict
//	unavailable       ErrUnavailable
//	outcome_unknown   ErrOutcomeUnknown
//	stream_not_found  ErrStreamNotFound
//	group_not_found   ErrGroupNotFound
//	group_version     ErrGroupVersion
//	invalid_message   ErrInvalidMessage
//	invalid_option    ErrInvalidOption
//	foreign_tx        ErrForeignTx
//	database          ErrDatabase
//	timeout           context.DeadlineExceeded
//	canceled          context.Canceled
//	_OTHER            any other error (most handler errors)
//
// A handler's sqlstreams.RetryAfter is flow control, not a failure: no
// error.type, the span's status unset, messaging.sqlstreams.outcome retry.
package otelsqlstreams
