// Package memdriver is an sqlstreams driver that keeps everything in the
// memory of one process: no database to install, no file, no SQL.
//
// It is for tests, examples and trying the API: package documentation and
// the contrib modules run their examples on it, and an application's unit
// tests can run a real client, real producers and real consumers against
// it. It honours the same contracts as the SQL drivers (the conformance
// suite proves it), so what works on it works on them.
//
// It is not durable and not shared: nothing survives the process, and
// another process cannot open the data. Use driver/sqlite for an embedded
// database that keeps its data, and driver/postgres or driver/mysql for
// several processes.
//
// Like SQLite it has one writer at a time: every write takes the store's
// writer lock, and a caller transaction (Begin, for ProduceTx and the
// transactional settles) holds it until Commit or Rollback, so other writes
// wait for it, for at most the busy timeout, and then fail with
// ErrConflict. Reads (Health, listings, dead letters, the registry) never
// wait for the writer and see only committed data.
//
// Several drivers may share one Store (WithStore): each is a client of the
// same data, as several connections are of one database, and closing one
// leaves the data to the others.
package memdriver

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// name is the driver's name, in logs and on its transactions.
const name = "memory"

// BusyTimeout is how long a write waits, by default, for the store's
// single writer (another write, or an open caller transaction) before it
// fails with ErrConflict: SQLite's default.
const BusyTimeout = 30 * time.Second

// Driver is the in-memory driver. Create it with Open.
type Driver struct {
	store       *Store
	busyTimeout time.Duration
	closed      atomic.Bool
	opened      error
}

var (
	_ driver.Driver    = (*Driver)(nil)
	_ driver.Registry  = (*Driver)(nil)
	_ driver.SchemaIDs = (*Driver)(nil)
)

// Option configures Open.
type Option func(*Driver)

// WithBusyTimeout sets how long a write waits for the store's writer before
// it fails with ErrConflict (default BusyTimeout).
func WithBusyTimeout(d time.Duration) Option { return func(drv *Driver) { drv.busyTimeout = d } }

// WithStore opens the driver on an existing store, to share its data with
// the other drivers on it (a second client of the same "database").
func WithStore(s *Store) Option { return func(drv *Driver) { drv.store = s } }

// Open returns a driver on a new, empty store, or on the store given with
// WithStore. A bad option surfaces from sqlstreams.Open.
func Open(opts ...Option) *Driver {
	d := &Driver{busyTimeout: BusyTimeout}
	for _, o := range opts {
		o(d)
	}
	switch {
	case d.busyTimeout <= 0:
		d.opened = fmt.Errorf("memdriver: busy timeout %v; use a positive duration", d.busyTimeout)
	case d.store == nil:
		d.store = NewStore()
	}
	return d
}

// Store returns the store the driver reads and writes, for WithStore.
func (d *Driver) Store() *Store { return d.store }

// Name implements driver.Driver.
func (d *Driver) Name() string { return name }

// Capabilities implements driver.Driver: one writer at a time, in this
// process.
func (d *Driver) Capabilities() driver.Capabilities {
	return driver.Capabilities{SingleWriter: true, InProcess: true}
}

// Close implements driver.Driver. The store keeps its data for the other
// drivers on it.
func (d *Driver) Close() error {
	if d.closed.Swap(true) {
		return driver.ErrClosed
	}
	return nil
}

// check fails when the driver is closed, was opened with a bad option, or
// its store is closed.
func (d *Driver) check(ctx context.Context) error {
	switch {
	case d.closed.Load():
		return fmt.Errorf("memdriver: %w", driver.ErrClosed)
	case d.opened != nil:
		return &driver.Error{Kind: driver.ErrUnavailable, Err: d.opened, Advice: "the driver cannot be opened"}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memdriver: nothing was done, the context ended first: %w", err)
	}
	return nil
}

// Migrate implements driver.Driver: an in-memory store has no schema to
// migrate.
func (d *Driver) Migrate(ctx context.Context) error {
	return d.read(ctx, func(*db) error { return nil })
}

// Migrations implements driver.Driver: none, there is no SQL schema.
func (d *Driver) Migrations() ([]driver.Migration, error) { return nil, nil }

// AppliedMigrations implements driver.Driver: none.
func (d *Driver) AppliedMigrations(ctx context.Context, _ driver.AppliedMigrationsParams) ([]driver.AppliedMigration, error) {
	return nil, d.read(ctx, func(*db) error { return nil })
}

// ApplyMigration implements driver.Driver: there is no migration to apply.
func (d *Driver) ApplyMigration(ctx context.Context, p driver.ApplyMigrationParams) error {
	return fmt.Errorf("memdriver: %w", driver.NoMigration(nil, p.Version))
}

// CheckPrivileges implements driver.Driver: memory needs none.
func (d *Driver) CheckPrivileges(ctx context.Context, _ driver.CheckPrivilegesParams) error {
	return d.read(ctx, func(*db) error { return nil })
}

// micro is t as every driver stores it: UTC, to the microsecond.
func micro(t time.Time) time.Time { return time.UnixMicro(t.UnixMicro()).UTC() }
