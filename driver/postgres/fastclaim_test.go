package postgres_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/postgres"
)

// sentTracer records what the driver sends: each query or batch is one
// entry, the statements of a batch in order.
type sentTracer struct {
	mu   sync.Mutex
	sent [][]string
	cur  map[*pgx.Conn]int
}

func (s *sentTracer) TraceQueryStart(ctx context.Context, c *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, []string{strings.Join(strings.Fields(d.SQL), " ")})
	return ctx
}

func (s *sentTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (s *sentTracer) TraceBatchStart(ctx context.Context, c *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		s.cur = map[*pgx.Conn]int{}
	}
	s.sent = append(s.sent, nil)
	s.cur[c] = len(s.sent) - 1
	return ctx
}

func (s *sentTracer) TraceBatchQuery(_ context.Context, c *pgx.Conn, d pgx.TraceBatchQueryData) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.cur[c]
	s.sent[i] = append(s.sent[i], strings.Join(strings.Fields(d.SQL), " "))
}

func (s *sentTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// take returns what was sent since the last take.
func (s *sentTracer) take() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.sent
	s.sent = nil
	return out
}

func firstWord(sql string) string {
	w, _, _ := strings.Cut(sql, " ")
	return strings.ToLower(w)
}

// oneTransaction reports whether sent is a single batch from BEGIN to
// COMMIT.
func oneTransaction(sent [][]string) bool {
	return len(sent) == 1 && len(sent[0]) > 2 && firstWord(sent[0][0]) == "begin" && firstWord(sent[0][len(sent[0])-1]) == "commit"
}

