package sqlstreams

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
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

// maxClaimBackoff caps how long Run waits between claims while the database
// keeps failing them.
const maxClaimBackoff = 30 * time.Second

// Run claims and handles deliveries until ctx ends or the client closes. On
// stop it claims nothing more, gives back claimed deliveries it has not
// started (without using an attempt), and lets running handlers finish for
// ShutdownTimeout before it cancels their contexts and releases what they
// still hold. It returns nil after a stop through ctx, ErrClosed when the
// client closed, ErrGroupNotFound or ErrGroupVersion when the group was
// deleted or re-created at another version (it moves no cursor then), and
// ErrShutdownTimeout when handlers ignored their cancellation. Database
// errors while claiming are logged, with backoff, and retried: Run keeps
// going through outages. Every database call it makes is bounded by the
// client's operation timeout (WithOperationTimeout).
func (c *Consumer[T]) Run(ctx context.Context, handle Handler[T]) error {
	if handle == nil {
		return fmt.Errorf("%w: Run needs a handler; got nil", ErrInvalidOption)
	}
	if err := c.client.startRun(); err != nil {
		return err
	}
	defer c.client.runs.Done()
	base := max(c.opts.BatchSize, c.opts.Concurrency)
	r := &runner[T]{c: c, handle: handle, base: base, limit: base, maxLimit: base,
		running: make(chan struct{}, c.opts.Concurrency), stopping: make(chan struct{}), freed: make(chan struct{}, 1),
		held: map[*lease]struct{}{}, ackWake: make(chan struct{}, 1), ackStop: make(chan struct{}),
		acksDone: make(chan struct{}), lastWrite: time.Millisecond}
	if c.autoBatch {
		r.maxLimit = max(base, maxAutoBatch)
	}
	r.inProcess = c.client.drv.Capabilities().InProcess
	r.queue = make(chan Delivery[T], r.maxLimit)
	r.handlerCtx, r.cancelHandlers = context.WithCancel(context.WithoutCancel(ctx))
	defer r.cancelHandlers()
	r.settleBase = context.WithoutCancel(ctx)
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
			if err := n.Subscribe(bgCtx, driver.SubscribeParams{StreamID: c.stream.ID, Wake: w.poke, PollInterval: c.opts.PollInterval}); err != nil && bgCtx.Err() == nil {
				c.client.logger.Warn("sqlstreams: wake-up subscription ended; polling only", "stream", c.stream.Name, "error", err)
			}
		})
	}
	background.Go(func() { r.heartbeat(bgCtx) })

	err := r.claimLoop(ctx, w)
	r.claimLoopDone()
	close(r.stopping) // queued deliveries are given back, not started
	close(r.queue)    // the claim loop was its only sender

	// Let running handlers finish, then cut them off; a handler that ignores
	// the cancellation too is left behind.
	done := make(chan struct{})
	go func() { r.workers.Wait(); close(done) }()
	var stuck error
	select {
	case <-done:
	case <-time.After(c.opts.ShutdownTimeout):
		c.client.logger.Warn("sqlstreams: handlers still running after ShutdownTimeout; cancelling them",
			"stream", c.stream.Name, "group", c.name, "deliveries", r.activeIDs())
		r.cancelHandlers()
		select {
		case <-done:
		case <-time.After(c.opts.ShutdownTimeout):
			// A handler can return between the timer and the listing; only
			// the ones still running are stuck, and with none left the
			// workers are only handing over their acks.
			if ids := r.activeIDs(); len(ids) > 0 {
				stuck = fmt.Errorf("sqlstreams: group %q on %q: %w: handlers of deliveries %s ignored their cancellation and are still running; "+
					"their leases will expire and the deliveries come back (make handlers return when their context ends)",
					c.name, c.stream.Name, ErrShutdownTimeout, idList(ids))
				c.client.logger.Error(stuck.Error())
			} else {
				<-done
			}
		}
	}
	close(r.ackStop) // the completer writes what is queued, then stops
	<-r.acksDone
	stopBackground()
	background.Wait()
	if stuck != nil {
		c.client.leftRunning(stuck)
		return errors.Join(err, stuck)
	}
	return err
}

