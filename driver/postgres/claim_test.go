package postgres_test

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/postgres"
)

// The claim's cursor lock checks for rows past each cursor in a filter of
// the cursor's scan, never in a join below the lock: the read committed
// recheck of a cursor another claim moved meanwhile re-runs a filter at the
// new position, but keeps the log row a join found at the old one, so it
// failed, and the statement left the cursor locked without returning it;
// every other claim of the group then skipped it and came back empty
// (D12_LeaseRowsOfTheirOwn, now and then, on a loaded machine).
func TestLockCursorChecksRowsInAFilter(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 3)
	f.group("g", driver.GroupConfig{})
	for part := range 3 {
		f.appendN(part, 50)
	}
	if _, err := f.drv.Pool().Exec(tctx(t), `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	query, args := postgres.LockCursorQuery(f.stream, "g")
	rows, err := f.drv.Pool().Query(tctx(t), `EXPLAIN `+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(lines, "\n")
	if strings.Contains(plan, "Join") || !strings.Contains(plan, "SubPlan") {
		t.Errorf("the cursor lock's plan:\n%s\nwant the rows past each cursor checked in a filter (SubPlan), and no join", plan)
	}
}

// A claim's first round trip asks whether cursors other than the one it
// locked have rows past them (queueRowsElsewhere); when none has, reading
// the locked partition to its end ends the claim. The locked partition
// does not count, with rows or without: retention may empty it between the
// lock and the question, and counting it as a cursor with rows then took
// the other partition's rows for none, and the claim ended with them left
// to the poll. Here partition 0 is that emptied partition.
func TestRowsElsewhereLeavesOutTheLockedPartition(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 3)
	f.group("g", driver.GroupConfig{})
	elsewhere := func(locked int32) bool {
		t.Helper()
		got, err := postgres.RowsElsewhere(tctx(t), f.drv, f.stream, "g", locked)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if elsewhere(0) {
		t.Error("no cursor has rows: want none elsewhere")
	}
	f.appendN(1, 2)
	if !elsewhere(0) {
		t.Error("partition 1 has rows, the locked partition 0 none: want rows elsewhere")
	}
	if elsewhere(1) {
		t.Error("only the locked partition 1 has rows: want none elsewhere")
	}
	f.appendN(2, 1)
	if !elsewhere(1) {
		t.Error("partitions 1 (locked) and 2 have rows: want rows elsewhere")
	}
}
