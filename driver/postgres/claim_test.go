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