type runner[T Versioned] struct {
	c      *Consumer[T]
	handle Handler[T]
	// limit caps the deliveries held at once: claimed, queued, running or
	// waiting for their ack to be written. It is base (BatchSize, at least
	// Concurrency) unless BatchSize was left to its default: then resize
	// moves it between base and maxLimit with the handlers' rate.
	limit, base, maxLimit int
	inProcess             bool // the engine runs in this process (claimSize)
	// The handlers' rate as resize last saw it: deliveries done (resolved
	// counts them), when it looked, and the smoothed rate per second.
	resolved atomic.Int64
	rateAt   time.Time
	rateN    int64
	rate     float64
	queue    chan Delivery[T] // claimed deliveries in claim order, for the workers
	running  chan struct{}    // a slot per running handler of an ordered group
	stopping chan struct{}    // closed when Run stops claiming
	freed    chan struct{}    // poked when a held delivery is done
	workers  sync.WaitGroup

	handlerCtx     context.Context
	cancelHandlers context.CancelFunc
	settleBase     context.Context

	mu   sync.Mutex
	held map[*lease]struct{} // the heartbeat extends all of them

	// Resolved deliveries waiting for the completer, which writes them in
	// batches.
	ackMu     sync.Mutex
	acks      []*lease
	acksShut  bool
	ackWake   chan struct{}
	ackStop   chan struct{}
	acksDone  chan struct{}
	lastWrite time.Duration // how long the completer's last write took
	// While the claim loop waits for budget, claimNeed is how many held
	// deliveries must be done for it to claim; the completer then hands it
	// a batch of at least that many acks (handoff) instead of writing them,
	// and the claim records them in its own transaction: one commit for a
	// batch's acks and the next claim, as AckAndClaim does.
	claimNeed  int
	handoff    []*lease
	ackUnknown bool          // the pending acks include some whose claim's outcome was unknown
	claimFail  int           // consecutive failed claims, for backoff
	spare      []Delivery[T] // the claim loop's last claim, dispatched: the next one reuses it
}

// maxAutoBatch caps what Run holds when it sizes BatchSize itself; it is
// also the most one ack statement carries.
const maxAutoBatch = 1000

// rateWindow is the shortest time over which resize measures the handlers'
// rate: a burst of a few fast deliveries does not grow the claims, only a
// rate sustained for this long does, or for the whole budget's worth of
// deliveries (limit), which fast handlers get through sooner: their claims
// grow once the first claim's deliveries are done, not after five.
const rateWindow = 100 * time.Millisecond

// resize sets limit from the rate at which held deliveries are done, so that
// a claim carries what the handlers get through in a quarter of the lease
// (at most 250ms of work): fast handlers get claims and ack batches of
// hundreds of rows, slow ones keep 2×Concurrency, and what is queued is
// handled well within its lease.
func (r *runner[T]) resize(now time.Time) {
	if r.maxLimit == r.base {
		return
	}
	n := r.resolved.Load()
	if r.rateAt.IsZero() {
		r.rateAt, r.rateN = now, n
		return
	}
	dt := now.Sub(r.rateAt)
	if dt < rateWindow && (dt <= 0 || n-r.rateN < int64(r.limit)) {
		return
	}
	inst := float64(n-r.rateN) / dt.Seconds()
	r.rateAt, r.rateN = now, n
	r.rate = (r.rate + inst) / 2
	horizon := min(r.c.opts.LeaseDuration/4, 250*time.Millisecond)
	r.limit = min(max(int(r.rate*horizon.Seconds()), r.base), r.maxLimit)
}

// waits reports whether the claim loop waits for budget while held are
// held: with work outstanding it claims once claimFree is free, so that
// claims come in batches rather than a row each time one finishes.
func (r *runner[T]) waits(held int) bool {
	free := r.limit - held
	return free <= 0 || (held > 0 && free < r.claimFree())
}

// claimFree is the free budget at which the claim loop claims again: half
// of it. On an engine in this process a claim takes the larger half at most
// (claimSize), so the loop claims again once the smaller half is free: the
// two halves of an odd budget fill it.
func (r *runner[T]) claimFree() int {
	if r.inProcess {
		return r.limit / 2
	}
	return (r.limit + 1) / 2
}

// claimSize is how many deliveries the next claim asks for while held are
// held: the free budget, or on an engine in this process at most half the
// budget, so that a claim and the handling of the one before overlap on the
// CPUs they share. A server's claim costs mostly round trips and a commit,
// whatever its size, and takes all that is free.
func (r *runner[T]) claimSize(held int) int {
	n := r.limit - held
	if r.inProcess {
		n = min(n, (r.limit+1)/2)
	}
	return max(n, 1)
}

