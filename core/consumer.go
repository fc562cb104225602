package sqlstreams

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// ConsumerBuilder registers a member of a consumer group; get one from
// Stream.Consumer.
type ConsumerBuilder[T Versioned] struct {
	stream *Stream[T]
	group  string
}

// Consumer returns a builder for a member of group. A group is the pair
// (stream, group name) bound to T's schema version: every member of a group
// shares its cursors and exceptions, and each row is resolved once per group.
func (s *Stream[T]) Consumer(group string) *ConsumerBuilder[T] {
	return &ConsumerBuilder[T]{stream: s, group: group}
}

// StartPosition says where a new group begins reading.
type StartPosition int

const (
	// StartEarliest begins at the start of the retained log (the default).
	StartEarliest StartPosition = iota
	// StartLatest begins after the rows present when the group is created.
	StartLatest
)

// ConsumerOptions configure a consumer. Nil means defaults; zero fields take
// their defaults; negative values are refused.
type ConsumerOptions struct {
	// Bindings select routing keys ('*' one word, '#' zero or more words).
	// None means every key. They are stored with the group, and a
	// registration with other bindings replaces them.
	Bindings []string
	// StartAt applies when the group is created; later registrations keep
	// the group's cursors.
	StartAt StartPosition
	// MaxAttempts is how often a delivery is tried before it goes dead;
	// default 25.
	MaxAttempts int
	// Concurrency is how many handlers Run executes at once; default 1.
	Concurrency int
	// BatchSize is how many deliveries Run holds at once, running and queued
	// for a free handler (at least Concurrency); default 2×Concurrency. Run
	// claims again when half of them are done, so a larger value means fewer,
	// larger claims; queued deliveries stay leased to this consumer (their
	// leases are extended), so a very large value starves other members.
	BatchSize int
	// LeaseDuration is how long a claimed delivery stays with this consumer
	// before another may take it; default 30s. Run extends leases of running
	// handlers every third of it.
	LeaseDuration time.Duration
	// PollInterval is how long Run waits before claiming again when it found
	// nothing and got no wake-up; default 500ms.
	PollInterval time.Duration
	// Backoff returns the delay before retry number attempt (1-based) after a
	// handler error; default ExponentialBackoff(time.Second, 5*time.Minute).
	Backoff func(attempt int) time.Duration
	// Ordered processes each partition's rows one after another in id order:
	// a failing row holds its partition until it resolves or goes dead.
	Ordered bool
	// ShutdownTimeout is how long Run lets running handlers finish after its
	// context ends before it cancels their contexts and releases their
	// deliveries; default 10s.
	ShutdownTimeout time.Duration
	// Converters let the group also read older versions, converted to its
	// type (see ConvertFrom). They are stored with the group, and a
	// registration with other converters replaces them.
	Converters []Converter
}

const (
	defaultMaxAttempts     = 25
	defaultLeaseDuration   = 30 * time.Second
	defaultPollInterval    = 500 * time.Millisecond
	defaultShutdownTimeout = 10 * time.Second
)

// ExponentialBackoff doubles the delay from base on each attempt up to max,
// with up to 10% random jitter so that retries of a burst spread out.
func ExponentialBackoff(base, max time.Duration) func(attempt int) time.Duration {
	return func(attempt int) time.Duration {
		d := float64(base) * math.Pow(2, float64(attempt-1))
		if d > float64(max) || math.IsInf(d, 0) {
			d = float64(max)
		}
		return time.Duration(d * (1 + 0.1*mrand.Float64()))
	}
}

