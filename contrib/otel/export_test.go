package otelsqlstreams

// HealthDone is closed when the backlog reader has stopped (nil when it
// never started).
func HealthDone(m *Middleware) <-chan struct{} {
	m.healthMu.Lock()
	defer m.healthMu.Unlock()
	return m.healthDone
}

// ErrorType exposes errorType to the tests.
var ErrorType = errorType
