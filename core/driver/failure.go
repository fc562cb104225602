package driver

import "time"

// Outcome is what failure f, recorded at now, makes of its delivery: dead
// (due at now, when it died) or delayed until f.Due.
func (f Failure) Outcome(now time.Time) (ExceptionState, time.Time) {
	if f.Dead {
		return StateDead, now
	}
	return StateDelayed, f.Due
}
