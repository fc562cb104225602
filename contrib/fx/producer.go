package sqlstreamsfx

import (
	"context"
	"fmt"
	"sync/atomic"

	"go.uber.org/fx"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// ProducerOf is the handle Producer and NamedProducer provide on a producer
// of T. Registering it records T's schema, so it happens in an OnStart
// hook, not in fx.New: an incompatible schema fails app.Start. Keep the
// handle and call Get from the app's start on.
type ProducerOf[T sqlstreams.Versioned] struct {
	stream   string
	producer atomic.Pointer[sqlstreams.Producer[T]]
}

// Get returns the registered producer: in an OnStart hook of a constructor
// that took the handle (fx runs its dependencies' hooks first), in a
// handler, in a request. Before the app started it panics with a message
// saying so: the call belongs in a hook, not a constructor.
func (p *ProducerOf[T]) Get() *sqlstreams.Producer[T] {
	if pr := p.producer.Load(); pr != nil {
		return pr
	}
	panic(fmt.Sprintf("sqlstreamsfx: the producer on %q is used before the app started; "+
		"it is registered in an OnStart hook: call ProducerOf.Get from a hook, a handler or a request, not from a constructor", p.stream))
}

// NewProducer registers a producer of T on stream, bounded by the config's
// OpenTimeout: what Producer does on start, usable without fx.
func NewProducer[T sqlstreams.Versioned](c *sqlstreams.Client, cfg *Config, stream string, opts *sqlstreams.ProducerOptions) (*sqlstreams.Producer[T], error) {
	return registerProducer[T](context.Background(), c, cfg, stream, opts)
}

func registerProducer[T sqlstreams.Versioned](ctx context.Context, c *sqlstreams.Client, cfg *Config, stream string, opts *sqlstreams.ProducerOptions) (*sqlstreams.Producer[T], error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.openTimeout())
	defer cancel()
	return c.Stream[T](stream).Producer().Register(ctx, opts)
}

type producerParams struct {
	fx.In
	Lifecycle fx.Lifecycle
	Client    *Client
	Config    *Config `optional:"true"`
}

// newProducerOf makes the handle and appends the hook that registers the
// producer when the app starts (after the client opened: the handle
// depends on it).
func newProducerOf[T sqlstreams.Versioned](p producerParams, stream string, opts *sqlstreams.ProducerOptions) *ProducerOf[T] {
	h := &ProducerOf[T]{stream: stream}
	p.Lifecycle.Append(fx.StartHook(func(ctx context.Context) error {
		pr, err := registerProducer[T](ctx, p.Client.Get(), p.Config, stream, opts)
		if err != nil {
			return fmt.Errorf("sqlstreamsfx: producer on %q: %w", stream, err)
		}
		h.producer.Store(pr)
		return nil
	}))
	return h
}

// Producer provides *ProducerOf[T], registered on stream when the app
// starts, so an incompatible schema fails app.Start.
func Producer[T sqlstreams.Versioned](stream string, opts *sqlstreams.ProducerOptions) fx.Option {
	return fx.Provide(func(p producerParams) *ProducerOf[T] { return newProducerOf[T](p, stream, opts) })
}

// NamedProducer provides *ProducerOf[T] under `name:"<name>"`, for two
// producers of one T (on two streams).
func NamedProducer[T sqlstreams.Versioned](name, stream string, opts *sqlstreams.ProducerOptions) fx.Option {
	return fx.Provide(fx.Annotate(func(p producerParams) *ProducerOf[T] { return newProducerOf[T](p, stream, opts) },
		fx.ResultTags(fmt.Sprintf(`name:%q`, name))))
}
