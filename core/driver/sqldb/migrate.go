package sqldb

import (
	"context"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// AppliedVersions is driver.MigrationSteps' Applied on q: it creates the
// table of migration records with create (CREATE TABLE IF NOT EXISTS
// sqlstreams_migration, the engine's) and returns the versions it records.
func AppliedVersions(ctx context.Context, q Querier, create string) (map[int]bool, error) {
	if _, err := q.ExecContext(ctx, create); err != nil {
		return nil, err
	}
	applied := map[int]bool{}
	return applied, Mark(ctx, q, `SELECT version FROM sqlstreams_migration`, nil, applied)
}

// AppliedMigrations reads the table of migration records in version order
// (Driver.AppliedMigrations); the time applied is stored as a T, which at
// turns into UTC. The driver answers a missing table with none.
func AppliedMigrations[T any](ctx context.Context, q Querier, at func(T) time.Time) ([]driver.AppliedMigration, error) {
	return Collect(ctx, q, `SELECT version, applied_at FROM sqlstreams_migration ORDER BY version`, nil, func(r driver.RowScanner) (driver.AppliedMigration, error) {
		var m driver.AppliedMigration
		var applied T
		err := r.Scan(&m.Version, &applied)
		m.AppliedAt = at(applied)
		return m, err
	})
}
