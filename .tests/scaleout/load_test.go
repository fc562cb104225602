package scaleout_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Msg is what the load produces: a sequence number unique per Produce call.
type Msg struct {
	Seq int64 `json:"seq"`
}

func (Msg) SchemaVersion() int { return 1 }

const (
	streamName = "scaleout.load"
	groupName  = "load"
	// callBound is the context deadline of every Produce call and the
	// client's operation timeout; callGrace is how much longer a call may
	// take to return before the test calls it hung.
	callBound = 5 * time.Second
	callGrace = 20 * time.Second
	// leaseDuration is the consumers' lease: long enough that a lease never
	// expires while its handler runs on this loaded machine, so a second
	// delivery before it ends means two members held the row at once.
	leaseDuration = 15 * time.Second
	pollInterval  = 100 * time.Millisecond
)

// loadSpec describes a load: where each producer and consumer connects.
type loadSpec struct {
	// Producers and Consumers open one client each, with the driver that
	// the function returns (i is the member's index).
	Producers, Consumers int
	Open                 func(i int) driver.Driver
	Partitions           int
	// Concurrency of each consumer's Run.
	Concurrency int
	// Batch makes each producer write batches of this many messages.
	Batch int
	// The first TxProducers producers produce with ProduceTx in a
	// transaction begun with BeginTx that they hold open for TxHold before
	// committing, so that transactions commit out of order.
	TxProducers int
	TxHold      time.Duration
	BeginTx     func(driver.Driver) (tx driver.Tx, commit, rollback func() error, err error)
}

// load runs producers and consumers (Run) of one group and records what
// happened: which Produce calls succeeded, which failed and how, every
// delivery, and the consumers' log records.
type load struct {
	t    testing.TB
	spec loadSpec
	logs *logCapture

	seq atomic.Int64

	mu       sync.Mutex
	produced map[int64]bool // seq of successful produces
	unknown  map[int64]bool // ErrOutcomeUnknown: may or may not be written
	refused  map[int64]bool // any other error: must not be written
	deliv    map[int64][]time.Time
	handled  []time.Time // when each delivery started, in order
	dupes    []string
	prodErrs map[string]int // error kind -> count
	errSeen  map[string]string
	hung     []string

	inflight sync.Map // producer index -> time.Time its call started

	stopProduce context.CancelFunc
	stopConsume context.CancelFunc
	producers   sync.WaitGroup
	consumers   sync.WaitGroup
	runErrs     chan error
	runsEnded   atomic.Int64

	firstErr, lastErr atomic.Int64 // unix nanos of producer errors
	lastOK            atomic.Int64
}