func (o ConsumerOptions) withDefaults(group string) (ConsumerOptions, error) {
	bad := func(field string, v any, hint string) error {
		return fmt.Errorf("%w: group %q: %s is %v; %s", ErrInvalidOption, group, field, v, hint)
	}
	switch {
	case o.MaxAttempts < 0:
		return o, bad("MaxAttempts", o.MaxAttempts, "use 0 for the default of 25, or a positive count")
	case o.Concurrency < 0:
		return o, bad("Concurrency", o.Concurrency, "use 0 for the default of 1, or a positive count")
	case o.BatchSize < 0:
		return o, bad("BatchSize", o.BatchSize, "use 0 for the default, or a positive count")
	case o.LeaseDuration < 0:
		return o, bad("LeaseDuration", o.LeaseDuration, "use 0 for the default of 30s, or a positive duration")
	case o.PollInterval < 0:
		return o, bad("PollInterval", o.PollInterval, "use 0 for the default of 500ms, or a positive duration")
	case o.ShutdownTimeout < 0:
		return o, bad("ShutdownTimeout", o.ShutdownTimeout, "use 0 for the default of 10s, or a positive duration")
	case o.StartAt != StartEarliest && o.StartAt != StartLatest:
		return o, bad("StartAt", o.StartAt, "use StartEarliest or StartLatest")
	}
	for _, b := range o.Bindings {
		if err := validateBinding(b); err != nil {
			return o, err
		}
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = defaultMaxAttempts
	}
	if o.Concurrency == 0 {
		o.Concurrency = 1
	}
	if o.BatchSize == 0 {
		o.BatchSize = 2 * o.Concurrency
	}
	if o.LeaseDuration == 0 {
		o.LeaseDuration = defaultLeaseDuration
	}
	if o.PollInterval == 0 {
		o.PollInterval = defaultPollInterval
	}
	if o.ShutdownTimeout == 0 {
		o.ShutdownTimeout = defaultShutdownTimeout
	}
	if o.Backoff == nil {
		o.Backoff = ExponentialBackoff(time.Second, 5*time.Minute)
	}
	return o, nil
}

// Consumer is a member of a consumer group reading values of type T. It is
// safe for concurrent use.
type Consumer[T Versioned] struct {
	group
	decode func(context.Context, driver.Row) (T, error)
}

// group is the type-independent part of a consumer: claims and outcomes.
type group struct {
	client   *Client
	stream   driver.StreamConfig
	name     string
	versions []int // nil: every version
	match    func(string) bool
	opts     ConsumerOptions
}

// Register joins (or creates) the group and returns a consumer. It fails
// with ErrGroupVersion when the group exists at another schema version. It
// records T's schema as the group's reader at its version: a schema that
// breaks the stream's level, or cannot read a writer revision still in the
// log, fails with ErrIncompatibleSchema and nothing is written.
func (b *ConsumerBuilder[T]) Register(ctx context.Context, opts *ConsumerOptions) (*Consumer[T], error) {
	version, raw, err := typeVersion[T]()
	if err != nil {
		return nil, err
	}
	if err := validateName("group", b.group); err != nil {
		return nil, err
	}
	if opts == nil {
		opts = &ConsumerOptions{}
	}
	o, err := opts.withDefaults(b.group)
	if err != nil {
		return nil, err
	}
	converters, convertsFrom, err := checkConverters[T](o.Converters, version, raw)
	if err != nil {
		return nil, err
	}
	var sch *schema.Schema
	if !raw {
		if sch, err = schema.For[T](); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidMessage, err)
		}
	}
	cfg, created, err := b.stream.ensure(ctx)
	if err != nil {
		return nil, err
	}
	refuse := func(err error) (*Consumer[T], error) {
		b.stream.undoCreate(ctx, cfg, created)
		return nil, err
	}
	drv := b.stream.client.drv
	mismatch := func(got driver.GroupConfig) error {
		if got.AllVersions == raw && (raw || got.SchemaVersion == version) {
			return nil
		}
		return fmt.Errorf("sqlstreams: group %q on stream %q reads %s, but %T is %s: %w; "+
			"a group reads one version, so register this consumer under a new group such as %q and retire the old one when Health says so",
			b.group, cfg.Name, versionWords(got.AllVersions, got.SchemaVersion), *new(T), versionWords(raw, version), ErrGroupVersion,
			suggestGroup(b.group, raw, version))
	}
	// Refuse a version mismatch before the registry records anything.
	groups, err := drv.ListGroups(ctx, cfg.ID)
	if err != nil {
		return refuse(fmt.Errorf("sqlstreams: register group %q on %q: %w", b.group, cfg.Name, err))
	}
	for _, g := range groups {
		if g.Name == b.group {
			if err := mismatch(g); err != nil {
				return refuse(err)
			}
		}
	}
	if !raw {
		if _, err := b.stream.client.Registry().record(ctx, registration{stream: cfg, typ: typeName[T](), version: version,
			schema: sch, group: b.group}); err != nil {
			return refuse(err)
		}
	}
	want := driver.GroupConfig{StreamID: cfg.ID, Name: b.group, SchemaVersion: version, AllVersions: raw, ConvertsFrom: convertsFrom,
		Bindings: o.Bindings, Start: driver.StartPosition(o.StartAt), CreatedAt: time.Now().UTC()}
	got, err := drv.RegisterGroup(ctx, want)
	if err != nil {
		return refuse(fmt.Errorf("sqlstreams: register group %q on %q: %w", b.group, cfg.Name, err))
	}
	if err := mismatch(got); err != nil {
		return nil, err
	}
	c := &Consumer[T]{group: group{client: b.stream.client, stream: cfg, name: b.group, match: matcher(o.Bindings), opts: o},
		decode: decoder[T](raw, converters)}
	if !raw {
		c.versions = append([]int{version}, convertsFrom...)
	}
	return c, nil
}

