package sqlstreams

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// Client is a connection to one database through one driver. It is safe for
// concurrent use; create one per process and Close it on shutdown.
type Client struct {
	drv       driver.Driver
	logger    *slog.Logger
	identity  string        // stored with every lease this client takes
	opTimeout time.Duration // bounds each call Run and maintenance make

	noMigrate  bool                          // WithoutMigrate: check the schema instead
	docPolicy  schema.Policy                 // WithDocumentPolicy: rules for hand-written schemas
	formatList []schema.Format               // as given to WithFormats
	formats    map[schema.Type]schema.Format // the same, by type, checked by Open
	jsonCheck  schema.Compiler               // WithJSONValidation's, nil when none
	middleware []Middleware                  // as given to WithMiddleware
	chain      chain                         // the same, sorted
	produceMW  []ProduceMiddleware

	maintainEvery time.Duration
	stopMaintain  context.CancelFunc
	beat          heartbeat // the client's record of itself (members.go)
	samples       sampling  // what maintenance samples for History (samples.go)
	background    sync.WaitGroup

	closeOnce sync.Once
	closed    chan struct{}
	runMu     sync.Mutex     // orders Run's start against Close
	runs      sync.WaitGroup // running Consumer.Run calls
	stuck     []error        // ErrShutdownTimeout of Run calls that left handlers running

	wakeMu sync.Mutex
	wakers map[int64]map[*waker]struct{}
}

// ClientOption configures Open.
type ClientOption func(*Client)

// WithLogger sends the client's structured logs to l. The default is
// slog.Default().
func WithLogger(l *slog.Logger) ClientOption {
	return func(c *Client) { c.logger = l }
}

// WithIdentity names this client in the leases it takes, in Describe and in
// dead-letter history, like Kafka's client id. The default is
// "hostname:pid".
func WithIdentity(id string) ClientOption {
	return func(c *Client) { c.identity = id }
}

// WithDocumentPolicy sets the rules the registry judges schema documents
// by: those a person wrote and registers or checks by hand (Registry.Register,
// RegisterSchema, Check, CheckAgainst, CheckWithReferences, and so the
// Confluent-compatible API). The default, schema.GoAware, judges them as
// Go types are judged, by what a Go consumer decoding with encoding/json
// does. schema.Strict applies Confluent's rules instead, for streams whose
// readers are not Go: adding an optional property to an open content model,
// for one, is then a break. Schemas reflected from Go types are always
// judged GoAware.
func WithDocumentPolicy(p schema.Policy) ClientOption {
	return func(c *Client) { c.docPolicy = p }
}

// WithFormats enables schema languages besides JSON Schema in the registry,
// such as contrib/avro's Format for AVRO documents: RegisterSchema, the dry
// runs and the Confluent-compatible API then accept documents of those
// types, and judge them by each format's own rules. JSON Schema is built
// in. Core imports no parser (it is standard library only), which is why a
// format is an option: a program that registers only Go types links none.
// A client without a format still lists, serves and counts documents of
// its type; it refuses to register or check them.
func WithFormats(formats ...schema.Format) ClientOption {
	return func(c *Client) { c.formatList = append(c.formatList, formats...) }
}

// WithJSONValidation enables Registry.Validate and ProducerOptions.Validate
// for JSON Schema revisions with c, a schema.Compiler wrapping a JSON Schema
// validator (contrib/jsonschema's Compiler()). It is an option because core
// carries no full validator. Without it a JSON revision cannot validate
// messages (ErrNoValidator).
func WithJSONValidation(c schema.Compiler) ClientOption {
	return func(cl *Client) { cl.jsonCheck = c }
}

