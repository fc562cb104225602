// Package conformance is the shared suite that proves the sqlstreams
// contracts (C1..., R1..., D1... in docs/contracts.md) on a storage
// driver. Every driver module runs it from its own tests with the same
// code:
//
//	func TestMain(m *testing.M) { conformance.Main(m, target) }
//	func TestConformance(t *testing.T) { conformance.Run(t, target) }
//
// Tests go through the public API of package sqlstreams wherever it can
// observe the contract; each test gets its own namespace (a fresh schema,
// database or file) and runs in parallel with the others. Tests that need
// several processes re-execute the test binary; Main dispatches those
// child processes. A target that declares it has no other processes or no
// SQL (Target.SingleProcess, Target.NoSQL: core/memdriver) does not run the
// tests that need them, and Run names each one it leaves out.
package conformance

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Target describes a driver under test.
type Target struct {
	// Name names the driver in logs.
	Name string
	// NewNamespace creates an isolated, empty namespace and returns the
	// address Open takes. It registers its own cleanup with t.Cleanup. Under
	// CI=true a missing database server must fail the test, never skip it.
	NewNamespace func(t testing.TB) string
	// Open returns a driver on a namespace; it is called in the test process
	// and in child processes.
	Open func(namespace string) (driver.Driver, error)
	// BeginTx begins a transaction of the driver's own kind and adapts it
	// for ProduceTx.
	BeginTx func(ctx context.Context, drv driver.Driver) (tx driver.Tx, commit, rollback func() error, err error)
	// OpenWithLockTimeout opens a driver on a namespace whose waits for a
	// lock another transaction holds (a partition's append lock, SQLite's
	// write lock) end after d.
	OpenWithLockTimeout func(namespace string, d time.Duration) (driver.Driver, error)
	// Unreachable returns a driver whose database cannot be reached (a
	// closed port, a file in a missing directory).
	Unreachable func() driver.Driver
	// ExecTx runs one statement inside a transaction BeginTx began (tx) or,
	// with tx nil, on its own on drv. Tests use it for the application's
	// own writes next to a transactional settle, with portable SQL (DDL such
	// as CREATE TABLE IF NOT EXISTS only with tx nil: MySQL would commit the
	// transaction first).
	ExecTx func(ctx context.Context, drv driver.Driver, tx driver.Tx, query string) error
	// QueryInt runs a query returning one integer on drv.
	QueryInt func(ctx context.Context, drv driver.Driver, query string) (int64, error)
	// ResetNamespace, when set, empties a namespace a test used (drops every
	// stream's table, deletes every row, keeps the migrated schema) so that
	// the suite can hand it to the next test instead of migrating a new one.
	// It must fail when the namespace cannot be made empty.
	ResetNamespace func(namespace string) error
	// SingleProcess declares an in-process store that other processes
	// cannot open (an in-memory driver). The tests that re-execute the test
	// binary as child processes sharing the namespace do not run on it:
	// C17_CrashSafety, C18_Concurrency and C21's KilledBeforeCommit.
	SingleProcess bool
	// NoSQL declares a store that runs no SQL: it has no migrations (the
	// migration test checks that it reports none instead) and no tables for
	// QueryInt to count (D9_BatchLeaseStorage does not run); C21 records the
	// application's writes with Mark and Marks instead of ExecTx and
	// QueryInt.
	NoSQL bool
	// Mark records the application's write of key inside tx (a transaction
	// BeginTx began), to be kept exactly when tx commits, or on its own when
	// tx is nil; Marks counts the kept writes of key. Targets that set
	// NoSQL provide them; the others get them from ExecTx and QueryInt.
	Mark  func(ctx context.Context, drv driver.Driver, tx driver.Tx, key string) error
	Marks func(ctx context.Context, drv driver.Driver, key string) (int64, error)
	// NoMigrationsDown declares a server on which taking migrations down
	// and up again while it works is not safe for the server itself (see
	// docs/decisions.md, "Galera test nodes do not run migrations down"):
	// the tests that do it (API_Migrations, R3_VersionSettingsMigrationDown,
	// R13_MigrationDown and R9_SchemaIDs' backfill) do not run there. The
	// same driver's other targets run them.
	NoMigrationsDown bool
}

// contract is one named conformance test.
type contract struct {
	name string
	run  func(t *testing.T, h *harness)
	// needs is what the test needs of a target beyond the driver contract.
	needs need
}

// need is a set of capabilities a test needs of its target.
type need int

const (
	// needProcesses: child processes open the test's namespace.
	needProcesses need = 1 << iota
	// needSQL: the test counts the driver's rows with SQL.
	needSQL
	// needMigrationsDown: the test takes migrations down and up again.
	needMigrationsDown
)

// needs names each capability and tells whether a target lacks it: the
// one place a new capability is added.
var needs = []struct {
	n       need
	name    string
	lacking func(Target) bool
}{
	{needProcesses, "other processes (SingleProcess)", func(t Target) bool { return t.SingleProcess }},
	{needSQL, "SQL (NoSQL)", func(t Target) bool { return t.NoSQL }},
	{needMigrationsDown, "migrations down (NoMigrationsDown)", func(t Target) bool { return t.NoMigrationsDown }},
}

func (n need) String() string {
	var names []string
	for _, c := range needs {
		if n&c.n != 0 {
			names = append(names, c.name)
		}
	}
	return strings.Join(names, " and ")
}

