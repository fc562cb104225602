package sqlstreamsfx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"

	otelsqlstreams "github.com/sqlstreams/sqlstreams/contrib/otel"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// OptionsGroup is the value group New collects client options from.
const OptionsGroup = "sqlstreams.options"

// DefaultOpenTimeout bounds opening the client and registering producers
// when Config.OpenTimeout is zero.
const DefaultOpenTimeout = 30 * time.Second

// Module provides *sqlstreams.Client from the driver.Driver the application
// provides, with the options of the "sqlstreams.options" group, and closes
// it on stop. It provides nothing else: no driver, logger or tracer.
var Module = fx.Module("sqlstreams", fx.Provide(New))

// Config tunes the module; provide a *Config to change it.
type Config struct {
	// OpenTimeout bounds sqlstreams.Open (migrations included) and each
	// producer's and consumer's registration; 0 means DefaultOpenTimeout.
	OpenTimeout time.Duration
}

func (c *Config) openTimeout() time.Duration {
	if c == nil || c.OpenTimeout <= 0 {
		return DefaultOpenTimeout
	}
	return c.OpenTimeout
}

// Params are New's inputs.
type Params struct {
	fx.In
	Lifecycle fx.Lifecycle
	// Driver is the application's, for example
	// fx.Provide(fx.Annotate(postgres.Open, fx.As(new(driver.Driver)))).
	Driver driver.Driver
	// Options are contributed with ClientOption (OTel adds its own).
	Options []sqlstreams.ClientOption `group:"sqlstreams.options"`
	// Logger, when provided, becomes the client's logger (an option in the
	// group may still replace it).
	Logger *slog.Logger `optional:"true"`
	Config *Config      `optional:"true"`
}

// Result is New's output.
type Result struct {
	fx.Out
	Client *sqlstreams.Client
}

// New opens the client, bounded by Config.OpenTimeout, and closes it on
// stop. Stop hooks run in reverse, so consumers (started later) stop first.
func New(p Params) (Result, error) {
	c, err := Open(p.Driver, p.Logger, p.Config, p.Options...)
	if err != nil {
		return Result{}, err
	}
	p.Lifecycle.Append(fx.StopHook(func() error {
		// Closed already (by the application, or a failed Run's cause):
		// nothing is left to do.
		if err := c.Close(); err != nil && !errors.Is(err, sqlstreams.ErrClosed) {
			return err
		}
		return nil
	}))
	return Result{Client: c}, nil
}

// Open is New without fx: sqlstreams.Open bounded by the config's
// OpenTimeout, with logger (if not nil) before opts.
func Open(drv driver.Driver, logger *slog.Logger, cfg *Config, opts ...sqlstreams.ClientOption) (*sqlstreams.Client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.openTimeout())
	defer cancel()
	if logger != nil {
		opts = append([]sqlstreams.ClientOption{sqlstreams.WithLogger(logger)}, opts...)
	}
	return sqlstreams.Open(ctx, drv, opts...)
}

// ClientOption contributes a client option to the "sqlstreams.options"
// group that New reads.
func ClientOption(o sqlstreams.ClientOption) fx.Option {
	return fx.Provide(fx.Annotate(func() sqlstreams.ClientOption { return o }, fx.ResultTags(`group:"sqlstreams.options"`)))
}

// otelParams are the providers OTel takes from the graph when the
// application provides them.
type otelParams struct {
	fx.In
	Lifecycle      fx.Lifecycle
	TracerProvider trace.TracerProvider          `optional:"true"`
	MeterProvider  metric.MeterProvider          `optional:"true"`
	Propagator     propagation.TextMapPropagator `optional:"true"`
}

