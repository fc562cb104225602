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

// Migrate implements driver.Driver: every pending migration, in version
// order, each in its own immediate transaction, so processes starting at
// once apply each exactly once.
func (d *Driver) Migrate(ctx context.Context) error {
	ms, err := d.Migrations()
	if err != nil {
		return err
	}
	for _, m := range ms {
		if err := d.apply(ctx, m, false, true); err != nil {
			return err
		}
	}
	return nil
}

// Migrations implements driver.Driver.
func (d *Driver) Migrations() ([]driver.Migration, error) {
	ms, err := driver.ReadMigrations(migrations, "migrations")
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	for i := range ms {
		ms[i].Record = migrationTable + fmt.Sprintf(";\nINSERT INTO sqlstreams_migration (version, applied_at) VALUES (%d, CAST(unixepoch('subsec') * 1000000 AS INTEGER));\n", ms[i].Version)
	}
	return ms, nil
}

// migrationTable records applied migrations; applied_at is in unix
// microseconds.
const migrationTable = `CREATE TABLE IF NOT EXISTS sqlstreams_migration (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`

// AppliedMigrations implements driver.Driver.
func (d *Driver) AppliedMigrations(ctx context.Context, _ driver.AppliedMigrationsParams) ([]driver.AppliedMigration, error) {
	var out []driver.AppliedMigration
	err := d.readTx(ctx, func(tx *sql.Tx) error {
		var exists bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlstreams_migration')`).Scan(&exists); err != nil || !exists {
			return err
		}
		return sqldb.EachRow(ctx, tx, `SELECT version, applied_at FROM sqlstreams_migration ORDER BY version`, nil, func(r *sql.Rows) error {
			var m driver.AppliedMigration
			var at int64
			err := r.Scan(&m.Version, &at)
			m.AppliedAt = fromMicros(at)
			out = append(out, m)
			return err
		})
	})
	return out, err
}

// ApplyMigration implements driver.Driver.
func (d *Driver) ApplyMigration(ctx context.Context, p driver.ApplyMigrationParams) error {
	ms, err := d.Migrations()
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.Version == p.Version {
			return d.apply(ctx, m, p.Down, false)
		}
	}
	return &driver.Error{Kind: driver.ErrDatabase, Err: fmt.Errorf("sqlite: no migration %d", p.Version),
		Advice: "list the driver's migrations with Migrations and pick one of their versions"}
}

// apply runs one migration up or down in an immediate transaction that
// first checks what the database has: pending-only (Migrate) skips a
// migration already applied; otherwise the step must make sense.
func (d *Driver) apply(ctx context.Context, m driver.Migration, down, pendingOnly bool) error {
	if err := d.check(); err != nil {
		return err
	}
	err := d.inTx(ctx, nil, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, migrationTable); err != nil {
			return err
		}
		var applied, before, after int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE version = ?), count(*) FILTER (WHERE version = ? - 1), count(*) FILTER (WHERE version > ?)
			FROM sqlstreams_migration`, m.Version, m.Version, m.Version).Scan(&applied, &before, &after); err != nil {
			return err
		}
		refuse := func(why, advice string) error {
			return &driver.Error{Kind: driver.ErrDatabase, Err: fmt.Errorf("migration %s %s", m.Name, why), Advice: advice}
		}
		switch {
		case pendingOnly && applied > 0:
			return nil
		case !down && applied > 0:
			return refuse("is already applied", "nothing to do")
		case !down && m.Version > 1 && before == 0:
			return refuse("needs the migration before it", "apply the migrations in version order")
		case down && applied == 0:
			return refuse("is not applied", "nothing to undo")
		case down && after > 0:
			return refuse("has later migrations applied", "undo the later migrations first")
		case down && m.Down == "":
			return refuse("has no down step", "going back from it would lose data; restore a backup instead")
		}
		if down {
			if _, err := tx.ExecContext(ctx, m.Down); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `DELETE FROM sqlstreams_migration WHERE version = ?`, m.Version)
			return err
		}
		if _, err := tx.ExecContext(ctx, m.Up); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO sqlstreams_migration (version, applied_at) VALUES (?, ?)`, m.Version, micros(time.Now()))
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite %s: migration %s: %w", d.path, m.Name, err)
	}
	return nil
}
