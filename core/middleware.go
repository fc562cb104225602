package sqlstreams

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Middleware is anything installed with WithMiddleware or
// ConsumerOptions.Middleware: a value that implements one or more of
// ProduceMiddleware, HandleMiddleware, ClaimHook, SettleHook and
// MaintainHook. Embed MiddlewareDefaults to satisfy it.
//
// Order: client-wide middleware (WithMiddleware) wraps consumer middleware
// (ConsumerOptions.Middleware); within one list the first is outermost. So
// WithMiddleware(a, b) and ConsumerOptions{Middleware: {c}} run a handler as
// a(b(c(handler))), and hooks are called in the same order.
type Middleware interface {
	// IsMiddleware marks the type; it returns true.
	IsMiddleware() bool
}

// MiddlewareDefaults implements Middleware; embed it in a middleware type.
type MiddlewareDefaults struct{}

// IsMiddleware implements Middleware.
func (MiddlewareDefaults) IsMiddleware() bool { return true }

// ProduceMiddleware wraps every append, whatever the entry point: Produce,
// ProduceBatch, ProduceTx, RawPayload producers, and producers called from
// inside a handler. It may change the outgoing messages' headers (what is
// written is what the headers hold when next is called), fail the call by
// returning an error without calling next, or observe the result.
type ProduceMiddleware interface {
	Middleware
	Produce(ctx context.Context, call *ProduceCall, next func(ctx context.Context) ([]int64, error)) ([]int64, error)
}

// ProduceCall describes one append.
type ProduceCall struct {
	Stream StreamInfo
	// Tx is true for ProduceTx: the rows become visible when the caller's
	// transaction commits.
	Tx bool
	// Batch is true for ProduceBatch.
	Batch    bool
	Messages []*OutgoingMessage
}

// OutgoingMessage is one message of a ProduceCall, as it will be written.
type OutgoingMessage struct {
	Partition      int
	SchemaVersion  int
	Key            string
	HasKey         bool
	RoutingKey     string
	CompactionRank int64
	// Headers are written to the row as they are when next is called; a
	// middleware may add or change them (nil means none yet: assign a map).
	Headers     map[string]string
	PayloadSize int
}

// HandleMiddleware wraps every handler call in Run. next runs the rest of
// the chain and the handler; its error is the handler's outcome, which the
// middleware may observe or replace.
type HandleMiddleware interface {
	Middleware
	Handle(ctx context.Context, d *DeliveryInfo, next func(ctx context.Context) error) error
}

// DeliveryInfo is a delivery's metadata, without its value.
type DeliveryInfo struct {
	Stream         string
	Group          string
	ID             int64
	Partition      int
	SchemaVersion  int
	CompactionRank int64
	Attempt        int
	Key            string
	RoutingKey     string
	Headers        map[string]string
	ProducedAt     time.Time
	PayloadSize    int
}

// Claim sources.
const (
	ClaimSourcePull = "claim" // Consumer.Claim, called by the application
	ClaimSourceRun  = "run"   // Run's own claims
)

// ClaimHook observes claims.
type ClaimHook interface {
	Middleware
	Claimed(ctx context.Context, e ClaimEvent)
}

// ClaimEvent describes one claim.
type ClaimEvent struct {
	Stream, Group string
	// Source is ClaimSourcePull or ClaimSourceRun.
	Source     string
	Requested  int
	Deliveries []DeliveryInfo
	Duration   time.Duration
	Err        error
}

// Settle outcomes.
const (
	OutcomeAck     = "ack"
	OutcomeRetry   = "retry"
	OutcomeDead    = "dead"
	OutcomeRelease = "release"
)

// SettleHook observes recorded outcomes.
type SettleHook interface {
	Middleware
	Settled(ctx context.Context, e SettleEvent)
}

// SettleEvent describes one settle call.
type SettleEvent struct {
	Stream, Group string
	// Outcome is OutcomeAck, OutcomeRetry, OutcomeDead or OutcomeRelease.
	Outcome string
	// IDs are the deliveries the call tried to settle; Lost those whose
	// lease was lost (a *SettleError in Err names them too).
	IDs, Lost []int64
	Duration  time.Duration
	Err       error
}

