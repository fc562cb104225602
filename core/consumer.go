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
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

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
	// They belong to the group, not to a member: every member claims with
	// the group's stored bindings. A registration that creates the group
	// stores them (none means every key); one that joins an existing group
	// adds them to the stored ones (none joins the group as it is), so that
	// a rolling deploy that widens a group never loses rows to an old member
	// and an old member restarting never narrows it. Replace narrows.
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
	// for a free handler (at least Concurrency). Run claims again when half of
	// them are done, so a larger value means fewer, larger claims (on an
	// engine in this process, SQLite, a claim takes at most half); queued
	// deliveries stay leased to this consumer (their leases are extended), so
	// a very large value starves other members. By default Run sizes it from
	// the rate its handlers resolve deliveries: at least 2×Concurrency, at
	// most 1,000, and no more than that rate handles in a quarter of
	// LeaseDuration (or 250ms, whichever is less).
	BatchSize int
	// LeaseDuration is how long a claimed delivery stays with this consumer
	// before another may take it; default 30s. Run extends leases of running
	// handlers every third of it.
	LeaseDuration time.Duration
	// PollInterval is how long Run waits before claiming again when it found
	// nothing and got no wake-up; default 500ms. A driver that must itself
	// poll to wake consumers across processes sets its pace from it: MySQL
	// and MariaDB read the stream's newest id four times per interval (at
	// most a second apart), so a shorter interval buys latency with those
	// reads as well as with claims.
	PollInterval time.Duration
	// Backoff returns the delay before retry number attempt (1-based) after a
	// handler error; default ExponentialBackoff(time.Second, 5*time.Minute).
	Backoff func(attempt int) time.Duration
	// Ordered processes each partition's rows one after another in id order:
	// a failing row holds its partition until it resolves or goes dead.
	Ordered bool
	// ShutdownTimeout is how long Run lets running handlers finish after its
	// context ends before it cancels their contexts and releases their
	// deliveries; default 10s. A handler that ignores the cancellation gets
	// as long again; then Run returns ErrShutdownTimeout naming it, and its
	// lease is left to expire.
	ShutdownTimeout time.Duration
	// Converters let the group also read older versions, converted to its
	// type (see ConvertFrom). The versions they convert from belong to the
	// group like its bindings: a joining registration adds them. A member
	// without a converter the group has leaves the rows at that version to
	// members that have it (they become due deliveries, counted as delayed
	// by Health until one of those claims them); deploy converters to every
	// member of a group.
	Converters []Converter
	// Middleware wraps this consumer's handler calls in Run and observes its
	// claims and settles (HandleMiddleware, ClaimHook, SettleHook), inside
	// the client-wide middleware of WithMiddleware; the first is outermost.
	// Produce middleware and maintenance hooks belong to the client: install
	// them with WithMiddleware.
	Middleware []Middleware
	// Replace makes this registration's Bindings and Converters the group's
	// stored configuration instead of adding them to it: use it to narrow a
	// group. Rows the main claim passes while the group is narrowed are not
	// read later by the group.
	Replace bool
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
	client *Client
	stream driver.StreamConfig
	name   string
	member driver.Member
	// decodes lists the versions this member can decode (its own and its
	// converters'); nil for every version.
	decodes []int
	opts    ConsumerOptions
	// autoBatch: BatchSize was left to its default, so Run sizes what it
	// holds from the handlers' observed rate (see runner.resize).
	autoBatch bool

	// The client's middleware, then the consumer's.
	handleMW    []HandleMiddleware
	claimHooks  []ClaimHook
	settleHooks []SettleHook

	// planned is the stream configuration claims are made with: g.stream
	// until a claim is refused as stale (the stream was altered), then the
	// stored one (see claimFresh).
	planned atomic.Pointer[driver.StreamConfig]

	mu         sync.Mutex
	config     driver.GroupConfig // the stored configuration last seen
	deferredAt time.Time          // when deferred rows were last logged

	// extending is held shared by every extension while it runs, and
	// exclusively by a settle in a caller's transaction while it marks its
	// leases inTx: an extension never names a lease whose row a caller's
	// transaction may hold locked, so it never waits for that COMMIT.
	extending sync.RWMutex
}