// checkFormats indexes the formats WithFormats gave by type: each must be
// non-nil, of a valid type other than JSON, and given once.
func (c *Client) checkFormats() error {
	c.formats = map[schema.Type]schema.Format{}
	for _, f := range c.formatList {
		if f == nil {
			return fmt.Errorf("%w: WithFormats got a nil format", ErrInvalidOption)
		}
		t, err := schema.ParseType(string(f.Type()))
		switch {
		case err != nil || t != f.Type():
			return fmt.Errorf("%w: WithFormats: format type %q; types are upper-case names such as AVRO", ErrInvalidOption, f.Type())
		case t == schema.TypeJSON:
			return fmt.Errorf("%w: WithFormats: JSON Schema is built in; leave it out", ErrInvalidOption)
		}
		if _, dup := c.formats[t]; dup {
			return fmt.Errorf("%w: WithFormats: two formats for %s; give one", ErrInvalidOption, t)
		}
		c.formats[t] = f
	}
	return nil
}

// WithOperationTimeout bounds every database call Run and background
// maintenance make (a claim, an ack batch, a lease extension, one
// maintenance step), and Claim's own, so that a frozen server or a network
// partition shows in the logs within that time instead of blocking
// silently. The default is 10s.
func WithOperationTimeout(d time.Duration) ClientOption {
	return func(c *Client) { c.opTimeout = d }
}

// WithMaintenanceInterval sets how often the client enforces retention and
// compaction on every stream in the background. The default is one minute;
// zero turns background maintenance off (call Client.Maintain yourself).
// Several processes may maintain the same database; the work is idempotent.
func WithMaintenanceInterval(d time.Duration) ClientOption {
	return func(c *Client) { c.maintainEvery = d }
}

// Open connects through drv, migrates its schema (or, with WithoutMigrate,
// checks that it is current), checks that the role may create the tables
// streams need, and starts background maintenance. The driver is owned by
// the client from then on: Close closes it.
func Open(ctx context.Context, drv driver.Driver, opts ...ClientOption) (*Client, error) {
	if drv == nil {
		return nil, fmt.Errorf("%w: nil driver; pass one such as sqlite.Open(\"app.db\")", ErrInvalidOption)
	}
	c := &Client{
		drv:           drv,
		logger:        slog.Default(),
		maintainEvery: time.Minute,
		opTimeout:     defaultOpTimeout,
		identity:      defaultIdentity(),
		beat:          heartbeat{every: DefaultHeartbeatInterval},
		samples:       sampling{every: DefaultSampleInterval, keep: DefaultSampleRetention, last: map[int64]time.Time{}},
		closed:        make(chan struct{}),
		wakers:        map[int64]map[*waker]struct{}{},
	}
	for _, o := range opts {
		o(c)
	}
	if c.maintainEvery < 0 {
		return nil, fmt.Errorf("%w: maintenance interval %v is negative; use 0 to turn maintenance off", ErrInvalidOption, c.maintainEvery)
	}
	if c.beat.every < 0 {
		return nil, fmt.Errorf("%w: heartbeat interval %v is negative; use 0 to record none", ErrInvalidOption, c.beat.every)
	}
	if err := c.samples.validate(); err != nil {
		return nil, err
	}
	if c.opTimeout <= 0 {
		return nil, fmt.Errorf("%w: operation timeout %v; use a positive duration", ErrInvalidOption, c.opTimeout)
	}
	if err := validateIdentity(c.identity); err != nil {
		return nil, err
	}
	if err := c.checkFormats(); err != nil {
		return nil, err
	}
	var err error
	if c.chain, err = sortMiddleware("client", c.middleware); err != nil {
		return nil, err
	}
	c.produceMW = c.chain.produce
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	if c.noMigrate {
		if err := NewMigrator(drv).Validate(ctx); err != nil {
			_ = drv.Close()
			return nil, err
		}
	} else if err := drv.Migrate(ctx); err != nil {
		_ = drv.Close()
		return nil, fmt.Errorf("sqlstreams: open %s: %w", drv.Name(), classify(err))
	}
	// Streams create and drop tables at run time: a role that cannot is
	// found out now rather than at the first registration.
	if err := drv.CheckPrivileges(ctx, driver.CheckPrivilegesParams{}); err != nil {
		_ = drv.Close()
		return nil, fmt.Errorf("sqlstreams: open %s: %w", drv.Name(), classify(err))
	}
	if c.maintainEvery > 0 {
		mctx, cancel := context.WithCancel(context.Background())
		c.stopMaintain = cancel
		c.background.Add(1)
		go c.maintainLoop(mctx)
	}
	c.startHeartbeat(ctx)
	return c, nil
}

