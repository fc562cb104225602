package sqlstreams

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Handler processes one delivery. Its return decides the outcome: nil
// resolves the delivery; Dead(err) dead-letters it at once; RetryAfter(d,
// err) retries after d; any other error retries after the backoff until
// MaxAttempts, then dead-letters it. A panic counts as an error. A handler
// that settled the delivery itself (d.Ack, d.Retry, d.Dead) has its return
// value ignored.
type Handler[T Versioned] func(ctx context.Context, d Delivery[T]) error

// settleTimeout bounds how long recording an outcome may take after Run's
// context has ended.
const settleTimeout = 10 * time.Second

// Run claims and handles deliveries until ctx ends or the client closes. On
// stop it claims nothing more, releases claimed deliveries it has not
// started, and lets running handlers finish for ShutdownTimeout before it
// cancels their contexts and releases what they still hold. It returns nil
// after a stop through ctx, ErrClosed when the client closed. Database errors
// while claiming are logged and retried: Run keeps going through outages.
func (c *Consumer[T]) Run(ctx context.Context, handle Handler[T]) error {
	if handle == nil {
		return fmt.Errorf("%w: Run needs a handler; got nil", ErrInvalidOption)
	}
	if err := c.client.startRun(); err != nil {
		return err
	}
	defer c.client.runs.Done()
	r := &runner[T]{c: c, handle: handle, slots: make(chan struct{}, c.opts.Concurrency), inflight: map[*lease]struct{}{}}
	r.handlerCtx, r.cancelHandlers = context.WithCancel(context.WithoutCancel(ctx))
	defer r.cancelHandlers()
	r.settleBase = context.WithoutCancel(ctx)

	w := c.client.subscribe(c.stream.ID)
	defer c.client.unsubscribe(c.stream.ID, w)
	bgCtx, stopBackground := context.WithCancel(context.Background())
	var background sync.WaitGroup
	if n, ok := c.client.drv.(driver.Notifier); ok {
		background.Go(func() {
			if err := n.Subscribe(bgCtx, c.stream.ID, w.poke); err != nil && bgCtx.Err() == nil {
				c.client.logger.Warn("sqlstreams: wake-up subscription ended; polling only", "stream", c.stream.Name, "error", err)
			}
		})
	}
	background.Go(func() { r.heartbeat(bgCtx) })

	err := r.claimLoop(ctx, w)

	// Let running handlers finish, then cut them off.
	done := make(chan struct{})
	go func() { r.workers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(c.opts.ShutdownTimeout):
		c.client.logger.Warn("sqlstreams: handlers still running after ShutdownTimeout; cancelling them",
			"stream", c.stream.Name, "group", c.name)
		r.cancelHandlers()
		<-done
	}
	stopBackground()
	background.Wait()
	return err
}

type runner[T Versioned] struct {
	c              *Consumer[T]
	handle         Handler[T]
	slots          chan struct{}
	workers        sync.WaitGroup
	handlerCtx     context.Context
	cancelHandlers context.CancelFunc
	settleBase     context.Context

	mu       sync.Mutex
	inflight map[*lease]struct{}
}

func (r *runner[T]) claimLoop(ctx context.Context, w *waker) error {
	c := r.c
	idle := func() error {
		t := time.NewTimer(c.opts.PollInterval)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-c.client.closed:
			return ErrClosed
		case <-w.ch:
		case <-t.C:
		}
		return nil
	}
	for {
		// Wait for at least one free slot, then take as many as are free.
		select {
		case <-ctx.Done():
			return nil
		case <-c.client.closed:
			return fmt.Errorf("sqlstreams: group %q: %w", c.name, ErrClosed)
		case r.slots <- struct{}{}:
		}
		n := 1
		for n < c.opts.BatchSize && n < cap(r.slots) {
			select {
			case r.slots <- struct{}{}:
				n++
				continue
			default:
			}
			break
		}
		ds, err := c.Claim(ctx, n)
		for range n - len(ds) {
			<-r.slots
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, ErrClosed) {
				return err
			}
			c.client.logger.Warn("sqlstreams: claim failed; retrying", "stream", c.stream.Name, "group", c.name, "error", err)
			if err := idle(); err != nil {
				return err
			}
			continue
		}
		if len(ds) == 0 {
			if err := idle(); err != nil {
				return err
			}
			continue
		}
		r.dispatch(ds)
	}
}

