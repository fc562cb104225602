package conformance

import (
	"sync"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

func init() { register("D15_RegisterGroupConcurrently", testDriverRegisterConcurrently) }

// D15: members starting together register their group at once. Every
// registration succeeds with the same group (the losers of the insert find
// the winner's row), one group exists, and its cursors serve a claim.
func testDriverRegisterConcurrently(t *testing.T, h *harness) {
	f := newDriverFixture(t, h)
	if err := f.drv.DeleteGroup(ctx(t), driver.DeleteGroupParams{StreamID: f.stream.ID, Group: "g"}); err != nil {
		t.Fatal(err)
	}
	const members = 8
	now := time.Now().UTC()
	var wg sync.WaitGroup
	got := make([]driver.GroupConfig, members)
	errs := make([]error, members)
	for i := range members {
		wg.Go(func() {
			got[i], errs[i] = f.drv.RegisterGroup(ctx(t), driver.RegisterGroupParams{
				Group: driver.GroupConfig{StreamID: f.stream.ID, Name: "g", SchemaVersion: 1, CreatedAt: now}})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("registration %d of %d at once: %v; want every one to succeed", i+1, members, err)
		}
		if got[i].Name != "g" || got[i].SchemaVersion != 1 || got[i].StreamID != f.stream.ID {
			t.Fatalf("registration %d returned %+v; want group g at version 1", i+1, got[i])
		}
	}
	groups, err := f.drv.ListGroups(ctx(t), driver.ListGroupsParams{StreamID: f.stream.ID})
	if err != nil || len(groups) != 1 {
		t.Fatalf("groups after %d registrations at once: %+v (err %v); want one", members, groups, err)
	}
	f.append(1, 5)
	if res, _ := f.claim(10, time.Hour); len(res.Deliveries) != 5 {
		t.Fatalf("the group claimed %d of 5 rows; want its cursors in place", len(res.Deliveries))
	}
}
