package otelsqlstreams

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/sqlstreams/sqlstreams/contrib/otel"

// System is the value of messaging.system.
const System = "sqlstreams"

// sqlstreams-specific attributes, under messaging.sqlstreams.* as the
// conventions require for system-specific ones.
const (
	SchemaVersionKey   = attribute.Key("messaging.sqlstreams.schema_version")
	MessageKeyKey      = attribute.Key("messaging.sqlstreams.message.key")
	RoutingKeyKey      = attribute.Key("messaging.sqlstreams.routing_key")
	CompactionRankKey  = attribute.Key("messaging.sqlstreams.compaction_rank")
	DeliveryAttemptKey = attribute.Key("messaging.sqlstreams.delivery_attempt")
	TransactionalKey   = attribute.Key("messaging.sqlstreams.transactional")
	OutcomeKey         = attribute.Key("messaging.sqlstreams.outcome")
	DriverKey          = attribute.Key("messaging.sqlstreams.driver")
	// DeliveryStateKey is leased, delayed or dead on the
	// sqlstreams.deliveries.unresolved gauge.
	DeliveryStateKey = attribute.Key("messaging.sqlstreams.delivery.state")
	// MaintenanceKindKey is compact or retain on sqlstreams.maintenance.removed.
	MaintenanceKindKey = attribute.Key("sqlstreams.maintenance.kind")
	// MaintenanceUnreadKey says whether removed rows were still unread by a
	// group (a hard retention limit overtook it).
	MaintenanceUnreadKey = attribute.Key("sqlstreams.maintenance.unread")
)

// Operation names: a span is named "{operation} {stream}", as the
// conventions name spans after messaging.operation.name.
const (
	OpSend    = "send"
	OpCreate  = "create"
	OpReceive = "receive"
	OpProcess = "process"
)

// DurationBuckets are the explicit bucket boundaries, in seconds, the
// conventions recommend for messaging.client.operation.duration and
// messaging.process.duration.
var DurationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// Config configures the middleware. The zero value (or nil) uses the global
// providers and propagator.
type Config struct {
	// TracerProvider makes the spans; nil uses otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// MeterProvider makes the instruments; nil uses otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// Propagator writes and reads the creation context in the message
	// headers; nil uses otel.GetTextMapPropagator() at each call, so a
	// propagator set globally after Open is honoured. While that global is
	// OpenTelemetry's no-op default (a propagator that carries no field),
	// W3C TraceContext is used instead, so that installing the middleware
	// is enough to link consumers to producers, and Logger says so once.
	// Add propagation.Baggage to carry baggage too.
	Propagator propagation.TextMapPropagator
	// Logger receives the middleware's one notice (the W3C TraceContext
	// default above); nil uses slog.Default(). sqlstreamsfx.OTel passes the
	// app's *slog.Logger when the graph has one.
	Logger *slog.Logger
	// ParentFromMessage parents the process span on the message's creation
	// context, so that producer and consumer share one trace, and links to
	// the span of Run's context instead. The default links only: one
	// message's retries and replays each get a trace of their own, linked to
	// the producer, which is what the conventions recommend.
	ParentFromMessage bool
	// DisableCreateSpans turns off the "create" span made for each message of
	// a ProduceBatch; the batch's send span is then injected into every
	// message.
	DisableCreateSpans bool
	// SettleSpans adds a CLIENT span for each settle call (ack, retry, dead,
	// release). Off by default: Run writes acks in background batches, so the
	// spans say little about a handler and cost one per batch.
	SettleSpans bool
	// RecordBodySize adds messaging.message.body.size (payload bytes) to
	// single-message spans; opt-in, as in the conventions.
	RecordBodySize bool
	// HealthInterval, when > 0, reads Stream.Health of every stream at this
	// interval for the backlog gauges sqlstreams.consumer.unread and
	// sqlstreams.deliveries.unresolved. Each read is a query per stream, so
	// it is off by default. It needs the middleware installed with Option or
	// Middleware.ClientOption (which give it the client), and starts with
	// the first produce, claim or maintenance pass. It stops by itself at
	// its first reading after the client closed; Middleware.Close stops it
	// at once.
	HealthInterval time.Duration
	// ClientID is messaging.client.id; empty uses the client's identity
	// (sqlstreams.WithIdentity, default host:pid), the name its leases
	// carry, so a span and a lease holder seen in Describe match.
	ClientID string
}