// dispatch starts handlers: one goroutine per delivery, or one per partition
// working through its rows in order when the group is ordered.
func (r *runner[T]) dispatch(ds []Delivery[T]) {
	if !r.c.opts.Ordered {
		for _, d := range ds {
			r.workers.Go(func() {
				defer func() { <-r.slots }()
				r.process(d)
			})
		}
		return
	}
	var order []int
	chunks := map[int][]Delivery[T]{}
	for _, d := range ds {
		if _, ok := chunks[d.Partition]; !ok {
			order = append(order, d.Partition)
		}
		chunks[d.Partition] = append(chunks[d.Partition], d)
	}
	for _, p := range order {
		chunk := chunks[p]
		r.workers.Go(func() {
			for i, d := range chunk {
				if r.handlerCtx.Err() != nil || !r.process(d) {
					rest := chunk[i+1:]
					if r.handlerCtx.Err() != nil {
						rest = chunk[i:]
					}
					r.releaseAll(rest)
					for range len(chunk) - i {
						<-r.slots
					}
					return
				}
				<-r.slots
			}
		})
	}
}

func (r *runner[T]) releaseAll(ds []Delivery[T]) {
	if len(ds) == 0 {
		return
	}
	ls := make([]*lease, len(ds))
	for i, d := range ds {
		ls[i] = d.lease
	}
	ctx, cancel := context.WithTimeout(r.settleBase, settleTimeout)
	defer cancel()
	if err := r.c.release(ctx, ls); err != nil {
		r.c.client.logger.Warn("sqlstreams: release failed; the leases will expire instead", "group", r.c.name, "error", err)
	}
}

// process runs the handler and records its outcome; it reports whether the
// delivery was resolved.
func (r *runner[T]) process(d Delivery[T]) bool {
	c := r.c
	r.mu.Lock()
	r.inflight[d.lease] = struct{}{}
	r.mu.Unlock()
	err := r.call(d)
	r.mu.Lock()
	delete(r.inflight, d.lease)
	r.mu.Unlock()

	if d.lease.settled.Load() {
		return err == nil
	}
	ctx, cancel := context.WithTimeout(r.settleBase, settleTimeout)
	defer cancel()
	var settleErr error
	switch {
	case err == nil:
		settleErr = c.ack(ctx, d.lease)
	case r.handlerCtx.Err() != nil && errors.Is(err, context.Canceled):
		settleErr = c.release(ctx, []*lease{d.lease})
	default:
		settleErr = c.fail(ctx, d.lease, err)
		c.client.logger.Debug("sqlstreams: handler failed", "stream", c.stream.Name, "group", c.name, "id", d.ID, "attempt", d.Attempt, "error", err)
	}
	if settleErr != nil {
		level := "error"
		if errors.Is(settleErr, ErrLeaseLost) {
			level = "lease lost"
		}
		c.client.logger.Warn("sqlstreams: could not record outcome; the delivery will be retried when its lease expires",
			"stream", c.stream.Name, "group", c.name, "id", d.ID, "reason", level, "error", settleErr)
		return false
	}
	return err == nil
}

func (r *runner[T]) call(d Delivery[T]) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("handler panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return r.handle(r.handlerCtx, d)
}

// heartbeat extends the leases of running handlers every third of the lease.
func (r *runner[T]) heartbeat(ctx context.Context) {
	every := r.c.opts.LeaseDuration / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.mu.Lock()
		ls := make([]*lease, 0, len(r.inflight))
		for l := range r.inflight {
			ls = append(ls, l)
		}
		r.mu.Unlock()
		if len(ls) == 0 {
			continue
		}
		ectx, cancel := context.WithTimeout(ctx, every)
		if err := r.c.extend(ectx, ls, r.c.opts.LeaseDuration); err != nil && ctx.Err() == nil {
			r.c.client.logger.Warn("sqlstreams: extending leases failed", "stream", r.c.stream.Name, "group", r.c.name, "error", err)
		}
		cancel()
	}
}
