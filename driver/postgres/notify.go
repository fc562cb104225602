package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"
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
	s, first := lis.subs.Join(ch, p)
	d.mu.Unlock()
	if first {
		lis.poke()
	}
	defer lis.subs.Leave(ch, s) // stale LISTENs are dropped at the next change; they cost nothing
	select {
	case <-ctx.Done():
	case <-lis.done:
	}
	return nil
}

// listener holds one LISTEN connection for all subscriptions of a driver.
type listener struct {
	d      *Driver
	subs   driver.Subscribers[string] // by channel
	kick   chan struct{}              // the channel set changed
	cancel context.CancelFunc
	done   chan struct{}
}

func newListener(d *Driver) *listener {
	ctx, cancel := context.WithCancel(context.Background())
	l := &listener{d: d, kick: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	go l.run(ctx)
	return l
}

func (l *listener) stop() {
	l.cancel()
	<-l.done
}

func (l *listener) poke() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// wake wakes the subscribers of ch, noting first that its stream was
// notified, so that the claims they make skip their probe (wakeclaim.go).
func (l *listener) wake(ch string) {
	if stream, ok := l.d.streamOf(ch); ok {
		l.d.wakes.notifiedFor(stream)
	}
	l.subs.Wake(ch)
}

// streamOf is the stream whose appends channel ch announces.
func (d *Driver) streamOf(ch string) (int64, bool) {
	d.mu.Lock()
	prefix := d.prefix
	d.mu.Unlock()
	rest, ok := strings.CutPrefix(ch, prefix)
	if !ok || prefix == "" {
		return 0, false
	}
	id, err := strconv.ParseInt(rest, 10, 64)
	return id, err == nil
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
		l.subs.WakeAll()
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
		for _, ch := range l.subs.Keys() {
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
