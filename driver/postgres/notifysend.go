package postgres

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// notifyEvery is the producer-side debounce (driver.Debounce): a process
// sends at most one NOTIFY per stream in this interval from its own
// appends, and a trailing one after a burst. NOTIFY is worth debouncing:
// PostgreSQL serializes the commits of all notifying transactions of a
// cluster on one lock, held through the commit's WAL flush.
const notifyEvery = 5 * time.Millisecond

func (d *Driver) notifyState(streamID int64) *driver.Debounce {
	v, _ := d.notifyStates.LoadOrStore(streamID, &driver.Debounce{})
	return v.(*driver.Debounce)
}

// notifyNow reports whether an append to the stream should carry a NOTIFY
// in its own transaction. One that does not must call notifyAfterCommit
// once it has committed.
func (d *Driver) notifyNow(streamID int64) bool {
	return d.notify && d.notifyState(streamID).Now(notifyEvery)
}

// notifyAfterCommit makes sure a NOTIFY follows an append that carried
// none, at the debounce interval's end.
func (d *Driver) notifyAfterCommit(streamID int64) {
	if !d.notify {
		return
	}
	d.notifyState(streamID).After(notifyEvery, func() {
		ch := d.channel(streamID)
		if ch == "" || d.check() != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = d.pool.Exec(ctx, notifyAlone, []string{ch}) // a hint: polling covers a failure
	})
}

// notifyAlone notifies the channels $1 (a burst's trailing NOTIFY,
// txWakes') from a transaction of its own that commits without waiting for
// the WAL flush (synchronous_commit off for it alone): it writes no rows, so
// a crash can lose only the hint, which polling covers; and the lock of
// notifying commits (notifyEvery) is then held through no flush, so the
// wake-up leaves sooner and every other notifying commit waits less.
const notifyAlone = `SELECT pg_notify(c, '') FROM set_config('synchronous_commit', 'off', true), unnest($1::text[]) AS c`

// Wake-ups for rows produced in callers' transactions. Such a transaction
// carries no NOTIFY (its lock, notifyEvery, cost 8 committers on 8
// partitions a quarter of their rate). Instead the append reports its
// transaction id, and one goroutine per driver asks the server which of the
// reported transactions have ended (pg_xact_status, one statement for all
// of them) and sends one NOTIFY per stream with committed rows, from a
// transaction of its own. A consumer is woken only once the rows are
// visible: pg_xact_status says "committed" only after the transaction has
// left the running set, so a snapshot taken on the wake-up sees its rows.
// Rolled-back transactions are dropped without a wake-up. Consumers keep
// polling, so a check that fails, or a transaction left open past
// txWakeMaxAge, costs latency only.
const (
	// txWakeFirst is the first check after an idle spell: a caller
	// usually commits right after producing.
	txWakeFirst = time.Millisecond
	// txWakeMaxAge bounds how long a transaction is watched.
	txWakeMaxAge = 10 * time.Minute
	// txWakeMax bounds how many transactions are watched at once; past it
	// the oldest are dropped.
	txWakeMax = 10000
)

type txWakes struct {
	mu      sync.Mutex
	pending []txWake
	running bool
	manual  bool // tests run the checks themselves (TxWakePass)
	// stop ends the checker and its statements: Close calls it, then waits
	// for the checker (done), so that no goroutine of the driver outlives it.
	ctx    context.Context
	stop   context.CancelFunc
	done   sync.WaitGroup
	closed bool
}

// closeTxWakes stops the checker and waits for it; wake-ups still pending
// are dropped (consumers poll).
func (d *Driver) closeTxWakes() {
	w := &d.txWakes
	w.mu.Lock()
	w.closed = true
	if w.stop != nil {
		w.stop()
	}
	w.mu.Unlock()
	w.done.Wait()
}

// txWakeAfter is the interval after a check that waited delay: twice as
// long, up to notifyEvery. A caller's transaction that commits soon after
// producing, as most do, is seen within about the time it took; one that
// stays open, and a steady flow of ProduceTx calls, are checked every
// notifyEvery, their wake-ups coalescing as the driver's own appends'.
func txWakeAfter(delay time.Duration) time.Duration {
	return min(2*delay, notifyEvery)
}

type txWake struct {
	channel, xid string
	since        time.Time
}

// wakeAfterCommit watches the caller's transaction xid that appended to the
// stream of channel ch, to wake its consumers once it has committed.
func (d *Driver) wakeAfterCommit(ch, xid string) {
	w := &d.txWakes
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pending) >= txWakeMax {
		w.pending = slices.Delete(w.pending, 0, len(w.pending)-txWakeMax+1)
	}
	if w.closed {
		return
	}
	w.pending = append(w.pending, txWake{channel: ch, xid: xid, since: time.Now()})
	if !w.running && !w.manual {
		if w.stop == nil {
			w.ctx, w.stop = context.WithCancel(context.Background())
		}
		w.running = true
		ctx := w.ctx
		w.done.Go(func() { d.runTxWakes(ctx) })
	}
}

// runTxWakes checks the watched transactions soon after the first arrives,
// then at intervals that double up to notifyEvery while any is left
// (txWakeAfter), and ends when none is.
func (d *Driver) runTxWakes(ctx context.Context) {
	delay := txWakeFirst
	timer := time.NewTimer(delay)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		left, err := d.txWakePass(ctx)
		delay = txWakeAfter(delay)
		if err != nil {
			timer.Reset(100 * notifyEvery) // the server is away: check less often
		} else {
			timer.Reset(delay)
		}
		w := &d.txWakes
		w.mu.Lock()
		if (left == 0 && len(w.pending) == 0) || d.check() != nil {
			w.pending, w.running = nil, false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
	}
}

// txWakePass checks the watched transactions once: it notifies the channel
// of every stream one of them committed rows to (once per stream), stops
// watching those that ended or are too old, and reports how many it still
// watches.
func (d *Driver) txWakePass(ctx context.Context) (left int, err error) {
	w := &d.txWakes
	w.mu.Lock()
	batch := slices.Clone(w.pending)
	w.mu.Unlock()
	if len(batch) == 0 {
		return 0, nil
	}
	if err := d.check(); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	xids := make([]string, len(batch))
	for i, p := range batch {
		xids[i] = p.xid
	}
	rows, err := d.pool.Query(ctx, `SELECT COALESCE(pg_xact_status(x::xid8), 'unknown') FROM unnest($1::text[]) WITH ORDINALITY AS u(x, ord) ORDER BY ord`, xids)
	var statuses []string
	if err == nil {
		statuses, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err == nil && len(statuses) != len(batch) {
		err = fmt.Errorf("%d statuses for %d transactions", len(statuses), len(batch))
	}
	done := map[string]bool{} // xids no longer watched
	var channels []string
	if err == nil {
		for i, st := range statuses {
			if st == "in progress" {
				continue
			}
			done[batch[i].xid] = true
			if st == "committed" && !slices.Contains(channels, batch[i].channel) {
				channels = append(channels, batch[i].channel)
			}
		}
		if len(channels) > 0 {
			// A hint: a failure here costs the consumers a poll.
			_, err = d.pool.Exec(ctx, notifyAlone, channels)
		}
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending = slices.DeleteFunc(w.pending, func(p txWake) bool { return done[p.xid] || now.Sub(p.since) > txWakeMaxAge })
	return len(w.pending), err
}
