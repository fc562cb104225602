package conformance_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/memdriver"
)

// memTarget describes core/memdriver to the suite: a namespace is a store,
// and every driver opened on it shares the store's data.
func memTarget() conformance.Target {
	var mu sync.Mutex
	stores := map[string]*memdriver.Store{}
	marks := map[*memdriver.Store]map[string]int64{}
	store := func(ns string) *memdriver.Store {
		mu.Lock()
		defer mu.Unlock()
		return stores[ns]
	}
	var next int
	mark := func(s *memdriver.Store, key string) {
		mu.Lock()
		defer mu.Unlock()
		if marks[s] == nil {
			marks[s] = map[string]int64{}
		}
		marks[s][key]++
	}
	return conformance.Target{
		Name:          "memory",
		SingleProcess: true,
		NoSQL:         true,
		NewNamespace: func(t testing.TB) string {
			mu.Lock()
			defer mu.Unlock()
			next++
			ns := fmt.Sprintf("mem-%d", next)
			stores[ns] = memdriver.NewStore()
			t.Cleanup(func() {
				mu.Lock()
				s := stores[ns]
				delete(stores, ns)
				delete(marks, s)
				mu.Unlock()
				s.Close()
			})
			return ns
		},
		Open: func(ns string) (driver.Driver, error) {
			s := store(ns)
			if s == nil {
				return nil, fmt.Errorf("no memory namespace %q", ns)
			}
			return memdriver.Open(memdriver.WithStore(s)), nil
		},
		OpenWithLockTimeout: func(ns string, d time.Duration) (driver.Driver, error) {
			return memdriver.Open(memdriver.WithStore(store(ns)), memdriver.WithBusyTimeout(d)), nil
		},
		Unreachable: func() driver.Driver {
			s := memdriver.NewStore()
			s.Close()
			return memdriver.Open(memdriver.WithStore(s))
		},
		BeginTx: func(ctx context.Context, d driver.Driver) (driver.Tx, func() error, func() error, error) {
			tx, err := memdriver.Begin(ctx, d.(*memdriver.Driver))
			if err != nil {
				return nil, nil, nil, err
			}
			return tx, tx.Commit, tx.Rollback, nil
		},
		Mark: func(_ context.Context, d driver.Driver, tx driver.Tx, key string) error {
			s := d.(*memdriver.Driver).Store()
			if tx == nil {
				mark(s, key)
				return nil
			}
			return tx.(*memdriver.Tx).OnCommit(func() { mark(s, key) })
		},
		Marks: func(_ context.Context, d driver.Driver, key string) (int64, error) {
			mu.Lock()
			defer mu.Unlock()
			return marks[d.(*memdriver.Driver).Store()][key], nil
		},
	}
}

// TestMemDriver runs the whole suite on the in-memory driver, less the
// tests a single-process store without SQL cannot run (the suite names
// them in the log; docs/decisions.md says why).
func TestMemDriver(t *testing.T) { conformance.Run(t, memTarget()) }
