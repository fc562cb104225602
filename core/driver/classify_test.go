package driver_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// TestSettled passes nil, the caller's error and classified errors on, and
// leaves the rest to the driver.
func TestSettled(t *testing.T) {
	mine := errors.New("mine")
	classified := fmt.Errorf("x: %w", driver.ErrConflict)
	raw := errors.New("raw")
	for _, tc := range []struct {
		in, want error
		settled  bool
	}{
		{nil, nil, true},
		{driver.CallerError{Err: mine}, mine, true},
		{fmt.Errorf("tx: %w", driver.CallerError{Err: mine}), mine, true},
		{classified, classified, true},
		{raw, raw, false},
	} {
		got, ok := driver.Settled(tc.in)
		if got != tc.want || ok != tc.settled {
			t.Errorf("Settled(%v) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.settled)
		}
	}
}

// TestAppendLockAdvice tells a caller's transaction to roll back, and
// anyone else that nothing was written.
func TestAppendLockAdvice(t *testing.T) {
	if a := driver.AppendLockAdvice([]int{2}, true); !strings.Contains(a, "partition 2") || !strings.HasSuffix(a, "roll this transaction back and retry it") {
		t.Errorf("caller's transaction: %q", a)
	}
	if a := driver.AppendLockAdvice([]int32{}, false); !strings.HasSuffix(a, "; nothing was written") {
		t.Errorf("own: %q", a)
	}
}

// TestUnanswered: a write in flight has an unknown outcome, anything else
// wrote nothing; a password is redacted.
func TestUnanswered(t *testing.T) {
	cause := errors.New("read tcp: connection reset, password=hunter2")
	for _, tc := range []struct {
		inFlight, ctxEnded bool
		kind               error
		says               string
	}{
		{true, true, driver.ErrOutcomeUnknown, "the context ended while"},
		{true, false, driver.ErrOutcomeUnknown, "the connection was lost while"},
		{false, true, driver.ErrUnavailable, "context ended before the database answered"},
		{false, false, driver.ErrUnavailable, "nothing was written"},
	} {
		err := driver.Unanswered(cause, tc.inFlight, tc.ctxEnded, "hunter2")
		if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.says) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Unanswered(%v, %v) = %v; want %v saying %q, redacted", tc.inFlight, tc.ctxEnded, err, tc.kind, tc.says)
		}
	}
}
