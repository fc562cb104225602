package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// migrationLock is the advisory lock key space for migrations; the key
// also depends on the schema, so that schemas migrate independently.
const migrationLock = "sqlstreams.migrate."

// tables are the driver's own tables (stream logs aside), which every
// role using sqlstreams reads and writes.
var tables = []string{"stream_config", "stream_partition", "consumer_group", "group_cursor", "delivery_exception", "delivery_batch", "compaction_head",
	"registry_setting", "schema_revision", "schema_reader", "schema_id", "schema_reference", "row_count", "row_count_mark", "sqlstreams_migration"}

// migrationTable records applied migrations.
var migrationTable = sqldb.MigrationTable{
	Create: `CREATE TABLE IF NOT EXISTS sqlstreams_migration (version integer PRIMARY KEY, applied_at timestamptz NOT NULL)`,
	Insert: "INSERT", Now: "now()", At: func(t time.Time) any { return ts(t) },
}

// Migrations implements driver.Driver: the embedded migrations/*.sql
// files, with their .down.sql files (0002, and every one from 0004 on).
func (d *Driver) Migrations() ([]driver.Migration, error) {
	ms, err := migrationTable.Migrations(migrations)
	if err != nil {
		return nil, &driver.Error{Kind: driver.ErrDatabase, Err: fmt.Errorf("postgres: embedded migrations: %w", err)}
	}
	return ms, nil
}

// Migrate implements driver.Driver: driver.MigratePending in one
// transaction that first takes the schema's transaction-level advisory
// lock, so processes starting at once apply each migration exactly once.
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
	return d.migrating(ctx, func(s migrationSteps) error {
		return driver.MigratePending(ctx, s, driver.MigratePendingParams{Migrations: ms})
	})
}

// ApplyMigration implements driver.Driver: driver.ApplyOne under the lock
// Migrate takes, in one transaction, so a failure leaves the schema as it
// was.
func (d *Driver) ApplyMigration(ctx context.Context, p driver.ApplyMigrationParams) error {
	if err := d.check(); err != nil {
		return err
	}
	ms, err := d.Migrations()
	if err != nil {
		return err
	}
	return d.migrating(ctx, func(s migrationSteps) error { return driver.ApplyOne(ctx, s, ms, p) })
}

// migrating runs fn in one transaction of the driver's own, on the first
// schema of the search_path, and then knows the notification channel
// prefix. A refusal of fn's is the driver's.
func (d *Driver) migrating(ctx context.Context, fn func(migrationSteps) error) error {
	var schema, database string
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT current_database(), COALESCE(current_schema(), '')`).Scan(&database, &schema); err != nil {
			return err
		}
		if schema == "" {
			return noSchema(ctx, tx)
		}
		err := fn(migrationSteps{sqldb.MigrationRecords{Table: migrationTable, Runner: runner{tx}}, tx, schema})
		if driver.Classified(err) {
			err = fmt.Errorf("postgres: %w", err) // a refusal; wrap names the rest
		}
		return err
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

// migrationSteps are PostgreSQL's driver.MigrationSteps in the migration
// transaction tx.
type migrationSteps struct {
	sqldb.MigrationRecords
	tx     pgx.Tx
	schema string
}

// Lock takes the schema's transaction-level advisory lock: the
// transaction's end releases it.
func (s migrationSteps) Lock(ctx context.Context) (func(), error) {
	_, err := s.tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1::text, 0))`, migrationLock+s.schema)
	return func() {}, err
}

// Exec runs the file's statements as they are written, in the simple
// protocol.
func (s migrationSteps) Exec(ctx context.Context, sql string) error {
	_, err := s.tx.Conn().PgConn().Exec(ctx, sql).ReadAll()
	return err
}

// AppliedMigrations implements driver.Driver: the records of the first
// schema on the search_path that has them, none when no schema has.
func (d *Driver) AppliedMigrations(ctx context.Context, _ driver.AppliedMigrationsParams) ([]driver.AppliedMigration, error) {
	var out []driver.AppliedMigration
	err := d.read(ctx, func() error {
		var err error
		out, err = sqldb.AppliedMigrations(ctx, runner{d.pool}, time.Time.UTC)
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42P01" { // undefined_table: never migrated
			out, err = nil, nil
		}
		return err
	})
	return out, err
}

// CheckPrivileges implements driver.Driver: USAGE and CREATE on the
// schema, where streams' tables are created and dropped (the creator owns
// them), and SELECT, INSERT, UPDATE and DELETE on the driver's tables and
// USAGE on the stream id sequence, where they exist. It creates nothing.
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
