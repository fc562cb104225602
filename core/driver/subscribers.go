package driver

import (
	"sync"
	"time"
)

// Subscribers are a driver's Subscribe calls by what wakes them (a
// notification channel, a stream, a file): the fan-out of a wake-up to
// every subscriber of a key, and one reader per key for a driver that must
// read to learn of appends. The first subscriber of a key is told to Lead
// and reads for all of them; when it leaves, another takes over, with the
// mark as last read. The zero value is ready to use.
type Subscribers[K comparable] struct {
	mu   sync.Mutex
	keys map[K]*subscribed
}

// subscribed are the subscribers of one key.
type subscribed struct {
	subs   map[*Subscriber]struct{}
	reader *Subscriber
	mark   int64 // as last read (Observe)
	known  bool
}

// Subscriber is one Subscribe call.
type Subscriber struct {
	wake func()
	poll time.Duration
	lead chan struct{}
}

// Lead receives once when this subscriber is to read for all of its key's.
func (s *Subscriber) Lead() <-chan struct{} { return s.lead }

// Join adds a subscriber of key; first reports that key had none.
func (ss *Subscribers[K]) Join(key K, p SubscribeParams) (s *Subscriber, first bool) {
	s = &Subscriber{wake: p.Wake, poll: p.PollInterval, lead: make(chan struct{}, 1)}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.keys == nil {
		ss.keys = map[K]*subscribed{}
	}
	k := ss.keys[key]
	if k == nil {
		k = &subscribed{subs: map[*Subscriber]struct{}{}}
		ss.keys[key] = k
	}
	k.subs[s] = struct{}{}
	if k.reader == nil {
		k.reader = s
		s.lead <- struct{}{}
	}
	return s, len(k.subs) == 1
}

// Leave removes a subscriber of key; another takes over when it was the
// reader. Once it returns, s is woken no more.
func (ss *Subscribers[K]) Leave(key K, s *Subscriber) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	k := ss.keys[key]
	if k == nil {
		return
	}
	delete(k.subs, s)
	if k.reader == s {
		k.reader = nil
		for next := range k.subs {
			k.reader = next
			next.lead <- struct{}{}
			break
		}
	}
	if len(k.subs) == 0 {
		delete(ss.keys, key)
	}
}

// Keys are the keys with subscribers.
func (ss *Subscribers[K]) Keys() []K {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	out := make([]K, 0, len(ss.keys))
	for key := range ss.keys {
		out = append(out, key)
	}
	return out
}

// Wake wakes the subscribers of key.
func (ss *Subscribers[K]) Wake(key K) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if k := ss.keys[key]; k != nil {
		k.wakeAll()
	}
}

// WakeAll wakes every subscriber, as after wake-ups may have been lost.
func (ss *Subscribers[K]) WakeAll() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, k := range ss.keys {
		k.wakeAll()
	}
}

func (k *subscribed) wakeAll() {
	for s := range k.subs {
		s.wake()
	}
}

// Observe records a read of key's mark (the newest id, say) and wakes its
// subscribers when it moved since the last read. The first read wakes
// nobody: each subscriber's consumer claims when it starts.
func (ss *Subscribers[K]) Observe(key K, mark int64) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	k := ss.keys[key]
	if k == nil {
		return
	}
	moved := k.known && mark != k.mark
	k.mark, k.known = mark, true
	if moved {
		k.wakeAll()
	}
}

// Poll is the shortest PollInterval of key's subscribers, counting one
// that gave none as unknown (and unknown when key has none).
func (ss *Subscribers[K]) Poll(key K, unknown time.Duration) time.Duration {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	k := ss.keys[key]
	if k == nil || len(k.subs) == 0 {
		return unknown
	}
	p := time.Duration(1<<63 - 1)
	for s := range k.subs {
		if s.poll <= 0 {
			p = min(p, unknown)
		} else {
			p = min(p, s.poll)
		}
	}
	return p
}