func (r *runner[T]) claimLoop(ctx context.Context, w *waker) error {
	c := r.c
	wait := func(d time.Duration) error {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-c.client.closed:
			return fmt.Errorf("sqlstreams: group %q: %w", c.name, ErrClosed)
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
		r.resize(time.Now())
		acks := r.takeHandoff()
		r.mu.Lock()
		held := len(r.held) - len(acks) // the acks are done once the claim records them
		r.mu.Unlock()
		if len(acks) == 0 && r.waits(held) {
			r.waitForBudget(held)
			select {
			case <-ctx.Done():
				return nil
			case <-c.client.closed:
				return fmt.Errorf("sqlstreams: group %q: %w", c.name, ErrClosed)
			case <-r.freed:
			}
			continue
		}
		// The claim runs to completion whatever ctx does, so that what it
		// leased is known and can be given back.
		cctx, cancel := c.client.opContext(context.WithoutCancel(ctx))
		// The acks are being settled from here on: the heartbeat still
		// extends them, but a claim that recorded them first makes its
		// extension find them gone, which is no lost lease.
		taken, _, _ := take(acks)
		ds, lost, err := c.claim(cctx, r.spare, r.claimSize(held), ClaimSourceRun, taken)
		cancel()
		r.recordedWithClaim(acks, lost, err)
		if err != nil {
			switch {
			case errors.Is(err, ErrClosed):
				return err
			case errors.Is(err, ErrGroupNotFound), errors.Is(err, ErrGroupVersion):
				c.client.logger.Error("sqlstreams: the group was deleted or re-created; this member stops", "stream", c.stream.Name, "group", c.name, "error", err)
				return err
			case ctx.Err() != nil:
				return nil
			}
			r.claimFail++
			backoff := min(c.opts.PollInterval<<min(r.claimFail, 16), maxClaimBackoff)
			c.client.logger.Warn("sqlstreams: claim failed; retrying", "stream", c.stream.Name, "group", c.name,
				"failures", r.claimFail, "retry_in", backoff, "error", err)
			if err := wait(backoff); err != nil {
				return err
			}
			continue
		}
		if r.claimFail > 0 {
			c.client.logger.Info("sqlstreams: claiming again", "stream", c.stream.Name, "group", c.name, "after_failures", r.claimFail)
			r.claimFail = 0
		}
		if len(ds) == 0 {
			if err := wait(c.opts.PollInterval); err != nil {
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
		clear(ds) // the workers hold copies; what the values point to is theirs
		r.spare = ds[:0]
	}
}

// work is one of Concurrency workers: it handles queued deliveries in claim
// order, and gives them back unstarted once Run is stopping.
func (r *runner[T]) work() {
	for d := range r.queue {
		select {
		case <-r.stopping:
			r.releaseAll([]Delivery[T]{d})
			r.done(d.lease)
		default:
			if r.startable(d) {
				r.process(d)
			}
		}
	}
}

// startable checks a queued delivery before its handler starts: one whose
// lease was lost or ran out while it waited (the database was unreachable
// for the heartbeat) is not started, since another member may hold it; a
// lapsed one is given back, which keeps its attempt when nobody took it.
func (r *runner[T]) startable(d Delivery[T]) bool {
	switch {
	case d.lease.state.Load() == leaseLost:
	case d.lease.expired(time.Now()):
		r.c.client.logger.Warn("sqlstreams: a queued delivery's lease ran out before a handler was free; giving it back",
			"stream", r.c.stream.Name, "group", r.c.name, "id", d.ID)
		r.releaseAll([]Delivery[T]{d})
	default:
		return true
	}
	r.done(d.lease)
	return false
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
	giveBack := func(rest []Delivery[T]) {
		r.releaseAll(rest)
		for _, d := range rest {
			r.done(d.lease)
		}
	}
	for _, p := range order {
		chunk := chunks[p]
		r.workers.Go(func() {
			for i, d := range chunk {
				if !r.start() {
					giveBack(chunk[i:])
					return
				}
				if !r.startable(d) {
					<-r.running
					giveBack(chunk[i+1:]) // the partition's order would break
					return
				}
				ok := r.process(d)
				<-r.running
				if !ok { // a failing row holds its partition: give the rest back
					giveBack(chunk[i+1:])
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
func (r *runner[T]) done(ls ...*lease) {
	r.mu.Lock()
	for _, l := range ls {
		delete(r.held, l)
	}
	r.mu.Unlock()
	r.resolved.Add(int64(len(ls)))
	r.pokeClaimLoop()
}

func (r *runner[T]) pokeClaimLoop() {
	select {
	case r.freed <- struct{}{}:
	default:
	}
}

// waitForBudget tells the completer that the claim loop waits until enough
// of the held deliveries (held of them) are done to free claimFree.
func (r *runner[T]) waitForBudget(held int) {
	r.ackMu.Lock()
	r.claimNeed = max(held-(r.limit-r.claimFree()), 1)
	r.ackMu.Unlock()
}

// handOff gives batch to the claim loop, with ackMu held, when it waits for
// budget that batch frees; the claim loop stops waiting then. Acks are never
// handed once Run is stopping, nor again after a claim that carried them
// had an unknown outcome: the completer writes those.
func (r *runner[T]) handOff(batch []*lease, stop, unknown bool) bool {
	if stop || unknown || r.claimNeed == 0 || len(batch) < r.claimNeed {
		return false
	}
	r.handoff = append(r.handoff, batch...)
	r.claimNeed = 0
	return true
}

// takeHandoff takes the acks the completer handed to the claim loop.
func (r *runner[T]) takeHandoff() []*lease {
	r.ackMu.Lock()
	defer r.ackMu.Unlock()
	acks := r.handoff
	r.handoff, r.claimNeed = nil, 0
	return acks
}

// recordedWithClaim settles what a claim that carried acks did with them:
// recorded (those lost are logged), or, when the claim failed, back to the
// completer, which writes them with its retries.
func (r *runner[T]) recordedWithClaim(acks []*lease, lost []int64, err error) {
	if len(acks) == 0 {
		return
	}
	if err != nil {
		r.requeueAcks(acks, errors.Is(err, ErrOutcomeUnknown))
		return
	}
	if len(lost) > 0 {
		r.warnLostAcks(lost)
	}
	r.done(acks...)
}

// warnLostAcks logs acks the database did not record because their leases
// were lost: those deliveries may run again.
func (r *runner[T]) warnLostAcks(ids []int64) {
	r.c.client.logger.Warn("sqlstreams: some acks were not recorded: their leases were lost, and they may run again",
		"stream", r.c.stream.Name, "group", r.c.name, "lost", ids)
}

// requeueAcks gives acks back to the completer.
func (r *runner[T]) requeueAcks(acks []*lease, unknown bool) {
	r.ackMu.Lock()
	r.acks = append(acks, r.acks...)
	r.ackUnknown = r.ackUnknown || unknown
	r.ackMu.Unlock()
	select {
	case r.ackWake <- struct{}{}:
	default:
	}
}

// claimLoopDone gives the completer whatever it handed to the claim loop
// that the loop did not claim with; it hands nothing more.
func (r *runner[T]) claimLoopDone() {
	if acks := r.takeHandoff(); len(acks) > 0 {
		r.requeueAcks(acks, false)
	}
}

// activeIDs lists the held deliveries whose handler is running. Each lease
// says so itself (lease.running): a map of them under mu cost every handler
// two turns of the lock that claims and acks take too.
func (r *runner[T]) activeIDs() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []int64
	for l := range r.held {
		if l.running.Load() {
			ids = append(ids, l.id)
		}
	}
	slices.Sort(ids)
	return ids
}

func (r *runner[T]) releaseAll(ds []Delivery[T]) {
	if len(ds) == 0 {
		return
	}
	ls := make([]*lease, len(ds))
	for i, d := range ds {
		ls[i] = d.lease
	}
	ctx, cancel := r.c.client.opContext(r.settleBase)
	defer cancel()
	if err := r.c.release(ctx, ls); err != nil && !errors.Is(err, ErrLeaseLost) {
		r.c.client.logger.Warn("sqlstreams: release failed; the leases will expire instead", "group", r.c.name, "error", err)
	}
}

// process runs the handler and records its outcome; it reports whether the
// delivery was resolved. The delivery is done (no longer held) once its
// outcome is recorded, or handed to the completer.
func (r *runner[T]) process(d Delivery[T]) bool {
	c := r.c
	d.lease.running.Store(true)
	err := r.call(d)
	d.lease.running.Store(false)

	if d.lease.state.Load() != leaseOpen {
		r.done(d.lease)
		return err == nil
	}
	if err == nil && !c.opts.Ordered && r.enqueueAck(d.lease) {
		return true // the completer marks it done once written
	}
	defer r.done(d.lease)
	ctx, cancel := c.client.opContext(r.settleBase)
	defer cancel()
	var settleErr error
	switch {
	case err == nil:
		settleErr = r.retryTransient(func() error { return c.ack(ctx, nil, []*lease{d.lease}) }) // in order: the next row waits for it
	case r.handlerCtx.Err() != nil && errors.Is(err, context.Canceled):
		settleErr = c.release(ctx, []*lease{d.lease})
	default:
		settleErr = r.retryTransient(func() error { return c.fail(ctx, nil, []*lease{d.lease}, []error{err}) })
		c.client.logger.Debug("sqlstreams: handler failed", "stream", c.stream.Name, "group", c.name, "id", d.ID, "attempt", d.Attempt, "error", err)
	}
	if settleErr != nil {
		reason := "error"
		if errors.Is(settleErr, ErrLeaseLost) {
			reason = "lease lost"
		}
		c.client.logger.Warn("sqlstreams: could not record outcome; the delivery will be retried when its lease expires",
			"stream", c.stream.Name, "group", c.name, "id", d.ID, "reason", reason, "error", settleErr)
		return false
	}
	return err == nil
}

// retryTransient runs settle again after errors that say the database was
// briefly unreachable or busy, a few times within the operation timeout's
// context, before the caller lets the lease lapse.
func (r *runner[T]) retryTransient(settle func() error) error {
	backoff := 50 * time.Millisecond
	unknown := false
	for attempt := 1; ; attempt++ {
		err := settle()
		if unknown && errors.Is(err, ErrLeaseLost) {
			// An earlier attempt whose outcome was unknown most likely
			// recorded it: the lease is gone because it was settled.
			return nil
		}
		if err == nil || attempt == 4 || !transient(err) {
			return err
		}
		unknown = unknown || errors.Is(err, ErrOutcomeUnknown)
		time.Sleep(backoff)
		backoff *= 2
	}
}

// transient reports errors after which the same settle may succeed.
func transient(err error) bool {
	return errors.Is(err, ErrUnavailable) || errors.Is(err, ErrConflict) || errors.Is(err, ErrOutcomeUnknown)
}

// call runs the handler on d, through the handle middleware if there is
// any. Without middleware it calls the handler directly: a closure over d
// would move every delivery to the heap.
func (r *runner[T]) call(d Delivery[T]) error {
	if len(r.c.handleMW) == 0 {
		return r.invoke(r.handlerCtx, d)
	}
	return r.callThrough(d)
}

// invoke runs the handler; a panic becomes its error.
func (r *runner[T]) invoke(ctx context.Context, d Delivery[T]) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &PanicError{Value: p, Stack: string(debug.Stack())}
		}
	}()
	return r.handle(ctx, d)
}

// callThrough runs the handler inside the middleware. A panic becomes the
// handler's error inside it (invoke), so that the middleware sees it as the
// outcome, and outside it, for a middleware's own.
func (r *runner[T]) callThrough(d Delivery[T]) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &PanicError{Value: p, Stack: string(debug.Stack())}
		}
	}()
	info := infoOf(r.c.stream.Name, r.c.name, driver.Row{ID: d.ID, Partition: d.Partition, SchemaVersion: d.SchemaVersion,
		CompactionRank: d.CompactionRank, Key: d.Key, RoutingKey: d.RoutingKey, Headers: d.Headers, ProducedAt: d.ProducedAt}, d.Attempt)
	info.PayloadSize = d.lease.size
	return handleThrough(r.handlerCtx, r.c.handleMW, &info, func(ctx context.Context) error { return r.invoke(ctx, d) })
}

// enqueueAck hands a resolved delivery to the completer; it reports false
// once the completer has stopped (Run returned with this handler left
// behind), and the caller records the ack itself.
func (r *runner[T]) enqueueAck(l *lease) bool {
	r.ackMu.Lock()
	defer r.ackMu.Unlock()
	if r.acksShut {
		return false
	}
	r.acks = append(r.acks, l)
	select {
	case r.ackWake <- struct{}{}:
	default:
	}
	return true
}

// complete records acks in batches: whatever resolved while the previous
// batch was being written goes in the next one. Under load that turns a
// transaction per delivery into one per claimed batch; when idle, an ack is
// written at once. A batch that fails on a transient error is written again
// while its leases last, so that a brief outage does not make successful
// deliveries run again.
func (r *runner[T]) complete() {
	defer close(r.acksDone)
	for {
		stop := false
		select {
		case <-r.ackWake:
			stop = r.linger()
		case <-r.ackStop:
			stop = true
		}
		r.ackMu.Lock()
		batch, unknown := r.acks, r.ackUnknown
		r.acks, r.ackUnknown = nil, false
		if stop {
			r.acksShut = true
		}
		handed := r.handOff(batch, stop, unknown)
		r.ackMu.Unlock()
		if handed {
			r.pokeClaimLoop()
			continue
		}
		for len(batch) > 0 {
			n := min(len(batch), maxAutoBatch)
			start := time.Now()
			r.writeAcks(batch[:n], unknown)
			r.lastWrite = time.Since(start)
			batch = batch[n:]
		}
		if stop {
			return
		}
	}
}

// linger lets acks gather before the completer writes them: while other
// held deliveries may still resolve, it waits for them as long as the last
// write took (at most 2ms), so that one statement carries a claimed batch's
// acks instead of the first few. It reports whether Run is stopping.
func (r *runner[T]) linger() (stop bool) {
	t := time.NewTimer(min(r.lastWrite, 2*time.Millisecond))
	defer t.Stop()
	for {
		r.ackMu.Lock()
		pending := len(r.acks)
		r.ackMu.Unlock()
		r.mu.Lock()
		held := len(r.held) // pending acks are still held
		r.mu.Unlock()
		if pending == 0 || pending >= held || pending >= maxAutoBatch {
			return false
		}
		select {
		case <-r.ackWake:
		case <-t.C:
			return false
		case <-r.ackStop:
			return true
		}
	}
}

// writeAcks records the acks of batch; unknown says an earlier attempt at
// some of them (a claim that carried them) has an unknown outcome.
func (r *runner[T]) writeAcks(batch []*lease, unknown bool) {
	defer r.done(batch...)
	deadline := time.Unix(0, slices.MinFunc(batch, func(a, b *lease) int { return int(a.until.Load() - b.until.Load()) }).until.Load())
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		ctx, cancel := r.c.client.opContext(r.settleBase)
		err := r.c.ack(ctx, nil, batch)
		cancel()
		var se *SettleError
		switch {
		case err == nil:
			return
		case errors.As(err, &se) && unknown:
			r.c.client.logger.Debug("sqlstreams: acks not found after an attempt whose outcome was unknown; it most likely recorded them",
				"stream", r.c.stream.Name, "group", r.c.name, "ids", se.Lost)
			return
		case errors.As(err, &se):
			r.warnLostAcks(se.Lost)
			return
		case transient(err) && time.Now().Add(backoff).Before(deadline):
			unknown = unknown || errors.Is(err, ErrOutcomeUnknown)
			r.c.client.logger.Warn("sqlstreams: writing acks failed; retrying", "stream", r.c.stream.Name, "group", r.c.name,
				"deliveries", len(batch), "attempt", attempt, "error", err)
			time.Sleep(backoff)
			backoff = min(2*backoff, 2*time.Second)
		default:
			r.c.client.logger.Warn("sqlstreams: could not record acks; those deliveries will be retried when their leases expire",
				"stream", r.c.stream.Name, "group", r.c.name, "deliveries", len(batch), "error", err)
			return
		}
	}
}

