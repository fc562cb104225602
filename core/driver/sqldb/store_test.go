package sqldb

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

func TestInsertRowsChunks(t *testing.T) {
	t.Parallel()
	args := make([]any, 0, 2*(rowCountChunk+1))
	for i := range rowCountChunk + 1 {
		args = append(args, i, i)
	}
	q := &execLog{}
	if err := insertRows(context.Background(), On(q), "INSERT INTO t VALUES ", 2, args, "ON CONFLICT"); err != nil {
		t.Fatal(err)
	}
	if len(q.ran) != 2 {
		t.Fatalf("insertRows of %d rows ran %d statements; want 2 of at most %d rows", rowCountChunk+1, len(q.ran), rowCountChunk)
	}
	if want := "INSERT INTO t VALUES (?, ?) ON CONFLICT[256 256]"; q.ran[1] != want {
		t.Fatalf("the last chunk ran %q; want %q", q.ran[1], want)
	}
}

func TestOnDead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ids  []int64
		want []string
	}{
		{"every dead letter", nil, []string{"DELETE FROM delivery_exception WHERE stream_id = ? AND group_name = ? AND state = 'dead'[7 g]"}},
		{"named ones, once each", []int64{3, 1, 3}, []string{"DELETE FROM delivery_exception WHERE stream_id = ? AND group_name = ? AND state = 'dead' AND msg_id IN (?, ?)[7 g 1 3]"}},
		{"none named: no statement", []int64{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q := &execLog{}
			if _, err := (Store[int64]{}).Discard(context.Background(), On(q), driver.DiscardParams{StreamID: 7, Group: "g", IDs: tc.ids}); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(q.ran, tc.want) {
				t.Fatalf("Discard ran %q; want %q", q.ran, tc.want)
			}
		})
	}
}

func TestDeleteStream(t *testing.T) {
	t.Parallel()
	q := &execLog{}
	locked := false
	err := DeleteStream(context.Background(), On(q), 7, func() error {
		if len(q.ran) != 1 {
			t.Errorf("locked ran after %q; want after the configuration's delete alone", q.ran)
		}
		locked = true
		return nil
	}, "own")
	if err != nil || !locked {
		t.Fatalf("DeleteStream = %v, locked %v", err, locked)
	}
	want := []string{"DELETE FROM stream_config WHERE id = ?[7]", "DELETE FROM own WHERE stream_id = ?[7]"}
	if len(q.ran) != 2+len(StreamTables) || !slices.Equal(q.ran[:2], want) {
		t.Fatalf("DeleteStream ran %q; want %q, then StreamTables", q.ran, want)
	}
	if err := DeleteStream(context.Background(), On(&execLog{fail: "stream_config"}), 7, nil); err == nil {
		t.Fatal("DeleteStream went on after the configuration's delete failed")
	}
}

func TestInKeepsTheLastRun(t *testing.T) {
	t.Parallel()
	runs := 0
	twice := func(_ context.Context, fn func(Runner) error) error {
		_ = fn(nil) // a first run the runner runs again (a deadlock)
		return fn(nil)
	}
	v, err := In(context.Background(), twice, func(context.Context, Runner, int) (int, error) {
		runs++
		return runs * 10, nil
	}, 0)
	if v != 20 || err != nil {
		t.Fatalf("In = %d, %v; want the last run's 20", v, err)
	}
	failed := errors.New("failed")
	if _, err := In(context.Background(), func(_ context.Context, fn func(Runner) error) error { return fn(nil) },
		func(context.Context, Runner, int) (int, error) { return 0, failed }, 0); !errors.Is(err, failed) {
		t.Fatalf("In = %v; want the op's error", err)
	}
}