func startLoad(t testing.TB, spec loadSpec) *load {
	t.Helper()
	if spec.Partitions == 0 {
		spec.Partitions = 4
	}
	if spec.Concurrency == 0 {
		spec.Concurrency = 4
	}
	l := &load{t: t, spec: spec, logs: &logCapture{}, produced: map[int64]bool{}, unknown: map[int64]bool{}, refused: map[int64]bool{},
		deliv: map[int64][]time.Time{}, prodErrs: map[string]int{}, errSeen: map[string]string{}, runErrs: make(chan error, spec.Consumers)}
	ctx := context.Background()
	// Members of each role are spread over Open's indexes from a different
	// start, so that a producer and a consumer share no index pattern.
	roleOffset := map[string]int{"setup": 0, "producer": 0, "consumer": 1}
	open := func(i int, role string) *sqlstreams.Client {
		logger := slog.New(l.logs.handler(role, i))
		c, err := sqlstreams.Open(ctx, spec.Open(i+roleOffset[role]), sqlstreams.WithLogger(logger), sqlstreams.WithOperationTimeout(callBound),
			sqlstreams.WithIdentity(fmt.Sprintf("%s-%d", role, i)))
		if err != nil {
			t.Fatalf("open %s %d: %v", role, i, err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	setup := open(0, "setup")
	if _, err := setup.Stream[Msg](streamName).Create(ctx, &sqlstreams.StreamOptions{Partitions: spec.Partitions}); err != nil && !errors.Is(err, sqlstreams.ErrStreamExists) {
		t.Fatalf("create stream: %v", err)
	}
	if _, err := setup.Stream[Msg](streamName).Consumer(groupName).Register(ctx, nil); err != nil {
		t.Fatalf("register group: %v", err)
	}

	cctx, stopConsume := context.WithCancel(ctx)
	l.stopConsume = stopConsume
	for i := range spec.Consumers {
		c := open(i, "consumer")
		cons, err := c.Stream[Msg](streamName).Consumer(groupName).Register(ctx, &sqlstreams.ConsumerOptions{
			Concurrency: spec.Concurrency, LeaseDuration: leaseDuration, PollInterval: pollInterval,
			Backoff: sqlstreams.ExponentialBackoff(50*time.Millisecond, time.Second)})
		if err != nil {
			t.Fatalf("consumer %d: %v", i, err)
		}
		l.consumers.Go(func() {
			err := cons.Run(cctx, l.handle)
			l.runsEnded.Add(1)
			l.runErrs <- err
		})
	}
	pctx, stopProduce := context.WithCancel(ctx)
	l.stopProduce = stopProduce
	for i := range spec.Producers {
		c := open(i, "producer")
		p, err := c.Stream[Msg](streamName).Producer().Register(ctx, nil)
		if err != nil {
			t.Fatalf("producer %d: %v", i, err)
		}
		var begin func() (driver.Tx, func() error, func() error, error)
		if i < spec.TxProducers {
			begin = func() (driver.Tx, func() error, func() error, error) { return spec.BeginTx(c.Driver()) }
		}
		l.producers.Go(func() { l.produce(pctx, i, p, begin) })
	}
	t.Cleanup(func() { l.stop() })
	return l
}

func (l *load) handle(ctx context.Context, d sqlstreams.Delivery[Msg]) error {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, until := range l.deliv[d.Value.Seq] {
		if now.Before(until) {
			l.dupes = append(l.dupes, fmt.Sprintf("seq %d (row %d) delivered again at %s while an earlier delivery was leased until %s",
				d.Value.Seq, d.ID, now.Format(time.StampMicro), until.Format(time.StampMicro)))
		}
	}
	l.deliv[d.Value.Seq] = append(l.deliv[d.Value.Seq], d.LeaseExpires())
	l.handled = append(l.handled, now)
	return nil
}

func (l *load) produce(ctx context.Context, i int, p *sqlstreams.Producer[Msg], begin func() (driver.Tx, func() error, func() error, error)) {
	for ctx.Err() == nil {
		n := max(l.spec.Batch, 1)
		seqs := make([]int64, n)
		msgs := make([]sqlstreams.Message[Msg], n)
		for j := range seqs {
			seqs[j] = l.seq.Add(1)
			msgs[j] = sqlstreams.NewMessage(Msg{Seq: seqs[j]}, sqlstreams.Key(fmt.Sprint(seqs[j])))
		}
		callCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callBound)
		start := time.Now()
		l.inflight.Store(i, start)
		var err error
		if begin != nil {
			err = l.produceTx(callCtx, p, begin, msgs[0])
		} else if l.spec.Batch > 0 {
			_, err = p.ProduceBatch(callCtx, msgs...)
		} else {
			_, err = p.Produce(callCtx, msgs[0].Value, msgs[0].Options...)
		}
		l.inflight.Delete(i)
		cancel()
		took := time.Since(start)
		l.mu.Lock()
		if took > callBound+callGrace {
			l.hung = append(l.hung, fmt.Sprintf("producer %d: a Produce call took %s", i, took))
		}
		for _, s := range seqs {
			switch {
			case err == nil:
				l.produced[s] = true
			case errors.Is(err, sqlstreams.ErrOutcomeUnknown):
				l.unknown[s] = true
			default:
				l.refused[s] = true
			}
		}
		if err != nil {
			k := errKind(err)
			l.prodErrs[k]++
			if _, ok := l.errSeen[k]; !ok {
				l.errSeen[k] = err.Error()
			}
		}
		l.mu.Unlock()
		if err != nil {
			now := time.Now().UnixNano()
			l.firstErr.CompareAndSwap(0, now)
			l.lastErr.Store(now)
			// A producer that met an error pauses briefly, as an
			// application would; the client does not need it.
			time.Sleep(50 * time.Millisecond)
		} else {
			l.lastOK.Store(time.Now().UnixNano())
			time.Sleep(2 * time.Millisecond)
		}
	}
}

// produceTx produces m in a transaction held open for TxHold. A commit
// that fails without the server's answer is an unknown outcome; a refused
// one (a certification conflict) wrote nothing.
func (l *load) produceTx(ctx context.Context, p *sqlstreams.Producer[Msg], begin func() (driver.Tx, func() error, func() error, error), m sqlstreams.Message[Msg]) error {
	tx, commit, rollback, err := begin()
	if err != nil {
		return fmt.Errorf("%w: begin: %v", sqlstreams.ErrUnavailable, err)
	}
	if _, err := p.ProduceTx(ctx, tx, m.Value, m.Options...); err != nil {
		_ = rollback()
		return err
	}
	time.Sleep(l.spec.TxHold)
	if err := commit(); err != nil {
		if driverRefused(err) {
			return fmt.Errorf("%w: commit refused: %v", sqlstreams.ErrConflict, err)
		}
		return fmt.Errorf("%w: commit: %v", sqlstreams.ErrOutcomeUnknown, err)
	}
	return nil
}

func errKind(err error) string {
	for _, s := range []struct {
		name string
		err  error
	}{{"unavailable", sqlstreams.ErrUnavailable}, {"outcome-unknown", sqlstreams.ErrOutcomeUnknown}, {"conflict", sqlstreams.ErrConflict},
		{"database", sqlstreams.ErrDatabase}, {"deadline", context.DeadlineExceeded}} {
		if errors.Is(err, s.err) {
			return s.name
		}
	}
	return "other: " + err.Error()
}

// consumerGap is the longest time after since in which no delivery
// started, up to the first delivery after it resumed.
func (l *load) consumerGap(since time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	prev, gap := since, time.Duration(0)
	for _, at := range l.handled {
		if at.Before(since) {
			continue
		}
		gap = max(gap, at.Sub(prev))
		prev = at
	}
	return gap
}

// producedCount is how many produces have succeeded.
func (l *load) producedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.produced)
}