// Middleware traces and measures a client: it implements
// sqlstreams.ProduceMiddleware, HandleMiddleware, ClaimHook, SettleHook and
// MaintainHook. Make it with NewMiddleware; it is safe for concurrent use.
type Middleware struct {
	sqlstreams.MiddlewareDefaults

	cfg    Config
	tracer trace.Tracer
	meter  metric.Meter

	sent, consumed, leaseLost, removed metric.Int64Counter
	opDuration, procDuration, age      metric.Float64Histogram
	unread, unresolved                 metric.Int64ObservableGauge

	identOnce         sync.Once
	clientMu          sync.Mutex
	client            *sqlstreams.Client
	clientID, drvName string
	identAttrs        []attribute.KeyValue
	healthMu          sync.Mutex
	healthPoints      []healthPoint
	healthReg         metric.Registration
	healthStop        chan struct{}
	healthDone        chan struct{}
	closeOnce         sync.Once
	closed            bool // under healthMu
	inflight          inflight
	producers         sync.Map // stream name → *producerAttrs
	// globalProp is the last global propagator seen and what it stands for
	// (itself, or TraceContext when it carries nothing); defaultLogged
	// makes the notice of that default a single one.
	globalProp    atomic.Pointer[propagatorChoice]
	defaultLogged sync.Once
}

// NewMiddleware builds the middleware; cfg may be nil. Install it with
// sqlstreams.WithMiddleware, or better with its ClientOption, which also
// gives it the client for the identity, the driver name and the health
// gauges.
func NewMiddleware(cfg *Config) *Middleware {
	m := &Middleware{}
	if cfg != nil {
		m.cfg = *cfg
	}
	tp := m.cfg.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	mp := m.cfg.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m.tracer = tp.Tracer(ScopeName, trace.WithInstrumentationVersion(moduleVersion()), trace.WithSchemaURL(semconv.SchemaURL))
	m.meter = mp.Meter(ScopeName, metric.WithInstrumentationVersion(moduleVersion()), metric.WithSchemaURL(semconv.SchemaURL))
	m.inflight.m, m.inflight.wait = map[deliveryKey]*procState{}, settleWait
	m.instruments()
	return m
}

// Option installs a new middleware on a client: pass it to sqlstreams.Open.
func Option(cfg *Config) sqlstreams.ClientOption { return NewMiddleware(cfg).ClientOption() }

// ClientOption installs m on the client being opened and hands it the
// client: its identity becomes messaging.client.id, its driver's name
// messaging.sqlstreams.driver, and with HealthInterval set the backlog
// gauges start reading it. Install one middleware on one client.
func (m *Middleware) ClientOption() sqlstreams.ClientOption {
	install := sqlstreams.WithMiddleware(m)
	return func(c *sqlstreams.Client) {
		m.clientMu.Lock()
		m.client = c
		m.clientMu.Unlock()
		install(c)
	}
}

// Close stops the health gauges' goroutine and unregisters their callback,
// and ends the process spans still waiting for an outcome. It does not close
// the client or the providers. It is safe to call more than once.
func (m *Middleware) Close() error {
	var err error
	m.closeOnce.Do(func() {
		m.healthMu.Lock()
		m.closed = true
		stop, done, reg := m.healthStop, m.healthDone, m.healthReg
		m.healthMu.Unlock()
		if stop != nil {
			close(stop)
			<-done
		}
		if reg != nil {
			err = reg.Unregister()
		}
		m.inflight.endAll()
	})
	return err
}

