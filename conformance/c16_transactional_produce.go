package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

func init() { register("C16_TransactionalProduce", testTransactionalProduce) }

// C16: a message produced in the caller's transaction is visible to groups
// only after that transaction commits, and never if it rolls back; a
// transaction of another driver is refused with ErrForeignTx.
//
// While a transaction is open the test only reads through Health (a reader
// outside the writer): on single-writer engines a claim would wait for it.
func testTransactionalProduce(t *testing.T, h *harness) {
	c := h.client(t) // creates the namespace under the parent test
	t.Run("CommitRollback", func(t *testing.T) { testTxCommitRollback(t, h, c) })
	t.Run("Compacted", func(t *testing.T) { testTxCompacted(t, h, c) })
	t.Run("ForeignTx", func(t *testing.T) { testTxForeign(t, c) })
}

// fakeTx is a transaction of a driver that does not exist.
type fakeTx struct{}

func (fakeTx) DriverName() string { return "fake" }

// beginTx begins a transaction of the target's own kind; rollback runs at
// cleanup unless the test ended it.
func beginTx(t *testing.T, h *harness, c *sqlstreams.Client) (tx txHandle) {
	t.Helper()
	dtx, commit, rollback, err := h.target.BeginTx(ctx(t), c.Driver())
	if err != nil {
		t.Fatalf("BeginTx: %v", err)
	}
	tx = txHandle{Tx: dtx, commit: commit, rollback: rollback, done: new(bool)}
	t.Cleanup(func() {
		if !*tx.done {
			_ = rollback()
		}
	})
	return tx
}

// produceTx calls ProduceTx with a bound: a driver that writes outside the
// caller's transaction would wait for it forever on a single-writer engine.
func produceTx[T sqlstreams.Versioned](t *testing.T, p *sqlstreams.Producer[T], tx txHandle, v T, opts ...sqlstreams.ProduceOption) int64 {
	t.Helper()
	pctx, cancel := context.WithTimeout(ctx(t), 10*time.Second)
	defer cancel()
	id, err := p.ProduceTx(pctx, tx.Tx, v, opts...)
	if err != nil {
		t.Fatalf("ProduceTx: %v (does the driver write outside the caller's transaction?)", err)
	}
	return id
}

type txHandle struct {
	Tx               driver.Tx
	commit, rollback func() error
	done             *bool
}

