package sqlite

import (
	"context"
	"database/sql"
	"sync"

	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// maxStmts bounds the prepared statements kept per database handle; past it
// a random one is closed to make room.
const maxStmts = 256

// stmtCache keeps the prepared statements of one *sql.DB by their text, so
// that a statement run again is not parsed and planned again: a 100-row
// INSERT has 900 placeholders, and preparing statements was the largest
// part of the driver's CPU time.
//
// A statement is prepared on the DB, which needs a free connection, and the
// writer has exactly one: a statement first seen inside a transaction runs
// unprepared there and is only noted; the next transaction prepares the
// noted statements before it takes the connection. Statements hold no locks
// between runs (the engine resets them) and start no goroutines; Close
// closes them.
type stmtCache struct {
	db      *sql.DB
	mu      sync.Mutex
	stmts   map[string]*sql.Stmt
	pending map[string]struct{}
	closed  bool
}

func newStmtCache(db *sql.DB) *stmtCache {
	return &stmtCache{db: db, stmts: map[string]*sql.Stmt{}, pending: map[string]struct{}{}}
}

// lookup returns the kept statement for query, or nil after noting query
// for the next prepare.
func (c *stmtCache) lookup(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.stmts[query]; s != nil {
		return s
	}
	if !c.closed && len(c.pending) < maxStmts {
		c.pending[query] = struct{}{}
	}
	return nil
}

// prepare prepares the noted statements. It runs while the caller holds no
// connection of the DB; a statement that fails to prepare (its table was
// dropped, or ctx ended) is dropped and runs unprepared.
func (c *stmtCache) prepare(ctx context.Context) {
	c.mu.Lock()
	if len(c.pending) == 0 || c.closed {
		c.mu.Unlock()
		return
	}
	qs := make([]string, 0, len(c.pending))
	for q := range c.pending {
		qs = append(qs, q)
	}
	clear(c.pending)
	c.mu.Unlock()
	for _, q := range qs {
		s, err := c.db.PrepareContext(ctx, q)
		if err != nil {
			continue
		}
		c.mu.Lock()
		if c.closed || c.stmts[q] != nil {
			c.mu.Unlock()
			s.Close()
			continue
		}
		for old, st := range c.stmts { // full: make room (map order is random)
			if len(c.stmts) < maxStmts {
				break
			}
			delete(c.stmts, old)
			st.Close() // deferred by database/sql while a transaction still uses it
		}
		c.stmts[q] = s
		c.mu.Unlock()
	}
}

// close closes every kept statement; later lookups find none.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for q, s := range c.stmts {
		s.Close()
		delete(c.stmts, q)
	}
	clear(c.pending)
}

// querier is what the driver's statements run on: a *sql.DB, a *sql.Tx, or
// a cachedTx that runs kept statements in its transaction.
type querier = sqldb.Querier

// cachedTx runs statements in a transaction the driver began, through the
// kept prepared statements of its DB.
type cachedTx struct {
	*sql.Tx
	c *stmtCache // nil: a caller's transaction, whose statements are prepared as usual
}

func (t cachedTx) stmt(ctx context.Context, query string) *sql.Stmt {
	if t.c == nil {
		return nil
	}
	if s := t.c.lookup(query); s != nil {
		return t.Tx.StmtContext(ctx, s)
	}
	return nil
}

func (t cachedTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s := t.stmt(ctx, query); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return t.Tx.QueryContext(ctx, query, args...)
}

func (t cachedTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if s := t.stmt(ctx, query); s != nil {
		return s.ExecContext(ctx, args...)
	}
	return t.Tx.ExecContext(ctx, query, args...)
}

func (t cachedTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if s := t.stmt(ctx, query); s != nil {
		return s.QueryRowContext(ctx, args...)
	}
	return t.Tx.QueryRowContext(ctx, query, args...)
}
