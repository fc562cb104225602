package memdriver

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Tx is a caller transaction: pass it to Producer.ProduceTx and to the
// transactional settles (Delivery.AckTx, RetryTx, DeadTx). It holds the
// store's single writer from Begin until Commit or Rollback, so other
// writes wait for it: keep it short, and do not write outside it from the
// goroutine that holds it. Its writes are visible to nobody else until
// Commit, and are dropped by Rollback.
type Tx struct {
	d        *Driver
	mu       sync.Mutex // serializes the transaction's writes and its end
	work     *db        // the transaction's copy; nil once it ended
	onCommit []func()
	stop     func() bool // stops the rollback when Begin's context ends
}

// ErrTxDone: the transaction was already committed or rolled back.
var ErrTxDone = errors.New("memdriver: the transaction has already been committed or rolled back")

// Begin begins a caller transaction on d, waiting for the store's writer
// for at most the busy timeout (then ErrConflict). When ctx ends before
// Commit, the transaction is rolled back, as database/sql rolls back a
// transaction whose context ends: a forgotten transaction does not hold the
// writer past its context.
func Begin(ctx context.Context, d *Driver) (*Tx, error) { return d.Begin(ctx) }

// Begin begins a caller transaction; see the package function Begin.
func (d *Driver) Begin(ctx context.Context) (*Tx, error) {
	if err := d.check(ctx); err != nil {
		return nil, err
	}
	if err := d.takeWriter(ctx); err != nil {
		return nil, err
	}
	d.store.mu.RLock()
	closed, work := d.store.closed, d.store.committed.fork()
	d.store.mu.RUnlock()
	if closed {
		<-d.store.writer
		return nil, errStoreClosed
	}
	t := &Tx{d: d, work: work}
	t.stop = context.AfterFunc(ctx, func() { _ = t.Rollback() })
	return t, nil
}

// DriverName implements driver.Tx.
func (*Tx) DriverName() string { return name }

// OnCommit registers f to run when the transaction commits, after its
// writes became visible and before Commit returns; it never runs when the
// transaction rolls back. It is how an application's own in-memory state
// changes with the transaction: a handler that records its work with
// OnCommit and acks with AckTx has done both or neither.
func (t *Tx) OnCommit(f func()) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.work == nil {
		return ErrTxDone
	}
	t.onCommit = append(t.onCommit, f)
	return nil
}

// Commit makes the transaction's writes visible and releases the writer.
func (t *Tx) Commit() error {
	t.mu.Lock()
	work, hooks := t.work, t.onCommit
	t.work, t.onCommit = nil, nil
	t.mu.Unlock()
	if work == nil {
		return ErrTxDone
	}
	t.stop()
	defer func() { <-t.d.store.writer }()
	s := t.d.store
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errStoreClosed
	}
	work.owned = nil
	s.committed = work
	s.mu.Unlock()
	for _, f := range hooks {
		f()
	}
	return nil
}

// Rollback drops the transaction's writes and releases the writer.
func (t *Tx) Rollback() error {
	t.mu.Lock()
	work := t.work
	t.work, t.onCommit = nil, nil
	t.mu.Unlock()
	if work == nil {
		return ErrTxDone
	}
	t.stop()
	<-t.d.store.writer
	return nil
}

// own returns tx as a transaction of d's store, or ErrForeignTx.
func (d *Driver) own(tx driver.Tx) (*Tx, error) {
	t, ok := tx.(*Tx)
	if !ok {
		return nil, fmt.Errorf("memdriver: %w: got a %s transaction; begin one with memdriver.Begin", driver.ErrForeignTx, tx.DriverName())
	}
	if t.d.store != d.store {
		return nil, fmt.Errorf("memdriver: %w: the transaction belongs to another store", driver.ErrForeignTx)
	}
	return t, nil
}

// run runs fn on the transaction's copy.
func (t *Tx) run(fn func(*db) error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.work == nil {
		return &driver.Error{Kind: driver.ErrDatabase, Err: ErrTxDone, Advice: "begin a new transaction"}
	}
	return fn(t.work)
}
