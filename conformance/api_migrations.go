package conformance

import (
	"errors"
	"slices"
	"testing"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

func init() { registerNeeding(needMigrationsDown, "API_Migrations", testMigrations) }

// Migrations are the users' to run when they want: a migrator lists what is
// applied, migrates up to a target or down where a step is reversible, and
// dry-runs with the SQL; Open with WithoutMigrate refuses an outdated schema
// with ErrSchemaOutdated naming what is pending, and works once it is
// current. Every migration offers its SQL and the SQL that records it.
func testMigrations(t *testing.T, h *harness) {
	if h.target.NoSQL {
		testNoMigrations(t, h)
		return
	}
	ns := h.target.NewNamespace(t) // never pooled: it starts empty
	drv, err := h.target.Open(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer drv.Close()
	m := sqlstreams.NewMigrator(drv)
	all, err := m.Migrations()
	if err != nil || len(all) < 4 {
		t.Fatalf("migrations: %d, %v", len(all), err)
	}
	var versions []int
	for _, mg := range all {
		versions = append(versions, mg.Version)
		if mg.Up == "" || mg.Record == "" || mg.Name == "" {
			t.Errorf("migration %d lacks its SQL or its record SQL: %+v", mg.Version, mg)
		}
	}
	list, err := m.List(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, mi := range list {
		if mi.Applied {
			t.Errorf("migration %d applied on an empty namespace", mi.Version)
		}
	}
	var outdated *sqlstreams.SchemaOutdatedError
	if err := m.Validate(ctx(t)); !errors.As(err, &outdated) || !errors.Is(err, sqlstreams.ErrSchemaOutdated) || !slices.Equal(outdated.Pending, versions) {
		t.Fatalf("validate on an empty namespace: %v; want ErrSchemaOutdated naming %v", err, versions)
	}
	openWithout := func() error {
		d, err := h.target.Open(ns)
		if err != nil {
			t.Fatal(err)
		}
		c, err := sqlstreams.Open(ctx(t), d, sqlstreams.WithoutMigrate(), sqlstreams.WithMaintenanceInterval(0), sqlstreams.WithLogger(testLogger(t)))
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := openWithout(); !errors.Is(err, sqlstreams.ErrSchemaOutdated) {
		t.Fatalf("Open without migrating on an empty namespace: %v; want ErrSchemaOutdated", err)
	}

	plan, err := m.Migrate(ctx(t), sqlstreams.MigrateOptions{DryRun: true, TargetVersion: versions[1]})
	if err != nil || len(plan) != 2 || plan[0].Version != versions[0] || plan[0].SQL == "" {
		t.Fatalf("dry run to %d: %+v, %v", versions[1], plan, err)
	}
	if err := m.Validate(ctx(t)); !errors.As(err, &outdated) || len(outdated.Pending) != len(versions) {
		t.Errorf("after a dry run: %v; want nothing applied", err)
	}
	if done, err := m.Migrate(ctx(t), sqlstreams.MigrateOptions{TargetVersion: versions[1]}); err != nil || len(done) != 2 {
		t.Fatalf("migrate to %d: %+v, %v", versions[1], done, err)
	}
	if err := openWithout(); !errors.As(err, &outdated) || !slices.Equal(outdated.Pending, versions[2:]) {
		t.Errorf("Open without migrating half-way: %v; want pending %v", err, versions[2:])
	}
	if _, err := m.Migrate(ctx(t), sqlstreams.MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := m.Validate(ctx(t)); err != nil {
		t.Errorf("validate after migrating: %v", err)
	}
	if err := openWithout(); err != nil {
		t.Errorf("Open without migrating on a current schema: %v", err)
	}

	// Down: every reversible step from the newest, stopping at one that is
	// not; a target below an irreversible step is refused.
	list, _ = m.List(ctx(t))
	var reversible []int
	for i := len(list) - 1; i >= 0 && list[i].Reversible; i-- {
		reversible = append(reversible, list[i].Version)
	}
	if len(reversible) == 0 {
		t.Fatalf("the newest migration has no down step: %+v", list)
	}
	if _, err := m.Migrate(ctx(t), sqlstreams.MigrateOptions{Down: true, TargetVersion: versions[0]}); !errors.Is(err, sqlstreams.ErrInvalidOption) {
		t.Errorf("down past an irreversible migration: %v; want ErrInvalidOption", err)
	}
	done, err := m.Migrate(ctx(t), sqlstreams.MigrateOptions{Down: true})
	if err != nil || len(done) != len(reversible) || !done[0].Down {
		t.Fatalf("down: %+v, %v; want %v undone", done, err, reversible)
	}
	if err := m.Validate(ctx(t)); !errors.As(err, &outdated) || len(outdated.Pending) != len(reversible) {
		t.Errorf("after going down: %v; want %v pending", err, reversible)
	}
	if _, err := m.Migrate(ctx(t), sqlstreams.MigrateOptions{}); err != nil {
		t.Fatalf("up again: %v", err)
	}
	// The schema works after going down and up again.
	d, err := h.target.Open(ns)
	if err != nil {
		t.Fatal(err)
	}
	c := h.clientOn(t, d, sqlstreams.WithoutMigrate())
	p := producer[EventV1](t, c, "after-migrations")
	ids := produceV1(t, p, 2)
	if got := drain(t, consumer[EventV1](t, c, "after-migrations", "g", nil)); !equalIDs(idsOf(got), ids) {
		t.Errorf("after down and up: consumed %v, want %v", idsOf(got), ids)
	}
}

// testNoMigrations: a store without SQL (Target.NoSQL) has no migrations;
// the migrator says so, finds nothing pending, refuses to apply or undo
// one with ErrInvalidOption or a driver error, and Open with
// WithoutMigrate works at once.
func testNoMigrations(t *testing.T, h *harness) {
	ns := h.target.NewNamespace(t)
	drv, err := h.target.Open(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer drv.Close()
	m := sqlstreams.NewMigrator(drv)
	if all, err := m.Migrations(); err != nil || len(all) != 0 {
		t.Fatalf("migrations of a store without SQL: %+v, %v; want none", all, err)
	}
	if list, err := m.List(ctx(t)); err != nil || len(list) != 0 {
		t.Fatalf("list: %+v, %v; want none", list, err)
	}
	if err := m.Validate(ctx(t)); err != nil {
		t.Fatalf("validate: %v; want nothing pending", err)
	}
	if done, err := m.Migrate(ctx(t), sqlstreams.MigrateOptions{}); err != nil || len(done) != 0 {
		t.Fatalf("migrate: %+v, %v; want nothing to do", done, err)
	}
	if err := drv.ApplyMigration(ctx(t), driver.ApplyMigrationParams{Version: 1}); !errors.Is(err, sqlstreams.ErrDatabase) {
		t.Errorf("apply migration 1: %v; want ErrDatabase (there is none)", err)
	}
	c := h.clientOn(t, drv, sqlstreams.WithoutMigrate())
	p := producer[EventV1](t, c, "no-migrations")
	ids := produceV1(t, p, 2)
	if got := drain(t, consumer[EventV1](t, c, "no-migrations", "g", nil)); !equalIDs(idsOf(got), ids) {
		t.Errorf("opened without migrating: consumed %v, want %v", idsOf(got), ids)
	}
}
