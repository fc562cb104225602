package conformance

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/conformance/proctest"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() { registerNeeding(needProcesses, "C18_Concurrency", testConcurrency) }

// C18: producers and consumers in several processes on one stream: every
// row is resolved once per group, never twice while its lease holds, and no
// lock conflict or deadlock surfaces as an error or a warning.
func testConcurrency(t *testing.T, h *harness) {
	c := h.client(t)
	if _, err := c.Stream[EventV1]("c18").Create(ctx(t), &sqlstreams.StreamOptions{Partitions: 4}); err != nil {
		t.Fatal(err)
	}
	groups := []string{"alpha", "beta"}
	for _, g := range groups {
		consumer[EventV1](t, c, "c18", g, nil)
	}
	dir := t.TempDir()
	const producers, perProducer, consumersPerGroup = 3, 120, 2
	var prods, conss []*proctest.Child
	for _, g := range groups {
		for i := range consumersPerGroup {
			out := filepath.Join(dir, fmt.Sprintf("consumer-%s-%d", g, i))
			conss = append(conss, proctest.Spawn(t, "consume", childSpec{Namespace: h.ns(t), Stream: "c18", Group: g, Lease: time.Minute,
				Concurrency: 3, Batch: 8, Out: out}))
			eventually(t, time.Minute, "consumer "+out+" to start", func() bool { return len(proctest.Records(t, out)) > 0 })
		}
	}
	for i := range producers {
		prods = append(prods, proctest.Spawn(t, "produce", childSpec{Namespace: h.ns(t), Stream: "c18", Count: perProducer,
			Out: filepath.Join(dir, fmt.Sprintf("producer-%d", i))}))
	}
	produced := map[int64]bool{}
	for i, p := range prods {
		p.Wait(t, 2*time.Minute, fmt.Sprintf("producer %d", i))
		for _, r := range proctest.Records(t, filepath.Join(dir, fmt.Sprintf("producer-%d", i))) {
			id, _ := strconv.ParseInt(r[1], 10, 64)
			produced[id] = true
		}
	}
	if len(produced) != producers*perProducer {
		t.Fatalf("producers recorded %d distinct ids, want %d", len(produced), producers*perProducer)
	}
	eventually(t, 2*time.Minute, "both groups to resolve every row", func() bool {
		hl := health(t, c, "c18")
		for _, g := range groups {
			gh := groupAt(t, hl, 1, g)
			if gh.Unread > 0 || gh.Unresolved > 0 {
				return false
			}
		}
		return true
	})
	for i, cs := range conss {
		cs.Terminate()
		cs.Wait(t, time.Minute, fmt.Sprintf("consumer %d", i))
	}
	for _, g := range groups {
		handled := map[int64]int{}
		for i := range consumersPerGroup {
			for _, r := range proctest.Records(t, filepath.Join(dir, fmt.Sprintf("consumer-%s-%d", g, i))) {
				if r[0] != "handled" {
					continue
				}
				id, _ := strconv.ParseInt(r[1], 10, 64)
				handled[id]++
			}
		}
		for id := range produced {
			switch n := handled[id]; {
			case n == 0:
				t.Errorf("group %s never handled row %d", g, id)
			case n > 1:
				t.Errorf("group %s handled row %d %d times while its lease held", g, id, n)
			}
		}
		if len(handled) != len(produced) {
			t.Errorf("group %s handled %d distinct rows, want %d", g, len(handled), len(produced))
		}
	}
	for i, ch := range append(prods, conss...) {
		if out := ch.Output(); strings.Contains(out, "level=WARN") || strings.Contains(out, "level=ERROR") {
			t.Errorf("child %d logged problems:\n%s", i, out)
		}
	}
}
