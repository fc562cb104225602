package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// migrationLock is the advisory lock key space for migrations; the key
// also depends on the schema, so that schemas migrate independently.
const migrationLock = "sqlstreams.migrate."

// tables are the driver's own tables (stream logs aside), which every
// role using sqlstreams reads and writes.
var tables = []string{"stream_config", "stream_partition", "consumer_group", "group_cursor", "delivery_exception", "delivery_batch", "compaction_head",
	"registry_setting", "schema_revision", "schema_reader", "schema_id", "schema_reference", "row_count", "row_count_mark", "sqlstreams_migration"}

// migrationTable records applied migrations.
const migrationTable = `CREATE TABLE IF NOT EXISTS sqlstreams_migration (version integer PRIMARY KEY, applied_at timestamptz NOT NULL)`

// Migrations implements driver.Driver: the embedded migrations/*.sql
// files, each with its .down.sql file where there is one (0002, the
// registry, and every one from 0004, the failure history, on). Record creates the records
// table when missing and records the version, applied now.
func (d *Driver) Migrations() ([]driver.Migration, error) {
	ms, err := driver.ReadMigrations(migrations, "migrations")
	if err != nil {
		return nil, &driver.Error{Kind: driver.ErrDatabase, Err: fmt.Errorf("postgres: embedded migrations: %w", err)}
	}
	for i := range ms {
		ms[i].Record = migrationTable + fmt.Sprintf(";\nINSERT INTO sqlstreams_migration (version, applied_at) VALUES (%d, now());\n", ms[i].Version)
	}
	return ms, nil
}

// Migrate implements driver.Driver. Every pending migration runs, in
// version order, in one transaction that first takes the schema's
// transaction-level advisory lock, so processes starting at once apply each
// migration exactly once.
func (d *Driver) Migrate(ctx context.Context) error {
	if err := d.check(); err != nil {
		return err
	}
	if err := d.checkServer(ctx); err != nil {
		return err
	}
	ms, err := d.Migrations()
	if err != nil {
		return err
	}
	return d.migrating(ctx, func(tx pgx.Tx, applied map[int]bool) error {
		for _, m := range ms {
			if applied[m.Version] {
				continue
			}
			if err := runMigration(ctx, tx, m, false); err != nil {
				return err
			}
		}
		return nil
	})
}

// ApplyMigration implements driver.Driver. It runs one migration's Up (or
// Down, removing its record) under the lock Migrate takes, in one
// transaction: a failure leaves the schema as it was. It refuses, with
// ErrDatabase, an Up already applied or whose predecessor is not, and a Down
// that is not applied or that the migration does not have.
func (d *Driver) ApplyMigration(ctx context.Context, p driver.ApplyMigrationParams) error {
	if err := d.check(); err != nil {
		return err
	}
	ms, err := d.Migrations()
	if err != nil {
		return err
	}
	i := -1
	for j, m := range ms {
		if m.Version == p.Version {
			i = j
		}
	}
	if i < 0 {
		return refuse(fmt.Sprintf("Migrations lists the versions this driver has (1 to %d)", ms[len(ms)-1].Version),
			"there is no migration %d", p.Version)
	}
	m := ms[i]
	if p.Down && m.Down == "" {
		return refuse("going back over it would lose data; restore a backup taken before it was applied instead",
			"migration %s has no down migration", m.Name)
	}
	return d.migrating(ctx, func(tx pgx.Tx, applied map[int]bool) error {
		switch {
		case !p.Down && applied[m.Version]:
			return refuse("nothing to do; AppliedMigrations lists what the database has", "migration %s is already applied", m.Name)
		case !p.Down && i > 0 && !applied[ms[i-1].Version]:
			return refuse(fmt.Sprintf("apply migration %d first (migrations go up in version order), or run Migrate for every pending one", ms[i-1].Version),
				"migration %s needs migration %s, which is not applied", m.Name, ms[i-1].Name)
		case p.Down && !applied[m.Version]:
			return refuse("nothing to undo; AppliedMigrations lists what the database has", "migration %s is not applied", m.Name)
		case p.Down && slices.ContainsFunc(ms[i+1:], func(later driver.Migration) bool { return applied[later.Version] }):
			return refuse("undo the later migrations first (migrations go down newest first)", "migration %s has later migrations applied", m.Name)
		}
		return runMigration(ctx, tx, m, p.Down)
	})
}

// refuse is an ApplyMigration refusal.
func refuse(advice, format string, args ...any) error {
	return &driver.Error{Kind: driver.ErrDatabase, Advice: advice, Err: fmt.Errorf("postgres: "+format, args...)}
}

