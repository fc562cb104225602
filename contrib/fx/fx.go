package sqlstreamsfx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
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

// Module provides *Client, the handle on a sqlstreams client opened from
// the driver.Driver the application provides, with the options of the
// "sqlstreams.options" group, when the app starts, and closed when it
// stops. It provides nothing else: no driver, logger or tracer.
var Module = fx.Module("sqlstreams", fx.Provide(New))

// Config tunes the module; provide a *Config to change it.
type Config struct {
	// OpenTimeout bounds sqlstreams.Open (migrations included) and each
	// producer's and consumer's registration, within fx's StartTimeout;
	// 0 means DefaultOpenTimeout.
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
	// The drivers of this repository connect on first use, so providing
	// one touches no database either.
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
	Client *Client
}

// Client is the handle Module provides on the app's sqlstreams client.
// Constructors run in fx.New, where nothing may touch the database, so the
// client does not exist yet when they take the handle: it is opened
// (sqlstreams.Open, which migrates) in an OnStart hook and closed in
// OnStop. Keep the handle and call Get from the app's start on.
type Client struct {
	client atomic.Pointer[sqlstreams.Client]
	// consumers are the app's running consumers, which stop together.
	consumers consumerSet
}

// Get returns the open client: in an OnStart hook of a constructor that
// took the handle (fx runs its dependencies' hooks first), in a handler, in
// a request. Before the app started there is no client, and Get panics
// with a message saying so: the call belongs in a hook, not a constructor.
func (c *Client) Get() *sqlstreams.Client {
	if cl := c.client.Load(); cl != nil {
		return cl
	}
	panic("sqlstreamsfx: the sqlstreams client is used before the app started; " +
		"it opens in an OnStart hook: call Client.Get from a hook, a handler or a request, not from a constructor")
}

// New provides the handle and appends the hooks that open the client on
// start (bounded by Config.OpenTimeout) and close it on stop. Stop hooks
// run in reverse, so consumers (started later) stop before it closes. It
// touches no database.
func New(p Params) (Result, error) {
	if p.Driver == nil {
		return Result{}, fmt.Errorf("%w: sqlstreamsfx: the driver.Driver provided is nil", sqlstreams.ErrInvalidOption)
	}
	h := &Client{}
	p.Lifecycle.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			c, err := open(ctx, p.Driver, p.Logger, p.Config, p.Options)
			if err != nil {
				return err
			}
			h.client.Store(c)
			return nil
		},
		OnStop: func(context.Context) error {
			c := h.client.Load()
			if c == nil {
				return nil
			}
			// Closed already (by the application, or a failed Run's
			// cause): nothing is left to do.
			if err := c.Close(); err != nil && !errors.Is(err, sqlstreams.ErrClosed) {
				return err
			}
			return nil
		},
	})
	return Result{Client: h}, nil
}

// Open is New without fx: sqlstreams.Open bounded by the config's
// OpenTimeout, with logger (if not nil) before opts.
func Open(drv driver.Driver, logger *slog.Logger, cfg *Config, opts ...sqlstreams.ClientOption) (*sqlstreams.Client, error) {
	return open(context.Background(), drv, logger, cfg, opts)
}

func open(ctx context.Context, drv driver.Driver, logger *slog.Logger, cfg *Config, opts []sqlstreams.ClientOption) (*sqlstreams.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.openTimeout())
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

// otelParams are what OTel takes from the graph when the application
// provides it.
type otelParams struct {
	fx.In
	Lifecycle      fx.Lifecycle
	TracerProvider trace.TracerProvider          `optional:"true"`
	MeterProvider  metric.MeterProvider          `optional:"true"`
	Propagator     propagation.TextMapPropagator `optional:"true"`
	Logger         *slog.Logger                  `optional:"true"`
}

// OTel installs the OpenTelemetry middleware on the client with one option.
// Providers, propagator and logger not set in cfg come from the graph when
// the application provides a trace.TracerProvider, metric.MeterProvider,
// propagation.TextMapPropagator or *slog.Logger, else from the otel
// globals (with W3C TraceContext while the global propagator is the no-op
// default) and slog.Default(). The middleware is closed (its backlog
// reader stopped) after the client.
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
		if c.Logger == nil {
			c.Logger = p.Logger
		}
		m := otelsqlstreams.NewMiddleware(&c)
		p.Lifecycle.Append(fx.StopHook(m.Close))
		return m.ClientOption()
	}, fx.ResultTags(`group:"sqlstreams.options"`)))
}
