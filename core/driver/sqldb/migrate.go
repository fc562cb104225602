package sqldb

import (
	"context"
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