func (l *load) producerErrors() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.prodErrs {
		n += c
	}
	return n
}

// waitUntil polls cond until it holds or d passes, then fails the test.
func waitUntil(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitProgress waits until at least n more produces have succeeded.
func (l *load) waitProgress(n int, d time.Duration, what string) {
	l.t.Helper()
	base := l.producedCount()
	waitUntil(l.t, d, fmt.Sprintf("%d more successful produces (%s)", n, what), func() bool { return l.producedCount() >= base+n })
}

// stop ends the producers (failing the test if a call does not return in
// bound), waits until every successful produce was delivered, stops the
// consumers and checks what they saw.
func (l *load) stop() loadFigures {
	l.t.Helper()
	if l.stopProduce == nil {
		return loadFigures{}
	}
	l.stopProduce()
	l.stopProduce = nil
	done := make(chan struct{})
	go func() { l.producers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(callBound + callGrace):
		var stuck []string
		l.inflight.Range(func(k, v any) bool {
			stuck = append(stuck, fmt.Sprintf("producer %v since %s", k, time.Since(v.(time.Time))))
			return true
		})
		l.t.Fatalf("Produce calls did not return within their bound: %s", strings.Join(stuck, ", "))
	}
	if n := l.runsEnded.Load(); n > 0 {
		l.t.Errorf("%d consumer Run calls returned before the test stopped them: %v", n, <-l.runErrs)
	}
	waitUntil(l.t, 2*leaseDuration+time.Minute, "every successful produce to be delivered", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		for s := range l.produced {
			if len(l.deliv[s]) == 0 {
				return false
			}
		}
		return true
	})
	l.stopConsume()
	cdone := make(chan struct{})
	go func() { l.consumers.Wait(); close(cdone) }()
	select {
	case <-cdone:
	case <-time.After(time.Minute):
		l.t.Fatal("consumer Run calls did not return within a minute of their context ending")
	}
	close(l.runErrs)
	for err := range l.runErrs {
		if err != nil {
			l.t.Errorf("Run returned %v after its context ended; want nil", err)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f := loadFigures{Produced: len(l.produced), Unknown: len(l.unknown), Refused: len(l.refused), Duplicates: len(l.dupes),
		ProducerErrors: maps(l.prodErrs)}
	for s := range l.produced {
		if len(l.deliv[s]) == 0 {
			f.Lost++
		}
	}
	for s, ds := range l.deliv {
		if len(ds) > 1 {
			f.Redelivered++
		}
		if l.refused[s] {
			f.Phantom = append(f.Phantom, s)
		}
		if !l.produced[s] && !l.unknown[s] && !l.refused[s] {
			f.Phantom = append(f.Phantom, s)
		}
	}
	slices.Sort(f.Phantom)
	for k, e := range l.errSeen {
		l.t.Logf("first producer error of kind %s: %s", k, e)
	}
	if len(l.hung) > 0 {
		l.t.Errorf("calls that did not return in bound: %s", strings.Join(l.hung, "; "))
	}
	if f.Lost > 0 {
		l.t.Errorf("%d successful produces were never delivered", f.Lost)
	}
	if len(l.dupes) > 0 {
		l.t.Errorf("%d deliveries while an earlier lease was held:\n%s", len(l.dupes), strings.Join(l.dupes[:min(len(l.dupes), 10)], "\n"))
	}
	if len(f.Phantom) > 0 {
		l.t.Errorf("rows delivered whose Produce failed with an error other than ErrOutcomeUnknown (or was never made): seqs %v", f.Phantom[:min(len(f.Phantom), 10)])
	}
	// Outages and cluster conflicts are ErrUnavailable, ErrOutcomeUnknown or
	// ErrConflict; anything else would tell the caller the wrong thing.
	for k := range l.prodErrs {
		if k != "unavailable" && k != "outcome-unknown" && k != "conflict" {
			l.t.Errorf("%d produce errors of kind %s: %s", l.prodErrs[k], k, l.errSeen[k])
		}
	}
	if f.Produced == 0 {
		l.t.Error("nothing was produced")
	}
	return f
}

func maps(m map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// loadFigures is what a load did, for the test log and docs/scaleout.md.
type loadFigures struct {
	Produced, Unknown, Refused, Lost, Duplicates, Redelivered int
	Phantom                                                   []int64
	ProducerErrors                                            map[string]int
}

func (f loadFigures) String() string {
	return fmt.Sprintf("produced %d (outcome unknown %d, refused %d), lost %d, duplicates while leased %d, redelivered after a lease ended %d, producer errors %v",
		f.Produced, f.Unknown, f.Refused, f.Lost, f.Duplicates, f.Redelivered, f.ProducerErrors)
}

// ------------------------------------------------------------------ logs

// logCapture keeps the clients' log records.
type logCapture struct {
	mu      sync.Mutex
	records []logRecord
}

type logRecord struct {
	role  string
	index int
	level slog.Level
	msg   string
	attrs map[string]any
	at    time.Time
}

func (c *logCapture) handler(role string, i int) slog.Handler {
	return &captureHandler{c: c, role: role, index: i}
}

// find returns the records of role whose message contains msg.
func (c *logCapture) find(role, msg string) []logRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []logRecord
	for _, r := range c.records {
		if r.role == role && strings.Contains(r.msg, msg) {
			out = append(out, r)
		}
	}
	return out
}

type captureHandler struct {
	c     *logCapture
	role  string
	index int
	attrs []slog.Attr
}

func (h *captureHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *captureHandler) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{role: h.role, index: h.index, level: r.Level, msg: r.Message, attrs: map[string]any{}, at: r.Time}
	for _, a := range h.attrs {
		rec.attrs[a.Key] = a.Value.Any()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.Any()
		return true
	})
	h.c.mu.Lock()
	h.c.records = append(h.c.records, rec)
	h.c.mu.Unlock()
	return nil
}

