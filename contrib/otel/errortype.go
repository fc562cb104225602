package otelsqlstreams

import (
	"context"
	"errors"
	"reflect"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// The error.type values this package reports form a fixed set, listed in
// the package doc, so that a metric has one series per class and never one
// per Go type an application happens to return.
const (
	// errorTypeOther is the conventions' fallback, for an error no other
	// class describes (most handler errors).
	errorTypeOther = "_OTHER"
	// errorTypePanic is a handler that panicked.
	errorTypePanic = "panic"
	// errorTypeDead is a handler that returned sqlstreams.Dead: the delivery
	// is dead-lettered without further attempts.
	errorTypeDead = "dead"
)

// sentinelTypes are the errors sqlstreams defines that an operation can end
// with, and their error.type, checked in this order.
var sentinelTypes = []struct {
	err  error
	name string
}{
	{sqlstreams.ErrLeaseLost, "lease_lost"},
	{sqlstreams.ErrClosed, "closed"},
	{sqlstreams.ErrConflict, "conflict"},
	{sqlstreams.ErrUnavailable, "unavailable"},
	{sqlstreams.ErrOutcomeUnknown, "outcome_unknown"},
	{sqlstreams.ErrStreamNotFound, "stream_not_found"},
	{sqlstreams.ErrGroupNotFound, "group_not_found"},
	{sqlstreams.ErrGroupVersion, "group_version"},
	{sqlstreams.ErrInvalidMessage, "invalid_message"},
	{sqlstreams.ErrInvalidOption, "invalid_option"},
	{sqlstreams.ErrForeignTx, "foreign_tx"},
	{sqlstreams.ErrDatabase, "database"},
	{context.DeadlineExceeded, "timeout"},
	{context.Canceled, "canceled"},
}

// The types of the errors sqlstreams.Dead and sqlstreams.RetryAfter return
// (core exports no predicate for them).
var (
	deadType  = reflect.TypeOf(sqlstreams.Dead(nil))
	retryType = reflect.TypeOf(sqlstreams.RetryAfter(0, nil))
)

// errorType is err's class for error.type: panic, dead (a handler's own
// verdict wins over what it wraps), the sqlstreams sentinel or context
// error it wraps, else "_OTHER".
func errorType(err error) string {
	var pe *sqlstreams.PanicError
	if errors.As(err, &pe) {
		return errorTypePanic
	}
	if hasType(err, deadType) {
		return errorTypeDead
	}
	for _, s := range sentinelTypes {
		if errors.Is(err, s.err) {
			return s.name
		}
	}
	return errorTypeOther
}

// hasType reports whether err, or an error it wraps (joined errors
// included, as errors.As walks them), has type t.
func hasType(err error, t reflect.Type) bool {
	if err == nil {
		return false
	}
	if reflect.TypeOf(err) == t {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return hasType(u.Unwrap(), t)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if hasType(e, t) {
				return true
			}
		}
	}
	return false
}