func versionWords(all bool, v int) string {
	if all {
		return "every schema version (RawPayload)"
	}
	return fmt.Sprintf("schema version %d", v)
}

func suggestGroup(name string, raw bool, v int) string {
	if raw {
		return name + "-raw"
	}
	return fmt.Sprintf("%s-v%d", name, v)
}

// Group returns the group name.
func (c *Consumer[T]) Group() string { return c.name }

// Delivery is a claimed message. Exactly one outcome is recorded per
// delivery: in Run the handler's return decides it; with Claim, call Ack,
// Retry or Dead.
type Delivery[T Versioned] struct {
	ID             int64
	Value          T
	Key            string
	RoutingKey     string
	Partition      int
	SchemaVersion  int
	CompactionRank int
	// Attempt counts deliveries of this row to the group, starting at 1.
	Attempt    int
	Headers    map[string]string
	ProducedAt time.Time

	lease *lease
}

// lease is the shared, mutable part of a delivery.
type lease struct {
	group   *group
	id      int64
	token   string
	attempt int
	until   atomic.Int64 // unix nanos
	settled atomic.Bool
}

// LeaseExpires returns when another consumer may take the delivery.
func (d Delivery[T]) LeaseExpires() time.Time { return time.Unix(0, d.lease.until.Load()) }

// Ack resolves the delivery; it will not be delivered to the group again.
func (d Delivery[T]) Ack(ctx context.Context) error { return d.lease.group.ack(ctx, d.lease) }

// Retry schedules another attempt after delay, recording cause; after
// MaxAttempts the delivery goes dead instead.
func (d Delivery[T]) Retry(ctx context.Context, delay time.Duration, cause error) error {
	return d.lease.group.fail(ctx, d.lease, RetryAfter(delay, cause))
}

// Dead buries the delivery with cause; it is kept for inspection and is not
// claimed again unless replayed.
func (d Delivery[T]) Dead(ctx context.Context, cause error) error {
	return d.lease.group.fail(ctx, d.lease, Dead(cause))
}

// Extend keeps the lease for another d from now.
func (d Delivery[T]) Extend(ctx context.Context, by time.Duration) error {
	if by <= 0 {
		return fmt.Errorf("%w: Extend by %v; use a positive duration", ErrInvalidOption, by)
	}
	return d.lease.group.extend(ctx, []*lease{d.lease}, by)
}

