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

func TestBackoffGrowsToItsBound(t *testing.T) {
	for n, bound := range map[int]time.Duration{1: 5 * time.Millisecond, 3: 15 * time.Millisecond, 100: 30 * time.Millisecond} {
		for range 50 {
			if d := Backoff(n); d < bound/2 || d >= bound*3/2 {
				t.Fatalf("Backoff(%d) = %v, want within [%v, %v)", n, d, bound/2, bound*3/2)
			}
		}
	}
}
