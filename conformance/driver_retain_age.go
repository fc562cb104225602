package conformance

import (
	"fmt"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

func init() {
	register("D8_RetainAgeRemovesOldPrefix", testDriverRetainAgePrefix)
}

// testDriverRetainAgePrefix pins what an age limit removes: the log's old
// prefix, in id order, up to the first row younger than the limit, as Kafka
// removes whole old segments (docs/decisions.md, "costs that stay flat").
// An old row behind a younger one (its producer's clock ran behind) waits
// for the rows before it, so that finding what to remove stays a walk of the
// prefix instead of a scan of the log.
func testDriverRetainAgePrefix(t *testing.T, h *harness) {
	f := newDriverFixture(t, h)
	now := time.Now().UTC().Truncate(time.Second)
	st, err := f.drv.CreateStream(ctx(t), driver.CreateStreamParams{Config: driver.StreamConfig{Name: "age", Partitions: 1, CreatedAt: now,
		Retention: driver.Retention{MaxAge: time.Hour}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.drv.RegisterGroup(ctx(t), driver.RegisterGroupParams{Group: driver.GroupConfig{StreamID: st.ID, Name: "g", SchemaVersion: 1, CreatedAt: now}}); err != nil {
		t.Fatal(err)
	}
	ages := []time.Duration{3 * time.Hour, 2 * time.Hour, 0, 2 * time.Hour, 3 * time.Hour}
	rows := make([]driver.AppendRow, len(ages))
	for i, age := range ages {
		rows[i] = driver.AppendRow{SchemaVersion: 1, Payload: []byte(fmt.Sprintf(`{"seq":%d}`, i)), ProducedAt: now.Add(-age)}
	}
	if _, err := f.drv.Append(ctx(t), driver.AppendParams{Stream: st, Rows: rows}); err != nil {
		t.Fatal(err)
	}
	// The group passes every row, so that soft retention may remove any.
	res, err := f.drv.Claim(ctx(t), driver.ClaimParams{Stream: st, Group: "g", Member: driver.Member{SchemaVersion: 1}, Decodes: []int{1},
		Limit: len(rows), Token: "age", Holder: "fixture", Now: now, LeaseUntil: now.Add(time.Minute)})
	if err != nil || len(res.Deliveries) != len(rows) {
		t.Fatalf("claim: %d deliveries, %v", len(res.Deliveries), err)
	}
	leases := leasesOf(res, "age")
	if got, err := f.drv.Ack(ctx(t), driver.AckParams{StreamID: st.ID, Group: "g", Leases: leases, Now: now}); err != nil || len(got.Lost) != 0 {
		t.Fatalf("ack: lost %v, %v", got.Lost, err)
	}
	rep, err := f.drv.Retain(ctx(t), driver.RetainParams{StreamID: st.ID, Now: now, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Removed != 2 {
		t.Errorf("an age limit of an hour removed %d rows of ages %v; want the 2 before the first young row", rep.Removed, ages)
	}
	hs, err := f.drv.Health(ctx(t), driver.HealthParams{StreamID: st.ID, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	var left int64
	for _, v := range hs.Versions {
		left += v.Rows
	}
	if left != 3 {
		t.Errorf("%d rows left; want 3: the young row and the two old ones behind it", left)
	}
}