// migrating runs fn in one transaction of the driver's own that holds the
// schema's migration lock, with the table of migration records in place
// and applied holding the versions it records. It then knows the
// notification channel prefix.
func (d *Driver) migrating(ctx context.Context, fn func(tx pgx.Tx, applied map[int]bool) error) error {
	var schema, database string
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT current_database(), COALESCE(current_schema(), '')`).Scan(&database, &schema); err != nil {
			return err
		}
		if schema == "" {
			return noSchema(ctx, tx)
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1::text, 0))`, migrationLock+schema); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, migrationTable); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT version FROM sqlstreams_migration`)
		if err != nil {
			return err
		}
		versions, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			return err
		}
		applied := map[int]bool{}
		for _, v := range versions {
			applied[int(v)] = true
		}
		return fn(tx, applied)
	})
	if err != nil {
		return err
	}
	h := fnv.New64a()
	h.Write([]byte(database + "\x00" + schema))
	d.mu.Lock()
	d.prefix = fmt.Sprintf("sqlstreams_%016x_", h.Sum64())
	d.mu.Unlock()
	return nil
}

// runMigration runs a migration's Up and records it, or its Down and
// removes its record, in the migration transaction tx.
func runMigration(ctx context.Context, tx pgx.Tx, m driver.Migration, down bool) error {
	sql, what := m.Up, m.Name
	if down {
		sql, what = m.Down, strings.TrimSuffix(m.Name, ".sql")+".down.sql"
	}
	// The simple protocol runs the file's statements as they are written.
	if _, err := tx.Conn().PgConn().Exec(ctx, sql).ReadAll(); err != nil {
		return fmt.Errorf("migration %s: %w", what, err)
	}
	var err error
	if down {
		_, err = tx.Exec(ctx, `DELETE FROM sqlstreams_migration WHERE version = $1::integer`, m.Version)
	} else {
		_, err = tx.Exec(ctx, `INSERT INTO sqlstreams_migration (version, applied_at) VALUES ($1::integer, $2::timestamptz)`, m.Version, ts(time.Now()))
	}
	return err
}

// AppliedMigrations implements driver.Driver: the records of the first
// schema on the search_path that has them, none when no schema has.
func (d *Driver) AppliedMigrations(ctx context.Context, _ driver.AppliedMigrationsParams) ([]driver.AppliedMigration, error) {
	var out []driver.AppliedMigration
	err := d.read(ctx, func() error {
		out = nil
		rows, err := d.pool.Query(ctx, `SELECT version, applied_at FROM sqlstreams_migration ORDER BY version`)
		if err == nil {
			out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.AppliedMigration, error) {
				var v int32
				var at time.Time
				err := r.Scan(&v, &at)
				return driver.AppliedMigration{Version: int(v), AppliedAt: at.UTC()}, err
			})
		}
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42P01" { // undefined_table: never migrated
			out, err = nil, nil
		}
		return err
	})
	return out, err
}

// CheckPrivileges implements driver.Driver. CreateStream creates a table
// (and its index) in the first schema of the search_path and DestroyStream
// drops it, which needs USAGE and CREATE on that schema (the creator owns
// the table, so it may drop it). Where the driver's tables exist, every
// operation also reads and writes them, so the role needs SELECT, INSERT,
// UPDATE and DELETE on each and USAGE on the stream id sequence. It creates
// nothing.
func (d *Driver) CheckPrivileges(ctx context.Context, _ driver.CheckPrivilegesParams) error {
	var problem error
	err := d.read(ctx, func() error {
		problem = nil
		var role string
		var schema *string
		var usage, create bool
		if err := d.pool.QueryRow(ctx, `SELECT current_user::text, current_schema()::text,
			COALESCE(has_schema_privilege(current_schema(), 'USAGE'), false), COALESCE(has_schema_privilege(current_schema(), 'CREATE'), false)`).
			Scan(&role, &schema, &usage, &create); err != nil {
			return err
		}
		if schema == nil {
			// No schema on the search_path the role may use: say which.
			cause := noSchema(ctx, d.pool)
			var pe *pgconn.PgError
			if errors.As(cause, &pe) {
				return cause
			}
			problem = &driver.Error{Kind: driver.ErrDatabase, Advice: "give the role a schema to create tables in (the URL's search_path) with USAGE and CREATE on it",
				Err: fmt.Errorf("postgres: %w", cause)}
			return nil
		}
		grant := "GRANT USAGE, CREATE ON SCHEMA " + pgx.Identifier{*schema}.Sanitize() + " TO " + pgx.Identifier{role}.Sanitize()
		var missing []string
		if !usage {
			missing = append(missing, "USAGE")
		}
		if !create {
			missing = append(missing, "CREATE")
		}
		if len(missing) > 0 {
			problem = &driver.Error{Kind: driver.ErrDatabase, Advice: "run " + grant,
				Err: fmt.Errorf("postgres: role %q has no %s privilege on schema %q, so it cannot create and drop a stream's table there",
					role, strings.Join(missing, " or "), *schema)}
			return nil
		}
		var denied []string
		rows, err := d.pool.Query(ctx, `SELECT c.relname::text FROM pg_class c
			WHERE c.relnamespace = to_regnamespace(current_schema()) AND c.relname = ANY($1::text[]) AND (
				(c.relkind = 'r' AND NOT (has_table_privilege(c.oid, 'SELECT') AND has_table_privilege(c.oid, 'INSERT')
					AND has_table_privilege(c.oid, 'UPDATE') AND has_table_privilege(c.oid, 'DELETE')))
				OR (c.relkind = 'S' AND NOT has_sequence_privilege(c.oid, 'USAGE')))
			ORDER BY 1`, append(append([]string{}, tables...), "stream_config_id_seq"))
		if err != nil {
			return err
		}
		if denied, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		if len(denied) > 0 {
			s := pgx.Identifier{*schema}.Sanitize()
			r := pgx.Identifier{role}.Sanitize()
			problem = &driver.Error{Kind: driver.ErrDatabase,
				Advice: "run GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA " + s + " TO " + r + "; GRANT USAGE ON ALL SEQUENCES IN SCHEMA " + s + " TO " + r,
				Err:    fmt.Errorf("postgres: role %q may not read and write sqlstreams' tables %s in schema %q", role, strings.Join(denied, ", "), *schema)}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return problem
}
