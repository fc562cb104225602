package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migrate implements driver.Driver: driver.MigratePending in one immediate
// transaction, so processes starting at once apply each migration exactly
// once.
func (d *Driver) Migrate(ctx context.Context) error {
	return d.migrating(ctx, func(s migrationSteps, ms []driver.Migration) error {
		return driver.MigratePending(ctx, s, driver.MigratePendingParams{Migrations: ms})
	})
}

// Migrations implements driver.Driver.
func (d *Driver) Migrations() ([]driver.Migration, error) {
	ms, err := migrationTable.Migrations(migrations)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	return ms, nil
}

// migrationTable records applied migrations; applied_at is in unix
// microseconds.
var migrationTable = sqldb.MigrationTable{
	Create: `CREATE TABLE IF NOT EXISTS sqlstreams_migration (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`,
	Insert: "INSERT", Now: "CAST(unixepoch('subsec') * 1000000 AS INTEGER)", At: func(t time.Time) any { return micros(t) },
}

// AppliedMigrations implements driver.Driver.
func (d *Driver) AppliedMigrations(ctx context.Context, _ driver.AppliedMigrationsParams) ([]driver.AppliedMigration, error) {
	var out []driver.AppliedMigration
	err := d.readTx(ctx, func(tx *sql.Tx) error {
		var exists bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlstreams_migration')`).Scan(&exists); err != nil || !exists {
			return err
		}
		var err error
		out, err = sqldb.AppliedMigrations(ctx, sqldb.On(tx), fromMicros)
		return err
	})
	return out, err
}

// ApplyMigration implements driver.Driver: driver.ApplyOne in one
// immediate transaction.
func (d *Driver) ApplyMigration(ctx context.Context, p driver.ApplyMigrationParams) error {
	return d.migrating(ctx, func(s migrationSteps, ms []driver.Migration) error { return driver.ApplyOne(ctx, s, ms, p) })
}

// migrating runs fn with the driver's migrations in a write transaction:
// SQLite's single writer is the migration lock.
func (d *Driver) migrating(ctx context.Context, fn func(s migrationSteps, ms []driver.Migration) error) error {
	ms, err := d.Migrations()
	if err != nil {
		return err
	}
	if err := d.check(); err != nil {
		return err // names the file already
	}
	if err := d.inTx(ctx, nil, func(tx *sql.Tx) error {
		return fn(migrationSteps{sqldb.MigrationRecords{Table: migrationTable, Runner: sqldb.On(tx)}, tx}, ms)
	}); err != nil {
		return fmt.Errorf("sqlite %s: %w", d.path, err)
	}
	return nil
}

// migrationSteps are SQLite's driver.MigrationSteps in the write
// transaction tx.
type migrationSteps struct {
	sqldb.MigrationRecords
	tx *sql.Tx
}

// Lock has nothing to do: the transaction holds the database's one writer.
func (migrationSteps) Lock(context.Context) (func(), error) { return func() {}, nil }

func (s migrationSteps) Exec(ctx context.Context, sql string) error {
	_, err := s.tx.ExecContext(ctx, sql)
	return err
}
