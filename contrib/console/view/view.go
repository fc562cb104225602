// Package view is the one JSON shape of sqlstreams' operator tools: the
// documents the CLI prints with -o json and the console's /api answers are
// built from these types, so a script written against one reads the other.
//
// The shape (docs/json.md): keys are snake_case; times are RFC 3339 in UTC
// with nanoseconds, null when unset; durations are numbers of seconds in
// keys ending in _seconds; every key is always present, lists are [] and
// maps {} when empty, never null; lists at the top of a document sit under
// a named key ({"streams": [...]}), so fields can be added without breaking
// parsers; cursors are shown as the next id to read (next_id).
//
// The package imports core only, so both contrib/console and contrib/cli
// (which requires contrib/console) can use it without a cycle.
package view

import (
	"encoding/json"
	"time"
)

// Time is t as a JSON time: RFC 3339 in UTC with nanoseconds, or nil (null)
// when t is zero.
func Time(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}

// Seconds is d as a JSON duration: a number of seconds.
func Seconds(d time.Duration) float64 { return d.Seconds() }

// list returns s, or an empty list for nil, so that it encodes as [].
func list[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// strmap returns m, or an empty map for nil, so that it encodes as {}.
func strmap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// payload returns raw, or JSON null for an empty payload.
func payload(raw []byte) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return json.RawMessage(raw)
}
