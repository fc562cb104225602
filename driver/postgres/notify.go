package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Subscribe implements driver.Notifier. Wake-ups are hints: the listener
// wakes every subscriber after it (re)connects, since notifications sent
// while it was away are lost, and consumers keep polling regardless.
func (d *Driver) Subscribe(ctx context.Context, p driver.SubscribeParams) error {
	if err := d.check(); err != nil {
		return err
	}
	wake := p.Wake
	ch := d.channel(p.StreamID)
	if ch == "" { // WithoutNotify: polling only
		<-ctx.Done()
		return nil
	}
	d.mu.Lock()
	if d.closed.Load() {
		d.mu.Unlock()
		return d.check()
	}
	if d.lis == nil {
		d.lis = newListener(d)
	}
	lis := d.lis
	s := &subscription{wake: wake, stream: p.StreamID}
	lis.add(ch, s)
	d.mu.Unlock()
	defer lis.remove(ch, s)
	select {
	case <-ctx.Done():
	case <-lis.done:
	}
	return nil
}

type subscription struct {
	wake   func()
	stream int64
}

// notifyEvery is the producer-side debounce: a process sends at most one
// NOTIFY per stream in this interval from its own appends. An append inside
// the interval carries none; once it has committed it makes sure one follows
// at the interval's end, so a burst's last rows still wake consumers
// promptly. NOTIFY is worth debouncing: PostgreSQL serializes the commits of
// all notifying transactions of a cluster on one lock, held through the
// commit's WAL flush.
const notifyEvery = 5 * time.Millisecond

type notifyState struct {
	mu      sync.Mutex
	last    time.Time
	pending bool
}

func (d *Driver) notifyState(streamID int64) *notifyState {
	v, _ := d.notifyStates.LoadOrStore(streamID, &notifyState{})
	return v.(*notifyState)
}

// notifyNow reports whether an append to the stream should carry a NOTIFY
// in its own transaction. One that does not must call notifyAfterCommit
// once it has committed.
func (d *Driver) notifyNow(streamID int64) bool {
	if !d.notify {
		return false
	}
	s := d.notifyState(streamID)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if now.Sub(s.last) >= notifyEvery {
		s.last = now
		return true
	}
	return false
}

// notifyAfterCommit makes sure a NOTIFY follows an append that carried none,
// at the debounce interval's end. It runs after that append committed, and
// so does the trailing NOTIFY: either this call schedules it, or a scheduled
// one has yet to take the lock this call holds, and sends after it. (A
// trailing NOTIFY scheduled before the commit could arrive first, wake the
// consumers to find nothing, and leave the rows waiting for a poll.)
func (d *Driver) notifyAfterCommit(streamID int64) {
	if !d.notify {
		return
	}
	s := d.notifyState(streamID)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending {
		return
	}
	s.pending = true
	time.AfterFunc(max(notifyEvery-time.Since(s.last), 0), func() {
		s.mu.Lock()
		s.pending, s.last = false, time.Now()
		s.mu.Unlock()
		ch := d.channel(streamID)
		if ch == "" || d.check() != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = d.pool.Exec(ctx, notifyAlone, []string{ch}) // a hint: polling covers a failure
	})
}

// notifyAlone notifies the channels $1 from a transaction of its own, the
// trailing NOTIFY of a burst and txWakes' wake-ups, which commits without
// waiting for the WAL flush (synchronous_commit off for it alone). It writes
// no rows, so a crash can lose only the hint, which polling covers (and a
// listener wakes every subscriber when it connects again); and PostgreSQL
// holds its cluster-wide lock of notifying commits through that commit's
// flush, which this one then does not wait for: the wake-up leaves a flush
// sooner, and every other notifying commit of the cluster waits less.
const notifyAlone = `SELECT pg_notify(c, '') FROM set_config('synchronous_commit', 'off', true), unnest($1::text[]) AS c`

