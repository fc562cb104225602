package conformance

import (
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() { register("C2_VersionFilter", testVersionFilter) }

// C2: a group at version v receives only rows at v, from the main claim and
// from the exception claim, and never decodes rows at other versions.
func testVersionFilter(t *testing.T, h *harness) {
	c := h.client(t)
	p1 := producer[EventV1](t, c, "c2")
	p2 := producer[EventV2](t, c, "c2")
	// Interleave versions so each group must step over the other's rows.
	var v1IDs, v2IDs []int64
	for range 5 {
		v1IDs = append(v1IDs, produceV1(t, p1, 2)...)
		v2IDs = append(v2IDs, produceV2(t, p2, 1)...)
	}

	g1 := consumer[EventV1](t, c, "c2", "g-v1", fastRetry(sqlstreams.ConsumerOptions{}))
	g2 := consumer[EventV2](t, c, "c2", "g-v2", fastRetry(sqlstreams.ConsumerOptions{}))

	// Main claim: each group sees exactly its version. A v1 payload has a
	// numeric total, which cannot decode into EventV2: had the v2 group
	// decoded one, it would have been dead-lettered and counted below.
	got1 := drain(t, g1)
	got2 := drain(t, g2)
	if !equalIDs(idsOf(got1), v1IDs) {
		t.Errorf("v1 group got %v, want %v", idsOf(got1), v1IDs)
	}
	if !equalIDs(idsOf(got2), v2IDs) {
		t.Errorf("v2 group got %v, want %v", idsOf(got2), v2IDs)
	}
	for _, d := range got2 {
		if d.SchemaVersion != 2 || d.Value.Total.Currency != "EUR" {
			t.Errorf("v2 group got row %d at v%d: %+v", d.ID, d.SchemaVersion, d.Value)
		}
	}
	if dead, err := g2.DeadLetters(ctx(t), 0, 100); err != nil || len(dead) != 0 {
		t.Errorf("v2 group has dead letters %v (err %v): a v1 row reached its decoder", dead, err)
	}

	// Exception claim: rows retried or replayed by the v1 group stay with it.
	more := produceV1(t, p1, 2)
	more2 := produceV2(t, p2, 1)
	ds, err := g1.Claim(ctx(t), 10)
	if err != nil || len(ds) != 2 {
		t.Fatalf("claim v1: %d deliveries, err %v; want 2", len(ds), err)
	}
	if err := ds[0].Retry(ctx(t), 0, errTest); err != nil {
		t.Fatal(err)
	}
	if err := ds[1].Dead(ctx(t), errTest); err != nil {
		t.Fatal(err)
	}
	if n, err := g1.Replay(ctx(t), ds[1].ID); err != nil || n != 1 {
		t.Fatalf("replay: %d, %v", n, err)
	}
	time.Sleep(5 * time.Millisecond)
	got2 = drain(t, g2)
	if !equalIDs(idsOf(got2), more2) {
		t.Errorf("v2 group after v1 retries got %v, want only %v", idsOf(got2), more2)
	}
	again := drain(t, g1)
	if !equalIDs(idsOf(again), more) {
		t.Errorf("v1 group's exception claim returned %v, want %v", idsOf(again), more)
	}
	for _, d := range again {
		if d.Attempt != 2 && d.ID == more[0] {
			t.Errorf("retried row %d came back at attempt %d, want 2", d.ID, d.Attempt)
		}
	}
}
