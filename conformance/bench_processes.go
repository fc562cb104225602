package conformance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/conformance/proctest"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// Processes measures consuming a stream of 4 partitions (keyed messages,
// spread across them) with four consumer processes, each a Run of the group
// in a child process of its own, against one such process (issue #28 wants
// 4 processes at 1.5x one or more). Each side reads b.N*100 messages twice,
// each time as a new consumer group, in the order 1, 4, 4, 1, so that load
// weighs on both alike. The clock runs from the moment every child of a
// side is ready (registered, waiting for a start file) until the last
// handler of the group's last delivery returned. It reports msgs/s (4
// processes), 1process-msgs/s and x-1process. The target's test binary
// must run Main, which dispatches the children.
func Processes(b *testing.B, target Target) {
	ns := target.NewNamespace(b)
	c := benchClient(b, target, ns)
	n := b.N * benchBatch
	info := setupStream(b, c, "bench-processes", 4, n)
	spent := make([]time.Duration, 2)
	b.ResetTimer()
	for i, procs := range []int{1, 4, 4, 1} {
		side := 0
		if procs == 1 {
			side = 1
		}
		spent[side] += drainInProcesses(b, ns, info.Name, "g"+strconv.Itoa(i), procs, n)
	}
	b.StopTimer()
	report(b, 2*benchBatch, spent, []baseline{{label: "1process"}})
}

// drainInProcesses starts procs children that each Run group over stream,
// starts them together, and returns how long they took to handle n
// deliveries in all.
func drainInProcesses(b *testing.B, ns, stream, group string, procs, n int) time.Duration {
	dir := b.TempDir()
	outs := make([]string, procs)
	children := make([]*proctest.Child, procs)
	for i := range procs {
		outs[i] = filepath.Join(dir, "child-"+strconv.Itoa(i))
		children[i] = proctest.Spawn(b, "drain", childSpec{Namespace: ns, Stream: stream, Group: group, Out: outs[i], Concurrency: 100})
	}
	giveUp := time.Now().Add(5 * time.Minute)
	ready := func() (n int) {
		for _, out := range outs {
			for _, r := range proctest.Records(b, out) {
				if r[0] == "ready" {
					n++
				}
			}
		}
		return n
	}
	// Counts only grow: the last count record of a child is its total.
	total := func() (int64, int64) {
		var sum, last int64
		for _, out := range outs {
			var k, at int64
			for _, r := range proctest.Records(b, out) {
				if r[0] == "count" && len(r) == 3 {
					k, _ = strconv.ParseInt(r[1], 10, 64)
					at, _ = strconv.ParseInt(r[2], 10, 64)
				}
			}
			sum, last = sum+k, max(last, at)
		}
		return sum, last
	}
	for ready() < procs {
		waitOrGiveUp(b, children, giveUp, "the consumer processes to get ready")
	}
	start := time.Now()
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		b.Fatal(err)
	}
	sum, last := total()
	for sum < int64(n) {
		waitOrGiveUp(b, children, giveUp, fmt.Sprintf("%d deliveries (%d so far)", n, sum))
		sum, last = total()
	}
	for _, ch := range children {
		ch.Terminate()
	}
	for _, ch := range children {
		ch.Wait(b, time.Minute, "consumer process")
	}
	return time.Unix(0, last).Sub(start)
}

// waitOrGiveUp waits a moment before the caller looks again, and fails the
// benchmark past giveUp, with what the children printed.
func waitOrGiveUp(b *testing.B, children []*proctest.Child, giveUp time.Time, what string) {
	if time.Now().After(giveUp) {
		for _, ch := range children {
			b.Log(ch.Output())
		}
		b.Fatalf("gave up waiting for %s", what)
	}
	time.Sleep(5 * time.Millisecond)
}

// childDrain registers the group, records "ready", waits for the parent's
// start file (beside its record file), then runs the group until SIGTERM,
// recording how many deliveries its handlers returned and when the last
// one did ("count n unix-nanos") whenever that changed, every 5ms.
func childDrain(ctx context.Context, c *sqlstreams.Client, spec childSpec, rec *proctest.Recorder, _ Target) error {
	cons, err := c.Stream[benchEvent](spec.Stream).Consumer(spec.Group).Register(ctx, &sqlstreams.ConsumerOptions{Concurrency: spec.Concurrency})
	if err != nil {
		return err
	}
	if err := rec.Record("ready"); err != nil {
		return err
	}
	for {
		if _, err := os.Stat(filepath.Join(filepath.Dir(spec.Out), "go")); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Millisecond):
		}
	}
	var handled, last atomic.Int64
	stop := make(chan struct{})
	reported := make(chan error, 1)
	go func() {
		var k, at int64
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				reported <- nil
				return
			case <-t.C:
			}
			if nk, nat := handled.Load(), last.Load(); nk != k || nat != at {
				k, at = nk, nat
				if err := rec.Record("count", nk, nat); err != nil {
					reported <- err
					return
				}
			}
		}
	}()
	err = cons.Run(ctx, func(context.Context, sqlstreams.Delivery[benchEvent]) error {
		last.Store(time.Now().UnixNano()) // before the count: a total read is never newer than its time
		handled.Add(1)
		return nil
	})
	close(stop)
	if rerr := <-reported; rerr != nil {
		return rerr
	}
	if rerr := rec.Record("count", handled.Load(), last.Load()); rerr != nil {
		return rerr
	}
	return err
}
