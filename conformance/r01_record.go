package conformance

import (
	"testing"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() { register("R1_Record", testRecord) }

// R1: each producer and consumer registration records the JSON Schema of
// its Go type for (stream, version) as a revision, deduplicated by a
// normalized fingerprint; nested types become $defs.
func testRecord(t *testing.T, h *harness) {
	c := h.client(t)
	const stream = "r1"

	// The first producer records revision 1 of version 3: its type's schema.
	if err := regProducer[Order3](t, c, stream); err != nil {
		t.Fatalf("register producer of Order3: %v", err)
	}
	revs := revisions(t, c, stream, 3)
	if len(revs) != 1 {
		t.Fatalf("after one producer registration, %d revisions at v3, want 1: %+v", len(revs), revs)
	}
	r := revs[0]
	if r.Version != 3 || r.Revision != 1 || r.Fingerprint != fingerprintOf[Order3](t) || r.CreatedAt.IsZero() {
		t.Errorf("recorded %+v, want version 3 revision 1 with Order3's fingerprint and a creation time", r)
	}
	if r.Schema == nil || r.Schema.Fingerprint() != r.Fingerprint {
		t.Errorf("the recorded schema does not match its fingerprint")
	}
	if props, _ := schemaJSON(t, r.Schema)["properties"].(map[string]any); len(props) != 3 || props["total"] == nil {
		t.Errorf("the recorded schema is not Order3's: %s", r.Schema)
	}

	// The same schema again, from producers and consumers, from another
	// client, and from a Go type with another name and field order: still
	// one revision, and every consumer registers as a reader of it.
	c2 := h.client(t)
	for _, reg := range []struct {
		what string
		err  error
	}{
		{"producer of Order3 again", regProducer[Order3](t, c, stream)},
		{"producer of Order3 on a second client", regProducer[Order3](t, c2, stream)},
		{"consumer of Order3 (group a)", regConsumer[Order3](t, c, stream, "a")},
		{"consumer of Order3Same (group b)", regConsumer[Order3Same](t, c2, stream, "b")},
		{"producer of Order3Same", regProducer[Order3Same](t, c, stream)},
	} {
		if reg.err != nil {
			t.Fatalf("register %s: %v", reg.what, reg.err)
		}
	}
	if revs := revisions(t, c, stream, 3); len(revs) != 1 {
		t.Fatalf("registering the same shape again recorded %d revisions at v3, want 1: %+v", len(revs), revs)
	}

	// A compatible edit is a new revision, recorded by whichever side
	// registers it first; a consumer moving to it updates its reader.
	if err := regConsumer[Order3Note](t, c, stream, "c"); err != nil {
		t.Fatalf("register consumer of Order3Note: %v", err)
	}
	if err := regConsumer[Order3Note](t, c, stream, "a"); err != nil {
		t.Fatalf("re-register group a with Order3Note: %v", err)
	}
	if err := regProducer[Order3Note](t, c, stream); err != nil {
		t.Fatalf("register producer of Order3Note: %v", err)
	}
	revs = revisions(t, c2, stream, 3)
	if len(revs) != 2 || revs[1].Revision != 2 || revs[1].Fingerprint != fingerprintOf[Order3Note](t) {
		t.Fatalf("after registering Order3Note, revisions at v3 are %+v, want revision 2 with Order3Note's fingerprint", revs)
	}
	readers, err := c2.Registry().Readers(ctx(t), stream)
	if err != nil {
		t.Fatalf("Readers: %v", err)
	}
	wantReaders := map[string]int{"a": 2, "b": 1, "c": 2}
	if len(readers) != len(wantReaders) {
		t.Errorf("readers %+v, want groups %v", readers, wantReaders)
	}
	for _, rd := range readers {
		if want, ok := wantReaders[rd.Group]; !ok || rd.Revision != want || rd.Version != 3 || rd.RegisteredAt.IsZero() {
			t.Errorf("reader %+v, want group %q at version 3 revision %d", rd, rd.Group, want)
		}
	}

	// Another version is recorded on its own, from revision 1, with the
	// nested type under $defs and referenced from where it is used.
	if err := regProducer[Order4](t, c, stream); err != nil {
		t.Fatalf("register producer of Order4: %v", err)
	}
	all := revisions(t, c, stream, 0)
	var got [][2]int
	for _, r := range all {
		got = append(got, [2]int{r.Version, r.Revision})
	}
	if want := [][2]int{{3, 1}, {3, 2}, {4, 1}}; len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("all revisions %v, want (version, revision) %v", got, want)
	}
	doc := schemaJSON(t, all[2].Schema)
	defs, _ := doc["$defs"].(map[string]any)
	amount, _ := defs["Amount"].(map[string]any)
	if amount == nil || amount["type"] != "object" {
		t.Errorf("Order4's recorded schema has no $defs/Amount object: %s", all[2].Schema)
	}
	props, _ := doc["properties"].(map[string]any)
	total, _ := props["total"].(map[string]any)
	if total["$ref"] != "#/$defs/Amount" {
		t.Errorf("Order4's total is %v, want {\"$ref\": \"#/$defs/Amount\"}", props["total"])
	}
	if doc["type"] != "object" {
		t.Errorf("the root struct is not inlined: %s", all[2].Schema)
	}

	// RawPayload has no schema: registering it records nothing.
	if err := regProducer[sqlstreams.RawPayload](t, c, stream); err != nil {
		t.Fatalf("register RawPayload producer: %v", err)
	}
	if err := regConsumer[sqlstreams.RawPayload](t, c, stream, "raw"); err != nil {
		t.Fatalf("register RawPayload consumer: %v", err)
	}
	if n := len(revisions(t, c, stream, 0)); n != 3 {
		t.Errorf("RawPayload registrations changed the revision count to %d, want 3", n)
	}

	// Revisions are per stream: the same type on another stream starts at 1.
	if err := regProducer[Order3Note](t, c, "r1-other"); err != nil {
		t.Fatalf("register Order3Note on r1-other: %v", err)
	}
	if revs := revisions(t, c, "r1-other", 0); len(revs) != 1 || revs[0].Revision != 1 || revs[0].Version != 3 {
		t.Errorf("revisions on r1-other %+v, want version 3 revision 1 only", revs)
	}
}