// Driver returns the driver the client was opened with.
func (c *Client) Driver() driver.Driver { return c.drv }

// Identity returns the name the client records with the leases it takes
// (WithIdentity).
func (c *Client) Identity() string { return c.identity }

// DriverAs returns the client's driver as the concrete driver type D, for
// what only that driver offers, such as the pool on which to begin the
// transactions ProduceTx and AckTx take:
//
//	drv, ok := sqlstreams.DriverAs[*postgres.Driver](client)
//	tx, err := drv.Pool().Begin(ctx)
func DriverAs[D driver.Driver](c *Client) (D, bool) {
	d, ok := c.drv.(D)
	return d, ok
}

// Close stops background work, makes running consumers stop claiming and
// return ErrClosed, waits for them (each lets its running handlers finish
// for up to its ShutdownTimeout and records their outcomes), then closes the
// driver, so that no goroutine of the client outlives Close. A handler that
// ignores the cancellation that follows ShutdownTimeout is left behind, its
// lease to expire: Close then returns ErrShutdownTimeout naming it. Calls
// after Close fail with ErrClosed. Do not call Close from a handler: it
// would wait for itself.
func (c *Client) Close() error {
	err := ErrClosed
	c.closeOnce.Do(func() {
		c.runMu.Lock()
		close(c.closed)
		c.runMu.Unlock()
		if c.stopMaintain != nil {
			c.stopMaintain()
		}
		if c.beat.stop != nil {
			c.beat.stop()
		}
		c.background.Wait()
		c.runs.Wait()
		c.recordClose()
		c.runMu.Lock()
		stuck := c.stuck
		c.runMu.Unlock()
		err = errors.Join(append(stuck, c.drv.Close())...)
	})
	return err
}

// leftRunning records a Run that returned with handlers still running.
func (c *Client) leftRunning(err error) {
	c.runMu.Lock()
	c.stuck = append(c.stuck, err)
	c.runMu.Unlock()
}

// opContext bounds one database call by the operation timeout.
func (c *Client) opContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.opTimeout)
}

const defaultOpTimeout = 10 * time.Second

// MaxIdentityLength bounds a client identity, in bytes.
const MaxIdentityLength = 255

func validateIdentity(id string) error {
	ok := id != "" && len(id) <= MaxIdentityLength && utf8.ValidString(id)
	for _, r := range id {
		ok = ok && unicode.IsPrint(r)
	}
	if !ok {
		return fmt.Errorf("%w: identity %q; use 1 to %d bytes of printable UTF-8, such as host:pid", ErrInvalidOption, id, MaxIdentityLength)
	}
	return nil
}

func defaultIdentity() string {
	host, err := os.Hostname()
	if err != nil || validateIdentity(host) != nil || len(host) > MaxIdentityLength-12 {
		host = "unknown-host"
	}
	return host + ":" + strconv.Itoa(os.Getpid())
}

// startRun registers a running consumer, unless the client is closed.
func (c *Client) startRun() error {
	c.runMu.Lock()
	defer c.runMu.Unlock()
	if err := c.checkOpen(); err != nil {
		return err
	}
	c.runs.Add(1)
	return nil
}

func (c *Client) checkOpen() error {
	select {
	case <-c.closed:
		return fmt.Errorf("sqlstreams: %w; open a new client", ErrClosed)
	default:
		return nil
	}
}

// Stream returns a typed handle on the stream called name. It does not touch
// the database; the name is checked by the handle's first call.
func (c *Client) Stream[T Versioned](name string) *Stream[T] {
	return &Stream[T]{client: c, name: name}
}

