package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() {
	register("C14_MaintenanceNeverBlocksProduce", testMaintenanceNeverBlocksProduce)
}

// maintenanceProduceLockTimeout is the producers' lock timeout in
// C14_MaintenanceNeverBlocksProduce; each produce of the window must succeed
// within maintenanceProduceBound, half of it: a produce queued behind
// maintenance that holds the append lock waits the whole lock timeout (the
// defect this proves gone), one that does not wait succeeds in
// milliseconds, with room left for a loaded machine.
const (
	maintenanceProduceLockTimeout = 30 * time.Second
	maintenanceProduceBound       = maintenanceProduceLockTimeout / 2
)

// C11 and C14, beside C21: compaction and hard retention whose rows a
// caller's open transaction holds (an AckTx on a delivery of a removed row,
// not yet committed) never hold a partition's append lock while they wait
// for it, so every produce to the stream meanwhile succeeds. Maintenance
// either completes once the caller commits or, when its own lock wait runs
// out first, fails with a retryable ErrConflict that names what it waited
// for (an AckTx, not only "an open ProduceTx", which there is not). On a
// single-writer engine (SQLite) the caller's transaction holds the only
// writer, so no write, produce or maintenance, runs until it ends (C21
// covers that wait); there maintenance too completes after the commit or
// gives up naming the caller's transaction.
func testMaintenanceNeverBlocksProduce(t *testing.T, h *harness) {
	// Two partitions: r0 goes to partition 0. r1 supersedes it (same key)
	// or lands in partition 1, so that r0, removed, is partition 0's newest
	// row (its high-water mark moves: the partition is locked for that).
	kinds := []struct {
		name    string
		opts    sqlstreams.StreamOptions
		sameKey bool
	}{
		{"Compact", sqlstreams.StreamOptions{Partitions: 2, Compacted: true}, true},
		{"HardRetain", sqlstreams.StreamOptions{Partitions: 2, Retention: sqlstreams.Retention{MaxRows: 1, Hard: true}}, false},
		{"HardRetainCompacted", sqlstreams.StreamOptions{Partitions: 2, Compacted: true, Retention: sqlstreams.Retention{MaxRows: 1, Hard: true}}, false},
	}
	waits := []struct {
		name string
		// wait is maintenance's lock timeout: longer than the window (it
		// waits for the commit) or shorter (it gives up first).
		wait      time.Duration
		completes bool
	}{
		{"CompletesAfterCommit", 2 * maintenanceProduceLockTimeout, true},
		{"GivesUp", 200 * time.Millisecond, false},
	}
	for _, k := range kinds {
		for _, w := range waits {
			t.Run(k.name+"/"+w.name, func(t *testing.T) {
				t.Parallel()
				// Maintain works on every stream of a namespace: one each.
				h := h.fresh()
				maintenanceBesideOpenAck(t, h, k.opts, k.sameKey, w.wait, w.completes)
			})
		}
	}
}

