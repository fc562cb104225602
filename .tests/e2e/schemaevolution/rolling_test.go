package schemaevolution

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/conformance/proctest"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

const ordersStream = "orders.placed"

// TestRollingDeploy: a month of v1 traffic with group fraud-scoring, then v2
// producers start while v1 producers still run and fraud-scoring-v2 joins.
// Each group reads only its version; after the v1 producers stop and the v1
// group drains, v1 is retirable except for a dead row left on purpose, which
// the verdict names until it is discarded.
func TestRollingDeploy(t *testing.T) {
	eachDriver(t, testRollingDeploy)
}

func testRollingDeploy(t *testing.T, target conformance.Target) {
	ns := target.NewNamespace(t)
	c := openClient(t, target, ns)
	ctx := context.Background()
	if _, err := c.Stream[OrderPlacedV1](ordersStream).Create(ctx, &sqlstreams.StreamOptions{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const poison = 42
	role := func(name, group string, from, count int) (*proctest.Child, string) {
		out := filepath.Join(dir, fmt.Sprintf("%s-%s-%d", name, group, from))
		return proctest.Spawn(t, name, spec{Driver: target.Name, Namespace: ns, Stream: ordersStream, Group: group,
			Out: out, From: from, Count: count, PoisonSeq: poison}), out
	}
	ready := func(out string) {
		waitFor(t, time.Minute, out+" to start", func() string { return "" }, func() bool { return len(proctest.Records(t, out)) > 0 })
	}

	consumerV1, outC1 := role("consume-v1", "fraud-scoring", 0, 0)
	ready(outC1)
	month, outP1a := role("produce-v1", "", 1, 150)
	month.Wait(t, 2*time.Minute, "the month of v1 traffic")

	// The deploy: v2 producers and v1 producers overlap; the v2 group joins.
	lateV1, outP1b := role("produce-v1", "", 151, 100)
	producerV2, outP2 := role("produce-v2", "", 1, 150)
	consumerV2, outC2 := role("consume-v2", "fraud-scoring-v2", 0, 0)
	lateV1.Wait(t, 2*time.Minute, "the last v1 producer")
	producerV2.Wait(t, 2*time.Minute, "the v2 producer")

	diagnose := func() string { return healthTable(healthOf(t, c, ordersStream)) }
	waitFor(t, 2*time.Minute, "both groups to drain", diagnose, func() bool {
		h := healthOf(t, c, ordersStream)
		g1, ok1 := groupOf(versionOf(t, h, 1), "fraud-scoring")
		g2, ok2 := groupOf(versionOf(t, h, 2), "fraud-scoring-v2")
		return ok1 && ok2 && g1.Unread == 0 && g1.Leased+g1.Delayed == 0 && g1.Dead == 1 && g2.Unread == 0 && g2.Unresolved == 0
	})
	h := healthOf(t, c, ordersStream)
	v1, v2 := versionOf(t, h, 1), versionOf(t, h, 2)
	if v1.Retirable || !strings.Contains(v1.Verdict(), "dead") {
		t.Errorf("v1 with a dead row left on purpose reads %q, want a verdict naming the dead row\n%s", v1.Verdict(), healthTable(h))
	}
	if !v2.Retirable {
		t.Errorf("v2 after draining reads %q, want retirable\n%s", v2.Verdict(), healthTable(h))
	}
	for i, ch := range []*proctest.Child{consumerV1, consumerV2} {
		ch.Terminate()
		ch.Wait(t, time.Minute, fmt.Sprintf("consumer %d", i+1))
		if out := ch.Output(); strings.Contains(out, "level=") {
			t.Errorf("consumer %d logged:\n%s", i+1, out)
		}
	}

	producedV1 := ids(t, "produced", outP1a, outP1b)
	producedV2 := ids(t, "produced", outP2)
	handledV1 := ids(t, "handled", outC1)
	handledV2 := ids(t, "handled", outC2)
	sameSet(t, "the v1 group handled", handledV1, "the v1 rows produced", producedV1)
	sameSet(t, "the v2 group handled", handledV2, "the v2 rows produced", producedV2)

	// Nothing reached the wrong decoder: the only dead row is the poison.
	groupV1, err := c.Stream[OrderPlacedV1](ordersStream).Consumer("fraud-scoring").Register(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	groupV2, err := c.Stream[OrderPlacedV2](ordersStream).Consumer("fraud-scoring-v2").Register(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	dead, err := groupV1.DeadLetters(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 1 || !strings.Contains(dead[0].Error, "poison") || dead[0].SchemaVersion != 1 {
		t.Fatalf("v1 dead letters %+v, want only the poison order", dead)
	}
	if d2, err := groupV2.DeadLetters(ctx, 0, 10); err != nil || len(d2) != 0 {
		t.Fatalf("v2 dead letters %+v (%v): a v1 row reached the v2 decoder", d2, err)
	}

	// Investigated and discarded: v1 is retirable though its rows stay.
	if n, err := groupV1.Discard(ctx, dead[0].ID); err != nil || n != 1 {
		t.Fatalf("discard the poison: %d, %v", n, err)
	}
	h = healthOf(t, c, ordersStream)
	v1 = versionOf(t, h, 1)
	if !v1.Retirable || v1.Rows != int64(len(producedV1)) {
		t.Errorf("after discarding, v1 reads %q with %d rows; want retirable with its %d rows still in the log\n%s",
			v1.Verdict(), v1.Rows, len(producedV1), healthTable(h))
	}
}

// ids collects the ids (second field) of records of one kind.
func ids(t testing.TB, kind string, files ...string) map[int64]bool {
	t.Helper()
	out := map[int64]bool{}
	for _, f := range files {
		for _, r := range proctest.Records(t, f) {
			if r[0] != kind {
				continue
			}
			id, err := strconv.ParseInt(r[1], 10, 64)
			if err != nil {
				t.Fatalf("%s: bad record %v", f, r)
			}
			out[id] = true
		}
	}
	return out
}

func sameSet(t testing.TB, gotName string, got map[int64]bool, wantName string, want map[int64]bool) {
	t.Helper()
	var missing, extra []int64
	for id := range want {
		if !got[id] {
			missing = append(missing, id)
		}
	}
	for id := range got {
		if !want[id] {
			extra = append(extra, id)
		}
	}
	if len(missing)+len(extra) > 0 {
		t.Errorf("%s (%d) differs from %s (%d): missing %v, unexpected %v", gotName, len(got), wantName, len(want), missing, extra)
	}
}

func produceV1(ctx context.Context, c *sqlstreams.Client, s spec, rec *proctest.Recorder) error {
	p, err := c.Stream[OrderPlacedV1](s.Stream).Producer().Register(ctx, nil)
	if err != nil {
		return err
	}
	for seq := s.From; seq < s.From+s.Count; seq++ {
		id, err := p.Produce(ctx, OrderPlacedV1{OrderID: fmt.Sprintf("o1-%d", seq), Seq: seq, Total: int64(seq * 100)},
			sqlstreams.Key(fmt.Sprintf("acct-%d", seq%17)))
		if err != nil {
			return err
		}
		if err := rec.Record("produced", id, seq); err != nil {
			return err
		}
	}
	return nil
}

func produceV2(ctx context.Context, c *sqlstreams.Client, s spec, rec *proctest.Recorder) error {
	p, err := c.Stream[OrderPlacedV2](s.Stream).Producer().Register(ctx, nil)
	if err != nil {
		return err
	}
	for seq := s.From; seq < s.From+s.Count; seq++ {
		id, err := p.Produce(ctx, OrderPlacedV2{OrderID: fmt.Sprintf("o2-%d", seq), Seq: seq, Total: Money{Cents: int64(seq * 100), Currency: "EUR"}},
			sqlstreams.Key(fmt.Sprintf("acct-%d", seq%17)))
		if err != nil {
			return err
		}
		if err := rec.Record("produced", id, seq); err != nil {
			return err
		}
	}
	return nil
}

func consumeV1(ctx context.Context, c *sqlstreams.Client, s spec, rec *proctest.Recorder) error {
	return consume(ctx, c, s, rec, func(o OrderPlacedV1) int { return o.Seq })
}

func consumeV2(ctx context.Context, c *sqlstreams.Client, s spec, rec *proctest.Recorder) error {
	return consume(ctx, c, s, rec, func(o OrderPlacedV2) int { return o.Seq })
}

// consume runs a group until SIGTERM; the v1 order with the poison sequence
// number is dead-lettered on purpose.
func consume[T sqlstreams.Versioned](ctx context.Context, c *sqlstreams.Client, s spec, rec *proctest.Recorder, seq func(T) int) error {
	cons, err := c.Stream[T](s.Stream).Consumer(s.Group).Register(ctx, &sqlstreams.ConsumerOptions{
		Concurrency: 2, BatchSize: 8, PollInterval: 20 * time.Millisecond})
	if err != nil {
		return err
	}
	if err := rec.Record("ready", 0); err != nil {
		return err
	}
	return cons.Run(ctx, func(ctx context.Context, d sqlstreams.Delivery[T]) error {
		if err := rec.Record("handled", d.ID, seq(d.Value), d.SchemaVersion, os.Getpid()); err != nil {
			return err
		}
		if d.SchemaVersion == 1 && seq(d.Value) == s.PoisonSeq {
			return sqlstreams.Dead(fmt.Errorf("poison order %d: left dead on purpose", s.PoisonSeq))
		}
		return nil
	})
}