// MaintenanceReport says what one maintenance pass removed.
type MaintenanceReport struct {
	Compacted     int64
	Retained      int64
	RemovedUnread int64
	// Members counts the records of clients last seen over
	// MemberRetention ago that the pass removed.
	Members int64
	// Sampled counts the samples of stream figures the pass stored (none
	// for a bucket another client sampled first); Samples those older
	// than the sample retention that it removed.
	Sampled, Samples int64
}

// Maintain enforces retention and compaction on every stream once, removes
// old client records and samples, and samples each stream's figures once
// per sample interval (Stream.History).
func (c *Client) Maintain(ctx context.Context) (MaintenanceReport, error) {
	var rep MaintenanceReport
	if err := c.checkOpen(); err != nil {
		return rep, err
	}
	streams, err := c.drv.ListStreams(ctx, driver.ListStreamsParams{})
	if err != nil {
		return rep, fmt.Errorf("sqlstreams: maintain: %w", classify(err))
	}
	const batch = 10000
	var errs []error
	for _, s := range streams {
		now := time.Now()
		if s.Compacted {
			n, err := c.drv.Compact(ctx, driver.CompactParams{StreamID: s.ID, Limit: batch})
			rep.Compacted += n
			if err != nil && !errors.Is(err, ErrStreamNotFound) {
				errs = append(errs, fmt.Errorf("compact %q: %w", s.Name, classify(err)))
			}
		}
		if s.Retention.MaxAge > 0 || s.Retention.MaxRows > 0 {
			r, err := c.drv.Retain(ctx, driver.RetainParams{StreamID: s.ID, Now: now, Limit: batch, Match: matchBindings})
			rep.Retained += r.Removed
			for _, n := range r.RemovedUnread {
				rep.RemovedUnread += n
			}
			if err != nil && !errors.Is(err, ErrStreamNotFound) {
				errs = append(errs, fmt.Errorf("retain %q: %w", s.Name, classify(err)))
			}
		}
	}
	n, err := c.pruneMembers(ctx, time.Now())
	rep.Members = n
	if err != nil {
		errs = append(errs, fmt.Errorf("prune client records: %w", classify(err)))
	}
	rep.Sampled, rep.Samples, err = c.sampleStreams(ctx, streams, time.Now())
	if err != nil {
		errs = append(errs, err)
	}
	err = errors.Join(errs...)
	if err != nil {
		err = fmt.Errorf("sqlstreams: maintain: %w", err)
	}
	for _, h := range c.chain.maintain {
		c.observe("maintenance", func() { h.Maintained(ctx, rep, err) })
	}
	return rep, err
}

func (c *Client) maintainLoop(ctx context.Context) {
	defer c.background.Done()
	t := time.NewTicker(c.maintainEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			rep, err := c.Maintain(ctx)
			switch {
			case err != nil && ctx.Err() == nil:
				c.logger.Warn("sqlstreams: maintenance failed; will retry", "error", err)
			case rep.Compacted+rep.Retained > 0:
				c.logger.Info("sqlstreams: maintenance", "compacted", rep.Compacted, "retained", rep.Retained, "removed_unread", rep.RemovedUnread)
			}
		}
	}
}

// waker is an in-process wake-up hint: a producer in this process tells its
// consumers that rows were appended, so they need not wait for the next poll.
type waker struct{ ch chan struct{} }

func (c *Client) subscribe(streamID int64) *waker {
	w := &waker{ch: make(chan struct{}, 1)}
	c.wakeMu.Lock()
	defer c.wakeMu.Unlock()
	if c.wakers[streamID] == nil {
		c.wakers[streamID] = map[*waker]struct{}{}
	}
	c.wakers[streamID][w] = struct{}{}
	return w
}

func (c *Client) unsubscribe(streamID int64, w *waker) {
	c.wakeMu.Lock()
	defer c.wakeMu.Unlock()
	delete(c.wakers[streamID], w)
}

func (c *Client) wake(streamID int64) {
	c.wakeMu.Lock()
	defer c.wakeMu.Unlock()
	for w := range c.wakers[streamID] {
		w.poke()
	}
}

func (w *waker) poke() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}
