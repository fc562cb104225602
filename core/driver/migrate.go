package driver

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MigrationSteps are an engine's steps for migrating a database, all run in
// the one scope (a transaction where DDL is transactional, else a
// connection) the driver opens around MigratePending or ApplyOne. The
// engine decides how it locks, how it runs a migration's statements and
// the SQL that records them; the sequence decides which migrations run, in
// what order, and what is refused, so that every driver answers alike.
type MigrationSteps interface {
	// Lock serializes the processes migrating the same database (or
	// schema) until unlock is called or the driver's scope ends.
	Lock(ctx context.Context) (unlock func(), err error)
	// Applied creates the table of migration records when missing and
	// returns the versions it records.
	Applied(ctx context.Context) (map[int]bool, error)
	// Exec runs one migration file's statements, a migration's Up or Down.
	Exec(ctx context.Context, sql string) error
	// Record records version as applied, or with down removes its record.
	Record(ctx context.Context, version int, down bool) error
}

// MigratePendingParams say which migrations MigratePending considers.
type MigratePendingParams struct {
	// Migrations are the driver's, in version order.
	Migrations []Migration
	// Through stops after this version (0: every pending one), so that a
	// driver's tests can build the schema of an older release.
	Through int
}

// MigratePending is Migrate's sequence over an engine's steps: take the
// migration lock, read what is applied, then run and record every
// migration that is not, in version order. Processes starting at once
// apply each migration once: the later ones find it recorded.
func MigratePending(ctx context.Context, s MigrationSteps, p MigratePendingParams) error {
	return underLock(ctx, s, func(applied map[int]bool) error {
		for _, m := range Pending(p.Migrations, applied, p.Through) {
			if err := runMigration(ctx, s, m, false); err != nil {
				return err
			}
		}
		return nil
	})
}

// Pending are the migrations of ms (in version order) that applied (the
// versions a database records, with anything) lacks, through version
// through (0: all of them), in version order: what Migrate runs and what
// an outdated schema is missing.
func Pending[V any](ms []Migration, applied map[int]V, through int) []Migration {
	var out []Migration
	for _, m := range ms {
		if _, ok := applied[m.Version]; !ok && (through == 0 || m.Version <= through) {
			out = append(out, m)
		}
	}
	return out
}

// ApplyOne is ApplyMigration's sequence over an engine's steps: it refuses
// what cannot be done (see refuseMigration), with ErrDatabase and advice,
// and otherwise runs the migration's Up and records it, or its Down and
// removes its record, under the migration lock. ms are the driver's
// migrations, in version order.
func ApplyOne(ctx context.Context, s MigrationSteps, ms []Migration, p ApplyMigrationParams) error {
	i := slices.IndexFunc(ms, func(m Migration) bool { return m.Version == p.Version })
	if i < 0 {
		return NoMigration(ms, p.Version)
	}
	m := ms[i]
	if p.Down && m.Down == "" {
		return refusal("going back over it would lose data; restore a backup taken before it was applied instead",
			"migration %s has no down migration", m.Name)
	}
	var before *Migration
	if i > 0 {
		before = &ms[i-1]
	}
	return underLock(ctx, s, func(applied map[int]bool) error {
		if err := refuseMigration(m, before, applied, p.Down); err != nil {
			return err
		}
		return runMigration(ctx, s, m, p.Down)
	})
}

// underLock runs fn holding the migration lock, with the versions the
// database records as applied read under it.
func underLock(ctx context.Context, s MigrationSteps, fn func(applied map[int]bool) error) error {
	unlock, err := s.Lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	applied, err := s.Applied(ctx)
	if err != nil {
		return err
	}
	return fn(applied)
}

// refuseMigration refuses an up step already applied or whose predecessor
// (before, nil for the first) is not, and a down step not applied or with
// later versions applied (migrations go down newest first).
func refuseMigration(m Migration, before *Migration, applied map[int]bool, down bool) error {
	switch {
	case !down && applied[m.Version]:
		return refusal("nothing to do; AppliedMigrations lists what the database has", "migration %s is already applied", m.Name)
	case !down && before != nil && !applied[before.Version]:
		return refusal(fmt.Sprintf("apply migration %d first (migrations go up in version order), or run Migrate for every pending one", before.Version),
			"migration %s needs %s first, which is not applied", m.Name, before.Name)
	case down && !applied[m.Version]:
		return refusal("nothing to undo; AppliedMigrations lists what the database has", "migration %s is not applied", m.Name)
	}
	var later []int
	for v := range applied {
		if down && v > m.Version {
			later = append(later, v)
		}
	}
	if len(later) == 0 {
		return nil
	}
	slices.Sort(later)
	vs := make([]string, len(later))
	for i, v := range later {
		vs[i] = strconv.Itoa(v)
	}
	return refusal("undo those first, the newest first (migrations go down newest first)",
		"migration %s has later migrations applied (versions %s)", m.Name, strings.Join(vs, ", "))
}

// NoMigration refuses a version the driver has no migration for (ms are
// its migrations, none for a store without SQL).
func NoMigration(ms []Migration, version int) error {
	advice := "this driver has no schema and no migrations; there is nothing to apply"
	if len(ms) > 0 {
		advice = fmt.Sprintf("Migrations lists the versions this driver has (%d to %d)", ms[0].Version, ms[len(ms)-1].Version)
	}
	return refusal(advice, "no migration %d", version)
}

// refusal is a migration the database cannot take as asked.
func refusal(advice, format string, args ...any) error {
	return &Error{Kind: ErrDatabase, Advice: advice, Err: fmt.Errorf(format, args...)}
}

// runMigration runs m's Up and records it, or its Down and removes its
// record, naming the file in a failure.
func runMigration(ctx context.Context, s MigrationSteps, m Migration, down bool) error {
	sql, file := m.Up, m.Name
	if down {
		sql, file = m.Down, strings.TrimSuffix(m.Name, ".sql")+".down.sql"
	}
	if err := s.Exec(ctx, sql); err != nil {
		return fmt.Errorf("migration %s: %w", file, err)
	}
	if err := s.Record(ctx, m.Version, down); err != nil {
		return fmt.Errorf("migration %s: recording it: %w", file, err)
	}
	return nil
}