func (x txHandle) end(t *testing.T, commit bool) {
	t.Helper()
	*x.done = true
	f, what := x.rollback, "rollback"
	if commit {
		f, what = x.commit, "commit"
	}
	if err := f(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func testTxCommitRollback(t *testing.T, h *harness, c *sqlstreams.Client) {
	const stream = "c16"
	p := producer[EventV1](t, c, stream)
	g := consumer[EventV1](t, c, stream, "g", nil)
	raw := consumer[sqlstreams.RawPayload](t, c, stream, "raw", nil)
	before := produceV1(t, p, 1)

	// Commit: invisible while open, delivered after.
	tx := beginTx(t, h, c)
	var inTx []int64
	for seq := 10; seq < 12; seq++ {
		inTx = append(inTx, produceTx(t, p, tx, EventV1{Seq: seq}))
	}
	hl := health(t, c, stream)
	if rowsAt(hl, 1) != 1 || hl.HighWater != before[0] || groupAt(t, hl, 1, "g").Unread != 1 {
		t.Errorf("an open transaction's rows are visible: %d rows, high-water %d (want 1 row, high-water %d), g unread %d",
			rowsAt(hl, 1), hl.HighWater, before[0], groupAt(t, hl, 1, "g").Unread)
	}
	tx.end(t, true)
	if hl := health(t, c, stream); rowsAt(hl, 1) != 3 || groupAt(t, hl, 1, "g").Unread != 3 {
		t.Errorf("after commit: %d rows, g unread %d; want 3 and 3", rowsAt(hl, 1), groupAt(t, hl, 1, "g").Unread)
	}
	got := drain(t, g)
	if !equalIDs(idsOf(got), append(append([]int64{}, before...), inTx...)) {
		t.Errorf("g got %v after commit, want %v and %v", idsOf(got), before, inTx)
	}

	// Rollback: invisible while open, never delivered.
	tx = beginTx(t, h, c)
	produceTx(t, p, tx, EventV1{Seq: 20})
	if hl := health(t, c, stream); rowsAt(hl, 1) != 3 {
		t.Errorf("an open transaction's row is visible: %d rows, want 3", rowsAt(hl, 1))
	}
	tx.end(t, false)
	after, err := p.Produce(ctx(t), EventV1{Seq: 21})
	if err != nil {
		t.Fatal(err)
	}
	hl = health(t, c, stream)
	if rowsAt(hl, 1) != 4 || groupAt(t, hl, 1, "g").Unread != 1 {
		t.Errorf("after rollback and one produce: %d rows, g unread %d; want 4 and 1", rowsAt(hl, 1), groupAt(t, hl, 1, "g").Unread)
	}
	got = drain(t, g)
	if len(got) != 1 || got[0].ID != after || got[0].Value.Seq != 21 {
		t.Errorf("g got %v after a rollback, want only row %d (seq 21)", got, after)
	}
	all := drain(t, raw)
	if len(all) != 4 {
		t.Errorf("RawPayload group got %d rows, want the 4 committed ones", len(all))
	}
	for _, d := range all {
		var v EventV1
		if err := json.Unmarshal(d.Value.Data, &v); err != nil || v.Seq == 20 {
			t.Errorf("RawPayload group got row %d %s (err %v): the rolled-back message must never arrive", d.ID, d.Value.Data, err)
		}
	}
}

// A rolled-back write does not move a key's head; a committed one does.
func testTxCompacted(t *testing.T, h *harness, c *sqlstreams.Client) {
	const stream = "c16-compacted"
	createCompacted(t, c, stream, 1)
	p1 := producer[EventV1](t, c, stream)
	p2 := producer[EventV2](t, c, stream)
	g1 := consumer[EventV1](t, c, stream, "g1", nil)
	g2 := consumer[EventV2](t, c, stream, "g2", nil)
	v1, err := p1.Produce(ctx(t), EventV1{Seq: 1}, sqlstreams.Key("k"))
	if err != nil {
		t.Fatal(err)
	}

	tx := beginTx(t, h, c)
	produceTx(t, p2, tx, EventV2{Seq: 2}, sqlstreams.Key("k"))
	if hl := health(t, c, stream); headsAt(hl, 1) != 1 || headsAt(hl, 2) != 0 {
		t.Errorf("open transaction: heads v1 %d, v2 %d; want the v1 head to stand", headsAt(hl, 1), headsAt(hl, 2))
	}
	tx.end(t, false)
	if hl := health(t, c, stream); headsAt(hl, 1) != 1 || headsAt(hl, 2) != 0 {
		t.Errorf("after rollback: heads v1 %d, v2 %d; want the v1 head to stand", headsAt(hl, 1), headsAt(hl, 2))
	}
	if got := idsOf(drain(t, g1)); !equalIDs(got, []int64{v1}) {
		t.Errorf("v1 group got %v after the rollback, want the v1 head [%d]", got, v1)
	}

	tx = beginTx(t, h, c)
	v2 := produceTx(t, p2, tx, EventV2{Seq: 3}, sqlstreams.Key("k"), sqlstreams.CompactionRank(-1))
	tx.end(t, true)
	if hl := health(t, c, stream); headsAt(hl, 1) != 0 || headsAt(hl, 2) != 1 {
		t.Errorf("after commit: heads v1 %d, v2 %d; want the v2 row as head", headsAt(hl, 1), headsAt(hl, 2))
	}
	if got := drain(t, g2); len(got) != 1 || got[0].ID != v2 || got[0].Value.Seq != 3 {
		t.Errorf("v2 group got %v, want only the committed row %d (seq 3)", idsOf(got), v2)
	}
}

func testTxForeign(t *testing.T, c *sqlstreams.Client) {
	const stream = "c16-foreign"
	p := producer[EventV1](t, c, stream)
	_, err := p.ProduceTx(ctx(t), fakeTx{}, EventV1{Seq: 1})
	if !errors.Is(err, sqlstreams.ErrForeignTx) {
		t.Errorf("ProduceTx with another driver's transaction: %v, want ErrForeignTx", err)
	}
	_, err = p.ProduceTx(ctx(t), nil, EventV1{Seq: 2})
	if !errors.Is(err, sqlstreams.ErrInvalidOption) {
		t.Errorf("ProduceTx with a nil transaction: %v, want ErrInvalidOption", err)
	}
	if hl := health(t, c, stream); hl.HighWater != 0 || len(hl.Versions) != 0 {
		t.Errorf("refused ProduceTx calls wrote rows: %+v", hl)
	}
}
