package conformance

import (
	"errors"
	"testing"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

func init() { register("D14_CallerErrorsPassThrough", testDriverCallerErrors) }

var errFromCallback = errors.New("the caller's own refusal")

// D14: an error a caller's callback returns (RegisterGroupParams.Update)
// comes back from the driver as it is, matchable with errors.Is and never
// classified as a database failure, and nothing is written.
func testDriverCallerErrors(t *testing.T, h *harness) {
	f := newDriverFixture(t, h)
	_, err := f.drv.RegisterGroup(ctx(t), driver.RegisterGroupParams{Group: f.group, Update: func(existing driver.GroupConfig) (driver.GroupConfig, error) {
		existing.Bindings = []string{"changed.#"}
		return existing, errFromCallback
	}})
	if !errors.Is(err, errFromCallback) || driver.Classified(err) {
		t.Fatalf("RegisterGroup whose Update failed: %v; want the callback's error as it is, with no driver sentinel", err)
	}
	groups, err := f.drv.ListGroups(ctx(t), driver.ListGroupsParams{StreamID: f.stream.ID})
	if err != nil || len(groups) != 1 || len(groups[0].Bindings) != 0 {
		t.Fatalf("after the refused update: groups %+v (err %v); want the group unchanged", groups, err)
	}
}
