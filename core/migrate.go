package sqlstreams

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// ErrSchemaOutdated: the database lacks migrations this version of
// sqlstreams needs. *SchemaOutdatedError lists them.
var ErrSchemaOutdated = errors.New("database schema is outdated")

// SchemaOutdatedError lists the migrations a database lacks.
type SchemaOutdatedError struct {
	Driver  string
	Pending []int
}

func (e *SchemaOutdatedError) Error() string {
	vs := make([]string, len(e.Pending))
	for i, v := range e.Pending {
		vs[i] = fmt.Sprint(v)
	}
	return fmt.Sprintf("sqlstreams: %s: %v: migrations %s are not applied; apply them with Migrator.Migrate, "+
		"the sqlstreams CLI (migrate up), or your own tool with the SQL of Migrator.Migrations, or open without WithoutMigrate",
		e.Driver, ErrSchemaOutdated, strings.Join(vs, ", "))
}

// Is makes errors.Is(err, ErrSchemaOutdated) true.
func (e *SchemaOutdatedError) Is(target error) bool { return target == ErrSchemaOutdated }

// WithoutMigrate makes Open check the database's schema instead of
// migrating it: Open fails with ErrSchemaOutdated when migrations are
// pending. For teams whose migrations run separately (a DBA, goose, atlas,
// flyway, or the CLI in a deploy step); the application role then needs no
// rights on the migration table, but still needs to create and drop tables,
// since streams create their log table at run time.
func WithoutMigrate() ClientOption {
	return func(c *Client) { c.noMigrate = true }
}

// Migrator applies and reports sqlstreams' migrations on a driver, without a
// client: the tool for teams that run migrations themselves. It does not
// close the driver.
type Migrator struct {
	drv driver.Driver
}

// NewMigrator returns a migrator on drv.
func NewMigrator(drv driver.Driver) *Migrator { return &Migrator{drv: drv} }

// MigrationInfo is one migration and whether the database has it.
type MigrationInfo struct {
	Version   int
	Name      string
	Applied   bool
	AppliedAt time.Time
	// Reversible says the migration has down SQL (going back loses no
	// messages).
	Reversible bool
}

// List returns every migration the driver has, with what is applied.
func (m *Migrator) List(ctx context.Context) ([]MigrationInfo, error) {
	all, applied, err := m.state(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]MigrationInfo, len(all))
	for i, mg := range all {
		out[i] = MigrationInfo{Version: mg.Version, Name: mg.Name, Reversible: mg.Down != ""}
		if at, ok := applied[mg.Version]; ok {
			out[i].Applied, out[i].AppliedAt = true, at
		}
	}
	return out, nil
}

func (m *Migrator) state(ctx context.Context) ([]driver.Migration, map[int]time.Time, error) {
	all, err := m.drv.Migrations()
	if err != nil {
		return nil, nil, fmt.Errorf("sqlstreams: %s migrations: %w", m.drv.Name(), classify(err))
	}
	got, err := m.drv.AppliedMigrations(ctx, driver.AppliedMigrationsParams{})
	if err != nil {
		return nil, nil, fmt.Errorf("sqlstreams: %s applied migrations: %w", m.drv.Name(), classify(err))
	}
	applied := map[int]time.Time{}
	for _, a := range got {
		applied[a.Version] = a.AppliedAt
	}
	return all, applied, nil
}

// Migrations returns the driver's migrations with their SQL, for tools
// that apply them themselves (goose, atlas, flyway, a DBA). Each
// Migration's Record is the SQL that records it as applied in sqlstreams'
// own sqlstreams_migration table, which Validate and WithoutMigrate read:
// run it after the migration's Up.
func (m *Migrator) Migrations() ([]driver.Migration, error) {
	all, err := m.drv.Migrations()
	if err != nil {
		return nil, fmt.Errorf("sqlstreams: %s migrations: %w", m.drv.Name(), classify(err))
	}
	return all, nil
}

// Validate fails with ErrSchemaOutdated (a *SchemaOutdatedError) when
// migrations are pending.
func (m *Migrator) Validate(ctx context.Context) error {
	all, applied, err := m.state(ctx)
	if err != nil {
		return err
	}
	var pending []int
	for _, mg := range driver.Pending(all, applied, 0) {
		pending = append(pending, mg.Version)
	}
	if len(pending) > 0 {
		return &SchemaOutdatedError{Driver: m.drv.Name(), Pending: pending}
	}
	return nil
}

// MigrateOptions configure Migrator.Migrate.
type MigrateOptions struct {
	// TargetVersion migrates up to (or, with Down, down to and excluding)
	// this version; 0 means the latest (with Down: every reversible one).
	TargetVersion int
	// Down undoes migrations, newest first.
	Down bool
	// DryRun returns the steps and their SQL without running them.
	DryRun bool
}

// MigrationStep is one migration Migrate ran (or, in a dry run, would run).
type MigrationStep struct {
	Version  int
	Name     string
	Down     bool
	SQL      string
	Duration time.Duration
}

// Migrate applies pending migrations in version order (or undoes applied
// ones with Down), one transaction per step where the engine allows, and
// returns the steps. It stops at the first failure, with the steps done
// before it.
func (m *Migrator) Migrate(ctx context.Context, o MigrateOptions) ([]MigrationStep, error) {
	all, applied, err := m.state(ctx)
	if err != nil {
		return nil, err
	}
	if o.TargetVersion < 0 || (o.TargetVersion > 0 && !slices.ContainsFunc(all, func(mg driver.Migration) bool { return mg.Version == o.TargetVersion })) {
		return nil, fmt.Errorf("%w: target version %d; the %s driver has migrations %s", ErrInvalidOption, o.TargetVersion, m.drv.Name(), versionList(all))
	}
	var plan []MigrationStep
	if !o.Down {
		for _, mg := range driver.Pending(all, applied, o.TargetVersion) {
			plan = append(plan, MigrationStep{Version: mg.Version, Name: mg.Name, SQL: mg.Up})
		}
	} else {
		for _, mg := range slices.Backward(all) {
			if _, ok := applied[mg.Version]; !ok || mg.Version <= o.TargetVersion {
				continue
			}
			if mg.Down == "" {
				if o.TargetVersion == 0 {
					break // every reversible one
				}
				return nil, fmt.Errorf("%w: migration %s cannot be undone (going back would lose data); choose a target version above %d",
					ErrInvalidOption, mg.Name, mg.Version)
			}
			plan = append(plan, MigrationStep{Version: mg.Version, Name: mg.Name, Down: true, SQL: mg.Down})
		}
	}
	if o.DryRun {
		return plan, nil
	}
	var done []MigrationStep
	for _, step := range plan {
		start := time.Now()
		if err := m.drv.ApplyMigration(ctx, driver.ApplyMigrationParams{Version: step.Version, Down: step.Down}); err != nil {
			return done, fmt.Errorf("sqlstreams: %s migration %s: %w", m.drv.Name(), step.Name, classify(err))
		}
		step.Duration = time.Since(start)
		done = append(done, step)
	}
	return done, nil
}

func versionList(ms []driver.Migration) string {
	vs := make([]string, len(ms))
	for i, m := range ms {
		vs[i] = fmt.Sprint(m.Version)
	}
	return strings.Join(vs, ", ")
}
