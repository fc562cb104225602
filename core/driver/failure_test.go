package driver

import (
	"testing"
	"time"
)

func TestFailureOutcome(t *testing.T) {
	now, due := time.Unix(100, 0), time.Unix(200, 0)
	if s, at := (Failure{Due: due}).Outcome(now); s != StateDelayed || !at.Equal(due) {
		t.Errorf("retry: %s at %v, want delayed at %v", s, at, due)
	}
	if s, at := (Failure{Dead: true, Due: due}).Outcome(now); s != StateDead || !at.Equal(now) {
		t.Errorf("dead: %s at %v, want dead at %v", s, at, now)
	}
}