func (h *captureHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &captureHandler{c: h.c, role: h.role, index: h.index, attrs: append(slices.Clone(h.attrs), as...)}
}

func (h *captureHandler) WithGroup(string) slog.Handler { return h }

// claimingAgainSince reports whether every consumer that logged a claim
// failure after since has logged "claiming again" after its last failure.
func (l *load) claimingAgainSince(since time.Time) bool {
	last := map[int]time.Time{}
	for _, r := range l.logs.find("consumer", "claim failed") {
		if r.at.After(since) && r.at.After(last[r.index]) {
			last[r.index] = r.at
		}
	}
	again := l.logs.find("consumer", "claiming again")
	for i, at := range last {
		if !slices.ContainsFunc(again, func(r logRecord) bool { return r.index == i && !r.at.Before(at) }) {
			return false
		}
	}
	return true
}

// checkBackoff asserts that each consumer's consecutive claim failures were
// logged with growing waits (Run backs off instead of spinning), and that
// every consumer whose claims failed by recovered (when the test saw every
// failing consumer claim again) logged that it claims again. A consumer
// that meets a connection the outage left dead only after that, and is
// stopped before its next claim, has nothing more to show.
func (l *load) checkBackoff(minFailures int, recovered time.Time) {
	l.t.Helper()
	fails := l.logs.find("consumer", "claim failed")
	byConsumer := map[int][]logRecord{}
	for _, r := range fails {
		byConsumer[r.index] = append(byConsumer[r.index], r)
	}
	total := 0
	for i, rs := range byConsumer {
		total += len(rs)
		var prevN int64
		var prevWait time.Duration
		for _, r := range rs {
			n, _ := r.attrs["failures"].(int64)
			w, _ := r.attrs["retry_in"].(time.Duration)
			if n == prevN+1 && w < prevWait {
				l.t.Errorf("consumer %d: claim failure %d waits %s, less than the %s of failure %d: no backoff", i, n, w, prevWait, prevN)
			}
			if n == 1 && w < pollInterval {
				l.t.Errorf("consumer %d: first claim failure waits %s, less than the poll interval", i, w)
			}
			prevN, prevWait = n, w
		}
		again := slices.ContainsFunc(l.logs.find("consumer", "claiming again"), func(r logRecord) bool { return r.index == i })
		if !again && !rs[0].at.After(recovered) {
			l.t.Errorf("consumer %d logged claim failures but never that it claims again", i)
		}
	}
	if total < minFailures {
		l.t.Errorf("consumers logged %d claim failures during the outage; want at least %d", total, minFailures)
	}
}