// Ack resolves several deliveries in as few round trips as possible.
func (c *Consumer[T]) Ack(ctx context.Context, ds ...Delivery[T]) error {
	ls := make([]*lease, len(ds))
	for i, d := range ds {
		ls[i] = d.lease
	}
	return c.ackAll(ctx, ls)
}

// Claim leases up to n deliveries: due retries and expired leases first,
// then new rows. A row whose payload does not decode as T goes dead at once
// and is not returned. It does not wait for rows to arrive.
func (c *Consumer[T]) Claim(ctx context.Context, n int) ([]Delivery[T], error) {
	if n <= 0 {
		return nil, fmt.Errorf("%w: Claim(%d); ask for at least one delivery", ErrInvalidOption, n)
	}
	out := make([]Delivery[T], 0, n)
	// A row that does not decode goes dead and leaves its place free: claim
	// again for it, so that rows behind it are not held back and an empty
	// result means nothing was claimable (C9).
	for len(out) < n {
		rows, token, err := c.claimRows(ctx, n-len(out))
		if err != nil {
			if len(out) > 0 {
				return out, nil // the next claim meets the error again
			}
			return nil, err
		}
		dropped := 0
		for _, r := range rows {
			l := &lease{group: &c.group, id: r.ID, token: token, attempt: r.Attempt}
			l.until.Store(r.LeaseUntil.UnixNano())
			v, err := c.decode(ctx, r.Row)
			if err != nil {
				// An undecodable payload goes dead; a converter's error is a
				// delivery error, retried with backoff.
				cause, outcome, what := err, err, "converter failed; will retry"
				if de := (*decodeError)(nil); errors.As(err, &de) {
					cause = fmt.Errorf("schema version %d: %w", r.SchemaVersion, err)
					outcome, what = Dead(cause), "payload does not decode; dead-lettered"
				}
				if ferr := c.fail(ctx, l, outcome); ferr != nil {
					return out, ferr
				}
				c.client.logger.Warn("sqlstreams: "+what, "stream", c.stream.Name, "group", c.name, "id", r.ID, "error", cause)
				dropped++
				continue
			}
			out = append(out, Delivery[T]{ID: r.ID, Value: v, Key: r.Key, RoutingKey: r.RoutingKey, Partition: r.Partition,
				SchemaVersion: r.SchemaVersion, CompactionRank: r.CompactionRank, Attempt: r.Attempt, Headers: r.Headers,
				ProducedAt: r.ProducedAt, lease: l})
		}
		if dropped == 0 {
			break
		}
	}
	return out, nil
}

func (g *group) claimRows(ctx context.Context, n int) ([]driver.Delivery, string, error) {
	if err := g.client.checkOpen(); err != nil {
		return nil, "", err
	}
	now := time.Now().UTC()
	req := driver.ClaimRequest{Stream: g.stream, Group: g.name, Versions: g.versions, Match: g.match, Limit: n,
		Ordered: g.opts.Ordered, Token: newToken(), Now: now, LeaseUntil: now.Add(g.opts.LeaseDuration),
		MaxAttempts: g.opts.MaxAttempts, LastError: "lease expired on the last attempt; the consumer probably crashed or stalled while handling it"}
	rows, err := g.client.drv.ClaimExceptions(ctx, req)
	if err != nil {
		return nil, "", g.wrap("claim", err)
	}
	if len(rows) < n {
		req.Limit = n - len(rows)
		more, err := g.client.drv.Claim(ctx, req)
		if err != nil && len(rows) == 0 {
			return nil, "", g.wrap("claim", err)
		}
		rows = append(rows, more...)
	}
	return rows, req.Token, nil
}

func (g *group) wrap(op string, err error) error {
	return fmt.Errorf("sqlstreams: %s for group %q on %q: %w", op, g.name, g.stream.Name, err)
}

