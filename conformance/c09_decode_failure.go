package conformance

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() { register("C9_DecodeFailure", testDecodeFailure) }

// C9: a row at the group's version whose payload does not decode goes dead
// at once with the decode error, and blocks nothing behind it.
func testDecodeFailure(t *testing.T, h *harness) {
	c := h.client(t)
	const stream = "c9"
	raw := producer[sqlstreams.RawPayload](t, c, stream)
	p2 := producer[EventV2](t, c, stream)

	// Groups exist before the rows, each with room for many attempts, so
	// that "dead at once" cannot come from exhausting them.
	opts := func(ordered bool) *sqlstreams.ConsumerOptions {
		return fastRetry(sqlstreams.ConsumerOptions{MaxAttempts: 10, Ordered: ordered})
	}
	pull := consumer[EventV2](t, c, stream, "pull", opts(false))
	pullOrdered := consumer[EventV2](t, c, stream, "pull-ordered", opts(true))
	run := consumer[EventV2](t, c, stream, "run", opts(false))
	runOrdered := consumer[EventV2](t, c, stream, "run-ordered", opts(true))

	// The poison row comes first; good rows (and a second poison row) follow.
	badID, err := raw.Produce(ctx(t), sqlstreams.RawPayload{Version: 2, Data: []byte(`{"seq":"not a number","total":{"cents":1,"currency":"EUR"}}`)})
	if err != nil {
		t.Fatalf("produce undecodable v2 row: %v", err)
	}
	good := produceV2(t, p2, 2)
	bad2, err := raw.Produce(ctx(t), sqlstreams.RawPayload{Version: 2, Data: []byte(`{"seq":3,"total":"twelve euros"}`)})
	if err != nil {
		t.Fatalf("produce undecodable v2 row: %v", err)
	}
	good = append(good, produceV2(t, p2, 1)...)
	bad := []int64{badID, bad2}

	checkDead := func(t *testing.T, g *sqlstreams.Consumer[EventV2]) {
		t.Helper()
		dls, err := g.DeadLetters(ctx(t), 0, 10)
		if err != nil {
			t.Fatalf("dead letters: %v", err)
		}
		if !equalIDs(deadIDs(dls), bad) {
			t.Fatalf("group %s: dead letters %v, want the undecodable rows %v", g.Group(), deadIDs(dls), bad)
		}
		for _, dl := range dls {
			if dl.Attempt != 1 {
				t.Errorf("group %s: undecodable row %d dead at attempt %d, want 1 (at once)", g.Group(), dl.ID, dl.Attempt)
			}
			if !strings.Contains(dl.Error, "decode") || !strings.Contains(dl.Error, "cannot unmarshal") {
				t.Errorf("group %s: undecodable row %d dead with %q, want the decode error", g.Group(), dl.ID, dl.Error)
			}
			if dl.SchemaVersion != 2 {
				t.Errorf("group %s: dead letter at v%d, want 2", g.Group(), dl.SchemaVersion)
			}
		}
		hg := groupAt(t, health(t, c, stream), 2, g.Group())
		if hg.Dead != 2 || hg.Leased+hg.Delayed != 0 || hg.Unread != 0 {
			t.Errorf("group %s health: %+v, want 2 dead and nothing else", g.Group(), hg)
		}
	}

	for _, g := range []*sqlstreams.Consumer[EventV2]{pull, pullOrdered} {
		t.Run("Claim/"+g.Group(), func(t *testing.T) {
			// A claim of one must not come back empty because the row it
			// took did not decode: the row behind is claimable.
			first, err := g.Claim(ctx(t), 1)
			if err != nil || len(first) != 1 || first[0].ID != good[0] {
				t.Fatalf("Claim(1) with an undecodable row first returned %v (err %v), want the good row %d behind it", idsOf(first), err, good[0])
			}
			if err := first[0].Ack(ctx(t)); err != nil {
				t.Fatal(err)
			}
			rest := drain(t, g)
			if got := append(idsOf(first), idsOf(rest)...); !equalIDs(got, good) {
				t.Errorf("claimed %v, want the decodable rows %v", got, good)
			}
			for _, d := range rest {
				if d.Value.Seq == 0 || d.Value.Total.Currency != "EUR" {
					t.Errorf("row %d decoded to %+v", d.ID, d.Value)
				}
			}
			checkDead(t, g)
			time.Sleep(50 * time.Millisecond)
			if ds, err := g.Claim(ctx(t), 10); err != nil || len(ds) != 0 {
				t.Errorf("dead undecodable rows came back: %v (err %v)", idsOf(ds), err)
			}
		})
	}

	for _, g := range []*sqlstreams.Consumer[EventV2]{run, runOrdered} {
		t.Run("Run/"+g.Group(), func(t *testing.T) {
			var mu sync.Mutex
			var handled []int64
			stop := runFor(t, g, func(_ context.Context, d sqlstreams.Delivery[EventV2]) error {
				mu.Lock()
				defer mu.Unlock()
				handled = append(handled, d.ID)
				return nil
			})
			eventually(t, 30*time.Second, "every decodable row to be handled", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(handled) >= len(good)
			})
			time.Sleep(100 * time.Millisecond)
			stop()
			mu.Lock()
			defer mu.Unlock()
			if !equalIDs(handled, good) {
				t.Errorf("handled %v, want exactly the decodable rows %v", handled, good)
			}
			checkDead(t, g)
		})
	}
}