// Register joins (or creates) the group and returns a consumer. It fails
// with ErrGroupVersion when the group exists at another schema version. It
// records T's schema as the group's reader at its version: a schema that
// breaks the stream's level, or cannot read a writer revision still in the
// log, fails with ErrIncompatibleSchema and nothing is written. Joining an
// existing group adds this registration's bindings and converters to the
// group's (see ConsumerOptions.Bindings); nil options join it as it is.
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
	own, err := sortMiddleware(fmt.Sprintf("consumer %q", b.group), o.Middleware)
	if err != nil {
		return nil, err
	}
	mw := b.stream.client.chain.then(own)
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
	member := driver.Member{SchemaVersion: version, AllVersions: raw}
	if raw {
		member.SchemaVersion = 0
	}
	mismatch := func(got driver.GroupConfig) error {
		if member.Matches(got) {
			return nil
		}
		return fmt.Errorf("sqlstreams: group %q on stream %q reads %s, but %T is %s: %w; "+
			"a group reads one version, so register this consumer under a new group such as %q and retire the old one when Health says so",
			b.group, cfg.Name, versionWords(got.AllVersions, got.SchemaVersion), *new(T), versionWords(raw, version), ErrGroupVersion,
			suggestGroup(b.group, raw, version))
	}
	// Refuse a version mismatch before the registry records anything.
	groups, err := drv.ListGroups(ctx, driver.ListGroupsParams{StreamID: cfg.ID})
	if err != nil {
		return refuse(fmt.Errorf("sqlstreams: register group %q on %q: %w", b.group, cfg.Name, classify(err)))
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
	want := driver.GroupConfig{StreamID: cfg.ID, Name: b.group, SchemaVersion: member.SchemaVersion, AllVersions: raw, ConvertsFrom: convertsFrom,
		Bindings: slices.Clone(o.Bindings), Start: driver.StartPosition(o.StartAt), CreatedAt: time.Now().UTC()}
	got, err := drv.RegisterGroup(ctx, driver.RegisterGroupParams{Group: want, Update: func(stored driver.GroupConfig) (driver.GroupConfig, error) {
		return mergeGroupConfig(stored, want, o.Replace), mismatch(stored)
	}})
	if err != nil {
		if errors.Is(err, ErrGroupVersion) {
			return nil, err
		}
		return refuse(fmt.Errorf("sqlstreams: register group %q on %q: %w", b.group, cfg.Name, classify(err)))
	}
	if err := mismatch(got); err != nil {
		return nil, err
	}
	if len(o.Bindings) > 0 && !slices.Equal(got.Bindings, o.Bindings) {
		b.stream.client.logger.Info("sqlstreams: the group's bindings differ from this registration's; members claim with the group's",
			"stream", cfg.Name, "group", b.group, "registered", o.Bindings, "group_bindings", bindingWords(got.Bindings))
	}
	c := &Consumer[T]{group: group{client: b.stream.client, stream: cfg, name: b.group, member: member, opts: o, autoBatch: opts.BatchSize == 0, config: got,
		handleMW: mw.handle, claimHooks: mw.claim, settleHooks: mw.settle}, decode: decoder[T](raw, converters)}
	if !raw {
		c.decodes = append([]int{version}, convertsFrom...)
	}
	b.stream.client.joinGroup(cfg.ID, b.group)
	return c, nil
}

// mergeGroupConfig is what a registration makes of the stored group: its
// bindings and converter versions replaced by want's (Replace) or widened
// by them.
func mergeGroupConfig(stored, want driver.GroupConfig, replace bool) driver.GroupConfig {
	out := stored
	if replace {
		out.Bindings, out.ConvertsFrom = want.Bindings, want.ConvertsFrom
	} else {
		out.Bindings, out.ConvertsFrom = unionBindings(stored.Bindings, want.Bindings), unionVersions(stored.ConvertsFrom, want.ConvertsFrom)
	}
	return out
}