func (g *group) ack(ctx context.Context, l *lease) error {
	return g.ackAll(ctx, []*lease{l})
}

func (g *group) ackAll(ctx context.Context, ls []*lease) error {
	byToken := map[string][]*lease{}
	for _, l := range ls {
		if l.settled.Swap(true) {
			return fmt.Errorf("sqlstreams: delivery %d: %w", l.id, ErrAlreadySettled)
		}
		byToken[l.token] = append(byToken[l.token], l)
	}
	var errs []error
	for token, group := range byToken {
		ids := make([]int64, len(group))
		for i, l := range group {
			ids[i] = l.id
		}
		if err := g.client.drv.Ack(ctx, driver.LeaseRef{StreamID: g.stream.ID, Group: g.name, Token: token, IDs: ids}); err != nil {
			for _, l := range group {
				l.settled.Store(false)
			}
			errs = append(errs, g.wrap("ack", err))
		}
	}
	return errors.Join(errs...)
}

// fail records a handler error: dead for Dead(err) or after MaxAttempts,
// otherwise delayed by RetryAfter's delay or the backoff.
func (g *group) fail(ctx context.Context, l *lease, cause error) error {
	if l.settled.Swap(true) {
		return fmt.Errorf("sqlstreams: delivery %d: %w", l.id, ErrAlreadySettled)
	}
	now := time.Now().UTC()
	f := driver.Failure{Now: now, Error: errorText(cause)}
	var dead *deadError
	var retry *retryError
	switch {
	case errors.As(cause, &dead):
		f.Dead = true
	case l.attempt >= g.opts.MaxAttempts:
		f.Dead = true
		f.Error = fmt.Sprintf("gave up after %d attempts: %s", l.attempt, f.Error)
	case errors.As(cause, &retry):
		f.Due = now.Add(retry.delay)
	default:
		f.Due = now.Add(g.opts.Backoff(l.attempt))
	}
	err := g.client.drv.Fail(ctx, driver.LeaseRef{StreamID: g.stream.ID, Group: g.name, Token: l.token, IDs: []int64{l.id}}, f)
	if err != nil {
		l.settled.Store(false)
		return g.wrap("record failure", err)
	}
	return nil
}

func (g *group) release(ctx context.Context, ls []*lease) error {
	byToken := map[string][]int64{}
	for _, l := range ls {
		if !l.settled.Swap(true) {
			byToken[l.token] = append(byToken[l.token], l.id)
		}
	}
	var errs []error
	for token, ids := range byToken {
		if err := g.client.drv.Release(ctx, driver.LeaseRef{StreamID: g.stream.ID, Group: g.name, Token: token, IDs: ids}); err != nil {
			errs = append(errs, g.wrap("release", err))
		}
	}
	return errors.Join(errs...)
}

func (g *group) extend(ctx context.Context, ls []*lease, by time.Duration) error {
	until := time.Now().UTC().Add(by)
	byToken := map[string][]*lease{}
	for _, l := range ls {
		if !l.settled.Load() {
			byToken[l.token] = append(byToken[l.token], l)
		}
	}
	var errs []error
	for token, group := range byToken {
		ids := make([]int64, len(group))
		for i, l := range group {
			ids[i] = l.id
		}
		if err := g.client.drv.Extend(ctx, driver.LeaseRef{StreamID: g.stream.ID, Group: g.name, Token: token, IDs: ids}, until); err != nil {
			errs = append(errs, g.wrap("extend lease", err))
			continue
		}
		for _, l := range group {
			l.until.Store(until.UnixNano())
		}
	}
	return errors.Join(errs...)
}

