package conformance

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/conformance/proctest"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() { registerNeeding(needProcesses, "C17_CrashSafety", testCrashSafety) }

// C17: a consumer process killed with SIGKILL at any instant loses nothing:
// every row is eventually resolved by its group, and only rows that were
// leased and not yet acked are delivered again.
func testCrashSafety(t *testing.T, h *harness) {
	c := h.client(t)
	const total = 300
	p := producer[EventV1](t, c, "c17")
	msgs := make([]sqlstreams.Message[EventV1], total)
	for i := range msgs {
		msgs[i] = sqlstreams.NewMessage(EventV1{Seq: i})
	}
	all, err := p.ProduceBatch(ctx(t), msgs...)
	if err != nil {
		t.Fatal(err)
	}
	consumer[EventV1](t, c, "c17", "crashy", nil) // create the group

	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 17))
	t.Logf("kill-point seed %d", seed)
	out := filepath.Join(t.TempDir(), "c17.records")
	lease := 500 * time.Millisecond
	acked := map[int64]bool{}  // the ack committed
	acking := map[int64]bool{} // the ack may or may not have committed
	lastChildAttempt := map[int64]int{}
	for kill := 1; kill <= 3; kill++ {
		ch := proctest.Spawn(t, "claim-ack", childSpec{Namespace: h.ns(t), Stream: "c17", Group: "crashy", Out: out, Lease: lease, Batch: 10})
		want := kill * 40
		eventually(t, time.Minute, fmt.Sprintf("child %d to ack %d rows", kill, want), func() bool {
			n := 0
			for _, r := range proctest.Records(t, out) {
				if r[0] == "acked" {
					n++
				}
			}
			return n >= want
		})
		time.Sleep(time.Duration(rng.IntN(15)) * time.Millisecond)
		ch.Kill()
	}
	for _, r := range proctest.Records(t, out) {
		id, _ := strconv.ParseInt(r[1], 10, 64)
		switch r[0] {
		case "acked":
			acked[id] = true
		case "acking":
			acking[id] = true
		case "got":
			lastChildAttempt[id], _ = strconv.Atoi(r[2])
		}
	}
	if len(acked) == 0 || len(acked) == total {
		t.Fatalf("children acked %d of %d rows; the kills did not land mid-stream", len(acked), total)
	}

	// The survivor: a consumer in this process takes over after the leases expire.
	survivor := consumer[EventV1](t, c, "c17", "crashy", &sqlstreams.ConsumerOptions{LeaseDuration: time.Minute})
	got := map[int64]int{}
	eventually(t, time.Minute, "the survivor to resolve every remaining row", func() bool {
		ds, err := survivor.Claim(ctx(t), 50)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if _, dup := got[d.ID]; dup {
				t.Errorf("row %d delivered twice to the survivor", d.ID)
			}
			got[d.ID] = d.Attempt
		}
		if len(ds) > 0 {
			if err := survivor.Ack(ctx(t), ds...); err != nil {
				t.Fatal(err)
			}
		}
		g := groupAt(t, health(t, c, "c17"), 1, "crashy")
		return g.Unread == 0 && g.Unresolved == 0
	})

	redelivered := 0
	for id, attempt := range got {
		if acked[id] {
			t.Errorf("row %d was acked by a killed child yet delivered again", id)
		}
		if last, seen := lastChildAttempt[id]; seen {
			redelivered++
			if attempt <= last {
				t.Errorf("row %d handled by a child at attempt %d came back at attempt %d, want a higher attempt", id, last, attempt)
			}
		}
	}
	for _, id := range all {
		_, survived := got[id]
		switch {
		case acked[id] || survived:
		case acking[id]:
			// Killed between the ack reaching the database and recording it:
			// the ack committed, or the survivor would have got the row.
		case lastChildAttempt[id] > 0:
			t.Errorf("row %d was handled by a killed child, never acked, yet not delivered again", id)
		default:
			t.Errorf("row %d was never delivered", id)
		}
	}
	// Only leased rows come back: at most one batch per killed child.
	if redelivered > 3*10 {
		t.Errorf("%d rows a child had started came back; at most %d were leased at the kills", redelivered, 3*10)
	}
	t.Logf("children acked %d rows, the survivor resolved %d (%d of them started by a killed child)", len(acked), len(got), redelivered)
}
