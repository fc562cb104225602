package conformance

import (
	"testing"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() { register("C1_VersionStamp", testVersionStamp) }

// C1: every row stores its producer type's SchemaVersion(), whatever the
// produce path (single, batch, transaction, RawPayload).
func testVersionStamp(t *testing.T, h *harness) {
	c := h.client(t)
	p1 := producer[EventV1](t, c, "c1")
	p2 := producer[EventV2](t, c, "c1")
	raw := producer[sqlstreams.RawPayload](t, c, "c1")

	want := map[int64]int{}
	for _, id := range produceV1(t, p1, 2) {
		want[id] = 1
	}
	for _, id := range produceV2(t, p2, 2) {
		want[id] = 2
	}
	ids, err := p2.ProduceBatch(ctx(t), sqlstreams.NewMessage(EventV2{Seq: 9}), sqlstreams.NewMessage(EventV2{Seq: 10}))
	if err != nil {
		t.Fatalf("ProduceBatch: %v", err)
	}
	for _, id := range ids {
		want[id] = 2
	}
	id, err := raw.Produce(ctx(t), sqlstreams.RawPayload{Version: 7, Data: []byte(`{"anything":true}`)})
	if err != nil {
		t.Fatalf("produce RawPayload: %v", err)
	}
	want[id] = 7
	tx, commit, _, err := h.target.BeginTx(ctx(t), c.Driver())
	if err != nil {
		t.Fatalf("BeginTx: %v", err)
	}
	id, err = p1.ProduceTx(ctx(t), tx, EventV1{Seq: 11})
	if err != nil {
		t.Fatalf("ProduceTx: %v", err)
	}
	if err := commit(); err != nil {
		t.Fatalf("commit: %v", err)
	}
	want[id] = 1

	all := drain(t, consumer[sqlstreams.RawPayload](t, c, "c1", "everything", nil))
	if len(all) != len(want) {
		t.Fatalf("a RawPayload group got %d rows, want %d", len(all), len(want))
	}
	for _, d := range all {
		if d.SchemaVersion != want[d.ID] || d.Value.Version != want[d.ID] {
			t.Errorf("row %d stored version %d (payload handle says %d), want %d", d.ID, d.SchemaVersion, d.Value.Version, want[d.ID])
		}
	}
	hl := health(t, c, "c1")
	for v, n := range map[int]int64{1: 3, 2: 4, 7: 1} {
		vh, ok := hl.Version(v)
		if !ok || vh.Rows != n {
			t.Errorf("health counts %d rows at v%d, want %d", vh.Rows, v, n)
		}
	}
}