// OTel installs the OpenTelemetry middleware on the client with one option.
// Providers and propagator not set in cfg come from the graph when the
// application provides a trace.TracerProvider, metric.MeterProvider or
// propagation.TextMapPropagator, else from the otel globals. The
// middleware is closed (its backlog reader stopped) after the client.
func OTel(cfg *otelsqlstreams.Config) fx.Option {
	return fx.Provide(fx.Annotate(func(p otelParams) sqlstreams.ClientOption {
		var c otelsqlstreams.Config
		if cfg != nil {
			c = *cfg
		}
		if c.TracerProvider == nil {
			c.TracerProvider = p.TracerProvider
		}
		if c.MeterProvider == nil {
			c.MeterProvider = p.MeterProvider
		}
		if c.Propagator == nil {
			c.Propagator = p.Propagator
		}
		m := otelsqlstreams.NewMiddleware(&c)
		p.Lifecycle.Append(fx.StopHook(m.Close))
		return m.ClientOption()
	}, fx.ResultTags(`group:"sqlstreams.options"`)))
}

// NewProducer registers a producer of T on stream, bounded by the config's
// OpenTimeout: what Producer provides, usable without fx.
func NewProducer[T sqlstreams.Versioned](c *sqlstreams.Client, cfg *Config, stream string, opts *sqlstreams.ProducerOptions) (*sqlstreams.Producer[T], error) {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.openTimeout())
	defer cancel()
	return c.Stream[T](stream).Producer().Register(ctx, opts)
}

type producerParams struct {
	fx.In
	Client *sqlstreams.Client
	Config *Config `optional:"true"`
}

// Producer provides *sqlstreams.Producer[T], registered on stream when it
// is constructed, so an incompatible schema fails the app's construction.
func Producer[T sqlstreams.Versioned](stream string, opts *sqlstreams.ProducerOptions) fx.Option {
	return fx.Provide(func(p producerParams) (*sqlstreams.Producer[T], error) {
		return NewProducer[T](p.Client, p.Config, stream, opts)
	})
}

// NamedProducer provides *sqlstreams.Producer[T] under `name:"<name>"`, for
// two producers of one T (on two streams).
func NamedProducer[T sqlstreams.Versioned](name, stream string, opts *sqlstreams.ProducerOptions) fx.Option {
	return fx.Provide(fx.Annotate(func(p producerParams) (*sqlstreams.Producer[T], error) {
		return NewProducer[T](p.Client, p.Config, stream, opts)
	}, fx.ResultTags(fmt.Sprintf(`name:%q`, name))))
}