// lacks is what of n the target does not offer.
func (t Target) lacks(n need) need {
	var missing need
	for _, c := range needs {
		if c.lacking(t) {
			missing |= c.n
		}
	}
	return n & missing
}

// has reports whether the target offers everything in n.
func (t Target) has(n need) bool { return t.lacks(n) == 0 }

// contracts lists every test, in contract order. Files named after their
// contract add to it.
var contracts []contract

func register(name string, run func(t *testing.T, h *harness)) {
	contracts = append(contracts, contract{name: name, run: run})
}

// registerNeeding adds a test that runs only on targets offering n.
func registerNeeding(n need, name string, run func(t *testing.T, h *harness)) {
	contracts = append(contracts, contract{name: name, run: run, needs: n})
}

// Run runs every contract test against target, except those that need
// what the target declares it lacks (SingleProcess, NoSQL,
// NoMigrationsDown): it names those in the log.
func Run(t *testing.T, target Target) { RunShard(t, target, 0, 1) }

// RunShard runs the shard-th of shards parts of what Run runs (the
// contracts at positions shard, shard+shards, ...): calling it for every
// shard from 0 to shards-1 runs the whole suite once, so that a target can
// spread it over servers that each live only briefly.
func RunShard(t *testing.T, target Target, shard, shards int) {
	if shards < 1 || shard < 0 || shard >= shards {
		t.Fatalf("conformance: shard %d of %d: want 0 <= shard < shards", shard, shards)
	}
	root, pool := t, &nsPool{}
	for _, c := range shardOf(shard, shards) {
		if missing := target.lacks(c.needs); missing != 0 {
			t.Logf("%s does not run on %s: the target declares it has no %s", c.name, target.Name, missing)
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, &harness{target: target, root: root, pool: pool})
		})
	}
}

// shardOf is the shard-th of shards parts of the contracts.
func shardOf(shard, shards int) []contract {
	var out []contract
	for i, c := range contracts {
		if i%shards == shard {
			out = append(out, c)
		}
	}
	return out
}

// harness gives a test its namespace and clients.
type harness struct {
	target    Target
	namespace string
	// root is the test that owns pooled namespaces; pool holds emptied ones.
	root testing.TB
	pool *nsPool
}

// nsPool keeps namespaces that tests used and ResetNamespace emptied, for
// the next test.
type nsPool struct {
	mu   sync.Mutex
	free []string
}

// fresh returns a harness with a namespace of its own, for a subtest.
func (h *harness) fresh() *harness { return &harness{target: h.target, root: h.root, pool: h.pool} }

// ns returns the test's namespace, on first use: an emptied one from the
// pool when the target can reset namespaces, otherwise a new one.
func (h *harness) ns(t testing.TB) string {
	if h.namespace != "" {
		return h.namespace
	}
	if h.target.ResetNamespace == nil || h.pool == nil {
		h.namespace = h.target.NewNamespace(t)
		return h.namespace
	}
	h.pool.mu.Lock()
	if n := len(h.pool.free); n > 0 {
		h.namespace, h.pool.free = h.pool.free[n-1], h.pool.free[:n-1]
	}
	h.pool.mu.Unlock()
	if h.namespace == "" {
		// Owned by the root so that it outlives this test; dropped when the
		// whole suite is done. A failure to create it fails this test: the
		// root's Fatal from this test's goroutine would end the whole run.
		h.namespace = h.target.NewNamespace(&ownedBy{TB: t, owner: h.root})
	}
	ns := h.namespace
	// Registered before the test's clients, so it runs after they closed.
	t.Cleanup(func() {
		if err := h.target.ResetNamespace(ns); err != nil {
			t.Logf("namespace %s is not reused: %v", ns, err)
			return
		}
		h.pool.mu.Lock()
		h.pool.free = append(h.pool.free, ns)
		h.pool.mu.Unlock()
	})
	return ns
}

// ownedBy is a test whose cleanups and temporary directories belong to
// owner, a test that outlives it. The failures it reports while it runs
// are its own; those its cleanups report go to owner, because they run
// after it ended, when reporting to it would panic.
type ownedBy struct {
	testing.TB
	owner testing.TB
}

func (o *ownedBy) Cleanup(f func()) {
	o.owner.Cleanup(func() {
		o.TB = o.owner
		f()
	})
}

func (o *ownedBy) TempDir() string { return o.owner.TempDir() }

// client opens a client on the test's namespace, closed at cleanup.
func (h *harness) client(t testing.TB, opts ...sqlstreams.ClientOption) *sqlstreams.Client {
	t.Helper()
	drv, err := h.target.Open(h.ns(t))
	if err != nil {
		t.Fatalf("open %s driver: %v", h.target.Name, err)
	}
	c, err := sqlstreams.Open(context.Background(), drv, append([]sqlstreams.ClientOption{sqlstreams.WithMaintenanceInterval(0), sqlstreams.WithLogger(testLogger(t))}, opts...)...)
	if err != nil {
		t.Fatalf("sqlstreams.Open on %s: %v", h.target.Name, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// ctx returns a context that ends with the test or after a minute.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// Main runs child-process roles for multi-process tests and otherwise the
// tests. Call it from the driver package's TestMain.
func Main(m *testing.M, target Target) {
	dispatchChildren(target)
	os.Exit(m.Run())
}
