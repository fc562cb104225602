package conformance

import (
	"slices"
	"sync"
	"testing"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

func init() { register("API_MigrateAtOnce", testMigrateAtOnce) }

// Processes that start at once on an empty namespace migrate it once: every
// Migrate succeeds (the engine's migration lock lets one apply and the
// others find it done), a second one changes nothing, and each migration is
// recorded once. It was a test of each SQL driver's own (issue #26).
func testMigrateAtOnce(t *testing.T, h *harness) {
	ns := h.target.NewNamespace(t) // never pooled: it starts empty
	const processes = 6
	var wg sync.WaitGroup
	errs := make(chan error, 2*processes)
	for range processes {
		wg.Go(func() {
			drv, err := h.target.Open(ns)
			if err != nil {
				errs <- err
				return
			}
			defer drv.Close()
			for range 2 {
				errs <- drv.Migrate(ctx(t))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Migrate at once: %v", err)
		}
	}
	drv, err := h.target.Open(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer drv.Close()
	m := sqlstreams.NewMigrator(drv)
	if err := m.Validate(ctx(t)); err != nil {
		t.Fatalf("validate after migrating at once: %v; want nothing pending", err)
	}
	all, err := m.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	applied, err := drv.AppliedMigrations(ctx(t), driver.AppliedMigrationsParams{})
	if err != nil {
		t.Fatal(err)
	}
	var want, got []int
	for _, mg := range all {
		want = append(want, mg.Version)
	}
	for _, a := range applied {
		got = append(got, a.Version)
	}
	if !slices.Equal(got, want) {
		t.Errorf("applied %v after migrating at once; want each of %v once", got, want)
	}
}
