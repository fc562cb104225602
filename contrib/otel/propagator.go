package otelsqlstreams

import (
	"log/slog"
	"reflect"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
)

// propagatorChoice is a global propagator and the one the middleware uses
// while it is the global one.
type propagatorChoice struct {
	global, use propagation.TextMapPropagator
}

// propagator is Config.Propagator, else the global propagator read at each
// call, else, while the global one carries no field (OpenTelemetry's no-op
// default until otel.SetTextMapPropagator), W3C TraceContext: without it
// every trace would stop at the database, which no application that
// installs this middleware wants. The first such fallback is logged.
func (m *Middleware) propagator() propagation.TextMapPropagator {
	if m.cfg.Propagator != nil {
		return m.cfg.Propagator
	}
	global := otel.GetTextMapPropagator()
	// Asking Fields allocates: the choice is kept while the global stays.
	if c := m.globalProp.Load(); c != nil && samePropagator(c.global, global) {
		return c.use
	}
	use := global
	if len(global.Fields()) == 0 {
		use = propagation.TraceContext{}
		m.defaultLogged.Do(func() {
			m.logger().Info("otelsqlstreams: the global OpenTelemetry propagator is the no-op default; "+
				"the creation context travels in W3C TraceContext headers (traceparent, tracestate). "+
				"Set Config.Propagator or call otel.SetTextMapPropagator to choose another.",
				"scope", ScopeName)
		})
	}
	m.globalProp.Store(&propagatorChoice{global: global, use: use})
	return use
}

func (m *Middleware) logger() *slog.Logger {
	if m.cfg.Logger != nil {
		return m.cfg.Logger
	}
	return slog.Default()
}

// samePropagator reports whether a and b are one propagator value. It
// never compares what == cannot (a composite propagator is a slice, and
// == on it would panic): slices, maps and pointers compare by address.
func samePropagator(a, b propagation.TextMapPropagator) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if !va.IsValid() || !vb.IsValid() || va.Type() != vb.Type() {
		return false
	}
	switch va.Kind() {
	case reflect.Slice:
		return va.Pointer() == vb.Pointer() && va.Len() == vb.Len()
	case reflect.Map, reflect.Pointer, reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return va.Pointer() == vb.Pointer()
	}
	return va.Comparable() && vb.Comparable() && va.Equal(vb)
}
