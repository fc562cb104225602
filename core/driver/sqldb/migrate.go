package sqldb

import (
	"context"
	"fmt"
	"io/fs"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// AppliedVersions is driver.MigrationSteps' Applied on r: it creates the
// table of migration records with create (CREATE TABLE IF NOT EXISTS
// sqlstreams_migration, the engine's) and returns the versions it records.
func AppliedVersions(ctx context.Context, r Runner, create string) (map[int]bool, error) {
	if _, err := r.Exec(ctx, create); err != nil {
		return nil, err
	}
	applied := map[int]bool{}
	return applied, markOn(ctx, r, `SELECT version FROM sqlstreams_migration`, nil, applied)
}

// RecordMigration is driver.MigrationSteps' Record on r: it removes the
// version's record (down), or adds it with insert, the engine's INSERT of
// (version, applied_at), at the time applied as the engine stores it.
func RecordMigration(ctx context.Context, r Runner, insert string, version int, down bool, at any) error {
	var err error
	if down {
		_, err = r.Exec(ctx, `DELETE FROM sqlstreams_migration WHERE version = ?`, version)
	} else {
		_, err = r.Exec(ctx, insert, version, at)
	}
	return err
}

// AppliedMigrations reads the table of migration records in version order
// (Driver.AppliedMigrations); the time applied is stored as a T, which at
// turns into UTC. The driver answers a missing table with none.
func AppliedMigrations[T any](ctx context.Context, r Runner, at func(T) time.Time) ([]driver.AppliedMigration, error) {
	return collectOn(ctx, r, `SELECT version, applied_at FROM sqlstreams_migration ORDER BY version`, nil, func(r driver.RowScanner) (driver.AppliedMigration, error) {
		var m driver.AppliedMigration
		var applied T
		err := r.Scan(&m.Version, &applied)
		m.AppliedAt = at(applied)
		return m, err
	})
}

// MigrationTable is an engine's table of migration records, which
// Migrations and MigrationRecords write alike on every engine.
type MigrationTable struct {
	// Create makes the table when missing (CREATE TABLE IF NOT EXISTS
	// sqlstreams_migration, with the engine's types).
	Create string
	// Insert is the engine's verb that adds a record: INSERT, or MySQL's
	// INSERT IGNORE, which leaves a version recorded already as it is.
	Insert string
	// Now is the engine's SQL for the time applied, in a migration's
	// Record, and At the same time from the process, as the engine stores
	// it, which MigrationRecords writes.
	Now string
	At  func(time.Time) any
}

// Migrations are driver.ReadMigrations of fsys's migrations directory,
// each with its Record: the table created when missing, then the version
// recorded at the server's time.
func (t MigrationTable) Migrations(fsys fs.FS) ([]driver.Migration, error) {
	ms, err := driver.ReadMigrations(fsys, "migrations")
	for i := range ms {
		ms[i].Record = fmt.Sprintf("%s;\n%s INTO sqlstreams_migration (version, applied_at) VALUES (%d, %s);\n", t.Create, t.Insert, ms[i].Version, t.Now)
	}
	return ms, err
}

// MigrationRecords are driver.MigrationSteps' Applied and Record on a
// Runner, which a driver's steps embed beside its Lock and Exec.
type MigrationRecords struct {
	Table  MigrationTable
	Runner Runner
}

// Applied is AppliedVersions with the table's Create.
func (s MigrationRecords) Applied(ctx context.Context) (map[int]bool, error) {
	return AppliedVersions(ctx, s.Runner, s.Table.Create)
}

// Record is RecordMigration with the table's Insert, at the process's time.
func (s MigrationRecords) Record(ctx context.Context, version int, down bool) error {
	insert := s.Table.Insert + ` INTO sqlstreams_migration (version, applied_at) VALUES (?, ?)`
	return RecordMigration(ctx, s.Runner, insert, version, down, s.Table.At(time.Now()))
}
