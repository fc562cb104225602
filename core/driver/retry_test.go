package driver

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestRetriesCountsEachKindToItsLimit(t *testing.T) {
	r := Retries{Limits: []int{3, 2}}
	ctx := context.Background()
	for i, want := range []struct {
		kind  int
		again bool
	}{{0, true}, {1, true}, {1, false}, {0, true}, {0, false}, {-1, false}} {
		again, err := r.Again(ctx, want.kind)
		if err != nil || again != want.again {
			t.Fatalf("failure %d (kind %d): again = %v, %v; want %v", i, want.kind, again, err, want.again)
		}
	}
}

func TestRetriesStopWaitingWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := Retries{Limits: []int{5}}
	if _, err := r.Again(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Again after the context ended: %v, want context.Canceled", err)
	}
}

func TestRunRetriesUntilSuccessOrAFinalFailure(t *testing.T) {
	ctx := context.Background()
	conflict, final := errors.New("conflict"), errors.New("final")
	kind := func(err error) int {
		if err == conflict {
			return 0
		}
		return -1
	}
	for _, c := range []struct {
		name     string
		failures []error
		calls    int
		want     error
	}{
		{"success", nil, 1, nil},
		{"retried to success", []error{conflict, conflict}, 3, nil},
		{"final", []error{conflict, final, conflict}, 2, final},
		{"limit", []error{conflict, conflict, conflict, conflict}, 3, conflict},
	} {
		r, calls := Retries{Limits: []int{3}}, 0
		last, ended := r.Run(ctx, func() error {
			calls++
			if calls <= len(c.failures) {
				return c.failures[calls-1]
			}
			return nil
		}, kind)
		if last != c.want || ended != nil || calls != c.calls {
			t.Errorf("%s: Run = %v, %v after %d calls; want %v, nil after %d", c.name, last, ended, calls, c.want, c.calls)
		}
	}
}

func TestRunStopsWhenTheContextEndsInAPause(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, fail := Retries{Limits: []int{5}}, errors.New("conflict")
	last, ended := r.Run(ctx, func() error { return fail }, func(error) int { return 0 })
	if last != fail || !errors.Is(ended, context.Canceled) {
		t.Fatalf("Run after the context ended: %v, %v; want the failure and context.Canceled", last, ended)
	}
}

func TestBackoffGrowsToItsBound(t *testing.T) {
	for n, bound := range map[int]time.Duration{1: 5 * time.Millisecond, 3: 15 * time.Millisecond, 100: 30 * time.Millisecond} {
		for range 50 {
			if d := Backoff(n); d < bound/2 || d >= bound*3/2 {
				t.Fatalf("Backoff(%d) = %v, want within [%v, %v)", n, d, bound/2, bound*3/2)
			}
		}
	}
}