// unionBindings adds extra to stored; no bindings means every key, so a
// union with none is none.
func unionBindings(stored, extra []string) []string {
	if len(stored) == 0 || len(extra) == 0 {
		if len(stored) == 0 {
			return nil
		}
		return stored
	}
	out := slices.Clone(stored)
	for _, b := range extra {
		if !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	return out
}

func unionVersions(stored, extra []int) []int {
	out := slices.Clone(stored)
	for _, v := range extra {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

func bindingWords(b []string) any {
	if len(b) == 0 {
		return "every key"
	}
	return b
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
	CompactionRank int64
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
	size    int          // payload bytes, for middleware
	until   atomic.Int64 // unix nanos
	state   atomic.Int32 // leaseOpen, ...
	// inTx: a settle in the caller's transaction took it; extensions leave
	// it alone (see group.extending).
	inTx atomic.Bool
	// running: Run's handler of the delivery is running.
	running atomic.Bool
}

// The states of a lease in this process.
const (
	leaseOpen     int32 = iota // held, no outcome recorded
	leaseSettling              // an outcome is being recorded
	leaseSettled               // an outcome was recorded (or the delivery released)
	leaseLost                  // the database says another member holds it, or its row is gone
)

func (l *lease) ref() driver.Lease { return driver.Lease{ID: l.id, Token: l.token} }

// expired reports whether the lease has run out by this process's clock.
func (l *lease) expired(now time.Time) bool { return now.UnixNano() >= l.until.Load() }

// LeaseExpires returns when another consumer may take the delivery.
func (d Delivery[T]) LeaseExpires() time.Time { return time.Unix(0, d.lease.until.Load()) }

// Ack resolves the delivery; it will not be delivered to the group again.
func (d Delivery[T]) Ack(ctx context.Context) error {
	return d.lease.group.ack(ctx, nil, []*lease{d.lease})
}

// Retry schedules another attempt after delay, recording cause; after
// MaxAttempts the delivery goes dead instead.
func (d Delivery[T]) Retry(ctx context.Context, delay time.Duration, cause error) error {
	return d.lease.group.fail(ctx, nil, []*lease{d.lease}, []error{RetryAfter(delay, cause)})
}

// Dead buries the delivery with cause; it is kept for inspection and is not
// claimed again unless replayed.
func (d Delivery[T]) Dead(ctx context.Context, cause error) error {
	return d.lease.group.fail(ctx, nil, []*lease{d.lease}, []error{Dead(cause)})
}

// AckTx resolves the delivery inside the caller's transaction tx (adapted
// by the driver, as for ProduceTx: sqlite.Tx, postgres.Tx, mysql.Tx), the
// inbox to ProduceTx's outbox: the ack commits exactly when tx commits,
// together with whatever the handler wrote in it, and is undone when tx
// rolls back (C21). When the lease was lost it fails, inside the
// transaction, with ErrLeaseLost (a *SettleError): roll tx back, since
// another member may be doing the same work. Once AckTx returned nil, the
// delivery counts as settled here: Run records no other outcome for it, and
// if tx rolls back it comes back when its lease expires. tx may stay open
// for long: it locks only this delivery's state, and Run goes on extending,
// acking and claiming the others meanwhile (on SQLite, whose one writer tx
// then holds, leases are paused instead; see that driver's package doc).
func (d Delivery[T]) AckTx(ctx context.Context, tx driver.Tx) error {
	if tx == nil {
		return fmt.Errorf("%w: AckTx with a nil transaction; use Ack to record it on its own", ErrInvalidOption)
	}
	return d.lease.group.ack(ctx, tx, []*lease{d.lease})
}

// RetryTx is Retry inside the caller's transaction, as AckTx is Ack.
func (d Delivery[T]) RetryTx(ctx context.Context, tx driver.Tx, delay time.Duration, cause error) error {
	if tx == nil {
		return fmt.Errorf("%w: RetryTx with a nil transaction; use Retry to record it on its own", ErrInvalidOption)
	}
	return d.lease.group.fail(ctx, tx, []*lease{d.lease}, []error{RetryAfter(delay, cause)})
}

// DeadTx is Dead inside the caller's transaction, as AckTx is Ack.
func (d Delivery[T]) DeadTx(ctx context.Context, tx driver.Tx, cause error) error {
	if tx == nil {
		return fmt.Errorf("%w: DeadTx with a nil transaction; use Dead to record it on its own", ErrInvalidOption)
	}
	return d.lease.group.fail(ctx, tx, []*lease{d.lease}, []error{Dead(cause)})
}

// Extend keeps the lease for another d from now.
func (d Delivery[T]) Extend(ctx context.Context, by time.Duration) error {
	if by <= 0 {
		return fmt.Errorf("%w: Extend by %v; use a positive duration", ErrInvalidOption, by)
	}
	return d.lease.group.extend(ctx, []*lease{d.lease}, by, false)
}

// Ack resolves several deliveries in as few round trips as possible. Each is
// settled on its own: a delivery whose lease was lost, or that was already
// settled, is named in the returned *SettleError and the others are resolved.
func (c *Consumer[T]) Ack(ctx context.Context, ds ...Delivery[T]) error {
	ls := make([]*lease, len(ds))
	for i, d := range ds {
		ls[i] = d.lease
	}
	return c.ack(ctx, nil, ls)
}

// Claim leases up to n deliveries: due retries and expired leases first,
// then new rows. A row whose payload does not decode as T goes dead at once
// and is not returned. It does not wait for rows to arrive. A Claim that
// returns an error has leased nothing: when ctx ends while the database is
// claiming, what it leased is given back without using an attempt.
func (c *Consumer[T]) Claim(ctx context.Context, n int) ([]Delivery[T], error) {
	if n <= 0 {
		return nil, fmt.Errorf("%w: Claim(%d); ask for at least one delivery", ErrInvalidOption, n)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The claim runs to completion, bounded, whatever ctx does meanwhile, so
	// that its outcome is known; then ctx decides whether to keep it.
	cctx, cancel := c.client.opContext(context.WithoutCancel(ctx))
	defer cancel()
	out, _, err := c.claim(cctx, nil, n, ClaimSourcePull, nil)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		c.giveBack(cctx, out)
		return nil, ctx.Err()
	}
	return out, nil
}

// AckAndClaim acks ds and claims up to n more deliveries in one
// transaction: a consumer that works through a stream batch by batch
// commits once per batch instead of twice (Ack, then Claim), as a bare
// cursor read does. The acks are recorded before the claim reads, so an
// ordered partition whose pending rows they resolve is claimable again in
// the same call; with nothing to claim it still records them.
//
// As with Ack, each delivery is settled on its own: when some were lost or
// already settled, AckAndClaim returns the new deliveries together with a
// *SettleError naming exactly those (the claim took effect: handle what it
// returned, maybe nothing when the rows it leased did not decode and the
// claim it made for more failed; the next call meets that failure). Any
// other error means nothing was claimed and no ack was
// recorded (with ErrOutcomeUnknown, maybe recorded: acking again then
// reports them lost); ack them again, or let their leases expire. When ctx
// ends while the database is claiming, the new deliveries are given back
// and the acks stay recorded.
func (c *Consumer[T]) AckAndClaim(ctx context.Context, n int, ds ...Delivery[T]) ([]Delivery[T], error) {
	if n <= 0 {
		return nil, fmt.Errorf("%w: AckAndClaim(%d); ask for at least one delivery, or use Ack to only ack", ErrInvalidOption, n)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ls := make([]*lease, len(ds))
	for i, d := range ds {
		ls[i] = d.lease
	}
	taken, already, lost := take(ls)
	cctx, cancel := c.client.opContext(context.WithoutCancel(ctx))
	defer cancel()
	out, missed, err := c.claim(cctx, nil, n, ClaimSourcePull, taken)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		c.giveBack(cctx, out)
		return nil, ctx.Err()
	}
	return out, settleErr("ack", &c.group, append(lost, missed...), already)
}

// giveBack releases what a claim whose caller's context ended leased.
func (c *Consumer[T]) giveBack(ctx context.Context, ds []Delivery[T]) {
	ls := make([]*lease, len(ds))
	for i, d := range ds {
		ls[i] = d.lease
	}
	if err := c.release(ctx, ls); err != nil {
		c.client.logger.Warn("sqlstreams: could not give back a claim whose context ended; its leases will expire", "stream", c.stream.Name, "group", c.name, "error", err)
	}
}

// claim leases and decodes up to n deliveries with ctx, which bounds the
// work, after acking acks (leases taken by take) in the same transaction,
// appending them to into[:0] (Run hands back the slice of its last claim,
// once dispatched: a claim's deliveries are its largest allocation after
// the rows themselves).
// It returns the ids of acks that were lost; on error none was recorded
// (unless the outcome is unknown) and the acks are open again. Once a claim
// recorded the acks, a later claim's error ends the loop without error.
func (c *Consumer[T]) claim(ctx context.Context, into []Delivery[T], n int, source string, acks []*lease) ([]Delivery[T], []int64, error) {
	out := into[:0] // sized once the rows are known: most claims of an idle group find none
	var lostAcks []int64
	recorded := false // a claim recorded acks
	// A row that does not decode goes dead and leaves its place free: claim
	// again for it, so that rows behind it are not held back and an empty
	// result means nothing was claimable (C9).
	for len(out) < n {
		rows, token, lost, err := c.claimRows(ctx, n-len(out), source, acks)
		if errors.Is(err, ErrGroupPaused) {
			// A paused group hands out nothing, as an empty one does; acks
			// the claim carried are recorded on their own.
			missed, err := c.ackAlone(ctx, acks)
			if err != nil {
				return nil, nil, err
			}
			return out, append(lostAcks, missed...), nil
		}
		if err != nil {
			if len(out) > 0 || recorded {
				// What took effect stands (the deliveries, the acks a first
				// claim recorded and the ones it found lost); the next
				// claim meets the error again.
				return out, lostAcks, nil
			}
			return nil, nil, err
		}
		recorded = recorded || len(acks) > 0
		acks, lostAcks = nil, append(lostAcks, lost...)
		dropped, failed := 0, false
		out = slices.Grow(out, len(rows))
		leases := make([]lease, len(rows)) // one allocation for the claim's leases
		var held map[int]bool              // an ordered group's partitions whose row failed to convert
		var back []*lease                  // rows behind such a row, given back
		for i, r := range rows {
			l := &leases[i]
			l.group, l.id, l.token, l.attempt, l.size = &c.group, r.ID, token, r.Attempt, len(r.Payload)
			l.until.Store(r.LeaseUntil.UnixNano())
			if held[r.Partition] {
				back = append(back, l)
				continue
			}
			v, err := c.decode(ctx, r.Row)
			if err != nil {
				// The rows that decoded are still handed out, but in an
				// ordered group not those behind a row that will come back
				// (C10): it holds its partition.
				dead, recorded := c.undecodable(ctx, l, r.SchemaVersion, err)
				if c.opts.Ordered && !(dead && recorded) {
					if held == nil {
						held = map[int]bool{}
					}
					held[r.Partition] = true
				}
				if !recorded {
					failed = true
					continue
				}
				dropped++
				continue
			}
			out = append(out, Delivery[T]{ID: r.ID, Value: v, Key: r.Key, RoutingKey: r.RoutingKey, Partition: r.Partition,
				SchemaVersion: r.SchemaVersion, CompactionRank: r.CompactionRank, Attempt: r.Attempt, Headers: r.Headers,
				ProducedAt: r.ProducedAt, lease: l})
		}
		if len(back) > 0 {
			if err := c.release(ctx, back); err != nil {
				c.client.logger.Warn("sqlstreams: could not give back the rows behind a failed conversion; their leases will expire",
					"stream", c.stream.Name, "group", c.name, "error", err)
			}
		}
		if dropped == 0 || failed {
			break
		}
	}
	return out, lostAcks, nil
}

// undecodable records the failure of a delivery whose payload did not
// decode (err from c.decode): an undecodable payload goes dead at once,
// since no retry changes its bytes (C9); a converter's error is a delivery
// error, retried with backoff. It reports whether the row went dead and
// whether the failure was recorded; one that was not comes back when its
// lease expires.
func (c *Consumer[T]) undecodable(ctx context.Context, l *lease, version int, err error) (dead, recorded bool) {
	cause, outcome, what := err, err, "converter failed; will retry"
	if de := (*decodeError)(nil); errors.As(err, &de) {
		cause = fmt.Errorf("schema version %d: %w", version, err)
		outcome, what, dead = Dead(cause), "payload does not decode; dead-lettered", true
	}
	if ferr := c.fail(ctx, nil, []*lease{l}, []error{outcome}); ferr != nil {
		c.client.logger.Warn("sqlstreams: could not record the failure of an undecodable delivery; it comes back when its lease expires",
			"stream", c.stream.Name, "group", c.name, "id", l.id, "error", ferr)
		return dead, false
	}
	c.client.logger.Warn("sqlstreams: "+what, "stream", c.stream.Name, "group", c.name, "id", l.id, "error", cause)
	return dead, true
}

func (g *group) claimRows(ctx context.Context, n int, source string, acks []*lease) ([]driver.Delivery, string, []int64, error) {
	if err := g.client.checkOpen(); err != nil {
		reopen(acks)
		return nil, "", nil, err
	}
	now := time.Now().UTC()
	rows, token, lost, err := g.claimFromDriver(ctx, n, now, acks)
	if len(g.claimHooks) > 0 {
		e := ClaimEvent{Stream: g.stream.Name, Group: g.name, Source: source, Requested: n, Duration: time.Since(now), Err: err}
		for _, r := range rows {
			e.Deliveries = append(e.Deliveries, infoOf(g.stream.Name, g.name, r.Row, r.Attempt))
		}
		for _, h := range g.claimHooks {
			g.client.observe("claim", func() { h.Claimed(ctx, e) })
		}
	}
	return rows, token, lost, err
}

// claimFromDriver claims, after acking acks in the claim's transaction; it
// records the acks' outcome on their leases and returns the lost ones.
func (g *group) claimFromDriver(ctx context.Context, n int, now time.Time, acks []*lease) ([]driver.Delivery, string, []int64, error) {
	p := driver.ClaimParams{Stream: g.claimConfig(), Group: g.name, Member: g.member, Decodes: g.decodes, Match: matcher, Limit: n,
		Ordered: g.opts.Ordered, Token: newToken(), Holder: g.client.identity, Now: now, LeaseUntil: now.Add(g.opts.LeaseDuration),
		MaxAttempts: g.opts.MaxAttempts, LastError: "lease expired on the last attempt; the consumer probably crashed or stalled while handling it"}
	if len(acks) > 0 {
		p.Acks = refs(acks)
	}
	res, err := g.claimFresh(ctx, p)
	if len(acks) > 0 {
		g.hookSettle(ctx, OutcomeAck, acks, driver.SettleResult{Lost: res.Lost}, now, err)
		if err != nil {
			reopen(acks)
		} else {
			settled(acks, driver.SettleResult{Lost: res.Lost})
		}
	}
	if err != nil {
		// A claim that failed has leased nothing, unless its outcome is
		// unknown: then give back whatever it may have leased.
		if errors.Is(err, ErrOutcomeUnknown) || (!driver.Classified(err) && ctx.Err() != nil) {
			rctx, cancel := g.client.opContext(context.WithoutCancel(ctx))
			if _, rerr := g.client.drv.Release(rctx, driver.ReleaseParams{StreamID: g.stream.ID, Group: g.name, ClaimToken: p.Token, Now: time.Now().UTC()}); rerr != nil {
				g.client.logger.Warn("sqlstreams: could not give back a claim whose outcome is unknown; its leases will expire",
					"stream", g.stream.Name, "group", g.name, "error", rerr)
			}
			cancel()
		}
		if errors.Is(err, context.DeadlineExceeded) && !driver.Classified(err) {
			// Claims always run under the operation timeout, never under a
			// caller's deadline: the database did not answer in time.
			err = &driver.Error{Kind: ErrUnavailable, Err: err, Advice: fmt.Sprintf("the database did not answer within the operation timeout (%v); "+
				"check that it is up and reachable, or raise WithOperationTimeout", g.client.opTimeout)}
		}
		return nil, "", nil, g.wrap("claim", classify(err))
	}
	g.observe(res)
	return res.Deliveries, p.Token, res.Lost, nil
}

// claimConfig is the stream configuration the next claim is made with.
func (g *group) claimConfig() driver.StreamConfig {
	if c := g.planned.Load(); c != nil {
		return *c
	}
	return g.stream
}

// claimFresh claims with p. When the driver refuses the claim because the
// stream was altered since its configuration was read (partitions added,
// compaction switched), it keeps the stored configuration for later claims
// and claims again with it: a member in another process than the change
// thus claims the new partitions, and filters by compaction heads exactly
// when the stream is compacted. The refused claim leased and acked nothing.
func (g *group) claimFresh(ctx context.Context, p driver.ClaimParams) (driver.ClaimResult, error) {
	for attempt := 0; ; attempt++ {
		res, err := g.client.drv.Claim(ctx, p)
		var stale *driver.StreamChangedError
		if err == nil || !errors.As(err, &stale) || attempt == maxStaleRetries {
			return res, err
		}
		fresh := stale.Current
		fresh.Name = g.stream.Name
		if cur := g.claimConfig(); cur.Generation < fresh.Generation {
			g.planned.Store(&fresh)
			g.client.logger.Info("sqlstreams: the stream was altered; claiming with its new configuration", "stream", g.stream.Name,
				"group", g.name, "partitions", fresh.Partitions, "compacted", fresh.Compacted)
		}
		p.Stream = fresh
	}
}

// observe logs what a claim says about the group that this member did not
// register with: a configuration another registration changed, or rows left
// for members with converters this one lacks.
func (g *group) observe(res driver.ClaimResult) {
	g.mu.Lock()
	changed := !slices.Equal(res.Group.Bindings, g.config.Bindings) || !slices.Equal(res.Group.ConvertsFrom, g.config.ConvertsFrom)
	if changed {
		g.config = res.Group
	}
	logDeferred := res.Deferred > 0 && time.Since(g.deferredAt) > time.Minute
	if logDeferred {
		g.deferredAt = time.Now()
	}
	g.mu.Unlock()
	if changed {
		g.client.logger.Info("sqlstreams: the group's configuration changed; claiming with it", "stream", g.stream.Name, "group", g.name,
			"bindings", bindingWords(res.Group.Bindings), "converts_from", res.Group.ConvertsFrom)
	}
	if logDeferred {
		g.client.logger.Warn("sqlstreams: the group reads versions this member cannot decode; their rows are left for members that can",
			"stream", g.stream.Name, "group", g.name, "deferred", res.Deferred, "group_versions", res.Group.Versions(), "member_decodes", g.decodes,
			"advice", "deploy the same converters to every member of the group")
	}
}

func (g *group) wrap(op string, err error) error {
	return fmt.Errorf("sqlstreams: %s for group %q on %q: %w", op, g.name, g.stream.Name, err)
}

// take marks leases as being settled. It returns the leases it took and
// the ids it did not: already settled (or being settled) and already lost.
func take(ls []*lease) (taken []*lease, already, lost []int64) {
	for _, l := range ls {
		switch {
		case l.state.CompareAndSwap(leaseOpen, leaseSettling):
			taken = append(taken, l)
		case l.state.Load() == leaseLost:
			lost = append(lost, l.id)
		default:
			already = append(already, l.id)
		}
	}
	return taken, already, lost
}

// settled records the driver's answer for leases taken by take: lost ones
// are lost, the others settled.
func settled(taken []*lease, res driver.SettleResult) []int64 {
	lost := map[int64]bool{}
	for _, id := range res.Lost {
		lost[id] = true
	}
	for _, l := range taken {
		if lost[l.id] {
			l.state.Store(leaseLost)
		} else {
			l.state.Store(leaseSettled)
		}
	}
	return res.Lost
}

// reopen gives leases back to the open state after a settle that failed as
// a whole: nothing is known to have changed.
func reopen(taken []*lease) {
	for _, l := range taken {
		l.inTx.Store(false)
		l.state.Store(leaseOpen)
	}
}

// takeInTx is take for a settle in the caller's transaction tx: the leases
// are marked inTx first, once no extension that may name them runs, so
// that no later one does. Extensions name leases by their rows, which that
// transaction locks until the caller commits, however long that is.
func (g *group) takeInTx(tx driver.Tx, ls []*lease) (taken []*lease, already, lost []int64) {
	if tx != nil {
		g.extending.Lock()
		for _, l := range ls {
			if l.state.Load() == leaseOpen {
				l.inTx.Store(true)
			}
		}
		g.extending.Unlock()
	}
	return take(ls)
}

func refs(ls []*lease) []driver.Lease {
	out := make([]driver.Lease, len(ls))
	for i, l := range ls {
		out[i] = l.ref()
	}
	return out
}

// ackAlone records acks a claim could not carry (the group is paused) and
// returns the lost ones.
func (g *group) ackAlone(ctx context.Context, acks []*lease) ([]int64, error) {
	taken, _, lost := take(acks)
	if len(taken) == 0 {
		return lost, nil
	}
	start := time.Now()
	res, err := g.client.drv.Ack(ctx, driver.AckParams{StreamID: g.stream.ID, Group: g.name, Leases: refs(taken), Now: start.UTC()})
	g.hookSettle(ctx, OutcomeAck, taken, res, start, err)
	if err != nil {
		reopen(taken)
		return nil, g.wrap("ack", classify(err))
	}
	return append(lost, settled(taken, res)...), nil
}

// ack resolves leases, inside the caller's transaction tx when it is not
// nil.
func (g *group) ack(ctx context.Context, tx driver.Tx, ls []*lease) error {
	taken, already, lost := g.takeInTx(tx, ls)
	if len(taken) > 0 {
		start := time.Now()
		res, err := g.client.drv.Ack(ctx, driver.AckParams{StreamID: g.stream.ID, Group: g.name, Leases: refs(taken), Now: start.UTC(), Tx: tx})
		g.hookSettle(ctx, OutcomeAck, taken, res, start, err)
		if err != nil {
			reopen(taken)
			return g.wrap("ack", classify(err))
		}
		lost = append(lost, settled(taken, res)...)
	}
	return settleErr("ack", g, lost, already)
}

// hookSettle tells the settle hooks what one settle call did.
func (g *group) hookSettle(ctx context.Context, outcome string, taken []*lease, res driver.SettleResult, start time.Time, err error) {
	if len(g.settleHooks) == 0 {
		return
	}
	e := SettleEvent{Stream: g.stream.Name, Group: g.name, Outcome: outcome, Lost: res.Lost, Duration: time.Since(start), Err: err}
	for _, l := range taken {
		e.IDs = append(e.IDs, l.id)
	}
	for _, h := range g.settleHooks {
		g.client.observe("settle", func() { h.Settled(ctx, e) })
	}
}

// fail records handler errors, causes[i] for ls[i]: dead for Dead(err) or
// after MaxAttempts, otherwise delayed by RetryAfter's delay or the backoff;
// inside the caller's transaction tx when it is not nil.
func (g *group) fail(ctx context.Context, tx driver.Tx, ls []*lease, causes []error) error {
	taken, already, lost := g.takeInTx(tx, ls)
	if len(taken) == 0 {
		return settleErr("retry", g, lost, already)
	}
	cause := map[*lease]error{}
	for i, l := range ls {
		cause[l] = causes[i]
	}
	now := time.Now().UTC()
	op := "retry"
	fs := make([]driver.Failure, len(taken))
	for i, l := range taken {
		err := cause[l]
		f := driver.Failure{Lease: l.ref(), Error: errorText(err)}
		var dead *deadError
		var retry *retryError
		switch {
		case errors.As(err, &dead):
			f.Dead, op = true, "dead"
		case l.attempt >= g.opts.MaxAttempts:
			f.Dead = true
			f.Error = fmt.Sprintf("gave up after %d attempts: %s", l.attempt, f.Error)
		case errors.As(err, &retry):
			f.Due = now.Add(retry.delay)
		default:
			f.Due = now.Add(g.opts.Backoff(l.attempt))
		}
		fs[i] = f
	}
	res, err := g.client.drv.Fail(ctx, driver.FailParams{StreamID: g.stream.ID, Group: g.name, Failures: fs, Now: now, Tx: tx})
	if len(g.settleHooks) > 0 {
		var dead, retried []*lease
		for i, l := range taken {
			if fs[i].Dead {
				dead = append(dead, l)
			} else {
				retried = append(retried, l)
			}
		}
		for _, part := range []struct {
			outcome string
			ls      []*lease
		}{{OutcomeDead, dead}, {OutcomeRetry, retried}} {
			if len(part.ls) > 0 {
				g.hookSettle(ctx, part.outcome, part.ls, lostAmong(res, part.ls), now, err)
			}
		}
	}
	if err != nil {
		reopen(taken)
		return g.wrap("record failure", classify(err))
	}
	lost = append(lost, settled(taken, res)...)
	return settleErr(op, g, lost, already)
}

// lostAmong keeps the lost ids of res that belong to ls.
func lostAmong(res driver.SettleResult, ls []*lease) driver.SettleResult {
	in := map[int64]bool{}
	for _, l := range ls {
		in[l.id] = true
	}
	var out driver.SettleResult
	for _, id := range res.Lost {
		if in[id] {
			out.Lost = append(out.Lost, id)
		}
	}
	return out
}

// release gives deliveries back unstarted, without using an attempt.
// Deliveries already settled are left out silently: there is nothing to
// give back.
func (g *group) release(ctx context.Context, ls []*lease) error {
	taken, _, lost := take(ls)
	if len(taken) > 0 {
		start := time.Now()
		res, err := g.client.drv.Release(ctx, driver.ReleaseParams{StreamID: g.stream.ID, Group: g.name, Leases: refs(taken), Now: start.UTC()})
		g.hookSettle(ctx, OutcomeRelease, taken, res, start, err)
		if err != nil {
			reopen(taken)
			return g.wrap("release", classify(err))
		}
		lost = append(lost, settled(taken, res)...)
	}
	return settleErr("release", g, lost, nil)
}

// extend moves the leases of open deliveries to now+by. Each is extended on
// its own; lost ones are marked lost and named in the error. Leases being
// settled in a caller's transaction are left out (see group.extending).
//
// The expiry is computed before the driver applies it: an extension that
// came back after that expiry may have been applied late (it waited for a
// lock), when the lease had already run out in the database. With renewLate
// (Run's heartbeat) it is applied again at once with a new expiry, and one
// that is late again has its leases treated as lost, since another member
// may hold them by now. Without it (Delivery.Extend, whose caller may cut a
// lease short on purpose) the expiry asked for is kept.
func (g *group) extend(ctx context.Context, ls []*lease, by time.Duration, renewLate bool) error {
	g.extending.RLock()
	defer g.extending.RUnlock()
	var open []*lease
	var lost, already []int64
	for _, l := range ls {
		switch l.state.Load() {
		case leaseOpen, leaseSettling:
			if !l.inTx.Load() {
				open = append(open, l)
			}
		case leaseLost:
			lost = append(lost, l.id)
		default:
			already = append(already, l.id)
		}
	}
	for attempt := 1; len(open) > 0; attempt++ {
		now := time.Now().UTC()
		until := now.Add(by)
		res, err := g.client.drv.Extend(ctx, driver.ExtendParams{StreamID: g.stream.ID, Group: g.name, Leases: refs(open), Until: until, Now: now})
		if err != nil {
			return g.wrap("extend lease", classify(err))
		}
		gone := map[int64]bool{}
		for _, id := range res.Lost {
			gone[id] = true
		}
		late := renewLate && !time.Now().Before(until)
		var again []*lease
		for _, l := range open {
			switch {
			case !gone[l.id] && !late:
				l.until.Store(until.UnixNano())
			case !gone[l.id] && attempt == 1:
				again = append(again, l)
			case l.state.CompareAndSwap(leaseOpen, leaseLost):
				lost = append(lost, l.id)
			}
			// A lease being settled meanwhile reports its own outcome.
		}
		open = again
	}
	return settleErr("extend", g, lost, already)
}

func errorText(err error) string {
	if err == nil {
		return "no error given"
	}
	const max = 4000
	s := strings.ToValidUTF8(err.Error(), "\uFFFD")
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
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
	// Error is the last failure's error, whole.
	Error       string
	FirstFailed time.Time
	DiedAt      time.Time
	// Holder is the client that held the last lease.
	Holder string
	// History lists every failed attempt, oldest first (GroupAdmin.DeadLetter
	// fills it; lists leave it empty).
	History []FailureRecord
}

// FailureRecord is one failed attempt of a delivery.
type FailureRecord struct {
	Attempt int
	// Error is the attempt's error, cut to 1000 bytes.
	Error string
	At    time.Time
	// Holder is the client that held the lease of the attempt.
	Holder string
}

// DeadLetters lists up to limit dead deliveries of the group with ids above
// afterID, in id order; pass the last id seen to page.
func (c *Consumer[T]) DeadLetters(ctx context.Context, afterID int64, limit int) ([]DeadLetter, error) {
	return deadLetters(ctx, c.client, c.stream, c.name, afterID, limit, false)
}

func deadLetters(ctx context.Context, client *Client, stream driver.StreamConfig, group string, afterID int64, limit int, history bool) ([]DeadLetter, error) {
	if err := client.checkOpen(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, fmt.Errorf("%w: DeadLetters limit %d; use a positive count", ErrInvalidOption, limit)
	}
	dls, err := client.drv.ListDead(ctx, driver.ListDeadParams{StreamID: stream.ID, Group: group, AfterID: afterID, Limit: limit, History: history})
	if err != nil {
		return nil, fmt.Errorf("sqlstreams: list dead letters of group %q on %q: %w", group, stream.Name, classify(err))
	}
	out := make([]DeadLetter, len(dls))
	for i, d := range dls {
		out[i] = DeadLetter{ID: d.ID, SchemaVersion: d.SchemaVersion, Key: d.Key, RoutingKey: d.RoutingKey,
			Partition: d.Partition, Payload: json.RawMessage(d.Payload), Headers: d.Headers, ProducedAt: d.ProducedAt,
			Attempt: d.Attempt, Error: d.Error, FirstFailed: d.FirstFailed, DiedAt: d.DiedAt, Holder: d.Holder}
		for _, h := range d.History {
			out[i].History = append(out[i].History, FailureRecord(h))
		}
	}
	return out, nil
}

// Replay makes the given dead deliveries due now with attempts reset. It
// returns how many were dead and are now pending.
func (c *Consumer[T]) Replay(ctx context.Context, ids ...int64) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	return replay(ctx, c.client, c.stream, c.name, ids)
}

// ReplayAll replays every dead delivery of the group.
func (c *Consumer[T]) ReplayAll(ctx context.Context) (int64, error) {
	return replay(ctx, c.client, c.stream, c.name, nil)
}

func replay(ctx context.Context, client *Client, stream driver.StreamConfig, group string, ids []int64) (int64, error) {
	if err := client.checkOpen(); err != nil {
		return 0, err
	}
	n, err := client.drv.Replay(ctx, driver.ReplayParams{StreamID: stream.ID, Group: group, IDs: ids, Now: time.Now().UTC()})
	if err != nil {
		return n, fmt.Errorf("sqlstreams: replay for group %q on %q: %w", group, stream.Name, classify(err))
	}
	client.wake(stream.ID)
	return n, nil
}

// Discard resolves the given dead deliveries without processing them.
func (c *Consumer[T]) Discard(ctx context.Context, ids ...int64) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	return discard(ctx, c.client, c.stream, c.name, ids)
}

// DiscardAll resolves every dead delivery of the group.
func (c *Consumer[T]) DiscardAll(ctx context.Context) (int64, error) {
	return discard(ctx, c.client, c.stream, c.name, nil)
}

func discard(ctx context.Context, client *Client, stream driver.StreamConfig, group string, ids []int64) (int64, error) {
	if err := client.checkOpen(); err != nil {
		return 0, err
	}
	n, err := client.drv.Discard(ctx, driver.DiscardParams{StreamID: stream.ID, Group: group, IDs: ids})
	if err != nil {
		return n, fmt.Errorf("sqlstreams: discard for group %q on %q: %w", group, stream.Name, classify(err))
	}
	return n, nil
}
