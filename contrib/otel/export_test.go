package otelsqlstreams

import "time"

// HealthDone is closed when the backlog reader has stopped (nil when it
// never started).
func HealthDone(m *Middleware) <-chan struct{} {
	m.healthMu.Lock()
	defer m.healthMu.Unlock()
	return m.healthDone
}

// ErrorType exposes errorType to the tests.
var ErrorType = errorType

// SetSettleWait changes how long m's process spans wait for their settle;
// call it before the middleware is used.
func SetSettleWait(m *Middleware, d time.Duration) { m.inflight.wait = d }
