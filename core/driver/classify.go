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