// maintenanceBesideOpenAck runs one case of
// C14_MaintenanceNeverBlocksProduce: row r0 is claimed, then superseded by
// r1 (sameKey, compacted) or pushed over the row limit by it; a caller's
// transaction acks r0 and stays open while Maintain runs beside it and
// produces to r0's partition go on.
func maintenanceBesideOpenAck(t *testing.T, h *harness, opts sqlstreams.StreamOptions, sameKey bool, wait time.Duration, completes bool) {
	if h.target.OpenWithLockTimeout == nil {
		t.Fatalf("target %s has no OpenWithLockTimeout", h.target.Name)
	}
	const stream = "c14-beside"
	drvP, err := h.target.OpenWithLockTimeout(h.ns(t), maintenanceProduceLockTimeout)
	if err != nil {
		t.Fatal(err)
	}
	c := h.clientOn(t, drvP)
	if _, err := c.Stream[EventV1](stream).Create(ctx(t), &opts); err != nil {
		t.Fatal(err)
	}
	p := producer[EventV1](t, c, stream)
	cons := consumer[EventV1](t, c, stream, "g", &sqlstreams.ConsumerOptions{LeaseDuration: time.Hour})
	keys := keysInPartition(0, 2, 6)
	r0 := produceV1(t, p, 1, sqlstreams.Key(keys[0]))[0]
	ds := claimN(t, cons, 1)
	if len(ds) != 1 || ds[0].ID != r0 {
		t.Fatalf("claimed %v; want [%d]", idsOf(ds), r0)
	}
	r1Key := keysForPartitions(2)[1]
	if sameKey {
		r1Key = keys[0]
	}
	produceV1(t, p, 1, sqlstreams.Key(r1Key)) // r1: r0 is superseded, or over the limit

	drvM, err := h.target.OpenWithLockTimeout(h.ns(t), wait)
	if err != nil {
		t.Fatal(err)
	}
	m := h.clientOn(t, drvM)

	tx, commit, rollback, err := h.target.BeginTx(ctx(t), c.Driver())
	if err != nil {
		t.Fatal(err)
	}
	ended := false
	defer func() {
		if !ended {
			_ = rollback()
		}
	}()
	if err := ds[0].AckTx(ctx(t), tx); err != nil {
		t.Fatal(err)
	}
	type result struct {
		rep sqlstreams.MaintenanceReport
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := m.Maintain(ctx(t))
		done <- result{rep, err}
	}()
	await := func(what string) result {
		t.Helper()
		select {
		case r := <-done:
			return r
		case <-time.After(time.Minute):
			t.Fatalf("Maintain still runs a minute %s", what)
			return result{}
		}
	}

	single := c.Driver().Capabilities().SingleWriter
	if single {
		t.Logf("%s has a single writer: the open transaction holds it, so produces wait for its commit", h.target.Name)
	} else {
		produceBesideMaintenance(t, p, keys[1:])
	}
	var r result
	if !completes {
		// Its lock wait runs out while the transaction is still open.
		r = await("with its lock wait run out")
		switch {
		case !errors.Is(r.err, sqlstreams.ErrConflict):
			t.Errorf("Maintain whose lock wait ran out beside an open AckTx: %v, %+v; want a retryable ErrConflict", r.err, r.rep)
		case !strings.Contains(r.err.Error(), "AckTx"):
			t.Errorf("Maintain that waited for an open AckTx does not say so: %v", r.err)
		default:
			t.Logf("Maintain gave up: %v", r.err)
		}
	}
	if err := commit(); err != nil {
		t.Fatal(err)
	}
	ended = true
	if completes {
		r = await("after the caller's transaction committed")
		if r.err != nil || r.rep.Compacted+r.rep.Retained < 1 {
			t.Errorf("Maintain with a lock wait longer than the caller's transaction: %+v, %v; want it to complete after the commit, r0 (%d) removed",
				r.rep, r.err, r0)
		}
	}
	// Whatever maintenance did, producing still works, and a second pass
	// removes r0 (the caller's ack committed).
	if _, err := p.Produce(ctx(t), EventV1{Seq: 99}, sqlstreams.Key("after")); err != nil {
		t.Errorf("produce after the commit: %v", err)
	}
	if r.err != nil {
		if _, err := m.Maintain(ctx(t)); err != nil {
			t.Errorf("Maintain once nothing holds the rows: %v", err)
		}
	}
	if single {
		return
	}
	if g := groupAt(t, health(t, c, stream), 1, "g"); g.Leased != 0 {
		t.Errorf("after the commit and maintenance: %+v; want r0's lease gone", g)
	}
}

// produceBesideMaintenance produces a few rows while Maintain waits for the
// caller's transaction: each must succeed well within its lock timeout.
func produceBesideMaintenance(t *testing.T, p *sqlstreams.Producer[EventV1], keys []string) {
	t.Helper()
	for i, key := range keys {
		// Spaced a little so that maintenance has reached its lock wait
		// for the later ones; no outcome depends on the spacing.
		time.Sleep(50 * time.Millisecond)
		pctx, cancel := context.WithTimeout(ctx(t), maintenanceProduceBound)
		_, err := p.Produce(pctx, EventV1{Seq: 10 + i}, sqlstreams.Key(key))
		cancel()
		if err != nil {
			t.Errorf("produce %d while maintenance waits for an open AckTx: %v; want it to succeed (bound %v, lock timeout %v)",
				i, err, maintenanceProduceBound, maintenanceProduceLockTimeout)
			return
		}
	}
}

// keysInPartition returns n keys of partition part of a stream with
// partitions.
func keysInPartition(part, partitions, n int) []string {
	var keys []string
	for i := 0; len(keys) < n; i++ {
		if k := fmt.Sprintf("p%d-key-%d", part, i); sqlstreams.PartitionForKey(k, partitions) == part {
			keys = append(keys, k)
		}
	}
	return keys
}
