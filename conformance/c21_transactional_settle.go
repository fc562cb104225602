package conformance

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/conformance/proctest"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

func init() { register("C21_TransactionalSettle", testTransactionalSettle) }

const markerTable = `CREATE TABLE IF NOT EXISTS conformance_marker (k VARCHAR(64) NOT NULL)`

// C21: an outcome recorded in the caller's transaction (AckTx, RetryTx,
// DeadTx) is committed exactly when that transaction commits and undone
// when it rolls back; a lost lease fails inside the transaction with
// ErrLeaseLost; a process killed between the handler's writes and the
// commit leaves neither done, and the delivery comes back to be done once.
func testTransactionalSettle(t *testing.T, h *harness) {
	if (h.target.Mark == nil || h.target.Marks == nil) && (h.target.ExecTx == nil || h.target.QueryInt == nil) {
		t.Fatalf("target %s has neither Mark and Marks nor ExecTx and QueryInt", h.target.Name)
	}
	c := h.client(t)
	drv := c.Driver()
	if h.target.Mark == nil {
		if err := h.target.ExecTx(ctx(t), drv, nil, markerTable); err != nil {
			t.Fatal(err)
		}
	}
	markers := func(k string) int64 {
		t.Helper()
		n, err := h.target.marks(ctx(t), drv, k)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// inTx runs the application's write and the settle in one transaction
	// and ends it with commit or rollback.
	inTx := func(k string, settle func(tx driver.Tx) error, end string) error {
		t.Helper()
		tx, commit, rollback, err := h.target.BeginTx(ctx(t), drv)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.target.mark(ctx(t), drv, tx, k); err != nil {
			_ = rollback()
			t.Fatal(err)
		}
		serr := settle(tx)
		if serr != nil || end == "rollback" {
			if err := rollback(); err != nil {
				t.Fatal(err)
			}
			return serr
		}
		if err := commit(); err != nil {
			t.Fatal(err)
		}
		return nil
	}
	const stream = "c21"
	p := producer[EventV1](t, c, stream)
	cons := consumer[EventV1](t, c, stream, "g", &sqlstreams.ConsumerOptions{LeaseDuration: settleLease, MaxAttempts: 5})
	claimOne := func() sqlstreams.Delivery[EventV1] {
		t.Helper()
		var got []sqlstreams.Delivery[EventV1]
		eventually(t, 30*time.Second, "a delivery", func() bool {
			var err error
			if got, err = cons.Claim(ctx(t), 1); err != nil {
				t.Fatal(err)
			}
			return len(got) == 1
		})
		return got[0]
	}
	t.Run("Commit", func(t *testing.T) {
		ids := produceV1(t, p, 1)
		d := claimOne()
		if err := inTx("commit", func(tx driver.Tx) error { return d.AckTx(ctx(t), tx) }, "commit"); err != nil {
			t.Fatal(err)
		}
		if markers("commit") != 1 {
			t.Errorf("the application's write is not there after the commit")
		}
		if g := groupAt(t, health(t, c, stream), 1, "g"); g.Unresolved != 0 {
			t.Errorf("after the commit: %d unresolved; want the ack committed with it", g.Unresolved)
		}
		pastLeases(d) // nothing comes back
		if ds, err := cons.Claim(ctx(t), 10); err != nil || len(ds) != 0 {
			t.Errorf("after the committed ack of %d claimed %v, %v", ids[0], idsOf(ds), err)
		}
	})

	t.Run("Rollback", func(t *testing.T) {
		produceV1(t, p, 1)
		d := claimOne()
		if err := inTx("rollback", func(tx driver.Tx) error { return d.AckTx(ctx(t), tx) }, "rollback"); err != nil {
			t.Fatal(err)
		}
		if markers("rollback") != 0 {
			t.Errorf("the rolled-back write is there")
		}
		if g := groupAt(t, health(t, c, stream), 1, "g"); g.Leased != 1 {
			t.Errorf("after the rollback: %d leased; want the delivery still leased", g.Leased)
		}
		again := claimOne() // once the lease expires
		if again.ID != d.ID || again.Attempt != 2 {
			t.Errorf("after the rollback came %d at attempt %d; want %d at attempt 2", again.ID, again.Attempt, d.ID)
		}
		if err := again.Ack(ctx(t)); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("RetryAndDead", func(t *testing.T) {
		produceV1(t, p, 2)
		a, b := claimOne(), claimOne()
		if err := inTx("retry", func(tx driver.Tx) error { return a.RetryTx(ctx(t), tx, time.Hour, errTest) }, "commit"); err != nil {
			t.Fatal(err)
		}
		if err := inTx("dead", func(tx driver.Tx) error { return b.DeadTx(ctx(t), tx, errTest) }, "commit"); err != nil {
			t.Fatal(err)
		}
		if g := groupAt(t, health(t, c, stream), 1, "g"); g.Delayed != 1 || g.Dead != 1 || g.Leased != 0 {
			t.Errorf("after RetryTx and DeadTx: %+v; want one delayed and one dead", g)
		}
		if _, err := cons.DiscardAll(ctx(t)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Stream[EventV1](stream).Group("g").ResetCursors(ctx(t), sqlstreams.ResetOptions{To: sqlstreams.ResetToLatest()}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("LeaseLost", func(t *testing.T) {
		other := consumer[EventV1](t, h.client(t), stream, "g", &sqlstreams.ConsumerOptions{LeaseDuration: time.Hour})
		produceV1(t, p, 1)
		d := claimOne()
		var taken []sqlstreams.Delivery[EventV1]
		eventually(t, 30*time.Second, "the other member to take the expired lease", func() bool {
			var err error
			taken, err = other.Claim(ctx(t), 1)
			if err != nil {
				t.Fatal(err)
			}
			return len(taken) == 1 && taken[0].ID == d.ID
		})
		err := inTx("lost", func(tx driver.Tx) error { return d.AckTx(ctx(t), tx) }, "commit")
		if !errors.Is(err, sqlstreams.ErrLeaseLost) {
			t.Fatalf("AckTx of a lost lease: %v; want ErrLeaseLost inside the transaction", err)
		}
		if markers("lost") != 0 {
			t.Errorf("the write of the transaction that lost its lease is there")
		}
		if g := groupAt(t, health(t, c, stream), 1, "g"); g.Leased != 1 {
			t.Errorf("the other member's lease: %d leased; want 1", g.Leased)
		}
		if err := taken[0].Ack(ctx(t)); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("HeldTxKeepsLeases", func(t *testing.T) { testHeldTxKeepsLeases(t, h, c) })

	if h.target.SingleProcess {
		t.Logf("KilledBeforeCommit does not run on %s: it kills a child process, and no other process can open a single-process store", h.target.Name)
		return
	}
	t.Run("KilledBeforeCommit", func(t *testing.T) {
		// A child process handles a delivery in a transaction and is killed
		// after its write and AckTx, before the commit.
		ids := produceV1(t, p, 1)
		out := filepath.Join(t.TempDir(), "records")
		ch := proctest.Spawn(t, "ack-tx", childSpec{Namespace: h.ns(t), Stream: stream, Group: "g", Out: out, Lease: time.Second})
		eventually(t, time.Minute, "the child to hold its transaction", func() bool {
			for _, r := range proctest.Records(t, out) {
				if r[0] == "in-tx" {
					return true
				}
			}
			return false
		})
		ch.Kill()
		if markers("child") != 0 {
			t.Errorf("the killed child's uncommitted write is there")
		}
		d := claimOne() // after the child's lease expires
		if d.ID != ids[0] || d.Attempt != 2 {
			t.Errorf("after the kill came %d at attempt %d; want %d at attempt 2", d.ID, d.Attempt, ids[0])
		}
		if err := inTx("child", func(tx driver.Tx) error { return d.AckTx(ctx(t), tx) }, "commit"); err != nil {
			t.Fatal(err)
		}
		if n := markers("child"); n != 1 {
			t.Errorf("the work was done %d times; want once", n)
		}
	})
}

// testHeldTxKeepsLeases: a caller's transaction held open for two leases
// after AckTx, while Run's real heartbeats run at a short lease: no delivery
// of that member, or of another member of the group, is handed out while
// its handler runs. Member a holds four deliveries of one claim (the
// transaction's among them), member b the other two, and member c, idle,
// claims all along, so that any lease that lapses is taken while its
// handler still runs.
func testHeldTxKeepsLeases(t *testing.T, h *harness, a *sqlstreams.Client) {
	// A lease long enough that a loaded machine (load 15 on two cores: a
	// heartbeat or a statement seconds late) does not let one lapse; the
	// defect this catches stalls every heartbeat for the whole hold.
	const stream, group, lease = "c21held", "held", 5 * time.Second
	b, c := h.client(t), h.client(t)
	produceV1(t, producer[EventV1](t, a, stream), 6)
	opts := func() *sqlstreams.ConsumerOptions {
		return fastRetry(sqlstreams.ConsumerOptions{LeaseDuration: lease, Concurrency: 4, BatchSize: 4})
	}
	claims := &claimCounter{}
	watched := opts()
	watched.Middleware = []sqlstreams.Middleware{claims}
	members := map[string]*sqlstreams.Consumer[EventV1]{
		"a": consumer[EventV1](t, a, stream, group, opts()),
		"b": consumer[EventV1](t, b, stream, group, opts()),
		"c": consumer[EventV1](t, c, stream, group, watched),
	}
	var (
		mu      sync.Mutex
		running = map[int64]string{} // id -> member whose handler runs it
		started = map[string]int{}
		overlap []string
		holder  atomic.Bool
	)
	rec := newHandled()
	allStarted, released := make(chan struct{}), make(chan struct{})
	txErr := make(chan error, 1)
	hold := func(ctx context.Context, d sqlstreams.Delivery[EventV1]) error {
		select {
		case <-allStarted:
		case <-ctx.Done():
			return ctx.Err()
		}
		tx, commit, rollback, err := h.target.BeginTx(ctx, a.Driver())
		if err == nil {
			err = h.target.mark(ctx, a.Driver(), tx, "held")
		}
		if err == nil {
			err = d.AckTx(ctx, tx)
		}
		if err == nil {
			time.Sleep(2 * lease) // the scenario: the caller works on in its transaction
			err = commit()
		} else if tx != nil {
			_ = rollback()
		}
		txErr <- err
		// Every handler still runs until member c has claimed twice after
		// the commit (the second claim began after it): a lease that ran
		// out meanwhile is taken then, while its handler runs.
		after := claims.n.Load()
		for deadline := time.Now().Add(30 * time.Second); claims.n.Load() < after+2 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		close(released)
		return err
	}
	handler := func(member string) sqlstreams.Handler[EventV1] {
		return func(ctx context.Context, d sqlstreams.Delivery[EventV1]) error {
			rec.add(member, d)
			mu.Lock()
			if other, ok := running[d.ID]; ok {
				overlap = append(overlap, fmt.Sprintf("%d: %s started it while %s ran it", d.ID, member, other))
			}
			running[d.ID] = member
			started[member]++
			mu.Unlock()
			defer func() {
				mu.Lock()
				delete(running, d.ID)
				mu.Unlock()
			}()
			if member == "a" && holder.CompareAndSwap(false, true) {
				return hold(ctx, d)
			}
			select {
			case <-released:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	startedBy := func(member string, n int) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			return started[member] >= n
		}
	}
	stopA := runFor(t, members["a"], handler("a"))
	defer stopA()
	eventually(t, 30*time.Second, "member a to run a claim of four", startedBy("a", 4))
	stopB := runFor(t, members["b"], handler("b"))
	defer stopB()
	eventually(t, 30*time.Second, "member b to run the other two", startedBy("b", 2))
	stopC := runFor(t, members["c"], handler("c"))
	defer stopC()
	close(allStarted)
	select {
	case err := <-txErr:
		if err != nil {
			t.Fatalf("the held transaction: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the held transaction did not end within a minute")
	}
	eventually(t, 30*time.Second, "every row to be resolved", func() bool {
		g := groupAt(t, health(t, a, stream), 1, group)
		return g.Unread == 0 && g.Unresolved == 0
	})
	mu.Lock()
	defer mu.Unlock()
	for _, o := range overlap {
		t.Errorf("handed out while its handler ran: %s", o)
	}
	rec.checkOnce(t)
}

// claimCounter counts the claims of the consumers it is middleware of, and
// the time they took.
type claimCounter struct {
	sqlstreams.MiddlewareDefaults
	n, spent atomic.Int64
}

func (c *claimCounter) Claimed(_ context.Context, e sqlstreams.ClaimEvent) {
	c.n.Add(1)
	c.spent.Add(int64(e.Duration))
}

// childAckTx claims one delivery, writes the application's row and acks in
// one transaction, records "in-tx" and waits to be killed before it commits.
func childAckTx(ctx context.Context, c *sqlstreams.Client, spec childSpec, rec *proctest.Recorder, target Target) error {
	cons, err := c.Stream[EventV1](spec.Stream).Consumer(spec.Group).Register(ctx, &sqlstreams.ConsumerOptions{LeaseDuration: spec.Lease})
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		ds, err := cons.Claim(ctx, 1)
		if err != nil {
			return err
		}
		if len(ds) == 0 {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		tx, _, rollback, err := target.BeginTx(ctx, c.Driver())
		if err != nil {
			return err
		}
		defer rollback()
		if err := target.mark(ctx, c.Driver(), tx, "child"); err != nil {
			return err
		}
		if err := ds[0].AckTx(ctx, tx); err != nil {
			return err
		}
		if err := rec.Record("in-tx", ds[0].ID); err != nil {
			return err
		}
		<-ctx.Done() // never commits: the parent kills the process
		return nil
	}
	return fmt.Errorf("stopped before a delivery came")
}

// mark records the application's write of key in tx: with Target.Mark, or
// as a row of conformance_marker through ExecTx.
func (t Target) mark(ctx context.Context, drv driver.Driver, tx driver.Tx, key string) error {
	if t.Mark != nil {
		return t.Mark(ctx, drv, tx, key)
	}
	return t.ExecTx(ctx, drv, tx, "INSERT INTO conformance_marker (k) VALUES ('"+key+"')")
}

// marks counts the kept writes of key: with Target.Marks, or the rows of
// conformance_marker through QueryInt.
func (t Target) marks(ctx context.Context, drv driver.Driver, key string) (int64, error) {
	if t.Marks != nil {
		return t.Marks(ctx, drv, key)
	}
	return t.QueryInt(ctx, drv, "SELECT COUNT(*) FROM conformance_marker WHERE k = '"+key+"'")
}
