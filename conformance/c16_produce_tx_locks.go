package conformance

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() { register("C16_ProduceTxLocks", testProduceTxLocks) }

// C16 and its price: a ProduceTx transaction holds its partition's append
// lock until it commits. Another producer's wait for that lock is bounded
// and ends in ErrConflict, having written nothing; two caller transactions
// that each hold a partition the other needs end with ErrConflict for one of
// them, never with a wait without end.
func testProduceTxLocks(t *testing.T, h *harness) {
	t.Run("BoundedWait", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		const stream = "c16-wait"
		c := h.client(t)
		holder := producer[EventV1](t, c, stream)
		if h.target.OpenWithLockTimeout == nil {
			t.Fatalf("target %s has no OpenWithLockTimeout", h.target.Name)
		}
		drv, err := h.target.OpenWithLockTimeout(h.ns(t), 300*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		waiter := producer[EventV1](t, h.clientOn(t, drv), stream)

		tx, _, rollback, err := h.target.BeginTx(ctx(t), c.Driver())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := holder.ProduceTx(ctx(t), tx, EventV1{Seq: 1}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = waiter.Produce(ctx(t), EventV1{Seq: 2})
		waited := time.Since(start)
		if !errors.Is(err, sqlstreams.ErrConflict) {
			t.Fatalf("produce while a ProduceTx transaction holds the partition: %v; want ErrConflict", err)
		}
		if waited > 10*time.Second {
			t.Errorf("the produce waited %v with a lock timeout of 300ms", waited)
		}
		if err := rollback(); err != nil {
			t.Fatal(err)
		}
		id, err := waiter.Produce(ctx(t), EventV1{Seq: 3})
		if err != nil {
			t.Fatalf("produce after the transaction ended: %v", err)
		}
		got := drain(t, consumer[EventV1](t, c, stream, "g", nil))
		if len(got) != 1 || got[0].ID != id || got[0].Value.Seq != 3 {
			t.Errorf("the log holds %v; want only the produce after the rollback (row %d): the refused one wrote nothing", idsOf(got), id)
		}
	})

	t.Run("Deadlock", func(t *testing.T) {
		t.Parallel()
		h := h.fresh()
		c := h.client(t)
		if c.Driver().Capabilities().SingleWriter {
			// One writer: a second caller transaction cannot even begin while
			// the first holds the writer, so no cycle can form; BoundedWait
			// covers its wait.
			t.Logf("%s has a single writer: two transactions cannot deadlock on partitions", h.target.Name)
			return
		}
		const stream = "c16-deadlock"
		if _, err := c.Stream[EventV1](stream).Create(ctx(t), &sqlstreams.StreamOptions{Partitions: 2}); err != nil {
			t.Fatal(err)
		}
		keys := keysForPartitions(2)
		p := producer[EventV1](t, c, stream)
		type txn struct {
			tx               any
			commit, rollback func() error
		}
		begin := func() (txn, func(ctx context.Context, key string) error) {
			tx, commit, rollback, err := h.target.BeginTx(ctx(t), c.Driver())
			if err != nil {
				t.Fatal(err)
			}
			return txn{tx, commit, rollback}, func(ctx context.Context, key string) error {
				_, err := p.ProduceTx(ctx, tx, EventV1{}, sqlstreams.Key(key))
				return err
			}
		}
		t1, produce1 := begin()
		t2, produce2 := begin()
		if err := produce1(ctx(t), keys[0]); err != nil {
			t.Fatal(err)
		}
		if err := produce2(ctx(t), keys[1]); err != nil {
			t.Fatal(err)
		}
		// Cross them: each now wants the partition the other holds. The engine
		// must pick a victim; rolling it back lets the other finish.
		type result struct {
			i   int
			err error
		}
		results := make(chan result, 2)
		go func() { results <- result{0, produce1(ctx(t), keys[1])} }()
		go func() { results <- result{1, produce2(ctx(t), keys[0])} }()
		txs := []txn{t1, t2}
		victims := 0
		for range 2 {
			var r result
			select {
			case r = <-results:
			case <-time.After(time.Minute):
				t.Fatal("two crossed ProduceTx transactions still wait after a minute")
			}
			switch {
			case r.err == nil:
				if err := txs[r.i].commit(); err != nil {
					t.Errorf("commit of the transaction that won: %v", err)
				}
			case errors.Is(r.err, sqlstreams.ErrConflict):
				victims++
				_ = txs[r.i].rollback()
			default:
				t.Errorf("transaction %d failed with %v; want ErrConflict for a deadlock", r.i+1, r.err)
				_ = txs[r.i].rollback()
			}
		}
		if victims == 0 {
			t.Errorf("neither crossed transaction failed with ErrConflict")
		}
	})
}

// keysForPartitions returns one key per partition of a stream with n.
func keysForPartitions(n int) []string {
	keys := make([]string, n)
	found := 0
	for i := 0; found < n; i++ {
		k := fmt.Sprintf("key-%d", i)
		if p := sqlstreams.PartitionForKey(k, n); keys[p] == "" {
			keys[p] = k
			found++
		}
	}
	return keys
}
