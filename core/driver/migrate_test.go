package driver_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// fakeMigration records what the sequence asks of an engine, in order.
type fakeMigration struct {
	applied map[int]bool
	calls   []string
	failOn  string // Exec of this SQL fails
}

func (f *fakeMigration) Lock(context.Context) (func(), error) {
	f.calls = append(f.calls, "lock")
	return func() { f.calls = append(f.calls, "unlock") }, nil
}

func (f *fakeMigration) Applied(context.Context) (map[int]bool, error) {
	f.calls = append(f.calls, "applied")
	return f.applied, nil
}

func (f *fakeMigration) Exec(_ context.Context, sql string) error {
	f.calls = append(f.calls, "exec "+sql)
	if sql == f.failOn {
		return errors.New("syntax error")
	}
	return nil
}

func (f *fakeMigration) Record(_ context.Context, version int, down bool) error {
	f.calls = append(f.calls, fmt.Sprintf("record %d down=%v", version, down))
	return nil
}

// testMigrations are 1 (no down), 2 and 3 (each with a down).
var testMigrations = []driver.Migration{
	{Version: 1, Name: "0001_a.sql", Up: "up1"},
	{Version: 2, Name: "0002_b.sql", Up: "up2", Down: "down2"},
	{Version: 3, Name: "0003_c.sql", Up: "up3", Down: "down3"},
}

// Migrate runs what is not applied, in version order, under the lock it
// takes before reading what is applied; Through stops early.
func TestMigratePending(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		applied []int
		through int
		want    []string
	}{
		{"empty", nil, 0, []string{"lock", "applied", "exec up1", "record 1 down=false", "exec up2", "record 2 down=false",
			"exec up3", "record 3 down=false", "unlock"}},
		{"the pending ones only", []int{1, 3}, 0, []string{"lock", "applied", "exec up2", "record 2 down=false", "unlock"}},
		{"current", []int{1, 2, 3}, 0, []string{"lock", "applied", "unlock"}},
		{"through a version", []int{1}, 2, []string{"lock", "applied", "exec up2", "record 2 down=false", "unlock"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeMigration{applied: versions(tc.applied)}
			if err := driver.MigratePending(context.Background(), f, driver.MigratePendingParams{Migrations: testMigrations, Through: tc.through}); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(f.calls, tc.want) {
				t.Errorf("calls %q; want %q", f.calls, tc.want)
			}
		})
	}
	// A failure names the file, records nothing and stops.
	f := &fakeMigration{applied: versions(nil), failOn: "up2"}
	err := driver.MigratePending(context.Background(), f, driver.MigratePendingParams{Migrations: testMigrations})
	if err == nil || !strings.Contains(err.Error(), "migration 0002_b.sql: syntax error") {
		t.Errorf("a failing migration: %v; want its file named", err)
	}
	if want := []string{"lock", "applied", "exec up1", "record 1 down=false", "exec up2", "unlock"}; !slices.Equal(f.calls, want) {
		t.Errorf("calls %q; want %q", f.calls, want)
	}
}

// ApplyOne runs one step that makes sense and refuses the others with
// ErrDatabase, advice and words that say why.
func TestApplyOne(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		applied []int
		p       driver.ApplyMigrationParams
		refusal string   // the words of a refusal
		want    []string // else the calls
	}{
		{"up", []int{1}, driver.ApplyMigrationParams{Version: 2}, "", []string{"lock", "applied", "exec up2", "record 2 down=false", "unlock"}},
		{"the first up", nil, driver.ApplyMigrationParams{Version: 1}, "", []string{"lock", "applied", "exec up1", "record 1 down=false", "unlock"}},
		{"down", []int{1, 2, 3}, driver.ApplyMigrationParams{Version: 3, Down: true}, "", []string{"lock", "applied", "exec down3", "record 3 down=true", "unlock"}},
		{"unknown version", nil, driver.ApplyMigrationParams{Version: 9}, "no migration 9", nil},
		{"up already applied", []int{1, 2}, driver.ApplyMigrationParams{Version: 2}, "migration 0002_b.sql is already applied", nil},
		{"up before its predecessor", nil, driver.ApplyMigrationParams{Version: 2}, "migration 0002_b.sql needs 0001_a.sql first, which is not applied", nil},
		{"down without down SQL", []int{1}, driver.ApplyMigrationParams{Version: 1, Down: true}, "migration 0001_a.sql has no down migration", nil},
		{"down not applied", []int{1}, driver.ApplyMigrationParams{Version: 2, Down: true}, "migration 0002_b.sql is not applied", nil},
		{"down under later ones", []int{1, 2, 3, 10}, driver.ApplyMigrationParams{Version: 2, Down: true},
			"migration 0002_b.sql has later migrations applied (versions 3, 10)", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeMigration{applied: versions(tc.applied)}
			err := driver.ApplyOne(context.Background(), f, testMigrations, tc.p)
			if tc.refusal == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(f.calls, tc.want) {
					t.Errorf("calls %q; want %q", f.calls, tc.want)
				}
				return
			}
			var de *driver.Error
			if !errors.Is(err, driver.ErrDatabase) || !errors.As(err, &de) || de.Advice == "" || !strings.Contains(err.Error(), tc.refusal) {
				t.Errorf("%v; want ErrDatabase with advice, saying %q", err, tc.refusal)
			}
			if slices.ContainsFunc(f.calls, func(c string) bool { return strings.HasPrefix(c, "exec") || strings.HasPrefix(c, "record") }) {
				t.Errorf("a refusal ran %q", f.calls)
			}
		})
	}
	// A failing down names its file.
	f := &fakeMigration{applied: versions([]int{1, 2}), failOn: "down2"}
	if err := driver.ApplyOne(context.Background(), f, testMigrations, driver.ApplyMigrationParams{Version: 2, Down: true}); err == nil ||
		!strings.Contains(err.Error(), "migration 0002_b.down.sql: syntax error") {
		t.Errorf("a failing down: %v; want its file named", err)
	}
}

func versions(vs []int) map[int]bool {
	m := map[int]bool{}
	for _, v := range vs {
		m[v] = true
	}
	return m
}

// Pending is what a database lacks, in version order, up to a version; a
// version recorded with any value counts as applied.
func TestPending(t *testing.T) {
	t.Parallel()
	names := func(ms []driver.Migration) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.Name)
		}
		return out
	}
	applied := map[int]string{2: "", 7: "a version this driver lacks"}
	if got := names(driver.Pending(testMigrations, applied, 0)); !slices.Equal(got, []string{"0001_a.sql", "0003_c.sql"}) {
		t.Errorf("pending %v; want 1 and 3", got)
	}
	if got := names(driver.Pending(testMigrations, applied, 2)); !slices.Equal(got, []string{"0001_a.sql"}) {
		t.Errorf("pending through 2: %v; want 1", got)
	}
	if got := driver.Pending(testMigrations, map[int]bool{1: true, 2: true, 3: true}, 0); got != nil {
		t.Errorf("pending on a current schema: %v", got)
	}
}