// Runner registers a consumer and runs it in the background: what Consumer
// does in an fx app, usable without fx.
type Runner[T sqlstreams.Versioned] struct {
	client        *sqlstreams.Client
	stream, group string
	opts          sqlstreams.ConsumerOptions
	handler       sqlstreams.Handler[T]
	logger        *slog.Logger
	onFail        func(error)

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// RunnerParams configure NewRunner.
type RunnerParams[T sqlstreams.Versioned] struct {
	Client        *sqlstreams.Client
	Stream, Group string
	// Options are copied; nil uses the defaults.
	Options *sqlstreams.ConsumerOptions
	Handler sqlstreams.Handler[T]
	// Logger logs a failed Run; nil uses slog.Default().
	Logger *slog.Logger
	// OnFail is called, from Run's goroutine, when Run ends with an error
	// other than a stop (the client closed, the group was deleted or
	// re-created at another version). Consumer shuts the app down with
	// exit code 1 there.
	OnFail func(error)
}

// NewRunner checks p; Start registers and runs.
func NewRunner[T sqlstreams.Versioned](p RunnerParams[T]) (*Runner[T], error) {
	if p.Client == nil || p.Handler == nil {
		return nil, fmt.Errorf("%w: sqlstreamsfx: a consumer of %q/%q needs a client and a handler", sqlstreams.ErrInvalidOption, p.Stream, p.Group)
	}
	r := &Runner[T]{client: p.Client, stream: p.Stream, group: p.Group, handler: p.Handler, logger: p.Logger, onFail: p.OnFail}
	if p.Options != nil {
		r.opts = *p.Options
	}
	if r.logger == nil {
		r.logger = slog.Default()
	}
	return r, nil
}

// Start registers the member (so ErrGroupVersion and ErrIncompatibleSchema
// fail it, within ctx) and starts Run in the background.
func (r *Runner[T]) Start(ctx context.Context) error {
	opts := r.opts
	c, err := r.client.Stream[T](r.stream).Consumer(r.group).Register(ctx, &opts)
	if err != nil {
		return fmt.Errorf("sqlstreamsfx: consumer %s/%s: %w", r.stream, r.group, err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	r.mu.Lock()
	r.cancel, r.done = cancel, done
	r.mu.Unlock()
	go func() {
		defer close(done)
		err := c.Run(runCtx, r.handler)
		r.mu.Lock()
		r.err = err
		r.mu.Unlock()
		if err != nil && runCtx.Err() == nil {
			r.logger.Error("sqlstreamsfx: consumer stopped on its own", "stream", r.stream, "group", r.group, "error", err)
			if r.onFail != nil {
				r.onFail(err)
			}
		}
	}()
	return nil
}

// Stop stops Run and waits for it: handlers finish (for up to the
// consumer's ShutdownTimeout) and their acks are written. It returns
// ctx.Err() if ctx ends first, and Run's error otherwise.
func (r *Runner[T]) Stop(ctx context.Context) error {
	r.mu.Lock()
	cancel, done := r.cancel, r.done
	r.mu.Unlock()
	if cancel == nil {
		return nil
	}
	shutdown := r.opts.ShutdownTimeout
	if shutdown <= 0 {
		shutdown = 10 * time.Second
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < shutdown {
		r.logger.Warn("sqlstreamsfx: the stop timeout is shorter than the consumer's ShutdownTimeout; running handlers may be cut off"+
			" (set fx.StopTimeout to ShutdownTimeout plus 15s)", "stream", r.stream, "group", r.group,
			"stop_timeout_left", time.Until(dl).Round(time.Millisecond), "shutdown_timeout", shutdown)
	}
	cancel()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("sqlstreamsfx: consumer %s/%s still stopping: %w", r.stream, r.group, ctx.Err())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil && !errors.Is(r.err, sqlstreams.ErrClosed) {
		return r.err
	}
	return nil
}

type consumerParams[T sqlstreams.Versioned] struct {
	fx.In
	Lifecycle  fx.Lifecycle
	Shutdowner fx.Shutdowner
	Client     *sqlstreams.Client
	Handler    sqlstreams.Handler[T] `name:"handler"`
	Logger     *slog.Logger          `optional:"true"`
}

// Consumer registers a member of group on stream when the app starts and
// runs it until the app stops. newHandler is a constructor whose
// parameters come from the graph: func(deps...) sqlstreams.Handler[T] or
// func(deps...) (sqlstreams.Handler[T], error). The handler stays private
// to this consumer's module, so any number of consumers of one T coexist.
//
// A registration error (ErrGroupVersion, an incompatible schema) fails
// app.Start; a Run that ends on its own shuts the app down with exit code
// 1. Stopping waits for running handlers for up to ShutdownTimeout (10 s by
// default) plus their acks, more than fx's default 15 s StopTimeout leaves
// with several consumers: set fx.StopTimeout(ShutdownTimeout + 15*time.Second).
func Consumer[T sqlstreams.Versioned](stream, group string, opts *sqlstreams.ConsumerOptions, newHandler any) fx.Option {
	return fx.Module("sqlstreams.consumer "+stream+"/"+group,
		fx.Provide(fx.Private, fx.Annotate(newHandler, fx.ResultTags(`name:"handler"`))),
		fx.Invoke(func(p consumerParams[T]) error {
			logger := p.Logger
			if logger == nil {
				logger = slog.Default()
			}
			r, err := NewRunner(RunnerParams[T]{Client: p.Client, Stream: stream, Group: group, Options: opts, Handler: p.Handler,
				Logger: logger, OnFail: func(error) {
					if err := p.Shutdowner.Shutdown(fx.ExitCode(1)); err != nil {
						logger.Error("sqlstreamsfx: could not shut the app down", "error", err)
					}
				}})
			if err != nil {
				return err
			}
			p.Lifecycle.Append(fx.StartStopHook(r.Start, r.Stop))
			return nil
		}))
}