// Wake-ups for rows produced in callers' transactions. Such a transaction
// carries no NOTIFY: PostgreSQL serializes the commits of all notifying
// transactions of a database on one lock held through the commit's WAL
// flush, so 8 committers on 8 partitions lost a quarter of their rate to it.
// Instead the append reports its transaction id, and one goroutine per
// driver asks the server which of the reported transactions have ended
// (pg_xact_status, one statement for all of them) and sends one NOTIFY per
// stream with committed rows, from a transaction of its own. A consumer is
// woken only once the rows are visible: pg_xact_status says "committed"
// only after the transaction has left the running set, so a snapshot taken
// on the wake-up sees its rows. Rolled-back transactions are dropped
// without a wake-up. Consumers keep polling, so a check that fails, or a
// transaction left open past txWakeMaxAge, costs latency only.
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
// producing, as most do, is seen within about the time it took, not at the
// next notifyEvery (the checks at 1, 6, 11 ms saw a commit at 1.5 ms at
// 6 ms; now at 1, 3, 7, 12 ms); one that stays open is checked every
// notifyEvery, as before, and so are the transactions of a steady flow of
// ProduceTx calls, whose wake-ups coalesce as the driver's own appends'.
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

// listener holds one LISTEN connection for all subscriptions of a driver.
type listener struct {
	d      *Driver
	mu     sync.Mutex
	subs   map[string]map[*subscription]struct{}
	kick   chan struct{} // the channel set changed
	cancel context.CancelFunc
	done   chan struct{}
}

func newListener(d *Driver) *listener {
	ctx, cancel := context.WithCancel(context.Background())
	l := &listener{d: d, subs: map[string]map[*subscription]struct{}{}, kick: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	go l.run(ctx)
	return l
}

func (l *listener) stop() {
	l.cancel()
	<-l.done
}

func (l *listener) add(ch string, s *subscription) {
	l.mu.Lock()
	if l.subs[ch] == nil {
		l.subs[ch] = map[*subscription]struct{}{}
	}
	l.subs[ch][s] = struct{}{}
	fresh := len(l.subs[ch]) == 1
	l.mu.Unlock()
	if fresh {
		l.poke()
	}
}

func (l *listener) remove(ch string, s *subscription) {
	l.mu.Lock()
	delete(l.subs[ch], s)
	if len(l.subs[ch]) == 0 {
		delete(l.subs, ch)
	}
	l.mu.Unlock()
	// Stale LISTENs are dropped at the next change; they cost nothing.
}

func (l *listener) poke() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

func (l *listener) channels() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.subs))
	for ch := range l.subs {
		out = append(out, ch)
	}
	return out
}

// wake wakes the subscribers of ch, noting first that the stream was
// notified, so that the claims they make skip their probe (wakeclaim.go).
func (l *listener) wake(ch string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for s := range l.subs[ch] {
		l.d.wakes.notifiedFor(s.stream)
		s.wake()
	}
}

func (l *listener) wakeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, subs := range l.subs {
		for s := range subs {
			s.wake()
		}
	}
}

func (l *listener) run(ctx context.Context) {
	defer close(l.done)
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		connected, _ := l.session(ctx)
		if ctx.Err() != nil {
			return
		}
		// Notifications sent while the connection was down are lost.
		l.wakeAll()
		if connected {
			backoff = 50 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// session runs one LISTEN connection until it fails or ctx ends.
func (l *listener) session(ctx context.Context) (connected bool, err error) {
	cfg := l.d.listen.Copy()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return false, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	listening := map[string]bool{}
	for {
		want := map[string]bool{}
		for _, ch := range l.channels() {
			want[ch] = true
			if !listening[ch] {
				if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{ch}.Sanitize()); err != nil {
					return true, err
				}
				listening[ch] = true
				// Rows may have been appended before the LISTEN took effect.
				l.wake(ch)
			}
		}
		for ch := range listening {
			if !want[ch] {
				if _, err := conn.Exec(ctx, `UNLISTEN `+pgx.Identifier{ch}.Sanitize()); err != nil {
					return true, err
				}
				delete(listening, ch)
			}
		}
		wctx, cancel := context.WithCancel(ctx)
		kicked := make(chan struct{})
		go func() {
			select {
			case <-l.kick:
				close(kicked)
				cancel()
			case <-wctx.Done():
			}
		}()
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return true, ctx.Err()
			}
			select {
			case <-kicked:
				if conn.IsClosed() {
					return true, errors.New("listener connection closed")
				}
				continue
			default:
				return true, err
			}
		}
		if n != nil {
			l.wake(n.Channel)
		}
		// Take every notification already received in one go: a burst of
		// appends becomes one wake-up per stream.
		for {
			pctx, pcancel := context.WithTimeout(ctx, 0)
			n, err := conn.WaitForNotification(pctx)
			pcancel()
			if err != nil || n == nil {
				break
			}
			l.wake(n.Channel)
		}
		if conn.IsClosed() {
			return true, errors.New("listener connection closed")
		}
	}
}