// heartbeat extends the leases of held deliveries, queued, running or
// waiting for their ack, every third of the lease. Each lease is extended on
// its own: one that was lost (compacted away, or taken over) neither fails
// the others nor is extended again. A failed extension is retried soon, while
// the leases last.
func (r *runner[T]) heartbeat(ctx context.Context) {
	every := max(r.c.opts.LeaseDuration/3, time.Millisecond)
	wait := every
	t := time.NewTimer(wait)
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
			if s := l.state.Load(); s == leaseOpen || s == leaseSettling {
				ls = append(ls, l)
			}
		}
		r.mu.Unlock()
		wait = every
		if len(ls) > 0 {
			ectx, cancel := r.c.client.opContext(ctx)
			err := r.c.extend(ectx, ls, r.c.opts.LeaseDuration, true)
			cancel()
			var se *SettleError
			switch {
			case err == nil || ctx.Err() != nil:
			case errors.As(err, &se):
				if len(se.Lost) > 0 {
					r.c.client.logger.Warn("sqlstreams: leases lost; another member may now hold those deliveries",
						"stream", r.c.stream.Name, "group", r.c.name, "lost", se.Lost)
				}
			default:
				wait = max(every/4, time.Millisecond)
				r.c.client.logger.Warn("sqlstreams: extending leases failed; retrying", "stream", r.c.stream.Name, "group", r.c.name,
					"retry_in", wait, "error", err)
			}
		}
		t.Reset(wait)
	}
}
