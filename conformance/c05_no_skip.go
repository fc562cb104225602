package conformance

import (
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() { register("C5_NoSkip", testNoSkip) }

// C5: every committed row at a group's version that matches its bindings is
// delivered to it at least once, also when producers commit out of id order,
// when producers roll back, and across restarts.
//
// Producer transactions are deliberately slow and interleaved: a slow one
// takes its ids first and commits late, a fast one starting after it takes
// higher ids and commits at once. Where the engine lets transactions run
// side by side (Postgres, MySQL) the fast one commits first, which is the
// case a plain "id > cursor" read gets wrong; where it serializes writers
// (SQLite) each transaction waits to begin, so the test must not (and does
// not) make one transaction wait for another. Meanwhile consumers claim
// without pause, and the consuming client is closed and replaced midway.
func testNoSkip(t *testing.T, h *harness) {
	const (
		stream = "c5"
		group  = "g"
		txs    = 12
		// The consumers ack what they claimed under it; rows abandoned in
		// it by the closed client come back when it lapses.
		lease = settleLease
	)
	cp := h.client(t)
	p := producer[EventV1](t, cp, stream)
	// The group is bound to v1 and to routing key "in.#": rows at v2 and
	// rows routed elsewhere interleave with the wanted ones and must not be
	// delivered, nor make the cursor lose the wanted ones.
	opts := &sqlstreams.ConsumerOptions{LeaseDuration: lease, Bindings: []string{"in.#"}}
	consumer[EventV1](t, cp, stream, group, opts)
	p2 := producer[EventV2](t, cp, stream)

	var mu sync.Mutex
	committed := map[int]bool{}  // seqs of committed wanted rows
	rolledBack := map[int]bool{} // seqs of rows in rolled-back transactions
	unwanted := map[int]bool{}   // seqs of committed rows the group must not get
	type txRecord struct {
		ids       []int64
		committed time.Time
	}
	var commits []txRecord

	// The first consumer's client joins before the producers start. (On
	// SQLite a busy writer in one process can hold off another's writes for
	// as long as it keeps writing; opening the client first keeps the test's
	// phases independent of that.)
	ca := h.client(t)
	ga := consumer[EventV1](t, ca, stream, group, opts)

	var producers sync.WaitGroup
	start := time.Now()
	for i := range txs {
		slow := i%2 == 0
		rollback := i%4 == 3 || i%6 == 4
		producers.Go(func() {
			time.Sleep(time.Duration(i) * 40 * time.Millisecond)
			if !slow {
				time.Sleep(20 * time.Millisecond) // begin after the slow one before it
			}
			tx, commit, abort, err := h.target.BeginTx(ctx(t), cp.Driver())
			if err != nil {
				t.Errorf("tx %d: begin: %v", i, err)
				return
			}
			var seqs []int
			var ids []int64
			var aside bool // whether this tx wrote a row the group must not get
			for j := range 3 {
				seq := 100*(i+1) + j
				rk := "in.tx"
				if j == 1 && i%3 == 0 {
					rk, aside = "out.tx", true
				}
				id, err := p.ProduceTx(ctx(t), tx, EventV1{Seq: seq, Total: int64(i)}, sqlstreams.RoutingKey(rk))
				if err != nil {
					t.Errorf("tx %d: produce: %v", i, err)
					_ = abort()
					return
				}
				seqs, ids = append(seqs, seq), append(ids, id)
				if slow {
					time.Sleep(60 * time.Millisecond)
				}
			}
			if rollback {
				if err := abort(); err != nil {
					t.Errorf("tx %d: rollback: %v", i, err)
				}
				mu.Lock()
				for _, s := range seqs {
					rolledBack[s] = true
				}
				mu.Unlock()
				return
			}
			if err := commit(); err != nil {
				t.Errorf("tx %d: commit: %v", i, err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			commits = append(commits, txRecord{ids: ids, committed: time.Now()})
			for j, s := range seqs {
				if j == 1 && aside {
					unwanted[s] = true
				} else {
					committed[s] = true
				}
			}
		})
	}
	// Plain produces and other-version rows between the transactions.
	producers.Go(func() {
		for k := range 8 {
			time.Sleep(35 * time.Millisecond)
			seq := 10 + k
			if _, err := p.Produce(ctx(t), EventV1{Seq: seq}, sqlstreams.RoutingKey("in.plain")); err != nil {
				t.Errorf("plain produce: %v", err)
				continue
			}
			if _, err := p2.Produce(ctx(t), EventV2{Seq: 50 + k}, sqlstreams.RoutingKey("in.plain")); err != nil {
				t.Errorf("v2 produce: %v", err)
			}
			mu.Lock()
			committed[seq] = true
			mu.Unlock()
		}
	})
	producersDone := make(chan struct{})
	go func() { producers.Wait(); close(producersDone) }()

	var dmu sync.Mutex
	// Rows are told apart by seq, not id: an engine may reuse the ids of a
	// rolled-back transaction (SQLite does).
	acked := map[int]int{} // seq -> times acked
	var delivered []sqlstreams.Delivery[EventV1]
	record := func(ds []sqlstreams.Delivery[EventV1]) {
		dmu.Lock()
		defer dmu.Unlock()
		delivered = append(delivered, ds...)
	}
	// consume claims and acks until stop is closed or a claim fails.
	consume := func(g *sqlstreams.Consumer[EventV1], stop <-chan struct{}) error {
		for {
			select {
			case <-stop:
				return nil
			default:
			}
			ds, err := g.Claim(ctx(t), 3)
			if err != nil {
				return err
			}
			record(ds)
			if len(ds) > 0 {
				if err := g.Ack(ctx(t), ds...); err != nil {
					return err
				}
				dmu.Lock()
				for _, d := range ds {
					acked[d.Value.Seq]++
				}
				dmu.Unlock()
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	// Phase 1: a consumer on its own client, closed while producers run,
	// with deliveries it claimed and never settled.
	stopA := make(chan struct{})
	doneA := make(chan error, 1)
	go func() { doneA <- consume(ga, stopA) }()
	eventually(t, 20*time.Second, "the first consumer to ack some rows", func() bool {
		dmu.Lock()
		defer dmu.Unlock()
		return len(acked) >= 6
	})
	close(stopA)
	if err := <-doneA; err != nil {
		t.Fatalf("phase 1 consumer: %v", err)
	}
	// Two more rows, so that there is something to claim and abandon
	// however far the consumer got.
	for _, seq := range []int{90, 91} {
		if _, err := p.Produce(ctx(t), EventV1{Seq: seq}, sqlstreams.RoutingKey("in.plain")); err != nil {
			t.Fatalf("produce: %v", err)
		}
		mu.Lock()
		committed[seq] = true
		mu.Unlock()
	}
	var abandoned []sqlstreams.Delivery[EventV1]
	eventually(t, 30*time.Second, "rows to abandon in a lease", func() bool {
		ds, err := ga.Claim(ctx(t), 2)
		if err != nil {
			t.Fatalf("claim to abandon: %v", err)
		}
		record(ds)
		abandoned = append(abandoned, ds...)
		return len(abandoned) > 0
	})
	if err := ca.Close(); err != nil {
		t.Fatalf("close the first consumer's client: %v", err)
	}
	if _, err := ga.Claim(ctx(t), 1); !errors.Is(err, sqlstreams.ErrClosed) {
		t.Errorf("claim on a closed client: err %v, want ErrClosed", err)
	}

	// Phase 2: a new client on the same namespace joins the group and
	// carries on from the stored cursor and exceptions.
	cb := h.client(t)
	gb := consumer[EventV1](t, cb, stream, group, opts)
	stopB := make(chan struct{})
	doneB := make(chan error, 1)
	go func() { doneB <- consume(gb, stopB) }()
	complete := func() bool {
		select {
		case <-producersDone:
		default:
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		dmu.Lock()
		defer dmu.Unlock()
		for s := range committed {
			if acked[s] == 0 {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(20 * time.Second)
	for !complete() && time.Now().Before(deadline) {
		select {
		case err := <-doneB:
			t.Fatalf("phase 2 consumer: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	time.Sleep(lease) // anything still to come would come now
	close(stopB)
	if err := <-doneB; err != nil {
		t.Fatalf("phase 2 consumer: %v", err)
	}
	<-producersDone

	mu.Lock()
	defer mu.Unlock()
	dmu.Lock()
	defer dmu.Unlock()
	var missing []int
	for s := range committed {
		if acked[s] == 0 {
			missing = append(missing, s)
		}
	}
	sort.Ints(missing)
	if len(missing) > 0 {
		t.Errorf("committed rows never delivered (by seq): %v", missing)
	}
	for _, d := range delivered {
		switch s := d.Value.Seq; {
		case rolledBack[s]:
			t.Errorf("row %d (seq %d) of a rolled-back transaction was delivered", d.ID, s)
		case unwanted[s]:
			t.Errorf("row %d (seq %d) routed out of the group's bindings was delivered", d.ID, s)
		case !committed[s]:
			t.Errorf("row %d (seq %d) was delivered but never committed", d.ID, s)
		}
		if d.SchemaVersion != 1 || d.RoutingKey == "out.tx" {
			t.Errorf("row %d at v%d with routing key %q reached a v1 group bound to in.#", d.ID, d.SchemaVersion, d.RoutingKey)
		}
	}
	// The deliveries abandoned by the closed client came back to the new
	// one, as later attempts.
	for _, a := range abandoned {
		if acked[a.Value.Seq] == 0 {
			t.Errorf("row %d abandoned in a lease by the closed client was never acked", a.ID)
		}
	}
	var redelivered int
	for _, d := range delivered {
		if d.Attempt > 1 {
			redelivered++
		}
	}
	if redelivered < len(abandoned) {
		t.Errorf("%d deliveries came back at a later attempt, want at least the %d abandoned", redelivered, len(abandoned))
	}
	if len(rolledBack) == 0 || len(unwanted) == 0 {
		t.Fatalf("the schedule produced %d rolled-back and %d unwanted rows; it must produce both", len(rolledBack), len(unwanted))
	}
	hg := groupAt(t, health(t, cb, stream), 1, group)
	if hg.Unread != 0 || hg.Unresolved != 0 {
		t.Errorf("health after every committed row was acked: %+v", hg)
	}

	// How often commits actually went out of id order on this engine.
	sort.Slice(commits, func(i, j int) bool { return commits[i].committed.Before(commits[j].committed) })
	inversions := 0
	for i := range commits {
		for j := i + 1; j < len(commits); j++ {
			if commits[j].ids[0] < commits[i].ids[0] {
				inversions++
			}
		}
	}
	t.Logf("%s: %d committed transactions, %d pairs committed out of id order, %d rows delivered (%d redelivered) in %v",
		h.target.Name, len(commits), inversions, len(delivered), redelivered, time.Since(start).Round(time.Millisecond))
}
