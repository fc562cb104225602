package otelsqlstreams

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// healthPoint is one group's backlog at one schema version.
type healthPoint struct {
	attrs                  attribute.Set
	leased, delayed, dead  attribute.Set
	unread                 int64
	nLeased, nDelayed, nDd int64
}

// startHealth registers the gauges' callback, which reports the last
// reading, and starts the goroutine that reads Health every interval. The
// goroutine ends on Close, or by itself once the client is closed.
func (m *Middleware) startHealth(c *sqlstreams.Client) {
	m.healthMu.Lock()
	closed := m.closed
	m.healthMu.Unlock()
	if closed {
		return
	}
	reg, err := m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		m.healthMu.Lock()
		points := m.healthPoints
		m.healthMu.Unlock()
		for _, p := range points {
			o.ObserveInt64(m.unread, p.unread, metric.WithAttributeSet(p.attrs))
			o.ObserveInt64(m.unresolved, p.nLeased, metric.WithAttributeSet(p.leased))
			o.ObserveInt64(m.unresolved, p.nDelayed, metric.WithAttributeSet(p.delayed))
			o.ObserveInt64(m.unresolved, p.nDd, metric.WithAttributeSet(p.dead))
		}
		return nil
	}, m.unread, m.unresolved)
	if err != nil {
		otel.Handle(err)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	m.healthMu.Lock()
	defer m.healthMu.Unlock()
	if m.closed { // closed meanwhile
		if reg != nil {
			_ = reg.Unregister()
		}
		return
	}
	m.healthReg, m.healthStop, m.healthDone = reg, stop, done
	go m.healthLoop(c, stop, done)
}

func (m *Middleware) healthLoop(c *sqlstreams.Client, stop, done chan struct{}) {
	defer close(done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	t := time.NewTicker(m.cfg.HealthInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if closed := m.readHealth(ctx, c); closed {
			return
		}
	}
}

// readHealth takes one reading of every stream; it reports true once the
// client is closed. A read is bounded by the interval (at least 5 s).
func (m *Middleware) readHealth(ctx context.Context, c *sqlstreams.Client) (closed bool) {
	ctx, cancel := context.WithTimeout(ctx, max(m.cfg.HealthInterval, 5*time.Second))
	defer cancel()
	streams, err := c.Streams(ctx)
	if errors.Is(err, sqlstreams.ErrClosed) {
		return true
	}
	if err != nil {
		if ctx.Err() == nil {
			otel.Handle(err)
		}
		return false
	}
	var points []healthPoint
	for _, s := range streams {
		h, err := c.Stream[sqlstreams.RawPayload](s.Name).Health(ctx)
		if errors.Is(err, sqlstreams.ErrClosed) {
			return true
		}
		if err != nil {
			if !errors.Is(err, sqlstreams.ErrStreamNotFound) && ctx.Err() == nil {
				otel.Handle(err)
			}
			continue
		}
		for _, v := range h.Versions {
			for _, g := range v.Groups {
				base := []attribute.KeyValue{systemAttr, semconv.MessagingDestinationName(h.Stream),
					semconv.MessagingConsumerGroupName(g.Group), SchemaVersionKey.Int(v.Version)}
				with := func(state string) attribute.Set {
					return attribute.NewSet(append(append([]attribute.KeyValue{}, base...), DeliveryStateKey.String(state))...)
				}
				points = append(points, healthPoint{attrs: attribute.NewSet(base...), unread: g.Unread,
					leased: with("leased"), delayed: with("delayed"), dead: with("dead"),
					nLeased: g.Leased, nDelayed: g.Delayed, nDd: g.Dead})
			}
		}
	}
	m.healthMu.Lock()
	m.healthPoints = points
	m.healthMu.Unlock()
	return false
}
