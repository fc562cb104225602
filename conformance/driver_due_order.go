package conformance

import (
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

func init() {
	register("D7_ClaimTakesEarliestDueFirst", testDriverEarliestDueFirst)
}

// testDriverEarliestDueFirst: of the due exceptions of an unordered group, a
// claim takes the ones due earliest first, whatever their ids, so that a
// retry delayed longer never holds up one due sooner and a claim's cost does
// not depend on how many retries wait behind it (docs/decisions.md).
func testDriverEarliestDueFirst(t *testing.T, h *harness) {
	f := newDriverFixture(t, h)
	ids := f.append(1, 3)
	res, token := f.claim(3, time.Hour)
	if len(res.Deliveries) != 3 {
		t.Fatalf("claimed %v; want all 3 rows", deliveryIDs(res.Deliveries))
	}
	now := time.Now().UTC().Truncate(time.Second)
	// The highest id is due first, the lowest last.
	failures := []driver.Failure{
		{Lease: driver.Lease{ID: ids[0], Token: token}, Error: "x", Due: now.Add(-1 * time.Second)},
		{Lease: driver.Lease{ID: ids[1], Token: token}, Error: "x", Due: now.Add(-2 * time.Second)},
		{Lease: driver.Lease{ID: ids[2], Token: token}, Error: "x", Due: now.Add(-3 * time.Second)},
	}
	if got, err := f.drv.Fail(ctx(t), driver.FailParams{StreamID: f.stream.ID, Group: "g", Failures: failures, Now: now}); err != nil || len(got.Lost) != 0 {
		t.Fatalf("Fail: lost %v, %v", got.Lost, err)
	}
	for _, want := range []int64{ids[2], ids[1], ids[0]} {
		res, _ := f.claim(1, time.Hour)
		if got := deliveryIDs(res.Deliveries); len(got) != 1 || got[0] != want {
			t.Fatalf("Claim(1) took %v; want [%d], the earliest due of those left", got, want)
		}
	}
}
