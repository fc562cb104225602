package postgres_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/postgres"
)

// A ProduceTx transaction carries no NOTIFY of its own (its commit would
// queue behind every notifying commit of the database); the driver wakes
// the stream's consumers once the transaction has committed, with one
// NOTIFY for all the transactions that committed to the stream since its
// last check, and never for one that rolled back. The checks run by hand
// here (ManualTxWakes), so that "not yet" is a fact, not a wait.
func TestProduceTxWakesAfterCommit(t *testing.T) {
	t.Parallel()
	ns := newSchema(t, nil)
	drv := postgres.Open(ns)
	postgres.ManualTxWakes(drv)
	c, err := sqlstreams.Open(tctx(t), drv, sqlstreams.WithMaintenanceInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	p, err := c.Stream[event]("txwake").Producer().Register(tctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	ch := postgres.Channel(drv, p.Stream().ID)
	lis, err := pgx.Connect(tctx(t), ns)
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close(context.Background())
	if _, err := lis.Exec(tctx(t), `LISTEN `+pgx.Identifier{ch}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	// next returns the payload of the next notification, bounded.
	next := func() string {
		t.Helper()
		ctx, cancel := context.WithTimeout(tctx(t), 10*time.Second)
		defer cancel()
		n, err := lis.WaitForNotification(ctx)
		if err != nil {
			t.Fatalf("no notification within 10s: %v", err)
		}
		return n.Payload
	}
	// marker sends a notification with payload s from a transaction of its
	// own: notifications arrive in commit order, so whatever arrives before
	// it was sent before it.
	marker := func(s string) {
		t.Helper()
		if _, err := drv.Pool().Exec(tctx(t), `SELECT pg_notify($1, $2)`, ch, s); err != nil {
			t.Fatal(err)
		}
	}
	pass := func(wantLeft int) {
		t.Helper()
		left, err := postgres.TxWakePass(drv)
		if err != nil || left != wantLeft {
			t.Fatalf("check of the watched transactions: %d left, %v; want %d left", left, err, wantLeft)
		}
	}

	// Two transactions produce; while they are open the check sends nothing.
	var txs []pgx.Tx
	for i := range 2 {
		tx, err := drv.Pool().Begin(tctx(t))
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(context.Background())
		if _, err := p.ProduceTx(tctx(t), postgres.Tx(tx), event{N: i}); err != nil {
			t.Fatal(err)
		}
		txs = append(txs, tx)
		if i == 0 {
			// The second waits for the first's partition lock otherwise.
			if err := tx.Commit(tctx(t)); err != nil {
				t.Fatal(err)
			}
		}
	}
	marker("committed-one")
	if got := next(); got != "committed-one" {
		t.Fatalf("first notification %q; want the marker: the committing transaction carried a NOTIFY", got)
	}
	pass(1) // the first committed: woken; the second is open: watched
	if got := next(); got != "" {
		t.Fatalf("notification %q after the check; want the wake-up (empty payload)", got)
	}
	pass(1)
	marker("still-open")
	if got := next(); got != "still-open" {
		t.Fatalf("notification %q while the transaction is open; want none before the marker", got)
	}
	if err := txs[1].Rollback(tctx(t)); err != nil {
		t.Fatal(err)
	}
	pass(0) // rolled back: dropped, no wake-up
	marker("rolled-back")
	if got := next(); got != "rolled-back" {
		t.Fatalf("notification %q for a rolled-back transaction; want none before the marker", got)
	}

	// Three transactions commit before one check: one wake-up.
	for i := range 3 {
		tx, err := drv.Pool().Begin(tctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.ProduceTx(tctx(t), postgres.Tx(tx), event{N: 10 + i}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(tctx(t)); err != nil {
			t.Fatal(err)
		}
	}
	pass(0)
	marker("after-three")
	if got := next(); got != "" {
		t.Fatalf("notification %q; want the wake-up for the three commits", got)
	}
	if got := next(); got != "after-three" {
		t.Fatalf("notification %q; want one wake-up for three commits, then the marker", got)
	}
}

// The checker of ProduceTx transactions is the driver's own goroutine:
// Close stops it and waits for it, even while a transaction it watches is
// still open. The test looks for checkers among all goroutines, so it does
// not run in parallel: the parallel tests' drivers have checkers of their
// own (it failed so under load).
func TestCloseStopsTxWakes(t *testing.T) {
	ns := newSchema(t, nil)
	pool, err := pgxpool.New(tctx(t), ns)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	drv := postgres.Open(ns)
	c, err := sqlstreams.Open(tctx(t), drv, sqlstreams.WithMaintenanceInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Stream[event]("txwake-close").Producer().Register(tctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(tctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := p.ProduceTx(tctx(t), postgres.Tx(tx), event{N: 1}); err != nil {
		t.Fatal(err)
	}
	// The checker's goroutine, started or about to start.
	checker := func() bool {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		return strings.Contains(stacks, "driver.(*TxWatch[...]).run") || strings.Contains(stacks, "driver.(*TxWatch[...]).Add.func")
	}
	for deadline := time.Now().Add(10 * time.Second); !checker(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no checker runs for the open ProduceTx transaction")
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := drv.Close(); err != nil && !errors.Is(err, driver.ErrClosed) {
		t.Fatal(err)
	}
	if checker() {
		t.Fatal("the checker of ProduceTx transactions outlived Close")
	}
}

// An append inside the debounce interval carries no NOTIFY; the trailing
// NOTIFY that follows its commit, from a transaction of its own that does
// not wait for the WAL flush (notifyAlone), reaches a listener.
func TestTrailingNotifyArrives(t *testing.T) {
	t.Parallel()
	for _, mode := range execModes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 1, mode.opts...)
			lis, err := pgx.Connect(tctx(t), f.ns)
			if err != nil {
				t.Fatal(err)
			}
			defer lis.Close(context.Background())
			if _, err := lis.Exec(tctx(t), `LISTEN `+pgx.Identifier{postgres.Channel(f.drv, f.stream.ID)}.Sanitize()); err != nil {
				t.Fatal(err)
			}
			postgres.Debounce(f.drv, f.stream.ID)
			f.appendN(0, 1)
			ctx, cancel := context.WithTimeout(tctx(t), 30*time.Second)
			defer cancel()
			if _, err := lis.WaitForNotification(ctx); err != nil {
				t.Fatalf("no trailing NOTIFY within 30s of a debounced append: %v", err)
			}
		})
	}
}
