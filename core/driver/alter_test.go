package driver_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

func TestCheckGeneration(t *testing.T) {
	t.Parallel()
	used := driver.StreamConfig{ID: 7, Partitions: 2, Generation: 3}
	stored := driver.StreamConfig{ID: 7, Partitions: 4, Generation: 4}
	lookupErr := errors.New("lookup failed")
	for _, tc := range []struct {
		name    string
		gen     int64
		lookup  func() (driver.StreamConfig, error)
		want    error
		current int64 // the generation a StreamChangedError carries
	}{
		{name: "same generation reads nothing", gen: 3, lookup: func() (driver.StreamConfig, error) {
			t.Error("lookup called for a current plan")
			return stored, nil
		}},
		{name: "altered", gen: 4, lookup: func() (driver.StreamConfig, error) { return stored, nil }, want: driver.ErrStreamChanged, current: 4},
		{name: "lookup fails", gen: 4, lookup: func() (driver.StreamConfig, error) { return stored, lookupErr }, want: lookupErr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := driver.CheckGeneration(used, tc.gen, tc.lookup)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("CheckGeneration: %v, want %v", err, tc.want)
			}
			var changed *driver.StreamChangedError
			if errors.As(err, &changed) && changed.Current.Generation != tc.current {
				t.Errorf("carries generation %d, want %d", changed.Current.Generation, tc.current)
			}
		})
	}
}

func TestStaleOrGone(t *testing.T) {
	t.Parallel()
	used := driver.StreamConfig{ID: 7, Partitions: 2, Generation: 3}
	for _, tc := range []struct {
		name   string
		stored driver.StreamConfig
		err    error
		want   error
	}{
		{name: "altered", stored: driver.StreamConfig{ID: 7, Partitions: 3, Generation: 4}, want: driver.ErrStreamChanged},
		{name: "destroyed", err: driver.ErrStreamNotFound, want: driver.ErrStreamNotFound},
		{name: "same generation, a partition missing", stored: used, want: driver.ErrStreamNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := driver.StaleOrGone(used, func() (driver.StreamConfig, error) { return tc.stored, tc.err })
			if !errors.Is(err, tc.want) {
				t.Fatalf("StaleOrGone: %v, want %v", err, tc.want)
			}
		})
	}
}

func TestAlterConflict(t *testing.T) {
	t.Parallel()
	timedOut := &driver.Error{Kind: driver.ErrConflict, Err: errors.New("lock wait timeout")}
	if err := driver.AlterConflict(7, fmt.Errorf("in tx: %w", timedOut)); !errors.Is(err, driver.ErrConflict) || !strings.Contains(timedOut.Advice, "retry the alter") ||
		!strings.HasPrefix(err.Error(), "alter stream 7: ") {
		t.Errorf("a lock wait that ran out: %v, advice %q", err, timedOut.Advice)
	}
	own := &driver.Error{Kind: driver.ErrConflict, Advice: "the driver's own", Err: errors.New("deadlock")}
	if driver.AlterConflict(7, own); own.Advice != "the driver's own" {
		t.Errorf("advice replaced: %q", own.Advice)
	}
	other := &driver.Error{Kind: driver.ErrDatabase, Err: errors.New("syntax")}
	if driver.AlterConflict(7, other); other.Advice != "" {
		t.Errorf("advice on a database error: %q", other.Advice)
	}
	if err := driver.AlterConflict(7, nil); err != nil {
		t.Errorf("no error: %v", err)
	}
}

// TestAlter: what Altered decides is written and returned; a refusal is the
// caller's error and writes nothing; a failed read or write is the engine's
// error.
func TestAlter(t *testing.T) {
	t.Parallel()
	stored := driver.StreamConfig{ID: 7, Partitions: 2, Generation: 3}
	writeErr := errors.New("write failed")
	for _, tc := range []struct {
		name      string
		p         driver.AlterStreamParams
		readErr   error
		storeErr  error
		want      error
		caller    bool // the error is a CallerError
		wrote     bool
		wantParts int
	}{
		{name: "more partitions", p: driver.AlterStreamParams{StreamID: 7, Partitions: 4}, wrote: true, wantParts: 4},
		{name: "fewer partitions", p: driver.AlterStreamParams{StreamID: 7, Partitions: 1}, want: driver.ErrFewerPartitions, caller: true},
		{name: "write fails", p: driver.AlterStreamParams{StreamID: 7, Partitions: 3}, storeErr: writeErr, want: writeErr, wrote: true},
		{name: "read fails", p: driver.AlterStreamParams{StreamID: 7, Partitions: 3}, readErr: writeErr, want: writeErr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var wrote bool
			out, err := driver.Alter(tc.p, func() (driver.StreamConfig, error) { return stored, tc.readErr }, func(was, next driver.StreamConfig) error {
				wrote = true
				if was != stored || next.Generation != stored.Generation+1 {
					t.Errorf("writes generation %d, want %d", next.Generation, stored.Generation+1)
				}
				return tc.storeErr
			})
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("Alter: %v, want %v", err, tc.want)
			}
			if _, caller := driver.FromCaller(err); caller != tc.caller {
				t.Errorf("a CallerError: %v, want %v", caller, tc.caller)
			}
			if wrote != tc.wrote {
				t.Errorf("wrote: %v, want %v", wrote, tc.wrote)
			}
			if err == nil && out.Partitions != tc.wantParts {
				t.Errorf("returns %d partitions, want %d", out.Partitions, tc.wantParts)
			}
		})
	}
}
