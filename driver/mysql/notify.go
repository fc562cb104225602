package mysql

import (
	"context"
	"sync"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Wake-ups across processes. MySQL and MariaDB have no LISTEN/NOTIFY, so a
// consumer in another process would see an append only at its next poll: on
// average half a PollInterval after it, plus the claim. Instead the driver
// watches the stream itself: one statement that reads the stream's
// greatest id (an index dive, no lock), several times per poll interval,
// per stream and driver whatever the number of its subscribers; when it
// moves, every subscriber is woken and claims at once. It is much cheaper
// than the poll's claim, which also reads the group, its cursors and its
// due exceptions, so reading it more often than the poll buys latency at a
// fraction of the cost of a shorter poll (docs/benchmarks.md, "MariaDB
// wake-ups").
//
// The greatest id misses an append that commits after a greater id of
// another partition committed (ids are in commit order per partition only,
// C5): two appends to different partitions at once, one of which the other
// hides. The claim the other's wake-up brings takes both when it begins
// after both committed; otherwise the poll finds the hidden one, as it finds
// everything without wake-ups. Retention that removes the newest rows makes
// the greatest id fall, which wakes the subscribers once for nothing.

var _ driver.Notifier = (*Driver)(nil)

// watchesPerPoll is how many times per PollInterval a stream's marks are
// read: an append waits for the next read, on average an eighth of the
// interval, instead of half of it for the next poll (docs/decisions.md,
// "MariaDB wake-ups").
const watchesPerPoll = 4

// minWatchPeriod and maxWatchPeriod bound the time between two reads of a
// stream's marks whatever the poll interval: a consumer that polls rarely
// (or only for due retries, relying on wake-ups) still hears of an append
// within a second, as on the engines that notify, for a statement a second.
const (
	minWatchPeriod = time.Millisecond
	maxWatchPeriod = time.Second
)

// defaultWatchPoll stands for the poll interval of a subscriber that gave
// none: core's default.
const defaultWatchPoll = 500 * time.Millisecond

// maxWatchBackoff caps the wait between reads while they fail.
const maxWatchBackoff = 30 * time.Second

// Subscribe implements driver.Notifier: it wakes p.Wake when another
// process (or this one) appends to the stream, until ctx ends. The
// subscribers of one stream on this driver share one reader of its marks:
// the first one reads for all of them, at the period of the one that polls
// most often, and when it leaves another takes over.
func (d *Driver) Subscribe(ctx context.Context, p driver.SubscribeParams) error {
	if err := d.check(); err != nil {
		return err
	}
	w, s := d.watching.join(watchKey{stream: p.StreamID}, p)
	defer d.watching.leave(w, s)
	select {
	case <-ctx.Done():
		return nil
	case <-s.lead:
		return d.watchMarks(ctx, w)
	}
}

// watchMarks reads the stream's marks until ctx ends, waking w's
// subscribers whenever they moved. Reads start a period apart, or further
// when one took over half of it. A failed read is tried again after a backoff (the wake-ups are
// hints, and the consumers keep polling); it ends only when the driver
// closed.
func (d *Driver) watchMarks(ctx context.Context, w *watch) error {
	t := time.NewTimer(0)
	defer t.Stop()
	fails := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		start := time.Now()
		mark, err := d.marks(ctx, w.key.stream)
		period := d.watching.period(w)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			if cerr := d.check(); cerr != nil {
				return cerr
			}
			fails++
			t.Reset(min(period<<min(fails, 16), maxWatchBackoff))
			continue
		}
		fails = 0
		for _, wake := range d.watching.observe(w, mark) {
			wake()
		}
		// A read that took longer than half the period (a server
		// overloaded) is followed by as long a pause: the watch never keeps
		// a statement in flight more than half the time.
		took := time.Since(start)
		t.Reset(max(period-took, took))
	}
}

// marks is the greatest id in the stream's log: one dive to the end of its
// primary key, as cheap as a statement gets (a sum of each partition's
// greatest id, a loose index scan, took 15 to 80 times as long on 16
// partitions). It runs in autocommit, so each read sees what was committed
// when it began.
func (d *Driver) marks(ctx context.Context, streamID int64) (int64, error) {
	var top int64
	err := d.db.QueryRowContext(ctx, "SELECT COALESCE(MAX(id), 0) FROM "+logTable(streamID)).Scan(&top)
	return top, err
}

// watchKey names what one reader of a driver watches: a stream.
type watchKey struct {
	stream int64
}

// watch is a stream's reader and the subscribers it wakes.
type watch struct {
	key    watchKey
	subs   map[*subscriber]struct{}
	reader *subscriber // the subscriber whose Subscribe reads the marks
	mark   int64       // the marks as last read
	known  bool        // mark was read
}

// subscriber is one Subscribe call.
type subscriber struct {
	wake   func()
	period time.Duration
	// lead receives once when this subscriber is to read for all of them.
	lead chan struct{}
}

// watches are a driver's readers, by stream. A watch is removed with its
// last subscriber, so it holds only streams with subscriptions running.
type watches struct {
	mu sync.Mutex
	m  map[watchKey]*watch
}

// join adds a subscriber to the watch of key, creating it. The first
// subscriber of a watch, or the first after its reader left, is told to
// lead.
func (ws *watches) join(key watchKey, p driver.SubscribeParams) (*watch, *subscriber) {
	poll := p.PollInterval
	if poll <= 0 {
		poll = defaultWatchPoll
	}
	s := &subscriber{wake: p.Wake, period: min(max(poll/watchesPerPoll, minWatchPeriod), maxWatchPeriod), lead: make(chan struct{}, 1)}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.m == nil {
		ws.m = map[watchKey]*watch{}
	}
	w := ws.m[key]
	if w == nil {
		w = &watch{key: key, subs: map[*subscriber]struct{}{}}
		ws.m[key] = w
	}
	w.subs[s] = struct{}{}
	if w.reader == nil {
		w.reader = s
		s.lead <- struct{}{}
	}
	return w, s
}

// leave removes a subscriber; when it was the reader, another subscriber
// takes over, with the marks as last read.
func (ws *watches) leave(w *watch, s *subscriber) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	delete(w.subs, s)
	if w.reader == s {
		w.reader = nil
		for next := range w.subs {
			w.reader = next
			next.lead <- struct{}{}
			break
		}
	}
	if len(w.subs) == 0 {
		delete(ws.m, w.key)
	}
}

// period is how long after a read of w's marks the next begins: the
// shortest its subscribers asked for.
func (ws *watches) period(w *watch) time.Duration {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	p := maxWatchPeriod
	for s := range w.subs {
		p = min(p, s.period)
	}
	return p
}

// observe records a read of w's marks and returns the wake-ups to call: all
// subscribers' when the marks moved since the last read. The first read
// wakes nobody: each subscriber's consumer claims when it starts.
func (ws *watches) observe(w *watch, mark int64) []func() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	moved := w.known && mark != w.mark
	w.mark, w.known = mark, true
	if !moved {
		return nil
	}
	wakes := make([]func(), 0, len(w.subs))
	for s := range w.subs {
		wakes = append(wakes, s.wake)
	}
	return wakes
}
