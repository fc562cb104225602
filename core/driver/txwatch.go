package driver

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

const (
	// TxWatchFirst is the first check after an idle spell: a caller
	// usually commits right after producing.
	TxWatchFirst = time.Millisecond
	// TxWatchMaxAge bounds how long a transaction is watched.
	TxWatchMaxAge = 10 * time.Minute
	// TxWatchMax bounds how many transactions are watched at once; past it
	// the oldest are dropped.
	TxWatchMax = 10000
)

// TxWatch watches callers' transactions that wrote rows (ProduceTx) until
// they end, so that a driver wakes consumers after a commit rather than
// from inside it. One goroutine checks all of them at once: TxWatchFirst
// after an idle spell, then at intervals that double up to the driver's
// every (a transaction that commits soon is seen within about the time it
// took; a steady flow is checked every interval), 100 intervals after a
// failed check (the server is away). It ends when none is left, when a
// check fails with ErrClosed, or at Close. Consumers poll, so a dropped
// wake-up costs latency only. The zero value is ready to use.
type TxWatch[T any] struct {
	mu      sync.Mutex
	pending []watched[T]
	seq     uint64
	running bool
	manual  bool // tests run the checks themselves (Pass)
	closed  bool
	// stop ends the checker and its statements; Close then waits for it
	// (done), so that no goroutine of the driver outlives it.
	ctx  context.Context
	stop context.CancelFunc
	done sync.WaitGroup
	// The clock, the timer and TxWatchMax, replaced by tests.
	now   func() time.Time
	after func(time.Duration) <-chan time.Time
	max   int
}

type watched[T any] struct {
	item  T
	since time.Time
	seq   uint64
}

// TxCheck checks the watched items once, reporting those that ended
// (ended[i] for items[i]), even along an error. An interface, not a func:
// a driver passes a pointer, which Add takes without allocating.
type TxCheck[T any] interface {
	Check(ctx context.Context, items []T) (ended []bool, err error)
}

// Add watches item; the checker, started if none runs, checks with check
// at intervals up to every.
func (w *TxWatch[T]) Add(item T, every time.Duration, check TxCheck[T]) {
	w.mu.Lock()
	defer w.mu.Unlock()
	limit := cmp.Or(w.max, TxWatchMax)
	if len(w.pending) >= limit {
		w.pending = slices.Delete(w.pending, 0, len(w.pending)-limit+1)
	}
	if w.closed {
		return
	}
	w.seq++
	w.pending = append(w.pending, watched[T]{item: item, since: w.clock(), seq: w.seq})
	if !w.running && !w.manual {
		if w.stop == nil {
			w.ctx, w.stop = context.WithCancel(context.Background())
		}
		w.running = true
		ctx := w.ctx
		w.done.Go(func() { w.run(ctx, every, check) })
	}
}

// Manual stops Add from starting the checker: a test runs each Pass.
func (w *TxWatch[T]) Manual() {
	w.mu.Lock()
	w.manual = true
	w.mu.Unlock()
}

// Close stops the checker and waits for it; the items still watched are
// dropped.
func (w *TxWatch[T]) Close() {
	w.mu.Lock()
	w.closed = true
	if w.stop != nil {
		w.stop()
	}
	w.mu.Unlock()
	w.done.Wait()
}

func (w *TxWatch[T]) clock() time.Time {
	if w.now != nil {
		return w.now()
	}
	return time.Now()
}

func (w *TxWatch[T]) run(ctx context.Context, every time.Duration, check TxCheck[T]) {
	after := w.after
	if after == nil {
		after = time.After
	}
	delay, wait := TxWatchFirst, TxWatchFirst
	for {
		select {
		case <-ctx.Done():
			return
		case <-after(wait):
		}
		_, err := w.Pass(ctx, check)
		delay = min(2*delay, every)
		wait = delay
		if err != nil {
			wait = 100 * every
		}
		w.mu.Lock()
		if len(w.pending) == 0 || errors.Is(err, ErrClosed) {
			w.pending, w.running = nil, false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
	}
}

// Pass checks the watched items once, stops watching those that ended or
// are older than TxWatchMaxAge, and reports how many it still watches.
func (w *TxWatch[T]) Pass(ctx context.Context, check TxCheck[T]) (left int, err error) {
	w.mu.Lock()
	batch := slices.Clone(w.pending)
	w.mu.Unlock()
	if len(batch) == 0 {
		return 0, nil
	}
	items := make([]T, len(batch))
	for i, p := range batch {
		items[i] = p.item
	}
	ended, err := check.Check(ctx, items)
	gone := map[uint64]bool{}
	for i, e := range ended[:min(len(ended), len(batch))] {
		gone[batch[i].seq] = e
	}
	now := w.clock()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending = slices.DeleteFunc(w.pending, func(p watched[T]) bool { return gone[p.seq] || now.Sub(p.since) > TxWatchMaxAge })
	return len(w.pending), err
}
