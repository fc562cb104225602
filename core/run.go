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
	r := &runner[T]{c: c, handle: handle, limit: max(c.opts.BatchSize, c.opts.Concurrency),
		running: make(chan struct{}, c.opts.Concurrency), stopping: make(chan struct{}), freed: make(chan struct{}, 1),
		held: map[*lease]struct{}{}}
	r.queue = make(chan Delivery[T], r.limit)
	r.handlerCtx, r.cancelHandlers = context.WithCancel(context.WithoutCancel(ctx))
	defer r.cancelHandlers()
	r.settleBase = context.WithoutCancel(ctx)
	r.acks, r.acksDone = make(chan *lease, 2*r.limit), make(chan struct{})
	go r.complete()
	if !c.opts.Ordered {
		for range c.opts.Concurrency {
			r.workers.Go(r.work)
		}
	}

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
	close(r.stopping) // queued deliveries are released, not started
	close(r.queue)    // the claim loop was its only sender

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
	close(r.acks) // no worker is left to send one
	<-r.acksDone
	stopBackground()
	background.Wait()
	return err
}

type runner[T Versioned] struct {
	c      *Consumer[T]
	handle Handler[T]
	// limit caps the deliveries held at once: claimed, queued or running.
	limit    int
	queue    chan Delivery[T] // claimed deliveries in claim order, for the workers
	running  chan struct{}    // a slot per running handler of an ordered group
	stopping chan struct{}    // closed when Run stops claiming
	freed    chan struct{}    // poked when a held delivery is done
	workers  sync.WaitGroup
	acks     chan *lease // resolved deliveries waiting for the completer
	acksDone chan struct{}

	handlerCtx     context.Context
	cancelHandlers context.CancelFunc
	settleBase     context.Context

	mu   sync.Mutex
	held map[*lease]struct{} // the heartbeat extends all of them
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
		select {
		case <-ctx.Done():
			return nil
		case <-c.client.closed:
			return fmt.Errorf("sqlstreams: group %q: %w", c.name, ErrClosed)
		default:
		}
		// Claim in batches: while work is outstanding, wait until half the
		// budget is free instead of claiming a row each time one finishes.
		r.mu.Lock()
		held := len(r.held)
		r.mu.Unlock()
		if free := r.limit - held; free == 0 || (held > 0 && free < (r.limit+1)/2) {
			select {
			case <-ctx.Done():
				return nil
			case <-c.client.closed:
				return fmt.Errorf("sqlstreams: group %q: %w", c.name, ErrClosed)
			case <-r.freed:
			}
			continue
		}
		ds, err := c.Claim(ctx, r.limit-held)
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
		r.mu.Lock()
		for _, d := range ds {
			r.held[d.lease] = struct{}{}
		}
		r.mu.Unlock()
		r.dispatch(ds)
	}
}

// work is one of Concurrency workers: it handles queued deliveries in claim
// order, and gives them back unstarted once Run is stopping.
func (r *runner[T]) work() {
	for d := range r.queue {
		select {
		case <-r.stopping:
			r.releaseAll([]Delivery[T]{d})
		default:
			r.process(d)
		}
		r.done(d)
	}
}

// dispatch hands deliveries to the workers in claim order or, when the group
// is ordered, to one goroutine per partition working through its rows in
// order, Concurrency of them running at once.
func (r *runner[T]) dispatch(ds []Delivery[T]) {
	if !r.c.opts.Ordered {
		for _, d := range ds {
			r.queue <- d // never blocks: the queue holds limit deliveries
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
				if !r.start() {
					r.releaseAll(chunk[i:])
					r.done(chunk[i:]...)
					return
				}
				ok := r.process(d)
				<-r.running
				r.done(d)
				if !ok { // a failing row holds its partition: give the rest back
					r.releaseAll(chunk[i+1:])
					r.done(chunk[i+1:]...)
					return
				}
			}
		})
	}
}

// start takes a running slot for an ordered group's next row, unless Run is
// stopping: then the row is given back unstarted.
func (r *runner[T]) start() bool {
	select {
	case <-r.stopping:
		return false
	case r.running <- struct{}{}:
	}
	select {
	case <-r.stopping:
		<-r.running
		return false
	default:
		return true
	}
}

// done forgets held deliveries and wakes the claim loop.
func (r *runner[T]) done(ds ...Delivery[T]) {
	r.mu.Lock()
	for _, d := range ds {
		delete(r.held, d.lease)
	}
	r.mu.Unlock()
	select {
	case r.freed <- struct{}{}:
	default:
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
	err := r.call(d)

	if d.lease.settled.Load() {
		return err == nil
	}
	ctx, cancel := context.WithTimeout(r.settleBase, settleTimeout)
	defer cancel()
	var settleErr error
	switch {
	case err == nil && !c.opts.Ordered:
		r.acks <- d.lease
		return true
	case err == nil:
		settleErr = c.ack(ctx, d.lease) // in order: the next row waits for it
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

// complete records acks in batches: whatever resolved while the previous
// batch was being written goes in the next one, one statement per claim.
// Under load that turns a transaction per delivery into one per claimed
// batch; when idle, an ack is written at once.
func (r *runner[T]) complete() {
	defer close(r.acksDone)
	for l := range r.acks {
		batch := []*lease{l}
	more:
		for len(batch) < 1000 {
			select {
			case l, ok := <-r.acks:
				if !ok {
					break more
				}
				batch = append(batch, l)
			default:
				break more
			}
		}
		ctx, cancel := context.WithTimeout(r.settleBase, settleTimeout)
		if err := r.c.ackAll(ctx, batch); err != nil {
			r.c.client.logger.Warn("sqlstreams: could not record acks; those deliveries will be retried when their leases expire",
				"stream", r.c.stream.Name, "group", r.c.name, "deliveries", len(batch), "error", err)
		}
		cancel()
	}
}

// heartbeat extends the leases of held deliveries, queued or running,
// every third of the lease.
func (r *runner[T]) heartbeat(ctx context.Context) {
	every := max(r.c.opts.LeaseDuration/3, time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.mu.Lock()
		ls := make([]*lease, 0, len(r.held))
		for l := range r.held {
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