func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == ScopeName && d.Version != "" {
				return d.Version
			}
		}
		if bi.Main.Path == ScopeName && bi.Main.Version != "" {
			return bi.Main.Version
		}
	}
	return "(devel)"
}

func (m *Middleware) instruments() {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	var err error
	m.sent, err = m.meter.Int64Counter("messaging.client.sent.messages", metric.WithUnit("{message}"),
		metric.WithDescription("Number of messages producer attempted to send to the broker."))
	add(err)
	m.consumed, err = m.meter.Int64Counter("messaging.client.consumed.messages", metric.WithUnit("{message}"),
		metric.WithDescription("Number of messages that were delivered to the application."))
	add(err)
	m.opDuration, err = m.meter.Float64Histogram("messaging.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of messaging operation initiated by a producer or consumer client."),
		metric.WithExplicitBucketBoundaries(DurationBuckets...))
	add(err)
	m.procDuration, err = m.meter.Float64Histogram("messaging.process.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of processing operation."), metric.WithExplicitBucketBoundaries(DurationBuckets...))
	add(err)
	m.age, err = m.meter.Float64Histogram("sqlstreams.delivery.age", metric.WithUnit("s"),
		metric.WithDescription("Time from a message's production to the start of its handler."),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400))
	add(err)
	m.leaseLost, err = m.meter.Int64Counter("sqlstreams.lease.lost", metric.WithUnit("{delivery}"),
		metric.WithDescription("Deliveries whose lease was lost when settling them: another member may run them again."))
	add(err)
	m.removed, err = m.meter.Int64Counter("sqlstreams.maintenance.removed", metric.WithUnit("{message}"),
		metric.WithDescription("Rows removed by compaction and retention."))
	add(err)
	m.unread, err = m.meter.Int64ObservableGauge("sqlstreams.consumer.unread", metric.WithUnit("{message}"),
		metric.WithDescription("Rows past a group's cursors that it reads, per schema version (from Stream.Health)."))
	add(err)
	m.unresolved, err = m.meter.Int64ObservableGauge("sqlstreams.deliveries.unresolved", metric.WithUnit("{message}"),
		metric.WithDescription("A group's leased, delayed and dead deliveries, per schema version (from Stream.Health)."))
	add(err)
	if len(errs) > 0 {
		otel.Handle(fmt.Errorf("otelsqlstreams: creating instruments: %w", errors.Join(errs...)))
	}
}

// ident returns the attributes that name this client, computed once: the
// client is fully opened by the first call that reaches a middleware.
func (m *Middleware) ident() []attribute.KeyValue {
	m.identOnce.Do(func() {
		m.clientMu.Lock()
		c := m.client
		m.clientMu.Unlock()
		m.clientID = m.cfg.ClientID
		if c != nil {
			if m.clientID == "" {
				m.clientID = c.Identity()
			}
			if d := c.Driver(); d != nil {
				m.drvName = d.Name()
			}
		}
		if m.clientID == "" {
			host, err := os.Hostname()
			if err != nil {
				host = "unknown-host"
			}
			m.clientID = host + ":" + strconv.Itoa(os.Getpid())
		}
		m.identAttrs = []attribute.KeyValue{semconv.MessagingClientID(m.clientID)}
		if m.drvName != "" {
			m.identAttrs = append(m.identAttrs, DriverKey.String(m.drvName))
		}
		// The first call that reaches the middleware proves the client
		// opened: the backlog reader starts now, not in Open's options,
		// which run before the schema is migrated (and before Open can
		// still fail, which would leave the reader running).
		if c != nil && m.cfg.HealthInterval > 0 {
			m.startHealth(c)
		}
	})
	return m.identAttrs
}

var systemAttr = semconv.MessagingSystemKey.String(System)