// A claim of the backlog right after one that took its Limit from the same
// partition sends its whole transaction in one round trip: the earlier
// claim read the rows it takes. When anything that claim assumed changed
// in between, the transaction's check fails, it is rolled back, and the
// claim takes what a claim without the window would have: each case checks
// that the one round trip was tried and rolled back, and what the claim
// took.
func TestClaimInOneRoundTrip(t *testing.T) {
	t.Parallel()
	match := func(p *driver.ClaimParams) {
		p.Match = func(bindings []string) func(string) bool {
			if len(bindings) == 0 {
				return nil
			}
			return func(rk string) bool { return slices.Contains(bindings, rk) }
		}
	}
	type change struct {
		name string
		// before changes things between the claims; it returns the ids the
		// next claim (of 10, lease a minute, at *at) must take.
		before func(f *fixture, other *postgres.Driver, all []int64, first []driver.Lease, at *time.Time) []int64
	}
	changes := []change{
		{"unchanged", func(f *fixture, _ *postgres.Driver, all []int64, _ []driver.Lease, _ *time.Time) []int64 {
			return all[20:30]
		}},
		{"another client claimed", func(f *fixture, other *postgres.Driver, all []int64, _ []driver.Lease, _ *time.Time) []int64 {
			res, err := other.Claim(tctx(f.t), driver.ClaimParams{Stream: f.stream, Group: "g", Member: driver.Member{SchemaVersion: 1}, Limit: 3,
				Token: "other", Holder: "h2", Now: f.now, LeaseUntil: f.now.Add(time.Minute)})
			if err != nil || !slices.Equal(ids(res.Deliveries), all[20:23]) {
				f.t.Fatalf("the other client's claim took %v, %v", ids(res.Deliveries), err)
			}
			return all[23:33]
		}},
		{"cursor reset", func(f *fixture, _ *postgres.Driver, all []int64, _ []driver.Lease, _ *time.Time) []int64 {
			if err := f.drv.SetCursors(tctx(f.t), driver.SetCursorsParams{StreamID: f.stream.ID, Group: "g", Positions: map[int]int64{0: all[34]}}); err != nil {
				f.t.Fatal(err)
			}
			return all[35:45]
		}},
		{"window over exceptions", func(f *fixture, _ *postgres.Driver, all []int64, first []driver.Lease, _ *time.Time) []int64 {
			// The cursor moves back over the second claim's rows (its batch
			// becomes exceptions) and a claim takes the first ten again:
			// the window it reads for the next one holds only rows with
			// exceptions, which the next claim passes over.
			if got, err := f.drv.Ack(tctx(f.t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Leases: first, Now: f.now}); err != nil || len(got.Lost) != 0 {
				f.t.Fatalf("ack: lost %v, %v", got.Lost, err)
			}
			if err := f.drv.SetCursors(tctx(f.t), driver.SetCursorsParams{StreamID: f.stream.ID, Group: "g", Positions: map[int]int64{0: all[0] - 1}}); err != nil {
				f.t.Fatal(err)
			}
			again, _ := f.claim("g", "h", 10, f.now, time.Minute)
			if !slices.Equal(ids(again.Deliveries), all[:10]) {
				f.t.Fatalf("the claim after the reset took %v, want %v", ids(again.Deliveries), all[:10])
			}
			return all[20:30]
		}},
		{"row removed", func(f *fixture, _ *postgres.Driver, all []int64, _ []driver.Lease, _ *time.Time) []int64 {
			if _, err := f.drv.Pool().Exec(tctx(f.t), `DELETE FROM message_log_`+strconv.FormatInt(f.stream.ID, 10)+` WHERE id = $1`, all[24]); err != nil {
				f.t.Fatal(err)
			}
			return append(slices.Clone(all[20:24]), all[25:31]...)
		}},
		{"group rebound", func(f *fixture, _ *postgres.Driver, all []int64, _ []driver.Lease, _ *time.Time) []int64 {
			if _, err := f.drv.RegisterGroup(tctx(f.t), driver.RegisterGroupParams{Group: driver.GroupConfig{StreamID: f.stream.ID, Name: "g"},
				Update: func(g driver.GroupConfig) (driver.GroupConfig, error) { g.Bindings = []string{"even"}; return g, nil }}); err != nil {
				f.t.Fatal(err)
			}
			var want []int64
			for i := 20; len(want) < 10; i += 2 {
				want = append(want, all[i])
			}
			return want
		}},
		{"exception due", func(f *fixture, _ *postgres.Driver, all []int64, first []driver.Lease, _ *time.Time) []int64 {
			fail := []driver.Failure{{Lease: first[3], Error: "boom", Due: f.now}}
			if got, err := f.drv.Fail(tctx(f.t), driver.FailParams{StreamID: f.stream.ID, Group: "g", Failures: fail, Now: f.now}); err != nil || len(got.Lost) != 0 {
				f.t.Fatalf("fail: lost %v, %v", got.Lost, err)
			}
			return append([]int64{all[3]}, all[20:29]...)
		}},
		{"leases expired", func(f *fixture, _ *postgres.Driver, all []int64, first []driver.Lease, at *time.Time) []int64 {
			// The first claim's are acked, the second claim's run out.
			if got, err := f.drv.Ack(tctx(f.t), driver.AckParams{StreamID: f.stream.ID, Group: "g", Leases: first, Now: f.now}); err != nil || len(got.Lost) != 0 {
				f.t.Fatalf("ack: lost %v, %v", got.Lost, err)
			}
			*at = f.now.Add(2 * time.Minute)
			return all[10:20]
		}},
	}
	for _, mode := range execModes {
		for _, tc := range changes {
			t.Run(mode.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				tr := &sentTracer{}
				f := newFixture(t, 1, append(slices.Clone(mode.opts), postgres.WithPoolConfig(func(c *pgxpool.Config) { c.ConnConfig.Tracer = tr }))...)
				other := postgres.Open(f.ns, mode.opts...)
				t.Cleanup(func() { _ = other.Close() })
				f.group("g", driver.GroupConfig{})
				rows := make([]driver.AppendRow, 60)
				for i := range rows {
					rows[i].RoutingKey = []string{"even", "odd"}[i%2]
				}
				all := f.appendRows(rows...)
				first, tok := f.claim("g", "h", 10, f.now, time.Minute, match)
				if !slices.Equal(ids(first.Deliveries), all[:10]) {
					t.Fatalf("first claim took %v", ids(first.Deliveries))
				}
				tr.take()
				second, _ := f.claim("g", "h", 10, f.now, time.Minute, match)
				if !slices.Equal(ids(second.Deliveries), all[10:20]) {
					t.Fatalf("second claim took %v", ids(second.Deliveries))
				}
				if sent := tr.take(); !oneTransaction(sent) {
					t.Fatalf("the claim after a full one sent %q; want one batch from BEGIN to COMMIT", sent)
				}
				at := f.now
				want := tc.before(f, other, all, leases(first.Deliveries, tok), &at)
				tr.take()
				next, _ := f.claim("g", "h", 10, at, time.Minute, match)
				sent := tr.take()
				if !slices.Equal(ids(next.Deliveries), want) {
					t.Errorf("the next claim took %v; want %v", ids(next.Deliveries), want)
				}
				if tc.name == "unchanged" {
					if !oneTransaction(sent) {
						t.Errorf("the next claim sent %q; want one batch from BEGIN to COMMIT", sent)
					}
				} else if len(sent) < 2 || len(sent[0]) < 3 || firstWord(sent[0][0]) != "begin" || firstWord(sent[1][0]) != "rollback" {
					// (A batch's statements are traced as their results
					// are read: up to the check that failed.)
					t.Errorf("the next claim sent %q; want a batch that begins a transaction, rolled back", sent)
				}
				for _, d := range next.Deliveries {
					if d.ID == all[3] && tc.name == "exception due" {
						continue
					}
					if d.Attempt != 1 && tc.name != "leases expired" {
						t.Errorf("row %d at attempt %d", d.ID, d.Attempt)
					}
				}
				if next.Group.Name != "g" {
					t.Errorf("the claim returned group %+v", next.Group)
				}
				// What the claim leased is stored as it would be without the
				// window: each is leased with the claim's token.
				for _, d := range next.Deliveries {
					if state, _, _ := f.exception("g", d.ID); state != "leased" {
						t.Errorf("row %d is %s after the claim", d.ID, state)
					}
				}
			})
		}
	}
}

// Over several partitions, a claim reads the window past a cursor only
// when it drew that partition as the next claim's start: claims of the
// backlog, some in one round trip, take every row once, in order within
// each partition.
func TestClaimInOneRoundTripPartitions(t *testing.T) {
	eachMode(t, func(t *testing.T, opts ...postgres.Option) {
		f := newFixture(t, 3, opts...)
		f.group("g", driver.GroupConfig{})
		var all [3][]int64
		for part := range all {
			all[part] = f.appendN(part, 45)
		}
		var got [3][]int64
		for n := 0; n < 30; n++ {
			res, _ := f.claim("g", "h", 10, f.now, time.Minute)
			if len(res.Deliveries) == 0 {
				break
			}
			for _, d := range res.Deliveries {
				got[d.Partition] = append(got[d.Partition], d.ID)
			}
		}
		for part := range all {
			if !slices.Equal(got[part], all[part]) {
				t.Errorf("partition %d: claimed %v; want %v", part, got[part], all[part])
			}
		}
	})
}
