package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

type stmtEvent struct {
	N int `json:"n"`
}

func (stmtEvent) SchemaVersion() int { return 1 }

// TestKeptStatements: the hot paths keep their prepared statements (the
// second produce and claim find them), results stay right through them (ids
// taken from the last insert id match the rows read back, across a stream
// destroyed and created again while its statements are kept), and Close
// closes every kept statement and leaves no goroutine behind.
func TestKeptStatements(t *testing.T) {
	before := runtime.NumGoroutine()
	ctx := context.Background()
	d := Open(filepath.Join(t.TempDir(), "kept.db"))
	c, err := sqlstreams.Open(ctx, d, sqlstreams.WithMaintenanceInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		name := "kept"
		s := c.Stream[stmtEvent](name)
		if _, err := s.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		p, err := s.Producer().Register(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		cons, err := s.Consumer("g").Register(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var produced []int64
		for i := range 3 {
			msgs := []sqlstreams.Message[stmtEvent]{sqlstreams.NewMessage(stmtEvent{N: 3 * i}), sqlstreams.NewMessage(stmtEvent{N: 3*i + 1}), sqlstreams.NewMessage(stmtEvent{N: 3*i + 2})}
			ids, err := p.ProduceBatch(ctx, msgs...)
			if err != nil {
				t.Fatal(err)
			}
			produced = append(produced, ids...)
		}
		// Claims of 4: two full ones (which skip the probe), a short one and
		// an empty one (which probe on a reader).
		var got []int64
		for claims := 0; ; claims++ {
			ds, err := cons.Claim(ctx, 4)
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) == 0 {
				break
			}
			if claims == 3 {
				t.Fatalf("round %d: a fourth claim of 4 found %d more of 9 rows", round, len(ds))
			}
			for j, dl := range ds {
				if want := len(got) + j; dl.Value.N != want {
					t.Fatalf("round %d: delivery %d carries %d, want %d", round, dl.ID, dl.Value.N, want)
				}
			}
			if err := cons.Ack(ctx, ds...); err != nil {
				t.Fatal(err)
			}
			for _, dl := range ds {
				got = append(got, dl.ID)
			}
		}
		if len(got) != len(produced) {
			t.Fatalf("round %d: claimed ids %v, produced %v", round, got, produced)
		}
		for i := range got {
			if got[i] != produced[i] {
				t.Fatalf("round %d: claimed ids %v, produced %v", round, got, produced)
			}
		}
		if n := d.wstmts.size(); n == 0 {
			t.Fatalf("round %d: no writer statement kept after repeated produce and claim", round)
		}
		if n := d.rstmts.size(); n == 0 {
			t.Fatalf("round %d: no reader statement kept after repeated claims", round)
		}
		if err := s.Destroy(ctx); err != nil {
			t.Fatalf("round %d: destroy with kept statements: %v", round, err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if w, r := d.wstmts.size(), d.rstmts.size(); w != 0 || r != 0 {
		t.Fatalf("after Close: %d writer and %d reader statements still kept", w, r)
	}
	if d.wstmts.lookup("SELECT 1") != nil {
		t.Fatal("after Close: a lookup found a statement")
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("after Close: %d goroutines, %d before Open:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestClaimAfterFullClaim: a claim that follows a full one skips the reader
// probe and must still find what the probe would have: a retry due now, then
// new rows, then nothing (after which the next claim probes again).
func TestClaimAfterFullClaim(t *testing.T) {
	ctx := context.Background()
	d := Open(filepath.Join(t.TempDir(), "full.db"))
	c, err := sqlstreams.Open(ctx, d, sqlstreams.WithMaintenanceInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := c.Stream[stmtEvent]("full")
	p, err := s.Producer().Register(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := s.Consumer("g").Register(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.ProduceBatch(ctx, sqlstreams.NewMessage(stmtEvent{N: 0}), sqlstreams.NewMessage(stmtEvent{N: 1}), sqlstreams.NewMessage(stmtEvent{N: 2})); err != nil {
		t.Fatal(err)
	}
	claim := func(n int) []int {
		t.Helper()
		ds, err := cons.Claim(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, dl := range ds {
			got = append(got, dl.Value.N)
			if dl.Value.N == 0 && dl.Attempt == 1 {
				if err := dl.Retry(ctx, 0, errors.New("again")); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := dl.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
		return got
	}
	stream := mustStreamID(t, s)
	full := func() bool { _, ok := d.next.Hint(stream, "g"); return ok }
	if got := claim(2); len(got) != 2 || got[0] != 0 || got[1] != 1 || !full() {
		t.Fatalf("first claim: %v (full %v), want [0 1] and full", got, full())
	}
	// Skips the probe: the retry of row 0 is due now, row 2 is new.
	if got := claim(2); len(got) != 2 || got[0] != 0 || got[1] != 2 || !full() {
		t.Fatalf("claim after a full one: %v (full %v), want the retried 0 and the new 2, and full", got, full())
	}
	if got := claim(2); len(got) != 0 || full() {
		t.Fatalf("claim with nothing left: %v (full %v), want none and not full", got, full())
	}
	if got := claim(2); len(got) != 0 {
		t.Fatalf("probing claim with nothing left: %v", got)
	}
}

func mustStreamID(t *testing.T, s *sqlstreams.Stream[stmtEvent]) int64 {
	t.Helper()
	info, err := s.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.ID
}

// size reports how many statements are kept, for tests.
func (c *stmtCache) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.stmts)
}
