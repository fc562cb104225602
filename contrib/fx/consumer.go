package sqlstreamsfx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.uber.org/fx"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// defaultShutdownTimeout is core's ShutdownTimeout when the options leave
// it zero, for the warning about a short stop deadline.
const defaultShutdownTimeout = 10 * time.Second

// Runner registers a consumer and runs it in the background: what Consumer
// does in an fx app, usable without fx.
type Runner[T sqlstreams.Versioned] struct {
	client        *sqlstreams.Client
	stream, group string
	opts          sqlstreams.ConsumerOptions
	handler       sqlstreams.Handler[T]
	logger        *slog.Logger
	onFail        func(error)

	mu        sync.Mutex
	cancel    context.CancelFunc
	done      chan struct{}
	err       error
	signalled bool // the running Run was told to stop
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
	r.cancel, r.done, r.signalled = cancel, done, false
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
// ctx.Err() if ctx ends first, and Run's error otherwise. To stop several
// runners within one ShutdownTimeout, call their Stop concurrently.
func (r *Runner[T]) Stop(ctx context.Context) error {
	done := r.signalStop(ctx)
	if done == nil {
		return nil
	}
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

// signalStop tells Run to stop, without waiting, and returns the channel
// closed when it has (nil when it never started). The first call warns when
// ctx's deadline leaves less than ShutdownTimeout.
func (r *Runner[T]) signalStop(ctx context.Context) <-chan struct{} {
	r.mu.Lock()
	cancel, done, signalled := r.cancel, r.done, r.signalled
	r.signalled = true
	r.mu.Unlock()
	if cancel == nil {
		return nil
	}
	if !signalled {
		r.warnShortDeadline(ctx)
		cancel()
	}
	return done
}

func (r *Runner[T]) warnShortDeadline(ctx context.Context) {
	shutdown := r.opts.ShutdownTimeout
	if shutdown <= 0 {
		shutdown = defaultShutdownTimeout
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < shutdown {
		r.logger.Warn("sqlstreamsfx: the stop timeout is shorter than the consumer's ShutdownTimeout; running handlers may be cut off"+
			" (set fx.StopTimeout to ShutdownTimeout plus 15s)", "stream", r.stream, "group", r.group,
			"stop_timeout_left", time.Until(dl).Round(time.Millisecond), "shutdown_timeout", shutdown)
	}
}

// stopSignaller is a started Runner of any T.
type stopSignaller interface {
	signalStop(ctx context.Context) <-chan struct{}
}

// consumerSet holds an app's started consumers. fx runs stop hooks one
// after another, so waiting for each consumer in its own hook would add
// their ShutdownTimeouts up; instead the first consumer hook to stop tells
// every consumer to stop, and each hook then waits for its own, so N
// consumers stop within one ShutdownTimeout.
type consumerSet struct {
	mu      sync.Mutex
	started []stopSignaller
}

func (s *consumerSet) add(r stopSignaller) {
	s.mu.Lock()
	s.started = append(s.started, r)
	s.mu.Unlock()
}

// signalAll tells every consumer started so far to stop, once.
func (s *consumerSet) signalAll(ctx context.Context) {
	s.mu.Lock()
	started := s.started
	s.started = nil
	s.mu.Unlock()
	for _, r := range started {
		r.signalStop(ctx)
	}
}

type consumerParams[T sqlstreams.Versioned] struct {
	fx.In
	Lifecycle  fx.Lifecycle
	Shutdowner fx.Shutdowner
	Client     *Client
	Handler    sqlstreams.Handler[T] `name:"handler"`
	Logger     *slog.Logger          `optional:"true"`
	Config     *Config               `optional:"true"`
}

// Consumer registers a member of group on stream when the app starts and
// runs it until the app stops. newHandler is a constructor whose
// parameters come from the graph: func(deps...) sqlstreams.Handler[T] or
// func(deps...) (sqlstreams.Handler[T], error). The handler stays private
// to this consumer's module, so any number of consumers of one T coexist.
//
// A registration error (ErrGroupVersion, an incompatible schema) fails
// app.Start; a Run that ends on its own shuts the app down with exit code
// 1. On stop every consumer of the app is told to stop at once, then each
// waits for its running handlers (up to ShutdownTimeout, 10 s by default)
// and their acks: whatever their number, that is more than fx's default
// 15 s StopTimeout leaves, so set fx.StopTimeout(ShutdownTimeout + 15*time.Second).
func Consumer[T sqlstreams.Versioned](stream, group string, opts *sqlstreams.ConsumerOptions, newHandler any) fx.Option {
	return fx.Module("sqlstreams.consumer "+stream+"/"+group,
		fx.Provide(fx.Private, fx.Annotate(newHandler, fx.ResultTags(`name:"handler"`))),
		fx.Invoke(func(p consumerParams[T]) error { return addConsumer(p, stream, group, opts) }))
}

// addConsumer appends the consumer's hooks: register and run on start
// (after the client opened and the handler's dependencies started: the
// consumer depends on them), stop with the app's other consumers on stop.
func addConsumer[T sqlstreams.Versioned](p consumerParams[T], stream, group string, opts *sqlstreams.ConsumerOptions) error {
	if p.Handler == nil {
		return fmt.Errorf("%w: sqlstreamsfx: the handler constructor of consumer %s/%s returned nil", sqlstreams.ErrInvalidOption, stream, group)
	}
	logger := p.Logger
	if logger == nil {
		logger = slog.Default()
	}
	onFail := func(error) {
		if err := p.Shutdowner.Shutdown(fx.ExitCode(1)); err != nil {
			logger.Error("sqlstreamsfx: could not shut the app down", "error", err)
		}
	}
	var r *Runner[T]
	p.Lifecycle.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			var err error
			r, err = NewRunner(RunnerParams[T]{Client: p.Client.Get(), Stream: stream, Group: group, Options: opts,
				Handler: p.Handler, Logger: logger, OnFail: onFail})
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(ctx, p.Config.openTimeout())
			defer cancel()
			if err := r.Start(ctx); err != nil {
				return err
			}
			p.Client.consumers.add(r)
			return nil
		},
		OnStop: func(ctx context.Context) error {
			p.Client.consumers.signalAll(ctx)
			return r.Stop(ctx)
		},
	})
	return nil
}