// MaintainHook observes maintenance passes (Client.Maintain and the
// background ones).
type MaintainHook interface {
	Middleware
	Maintained(ctx context.Context, report MaintenanceReport, err error)
}

// WithMiddleware installs client-wide middleware and hooks, outermost
// first; they wrap every producer and consumer of the client.
func WithMiddleware(ms ...Middleware) ClientOption {
	return func(c *Client) { c.middleware = append(c.middleware, ms...) }
}

// chain is middleware sorted by what it implements, outermost first.
type chain struct {
	produce  []ProduceMiddleware
	handle   []HandleMiddleware
	claim    []ClaimHook
	settle   []SettleHook
	maintain []MaintainHook
}

// sortMiddleware files each middleware under every interface it implements.
func sortMiddleware(where string, ms []Middleware) (chain, error) {
	var c chain
	for i, m := range ms {
		used := false
		if m == nil {
			return c, fmt.Errorf("%w: %s middleware %d is nil", ErrInvalidOption, where, i)
		}
		if p, ok := m.(ProduceMiddleware); ok {
			c.produce, used = append(c.produce, p), true
		}
		if h, ok := m.(HandleMiddleware); ok {
			c.handle, used = append(c.handle, h), true
		}
		if h, ok := m.(ClaimHook); ok {
			c.claim, used = append(c.claim, h), true
		}
		if h, ok := m.(SettleHook); ok {
			c.settle, used = append(c.settle, h), true
		}
		if h, ok := m.(MaintainHook); ok {
			c.maintain, used = append(c.maintain, h), true
		}
		if !used {
			return c, fmt.Errorf("%w: %s middleware %d (%T) implements none of ProduceMiddleware, HandleMiddleware, ClaimHook, SettleHook, MaintainHook",
				ErrInvalidOption, where, i, m)
		}
	}
	return c, nil
}

// then returns the client-wide chain c wrapping the consumer's chain inner.
func (c chain) then(inner chain) chain {
	return chain{
		produce:  append(slices.Clone(c.produce), inner.produce...),
		handle:   append(slices.Clone(c.handle), inner.handle...),
		claim:    append(slices.Clone(c.claim), inner.claim...),
		settle:   append(slices.Clone(c.settle), inner.settle...),
		maintain: append(slices.Clone(c.maintain), inner.maintain...),
	}
}

// produceThrough runs write inside every produce middleware, outermost
// first.
func (c *Client) produceThrough(ctx context.Context, call *ProduceCall, write func(context.Context) ([]int64, error)) ([]int64, error) {
	next := write
	for i := len(c.produceMW) - 1; i >= 0; i-- {
		m, inner := c.produceMW[i], next
		next = func(ctx context.Context) ([]int64, error) { return m.Produce(ctx, call, inner) }
	}
	return next(ctx)
}

// handleThrough runs handle inside every handle middleware, outermost first.
func handleThrough(ctx context.Context, ms []HandleMiddleware, d *DeliveryInfo, handle func(context.Context) error) error {
	next := handle
	for i := len(ms) - 1; i >= 0; i-- {
		m, inner := ms[i], next
		next = func(ctx context.Context) error { return m.Handle(ctx, d, inner) }
	}
	return next(ctx)
}

// PanicError is what a handler's panic becomes: the delivery's error, seen
// by handle middleware as the handler's outcome.
type PanicError struct {
	Value any
	Stack string
}

func (e *PanicError) Error() string { return fmt.Sprintf("handler panicked: %v\n%s", e.Value, e.Stack) }

// observe calls a hook, logging instead of crashing on its panic: hooks only
// watch, and a broken one must not stop a consumer.
func (c *Client) observe(kind string, fn func()) {
	defer func() {
		if p := recover(); p != nil {
			c.logger.Error("sqlstreams: "+kind+" hook panicked", "panic", p, "stack", string(debug.Stack()))
		}
	}()
	fn()
}

func infoOf(stream, group string, r driver.Row, attempt int) DeliveryInfo {
	return DeliveryInfo{Stream: stream, Group: group, ID: r.ID, Partition: r.Partition, SchemaVersion: r.SchemaVersion,
		CompactionRank: r.CompactionRank, Attempt: attempt, Key: r.Key, RoutingKey: r.RoutingKey, Headers: r.Headers,
		ProducedAt: r.ProducedAt, PayloadSize: len(r.Payload)}
}
