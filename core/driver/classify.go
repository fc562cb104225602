package driver

// Settled returns what a driver's classification passes on as it is, and
// true: nil, the caller's own error (out of its CallerError), or an error
// that already carries one of this package's sentinels.
func Settled(err error) (error, bool) {
	if inner, ok := FromCaller(err); ok {
		return inner, true
	}
	return err, err == nil || Classified(err)
}

// AppendLockAdvice is the advice for a timed-out wait for the append lock
// of parts: AppendLockHeld, then what the caller does next (in its own
// transaction, roll it back and retry it; otherwise nothing was written).
func AppendLockAdvice[P ~int | ~int32](parts []P, callerTx bool) string {
	if callerTx {
		return AppendLockHeld(parts) + ", and roll this transaction back and retry it"
	}
	return AppendLockHeld(parts) + "; nothing was written"
}

// Unanswered is the failure of a call the server did not answer: its
// connection was lost, or its context ended (ctxEnded). With a write or a
// COMMIT in flight its outcome is unknown; otherwise nothing was written.
// Secrets are redacted from err.
func Unanswered(err error, inFlight, ctxEnded bool, secrets ...string) *Error {
	e := &Error{Kind: ErrUnavailable, Err: Redact(err, secrets...)}
	switch {
	case inFlight:
		lost := "the connection was lost"
		if ctxEnded {
			lost = "the context ended"
		}
		e.Kind, e.Advice = ErrOutcomeUnknown, lost+" while the database was committing; the change may or may not have been applied: check before retrying (for example by key), or make consumers idempotent"
	case ctxEnded:
		e.Advice = "the call's context ended before the database answered; nothing was written, so retrying is safe"
	default:
		e.Advice = "the connection to the database was lost; nothing was written"
	}
	return e
}
