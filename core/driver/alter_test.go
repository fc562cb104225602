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
	if err := driver.AlterConflict(fmt.Errorf("alter stream 7: %w", timedOut)); !errors.Is(err, driver.ErrConflict) || !strings.Contains(timedOut.Advice, "retry the alter") {
		t.Errorf("a lock wait that ran out: %v, advice %q", err, timedOut.Advice)
	}
	own := &driver.Error{Kind: driver.ErrConflict, Advice: "the driver's own", Err: errors.New("deadlock")}
	if driver.AlterConflict(own); own.Advice != "the driver's own" {
		t.Errorf("advice replaced: %q", own.Advice)
	}
	other := &driver.Error{Kind: driver.ErrDatabase, Err: errors.New("syntax")}
	if driver.AlterConflict(other); other.Advice != "" {
		t.Errorf("advice on a database error: %q", other.Advice)
	}
}