func errorText(err error) string {
	if err == nil {
		return "no error given"
	}
	const max = 4000
	s := err.Error()
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

type deadError struct{ err error }

func (e *deadError) Error() string { return errorText(e.err) }
func (e *deadError) Unwrap() error { return e.err }

// Dead wraps err so that a handler's return dead-letters the delivery at
// once, without further attempts. Use it for messages that can never succeed.
func Dead(err error) error {
	if err == nil {
		err = errors.New("dead-lettered by the handler")
	}
	return &deadError{err: err}
}

type retryError struct {
	delay time.Duration
	err   error
}

func (e *retryError) Error() string { return errorText(e.err) }
func (e *retryError) Unwrap() error { return e.err }

// RetryAfter wraps err so that a handler's return retries the delivery after
// d instead of the backoff (still counting toward MaxAttempts).
func RetryAfter(d time.Duration, err error) error {
	if err == nil {
		err = fmt.Errorf("retry requested after %v", d)
	}
	if d < 0 {
		d = 0
	}
	return &retryError{delay: d, err: err}
}

// DeadLetter is a dead delivery kept for inspection.
type DeadLetter struct {
	ID            int64
	SchemaVersion int
	Key           string
	RoutingKey    string
	Partition     int
	Payload       json.RawMessage
	Headers       map[string]string
	ProducedAt    time.Time
	Attempt       int
	Error         string
	FirstFailed   time.Time
	DiedAt        time.Time
}

// DeadLetters lists up to limit dead deliveries of the group with ids above
// afterID, in id order; pass the last id seen to page.
func (c *Consumer[T]) DeadLetters(ctx context.Context, afterID int64, limit int) ([]DeadLetter, error) {
	if err := c.client.checkOpen(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, fmt.Errorf("%w: DeadLetters limit %d; use a positive count", ErrInvalidOption, limit)
	}
	dls, err := c.client.drv.ListDead(ctx, c.stream.ID, c.name, afterID, limit)
	if err != nil {
		return nil, c.wrap("list dead letters", err)
	}
	out := make([]DeadLetter, len(dls))
	for i, d := range dls {
		out[i] = DeadLetter{ID: d.ID, SchemaVersion: d.SchemaVersion, Key: d.Key, RoutingKey: d.RoutingKey,
			Partition: d.Partition, Payload: json.RawMessage(d.Payload), Headers: d.Headers, ProducedAt: d.ProducedAt,
			Attempt: d.Attempt, Error: d.Error, FirstFailed: d.FirstFailed, DiedAt: d.DiedAt}
	}
	return out, nil
}

// Replay makes the given dead deliveries due now with attempts reset. It
// returns how many were dead and are now pending.
func (c *Consumer[T]) Replay(ctx context.Context, ids ...int64) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	return c.replay(ctx, ids)
}

// ReplayAll replays every dead delivery of the group.
func (c *Consumer[T]) ReplayAll(ctx context.Context) (int64, error) { return c.replay(ctx, nil) }

func (c *Consumer[T]) replay(ctx context.Context, ids []int64) (int64, error) {
	if err := c.client.checkOpen(); err != nil {
		return 0, err
	}
	n, err := c.client.drv.Replay(ctx, c.stream.ID, c.name, ids, time.Now().UTC())
	if err != nil {
		return n, c.wrap("replay", err)
	}
	c.client.wake(c.stream.ID)
	return n, nil
}

// Discard resolves the given dead deliveries without processing them.
func (c *Consumer[T]) Discard(ctx context.Context, ids ...int64) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	return c.discard(ctx, ids)
}

// DiscardAll resolves every dead delivery of the group.
func (c *Consumer[T]) DiscardAll(ctx context.Context) (int64, error) { return c.discard(ctx, nil) }

func (c *Consumer[T]) discard(ctx context.Context, ids []int64) (int64, error) {
	if err := c.client.checkOpen(); err != nil {
		return 0, err
	}
	n, err := c.client.drv.Discard(ctx, c.stream.ID, c.name, ids)
	if err != nil {
		return n, c.wrap("discard", err)
	}
	return n, nil
}
