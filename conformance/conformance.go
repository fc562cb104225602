// Package conformance is the shared suite that proves the sqlstreams
// contracts (C1..., R1... in DESIGN.md) on a storage driver. Every driver
// module runs it from its own tests with the same code:
//
//	func TestMain(m *testing.M) { conformance.Main(m, target) }
//	func TestConformance(t *testing.T) { conformance.Run(t, target) }
//
// Tests go through the public API of package sqlstreams wherever it can
// observe the contract; each test gets its own namespace (a fresh schema,
// database or file) and runs in parallel with the others. Tests that need
// several processes re-execute the test binary; Main dispatches those
// child processes.
package conformance

import (
	"context"
	"io"
	"log/slog"
	"os"
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
}

// contract is one named conformance test.
type contract struct {
	name string
	run  func(t *testing.T, h *harness)
}

// contracts lists every test, in contract order. Files named after their
// contract add to it.
var contracts []contract

func register(name string, run func(t *testing.T, h *harness)) {
	contracts = append(contracts, contract{name: name, run: run})
}

// Run runs every contract test against target.
func Run(t *testing.T, target Target) {
	for _, c := range contracts {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, &harness{target: target})
		})
	}
}

// harness gives a test its namespace and clients.
type harness struct {
	target    Target
	namespace string
}

// fresh returns a harness with a namespace of its own, for a subtest.
func (h *harness) fresh() *harness { return &harness{target: h.target} }

// ns returns the test's namespace, creating it on first use.
func (h *harness) ns(t testing.TB) string {
	if h.namespace == "" {
		h.namespace = h.target.NewNamespace(t)
	}
	return h.namespace
}

// client opens a client on the test's namespace, closed at cleanup.
func (h *harness) client(t testing.TB) *sqlstreams.Client {
	t.Helper()
	drv, err := h.target.Open(h.ns(t))
	if err != nil {
		t.Fatalf("open %s driver: %v", h.target.Name, err)
	}
	c, err := sqlstreams.Open(context.Background(), drv, sqlstreams.WithMaintenanceInterval(0), sqlstreams.WithLogger(testLogger(t)))
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
