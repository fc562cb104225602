package mysql

import (
	"context"
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
	s, _ := d.watching.Join(p.StreamID, p)
	defer d.watching.Leave(p.StreamID, s)
	select {
	case <-ctx.Done():
		return nil
	case <-s.Lead():
		return d.watchMarks(ctx, p.StreamID)
	}
}

// watchMarks reads the stream's marks until ctx ends, waking its
// subscribers whenever they moved. Reads start a period apart, or further
// when one took over half of it. A failed read is tried again after a
// backoff (the wake-ups are hints, and the consumers keep polling); it ends
// only when the driver closed.
func (d *Driver) watchMarks(ctx context.Context, stream int64) error {
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
		mark, err := d.marks(ctx, stream)
		period := watchPeriod(d.watching.Poll(stream, defaultWatchPoll))
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
		d.watching.Observe(stream, mark)
		// A read that took longer than half the period (a server
		// overloaded) is followed by as long a pause: the watch never keeps
		// a statement in flight more than half the time.
		took := time.Since(start)
		t.Reset(max(period-took, took))
	}
}

// watchPeriod is how long after a read of a stream's marks the next
// begins, for subscribers that poll at most every poll.
func watchPeriod(poll time.Duration) time.Duration {
	return min(max(poll/watchesPerPoll, minWatchPeriod), maxWatchPeriod)
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

// watches are a driver's readers of its subscribed streams' marks, by
// stream id.
type watches = driver.Subscribers[int64]
