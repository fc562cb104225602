package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	_ "time/tzdata"

	gomysql "github.com/go-sql-driver/mysql"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/drivertest"
	"github.com/sqlstreams/sqlstreams/driver/mysql"
)

// event is the message these tests produce; testCtx their context.
type event = drivertest.Event

var testCtx = drivertest.Ctx

func openClient(t testing.TB, drv *mysql.Driver) *sqlstreams.Client {
	t.Helper()
	c, err := sqlstreams.Open(testCtx(t), drv, sqlstreams.WithMaintenanceInterval(0), sqlstreams.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatalf("sqlstreams.Open: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func dbName(t testing.TB, dsn string) string {
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.DBName
}

// drainIDs claims and acks until nothing is left, returning delivered ids.
func drainIDs[T sqlstreams.Versioned](t testing.TB, c *sqlstreams.Consumer[T]) []int64 {
	t.Helper()
	var ids []int64
	for {
		ds, err := c.Claim(testCtx(t), 100)
		if err != nil {
			t.Fatalf("claim: %v", err)
		}
		if len(ds) == 0 {
			return ids
		}
		if err := c.Ack(testCtx(t), ds...); err != nil {
			t.Fatalf("ack: %v", err)
		}
		for _, d := range ds {
			ids = append(ids, d.ID)
		}
	}
}

// TestOpenErrors: a bad DSN or an unreachable or refusing server fails at
// sqlstreams.Open with the reason.
func TestOpenErrors(t *testing.T) {
	t.Parallel()
	_, cfg := adminDB(t)
	wrongPassword := cfg.Clone()
	wrongPassword.User = "sqlstreams_no_such_user"
	wrongPassword.Passwd = "nope"
	for _, tc := range []struct {
		name, dsn, want string
	}{
		{"unparsable", "root@tcp(127.0.0.1:3306", "parse DSN"},
		{"no database", "root@tcp(127.0.0.1:3306)/", "names no database"},
		{"unreachable", "root@tcp(127.0.0.1:1)/test?timeout=2s", "connection refused"},
		{"refused login", wrongPassword.FormatDSN(), "Access denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sqlstreams.Open(testCtx(t), mysql.Open(tc.dsn))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("sqlstreams.Open(%q) = %v, want an error saying %q", tc.dsn, err, tc.want)
			}
			if strings.Contains(err.Error(), "nope") {
				t.Errorf("error shows the password: %v", err)
			}
		})
	}
}

// TestTimesAreUTC: whatever the DSN says about parseTime, loc or the
// session time zone, times are stored as UTC and read back right, also
// when ProduceTx runs in a transaction of a pool with another loc.
func TestTimesAreUTC(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		params string
	}{
		{"default", ""},
		{"no parseTime", "parseTime=false"},
		{"loc=Local", "loc=Local"},
		{"loc=Asia/Tokyo", "parseTime=true&loc=Asia%2FTokyo"},
		{"session time zone", "time_zone=%27-07%3A00%27&loc=America%2FNew_York"},
		{"no interpolation", "interpolateParams=false&loc=Asia%2FKolkata"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := withParams(newDatabase(t), tc.params)
			c := openClient(t, mysql.Open(dsn))
			stream := c.Stream[event]("times")
			before := time.Now().UTC().Truncate(time.Microsecond)
			info, err := stream.Create(testCtx(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			p, err := stream.Producer().Register(testCtx(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Produce(testCtx(t), event{N: 1}); err != nil {
				t.Fatal(err)
			}
			// ProduceTx in a transaction of a pool configured with a non-UTC loc.
			foreign, err := sql.Open("mysql", withParams(dsn, "parseTime=true&loc=Asia%2FTokyo"))
			if err != nil {
				t.Fatal(err)
			}
			defer foreign.Close()
			tx, err := foreign.BeginTx(testCtx(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.ProduceTx(testCtx(t), mysql.Tx(tx), event{N: 2}); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			after := time.Now().UTC()

			got, err := stream.Get(testCtx(t))
			if err != nil {
				t.Fatal(err)
			}
			inWindow := func(what string, at time.Time) {
				t.Helper()
				if at.Location() != time.UTC || at.Before(before) || at.After(after) {
					t.Errorf("%s = %v, want a UTC time between %v and %v", what, at, before, after)
				}
			}
			inWindow("stream CreatedAt", got.CreatedAt)
			if !got.CreatedAt.Equal(info.CreatedAt) {
				t.Errorf("Get says CreatedAt %v, Create said %v", got.CreatedAt, info.CreatedAt)
			}
			cons, err := stream.Consumer("g").Register(testCtx(t), &sqlstreams.ConsumerOptions{Backoff: func(int) time.Duration { return 300 * time.Millisecond }})
			if err != nil {
				t.Fatal(err)
			}
			ds, err := cons.Claim(testCtx(t), 10)
			if err != nil || len(ds) != 2 {
				t.Fatalf("claim: %d deliveries, %v; want 2", len(ds), err)
			}
			db, _ := adminDB(t)
			for _, d := range ds {
				inWindow(fmt.Sprintf("row %d ProducedAt", d.ID), d.ProducedAt)
				var stored string
				if err := db.QueryRow(fmt.Sprintf("SELECT DATE_FORMAT(produced_at, '%%Y-%%m-%%d %%H:%%i:%%s.%%f') FROM %s.message_log_%d WHERE id = ?",
					dbName(t, dsn), info.ID), d.ID).Scan(&stored); err != nil {
					t.Fatal(err)
				}
				if want := mysql.TimeString(d.ProducedAt); stored != want {
					t.Errorf("row %d stored produced_at %s, want the UTC wall clock %s", d.ID, stored, want)
				}
			}
			// Due times are stored and compared in UTC too: a retry a minute
			// out is stored due a minute after it was made (not hours off)
			// and is not due at once.
			retried := time.Now().UTC()
			if err := ds[0].Retry(testCtx(t), time.Minute, errors.New("later")); err != nil {
				t.Fatal(err)
			}
			retriedBy := time.Now().UTC()
			var dueText string
			if err := db.QueryRow(fmt.Sprintf("SELECT DATE_FORMAT(due_at, '%%Y-%%m-%%d %%H:%%i:%%s.%%f') FROM %s.delivery_exception WHERE msg_id = ?",
				dbName(t, dsn)), ds[0].ID).Scan(&dueText); err != nil {
				t.Fatal(err)
			}
			due, err := time.Parse("2006-01-02 15:04:05.000000", dueText)
			if err != nil {
				t.Fatal(err)
			}
			if lo, hi := retried.Add(time.Minute).Truncate(time.Microsecond), retriedBy.Add(time.Minute); due.Before(lo) || due.After(hi) {
				t.Errorf("a retry a minute out is stored due at %s UTC, want between %v and %v", dueText, lo, hi)
			}
			if again, err := cons.Claim(testCtx(t), 10); err != nil || len(again) != 0 {
				t.Fatalf("claim right after a retry a minute out: %d deliveries, %v; want none", len(again), err)
			}
			// And a retry 300ms out falls due (in a zone behind UTC it never
			// would): claims see it within the test's bound, at attempt 2.
			if err := ds[1].Retry(testCtx(t), 300*time.Millisecond, errors.New("soon")); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				again, err := cons.Claim(testCtx(t), 10)
				if err != nil {
					t.Fatal(err)
				}
				if len(again) > 0 {
					if len(again) != 1 || again[0].ID != ds[1].ID || again[0].Attempt != 2 {
						t.Fatalf("claim after the retry delay: %v; want row %d at attempt 2", again, ds[1].ID)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("a retry 300ms out was not due within 30s")
				}
			}
		})
	}
}

// TestProduceTx: a message produced in the caller's *sql.Tx commits and
// rolls back with the caller's own writes, is invisible before commit, and
// holds its partition until the transaction ends.
func TestProduceTx(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		commit bool
	}{
		{"commit", true},
		{"rollback", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drv := mysql.Open(newDatabase(t))
			c := openClient(t, drv)
			db := drv.DB()
			if _, err := db.ExecContext(testCtx(t), `CREATE TABLE orders (id INT PRIMARY KEY)`); err != nil {
				t.Fatal(err)
			}
			p, err := c.Stream[event]("tx").Producer().Register(testCtx(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			cons, err := c.Stream[event]("tx").Consumer("g").Register(testCtx(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			tx, err := db.BeginTx(testCtx(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(testCtx(t), `INSERT INTO orders (id) VALUES (1)`); err != nil {
				t.Fatal(err)
			}
			txID, err := p.ProduceTx(testCtx(t), mysql.Tx(tx), event{N: 1})
			if err != nil {
				t.Fatal(err)
			}
			if ids := drainIDs(t, cons); len(ids) != 0 {
				t.Fatalf("claimed %v before the transaction ended", ids)
			}
			// Another producer of the partition waits for the transaction.
			type result struct {
				id  int64
				err error
			}
			other := make(chan result, 1)
			go func() {
				id, err := p.Produce(testCtx(t), event{N: 2})
				other <- result{id, err}
			}()
			select {
			case r := <-other:
				t.Fatalf("a producer of the same partition finished (id %d, %v) while the transaction held it", r.id, r.err)
			case <-time.After(300 * time.Millisecond):
			}
			if tc.commit {
				err = tx.Commit()
			} else {
				err = tx.Rollback()
			}
			if err != nil {
				t.Fatal(err)
			}
			r := <-other
			if r.err != nil || r.id <= txID {
				t.Fatalf("waiting producer got id %d, %v; want an id above the transaction's %d", r.id, r.err, txID)
			}
			want := []int64{r.id}
			if tc.commit {
				want = []int64{txID, r.id}
			}
			if got := drainIDs(t, cons); !slices.Equal(got, want) {
				t.Errorf("group got %v, want %v", got, want)
			}
			var orders int
			if err := db.QueryRow(`SELECT COUNT(*) FROM orders`).Scan(&orders); err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{true: 1, false: 0}[tc.commit]; orders != want {
				t.Errorf("the caller's own write: %d rows, want %d", orders, want)
			}
		})
	}
}

// TestBatchIDs: ids returned by ProduceBatch name the rows produced, in
// input order, across partitions and INSERT chunks, whether ids are
// computed from LAST_INSERT_ID or read back (innodb_autoinc_lock_mode=2).
func TestBatchIDs(t *testing.T) {
	t.Parallel()
	for _, readBack := range []bool{false, true} {
		t.Run(fmt.Sprintf("readBack=%v", readBack), func(t *testing.T) {
			drv := mysql.Open(newDatabase(t))
			if readBack {
				mysql.ForceReadBack(drv)
			}
			c := openClient(t, drv)
			stream := c.Stream[event]("batch")
			if _, err := stream.Create(testCtx(t), &sqlstreams.StreamOptions{Partitions: 4}); err != nil {
				t.Fatal(err)
			}
			p, err := stream.Producer().Register(testCtx(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			msgs := make([]sqlstreams.Message[event], 250)
			for i := range msgs {
				msgs[i] = sqlstreams.NewMessage(event{N: i}, sqlstreams.Key(fmt.Sprintf("key-%d", i)))
			}
			ids, err := p.ProduceBatch(testCtx(t), msgs...)
			if err != nil {
				t.Fatal(err)
			}
			cons, err := stream.Consumer("g").Register(testCtx(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			byID := map[int64]int{}
			for {
				ds, err := cons.Claim(testCtx(t), 100)
				if err != nil {
					t.Fatal(err)
				}
				if len(ds) == 0 {
					break
				}
				for _, d := range ds {
					byID[d.ID] = d.Value.N
				}
				if err := cons.Ack(testCtx(t), ds...); err != nil {
					t.Fatal(err)
				}
			}
			if len(byID) != len(msgs) {
				t.Fatalf("claimed %d rows, want %d", len(byID), len(msgs))
			}
			for i, id := range ids {
				if n, ok := byID[id]; !ok || n != i {
					t.Fatalf("ProduceBatch returned id %d for message %d, but row %d holds message %d", id, i, id, n)
				}
			}
		})
	}
}

// TestNoSkipSlowProducers (C5): many producer transactions, some slow,
// some rolled back, on one and on several partitions, while a group
// claims concurrently: every committed row is delivered, no rolled-back row.
func TestNoSkipSlowProducers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		partitions int
		readBack   bool
	}{
		{1, false},
		{3, false},
		{3, true},
	} {
		t.Run(fmt.Sprintf("partitions=%d/readBack=%v", tc.partitions, tc.readBack), func(t *testing.T) {
			drv := mysql.Open(newDatabase(t))
			if tc.readBack {
				mysql.ForceReadBack(drv)
			}
			c := openClient(t, drv)
			stream := c.Stream[event]("c5")
			if _, err := stream.Create(testCtx(t), &sqlstreams.StreamOptions{Partitions: tc.partitions}); err != nil {
				t.Fatal(err)
			}
			p, err := stream.Producer().Register(testCtx(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			cons, err := stream.Consumer("g").Register(testCtx(t), &sqlstreams.ConsumerOptions{LeaseDuration: time.Minute})
			if err != nil {
				t.Fatal(err)
			}

			var mu sync.Mutex
			committed := map[int64]bool{}
			rolledBack := map[int64]bool{}
			type commit struct {
				ids []int64
				at  int
			}
			var commits []commit
			var seq atomic.Int64

			delivered := map[int64]int{}
			stopClaim := make(chan struct{})
			claimDone := make(chan error, 1)
			go func() {
				for {
					ds, err := cons.Claim(testCtx(t), 20)
					if err != nil {
						claimDone <- err
						return
					}
					for _, d := range ds {
						delivered[d.ID]++
					}
					if len(ds) > 0 {
						if err := cons.Ack(testCtx(t), ds...); err != nil {
							claimDone <- err
							return
						}
						continue
					}
					select {
					case <-stopClaim:
						claimDone <- nil
						return
					case <-time.After(2 * time.Millisecond):
					}
				}
			}()

			const producers, rounds = 10, 8
			var wg sync.WaitGroup
			errs := make(chan error, producers)
			for w := range producers {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(w), 7))
					for r := range rounds {
						tx, err := drv.DB().BeginTx(testCtx(t), nil)
						if err != nil {
							errs <- err
							return
						}
						// One key per transaction: several ProduceTx calls in one
						// transaction lock partitions in call order (see the
						// package documentation).
						n := 1 + rng.IntN(3)
						key := sqlstreams.Key(fmt.Sprintf("k%d", rng.IntN(50)))
						var ids []int64
						for i := range n {
							var id int64
							id, err = p.ProduceTx(testCtx(t), mysql.Tx(tx), event{N: w*1000 + r*10 + i}, key)
							if err != nil {
								break
							}
							ids = append(ids, id)
						}
						if err != nil {
							_ = tx.Rollback()
							errs <- err
							return
						}
						// Some transactions are slow: later ids commit first.
						if w%3 == 0 {
							time.Sleep(time.Duration(20+rng.IntN(60)) * time.Millisecond)
						} else {
							time.Sleep(time.Duration(rng.IntN(5)) * time.Millisecond)
						}
						rollback := rng.IntN(5) == 0
						if rollback {
							err = tx.Rollback()
						} else {
							err = tx.Commit()
						}
						if err != nil {
							errs <- err
							return
						}
						mu.Lock()
						for _, id := range ids {
							if rollback {
								rolledBack[id] = true
							} else {
								committed[id] = true
							}
						}
						if !rollback {
							commits = append(commits, commit{ids: ids, at: int(seq.Add(1))})
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("producer: %v", err)
			}
			// Let the claimer catch up, then stop it.
			deadline := time.Now().Add(30 * time.Second)
			for {
				time.Sleep(50 * time.Millisecond)
				if time.Now().After(deadline) {
					break
				}
				var unread int
				h, err := c.Stream[sqlstreams.RawPayload]("c5").Health(testCtx(t))
				if err != nil {
					t.Fatal(err)
				}
				if vh, ok := h.Version(1); ok {
					for _, g := range vh.Groups {
						unread += int(g.Unread + g.Leased)
					}
				}
				if unread == 0 {
					break
				}
			}
			close(stopClaim)
			if err := <-claimDone; err != nil {
				t.Fatalf("claimer: %v", err)
			}
			var missing, ghost []int64
			for id := range committed {
				if delivered[id] == 0 {
					missing = append(missing, id)
				}
			}
			for id := range delivered {
				if !committed[id] {
					ghost = append(ghost, id)
				}
			}
			slices.Sort(missing)
			slices.Sort(ghost)
			if len(missing) > 0 {
				t.Errorf("%d committed rows were never delivered: %v", len(missing), missing)
			}
			if len(ghost) > 0 {
				t.Errorf("%d delivered rows were never committed (rolled back: %v): %v", len(ghost), len(rolledBack), ghost)
			}
			outOfOrder := 0
			for i, a := range commits {
				for _, b := range commits[i+1:] {
					if slices.Max(a.ids) > slices.Min(b.ids) {
						outOfOrder++
					}
				}
			}
			t.Logf("%d committed rows in %d transactions, %d rolled back, %d transaction pairs committed out of id order (across partitions)",
				len(committed), len(commits), len(rolledBack), outOfOrder)
		})
	}
}

// proxy is a TCP relay in front of the server that can cut every
// connection and refuse new ones, like a server restart seen from a client.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	down   bool
}

func startProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			down := p.down
			p.mu.Unlock()
			if down {
				c.Close()
				continue
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[s] = struct{}{}, struct{}{}
			p.mu.Unlock()
			go func() { io.Copy(s, c); s.Close(); c.Close() }()
			go func() { io.Copy(c, s); s.Close(); c.Close() }()
		}
	}()
	return p
}

// cut closes every relayed connection.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

func (p *proxy) setDown(down bool) {
	p.mu.Lock()
	p.down = down
	p.mu.Unlock()
	if down {
		p.cut()
	}
}

func proxied(t *testing.T, dsn string) (string, *proxy) {
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, cfg.Addr)
	cfg.Addr = p.ln.Addr().String()
	return cfg.FormatDSN(), p
}

// TestLostConnections: connections cut at random instants never make a
// Produce report success for a row that did not commit, and a running
// consumer rides out a server outage and goes on after it.
func TestLostConnections(t *testing.T) {
	t.Parallel()
	t.Run("produce", func(t *testing.T) {
		dsn := newDatabase(t)
		viaProxy, px := proxied(t, dsn)
		c := openClient(t, mysql.Open(viaProxy))
		p, err := c.Stream[event]("cuts").Producer().Register(testCtx(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		var cutter sync.WaitGroup
		cutter.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Duration(5+rand.IntN(20)) * time.Millisecond):
					px.cut()
				}
			}
		})
		var mu sync.Mutex
		var ok []int64
		var failed int
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for i := range 60 {
					var ids []int64
					var err error
					if i%2 == 0 {
						var id int64
						id, err = p.Produce(testCtx(t), event{N: w*1000 + i})
						ids = []int64{id}
					} else {
						ids, err = p.ProduceBatch(testCtx(t), sqlstreams.NewMessage(event{N: w*1000 + i}), sqlstreams.NewMessage(event{N: w*1000 + i}))
					}
					mu.Lock()
					if err != nil {
						failed++
					} else {
						ok = append(ok, ids...)
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		close(stop)
		cutter.Wait()

		direct := openClient(t, mysql.Open(dsn))
		cons, err := direct.Stream[event]("cuts").Consumer("check").Register(testCtx(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		got := map[int64]bool{}
		for _, id := range drainIDs(t, cons) {
			got[id] = true
		}
		for _, id := range ok {
			if !got[id] {
				t.Errorf("Produce reported row %d as written, but it is not in the log", id)
			}
		}
		t.Logf("%d rows reported written, %d produce calls failed, %d rows in the log", len(ok), failed, len(got))
	})

	t.Run("consumer outage", func(t *testing.T) {
		dsn := newDatabase(t)
		viaProxy, px := proxied(t, dsn)
		direct := openClient(t, mysql.Open(dsn))
		p, err := direct.Stream[event]("outage").Producer().Register(testCtx(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		c := openClient(t, mysql.Open(viaProxy))
		cons, err := c.Stream[event]("outage").Consumer("g").Register(testCtx(t), &sqlstreams.ConsumerOptions{PollInterval: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		handled := map[int]bool{}
		ctx, cancel := context.WithCancel(context.Background())
		runErr := make(chan error, 1)
		go func() {
			runErr <- cons.Run(ctx, func(ctx context.Context, d sqlstreams.Delivery[event]) error {
				mu.Lock()
				handled[d.Value.N] = true
				mu.Unlock()
				return nil
			})
		}()
		count := func() int { mu.Lock(); defer mu.Unlock(); return len(handled) }
		waitFor := func(n int, within time.Duration) {
			t.Helper()
			deadline := time.Now().Add(within)
			for count() < n {
				if time.Now().After(deadline) {
					t.Fatalf("handled %d of %d messages after %v", count(), n, within)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		for i := range 20 {
			if _, err := p.Produce(testCtx(t), event{N: i}); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(20, 20*time.Second)
		px.setDown(true) // the "server" goes away
		for i := 20; i < 40; i++ {
			if _, err := p.Produce(testCtx(t), event{N: i}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(1500 * time.Millisecond)
		px.setDown(false) // and comes back
		waitFor(40, 30*time.Second)
		cancel()
		if err := <-runErr; err != nil {
			t.Fatalf("Run returned %v", err)
		}
	})
}

// errorTexts returns the text of err and of every error it wraps.
func errorTexts(err error) []string {
	var out []string
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		out = append(out, e.Error())
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, w := range u.Unwrap() {
				walk(w)
			}
		}
	}
	walk(err)
	return out
}

// TestSecretsNeverShown: no error shows the DSN's password, nor any error
// it wraps: not for a DSN that does not parse (go-sql-driver's parser
// quotes pieces of it), not for a refused connection or login.
func TestSecretsNeverShown(t *testing.T) {
	t.Parallel()
	const pw = "Sup3r-S3cret-pw"
	for _, tc := range []struct {
		name, dsn string
		kind      error
	}{
		{"no slash", "root:" + pw + "@tcp(127.0.0.1:3306", sqlstreams.ErrUnavailable},
		{"unterminated address", "root:" + pw + "@tcp(127.0.0.1:3306/test", sqlstreams.ErrUnavailable},
		{"slash in the password, no database", "root:Sup3r/S3cret-pw@tcp(127.0.0.1:3306)", sqlstreams.ErrUnavailable},
		{"bad escape in the database", "root:" + pw + "@tcp(127.0.0.1:3306)/te%zzst", sqlstreams.ErrUnavailable},
		{"bad parameter", "root:" + pw + "@tcp(127.0.0.1:3306)/test?parseTime=" + pw, sqlstreams.ErrUnavailable},
		{"URL instead of a DSN", "mysql://root:" + pw + "@127.0.0.1:3306/test", sqlstreams.ErrUnavailable},
		{"URL with a slash in the password", "mysql://root:Sup3r/S3cret-pw@127.0.0.1:3306", sqlstreams.ErrUnavailable},
		{"wrong password", "root:" + pw + "@tcp(127.0.0.1:3306)/test", sqlstreams.ErrUnavailable},
		{"refused port", "root:" + pw + "@tcp(127.0.0.1:1)/test?timeout=2s", sqlstreams.ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sqlstreams.Open(testCtx(t), mysql.Open(tc.dsn), sqlstreams.WithMaintenanceInterval(0))
			if err == nil {
				t.Fatalf("sqlstreams.Open succeeded")
			}
			if !errors.Is(err, tc.kind) {
				t.Errorf("error %v; want %v", err, tc.kind)
			}
			for _, text := range errorTexts(err) {
				for _, secret := range []string{pw, "Sup3r", "S3cret"} {
					if strings.Contains(text, secret) {
						t.Fatalf("an error shows the password (%q): %s", secret, text)
					}
				}
			}
			t.Logf("%v", err)
		})
	}
}

// cutProxy relays to the server and, once armed, cuts the client's
// connection right after it has passed on a client packet for which cut
// returns true, before the server's answer can come back; the server's side
// stays open a moment, so that the server runs what it received.
type cutProxy struct {
	cut   func(payload []byte) bool
	armed atomic.Bool
}

func startCutProxy(t *testing.T, dsn string, cut func([]byte) bool) (string, *cutProxy) {
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{cut: cut}
	target := cfg.Addr
	cfg.Addr = drivertest.Serve(t, func(c net.Conn) {
		s, err := net.Dial("tcp", target)
		if err != nil {
			c.Close()
			return
		}
		go func() { io.Copy(c, s); c.Close(); s.Close() }()
		p.relay(c, s)
	})
	return cfg.FormatDSN(), p
}

// relay copies client packets to the server one at a time.
func (p *cutProxy) relay(c, s net.Conn) {
	defer c.Close()
	defer s.Close()
	head := make([]byte, 4)
	for {
		if _, err := io.ReadFull(c, head); err != nil {
			return
		}
		n := int(head[0]) | int(head[1])<<8 | int(head[2])<<16
		body := make([]byte, n)
		if _, err := io.ReadFull(c, body); err != nil {
			return
		}
		cut := p.armed.Load() && p.cut(body) && p.armed.CompareAndSwap(true, false)
		if cut {
			c.Close()
		}
		if _, err := s.Write(append(head, body...)); err != nil {
			return
		}
		if cut {
			time.Sleep(100 * time.Millisecond) // let the server run it
			return
		}
	}
}

func isQuery(prefix string) func([]byte) bool {
	return func(b []byte) bool {
		return len(b) > 0 && b[0] == 0x03 && strings.HasPrefix(strings.ToUpper(string(b[1:])), prefix)
	}
}

// TestCutConnection: a connection lost after COMMIT was sent makes Produce
// fail with ErrOutcomeUnknown (here the row did commit); one lost before
// COMMIT has written nothing, so the driver runs its transaction again and
// the row is written once. On MariaDB, where an append is one INSERT that
// commits on its own, a connection lost after that INSERT was sent is an
// unknown outcome too.
func TestCutConnection(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		cut     func([]byte) bool
		unknown bool
		inTx    bool // mysql.AppendInTx; otherwise MariaDB appends in one statement
	}{
		{"during COMMIT", isQuery("COMMIT"), true, true},
		{"during INSERT", isQuery("INSERT INTO MESSAGE_LOG_"), false, true},
		{"during the INSERT that commits", isQuery("INSERT INTO MESSAGE_LOG_"), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := newDatabase(t)
			direct := openClient(t, mysql.Open(dsn))
			unknown := tc.unknown
			if !tc.inTx && !mysql.IsMariaDB(direct.Driver().(*mysql.Driver)) {
				// MySQL appends in a transaction: a cut INSERT has not
				// committed.
				unknown = false
			}
			stream := direct.Stream[event]("cut")
			if _, err := stream.Create(testCtx(t), nil); err != nil {
				t.Fatal(err)
			}
			proxied, px := startCutProxy(t, dsn, tc.cut)
			drv := mysql.Open(proxied)
			if tc.inTx {
				mysql.AppendInTx(drv)
			}
			viaProxy := openClient(t, drv)
			p, err := viaProxy.Stream[event]("cut").Producer().Register(testCtx(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			px.armed.Store(true)
			_, err = p.Produce(testCtx(t), event{N: 1})
			if unknown {
				if !errors.Is(err, sqlstreams.ErrOutcomeUnknown) {
					t.Fatalf("produce cut during COMMIT: %v; want ErrOutcomeUnknown", err)
				}
			} else if err != nil {
				t.Fatalf("produce cut before COMMIT: %v; want the driver to run it again", err)
			}
			cons, err := stream.Consumer("check").Register(testCtx(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			if ids := drainIDs(t, cons); len(ids) != 1 {
				t.Errorf("the log holds %d rows; want 1", len(ids))
			}
		})
	}
}

// settleFixture is a stream with rows 1..n of which a group has leased
// some with one token and some with another, through the driver itself,
// each lease a row of its own.
type settleFixture struct {
	drv    *mysql.Driver
	db     *sql.DB
	name   string
	stream driver.StreamConfig
	group  string
	now    time.Time
	ids    []int64
}

func newSettleFixture(t *testing.T, noReturning bool, n int) *settleFixture {
	t.Helper()
	dsn := newDatabase(t)
	drv := mysql.Open(dsn)
	if noReturning {
		mysql.ForceNoReturning(drv)
	}
	t.Cleanup(func() { drv.Close() })
	ctx := testCtx(t)
	if err := drv.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if !mysql.IsMariaDB(drv) {
		t.Log("not MariaDB: both runs take the MySQL path")
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	st, err := drv.CreateStream(ctx, driver.CreateStreamParams{Config: driver.StreamConfig{Name: "settle", Partitions: 1, CreatedAt: now}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drv.RegisterGroup(ctx, driver.RegisterGroupParams{Group: driver.GroupConfig{StreamID: st.ID, Name: "g", SchemaVersion: 1, CreatedAt: now}}); err != nil {
		t.Fatal(err)
	}
	rows := make([]driver.AppendRow, n)
	for i := range rows {
		rows[i] = driver.AppendRow{SchemaVersion: 1, RoutingKey: "", Payload: []byte(fmt.Sprintf(`{"n":%d}`, i)), ProducedAt: now}
	}
	ids, err := drv.Append(ctx, driver.AppendParams{Stream: st, Rows: rows})
	if err != nil {
		t.Fatal(err)
	}
	db, _ := adminDB(t)
	return &settleFixture{drv: drv, db: db, name: dbName(t, dsn), stream: st, group: "g", now: now, ids: ids}
}

// claim leases up to limit rows with token, and gives each lease a row of
// its own (LeaseRowsOfTheirOwn), which the tests read and which the
// driver's settles of leases it does not know as batch members take
// (members of batches settle alike: C20 and C21 in the conformance suite).
func (f *settleFixture) claim(t *testing.T, token string, limit int) []driver.Delivery {
	t.Helper()
	res, err := f.drv.Claim(testCtx(t), driver.ClaimParams{Stream: f.stream, Group: f.group, Member: driver.Member{SchemaVersion: 1},
		Limit: limit, Token: token, Holder: "holder-" + token, Now: f.now, LeaseUntil: f.now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if err := mysql.LeaseRowsOfTheirOwn(testCtx(t), f.drv, f.drv.DB(), f.stream.ID, f.group, token); err != nil {
		t.Fatal(err)
	}
	return res.Deliveries
}

type exceptionRow struct {
	state, token, err string
	attempt           int
	due               string
}

func (f *settleFixture) exceptions(t *testing.T) map[int64]exceptionRow {
	t.Helper()
	out := map[int64]exceptionRow{}
	rows, err := f.db.Query(`SELECT msg_id, state, COALESCE(lease_token, ''), COALESCE(last_error, ''), attempt,
		DATE_FORMAT(due_at, '%Y-%m-%d %H:%i:%s.%f') FROM ` + f.name + `.delivery_exception ORDER BY msg_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var e exceptionRow
		if err := rows.Scan(&id, &e.state, &e.token, &e.err, &e.attempt, &e.due); err != nil {
			t.Fatal(err)
		}
		out[id] = e
	}
	return out
}

// TestSettlePerDelivery (C20 in the driver): each settle applies to every
// delivery still leased with its own token, leaves the others as they are
// and names exactly those, on MariaDB's path (DELETE ... RETURNING) and on
// MySQL's (a transaction that locks the deliveries first), for one
// delivery (one statement) and for several.
func TestSettlePerDelivery(t *testing.T) {
	t.Parallel()
	for _, noReturning := range []bool{false, true} {
		t.Run(fmt.Sprintf("noReturning=%v", noReturning), func(t *testing.T) {
			t.Parallel()
			f := newSettleFixture(t, noReturning, 12)
			a := f.claim(t, "tokA", 6) // rows 0..5
			b := f.claim(t, "tokB", 6) // rows 6..11
			if len(a) != 6 || len(b) != 6 {
				t.Fatalf("claimed %d and %d; want 6 and 6", len(a), len(b))
			}
			id := f.ids
			ctx := testCtx(t)
			lease := func(i int, tok string) driver.Lease { return driver.Lease{ID: id[i], Token: tok} }
			check := func(what string, got driver.SettleResult, err error, lost ...int64) {
				t.Helper()
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if !slices.Equal(got.Lost, lost) {
					t.Errorf("%s: lost %v; want %v", what, got.Lost, lost)
				}
			}

			// Ack: rows 0 and 6 with their tokens, row 1 with B's token (lost),
			// a row never claimed... there is none: use an id past the log.
			res, err := f.drv.Ack(ctx, driver.AckParams{StreamID: f.stream.ID, Group: f.group, Now: f.now,
				Leases: []driver.Lease{lease(0, "tokA"), lease(1, "tokB"), lease(6, "tokB"), {ID: id[11] + 100, Token: "tokA"}}})
			check("ack", res, err, id[1], id[11]+100)
			ex := f.exceptions(t)
			if _, ok := ex[id[0]]; ok {
				t.Errorf("row %d still has an exception after its ack", id[0])
			}
			if _, ok := ex[id[6]]; ok {
				t.Errorf("row %d still has an exception after its ack", id[6])
			}
			if e := ex[id[1]]; e.state != "leased" || e.token != "tokA" {
				t.Errorf("row %d after an ack with the wrong token: %+v; want it leased with tokA", id[1], e)
			}
			// Acking again: now lost.
			res, err = f.drv.Ack(ctx, driver.AckParams{StreamID: f.stream.ID, Group: f.group, Now: f.now, Leases: []driver.Lease{lease(0, "tokA")}})
			check("ack again", res, err, id[0])

			// Fail: per failure values; row 7 with A's token is lost.
			due1, due2 := f.now.Add(time.Minute), f.now.Add(2*time.Minute)
			res, err = f.drv.Fail(ctx, driver.FailParams{StreamID: f.stream.ID, Group: f.group, Now: f.now, Failures: []driver.Failure{
				{Lease: lease(1, "tokA"), Error: "e1", Due: due1},
				{Lease: lease(2, "tokA"), Error: "e2", Due: due2},
				{Lease: lease(3, "tokA"), Error: "dead", Dead: true},
				{Lease: lease(7, "tokA"), Error: "x", Due: due1},
				{Lease: lease(8, "tokB"), Error: "e1", Due: due1},
			}})
			check("fail", res, err, id[7])
			ex = f.exceptions(t)
			for _, w := range []struct {
				i               int
				state, err, due string
				token           string
			}{
				{1, "delayed", "e1", mysql.TimeString(due1), ""},
				{2, "delayed", "e2", mysql.TimeString(due2), ""},
				{3, "dead", "dead", mysql.TimeString(f.now), ""},
				{7, "leased", "", mysql.TimeString(f.now.Add(time.Hour)), "tokB"},
				{8, "delayed", "e1", mysql.TimeString(due1), ""},
			} {
				if e := ex[id[w.i]]; e.state != w.state || e.err != w.err || e.due != w.due || e.token != w.token {
					t.Errorf("row %d after fail: %+v; want state %s, error %q, due %s, token %q", id[w.i], e, w.state, w.err, w.due, w.token)
				}
			}

			// Extend: rows 4 (A) and 9 (B) with their tokens, row 1 (no longer
			// leased) lost. One delivery alone takes the one-statement path.
			until := f.now.Add(3 * time.Hour)
			res, err = f.drv.Extend(ctx, driver.ExtendParams{StreamID: f.stream.ID, Group: f.group, Now: f.now, Until: until,
				Leases: []driver.Lease{lease(4, "tokA"), lease(1, "tokA"), lease(9, "tokB")}})
			check("extend", res, err, id[1])
			res, err = f.drv.Extend(ctx, driver.ExtendParams{StreamID: f.stream.ID, Group: f.group, Now: f.now, Until: until,
				Leases: []driver.Lease{lease(10, "tokA")}})
			check("extend one with the wrong token", res, err, id[10])
			ex = f.exceptions(t)
			for _, i := range []int{4, 9} {
				if e := ex[id[i]]; e.due != mysql.TimeString(until) || e.state != "leased" {
					t.Errorf("row %d after extend: %+v; want leased until %s", id[i], e, mysql.TimeString(until))
				}
			}
			if e := ex[id[10]]; e.due != mysql.TimeString(f.now.Add(time.Hour)) {
				t.Errorf("row %d after an extend with the wrong token: %+v; want its lease unchanged", id[10], e)
			}

			// Release: rows 5 and 10 with their tokens, row 2 (delayed) lost.
			res, err = f.drv.Release(ctx, driver.ReleaseParams{StreamID: f.stream.ID, Group: f.group, Now: f.now,
				Leases: []driver.Lease{lease(5, "tokA"), lease(2, "tokA"), lease(10, "tokB")}})
			check("release", res, err, id[2])
			ex = f.exceptions(t)
			for _, i := range []int{5, 10} {
				if e := ex[id[i]]; e.state != "delayed" || e.attempt != 0 || e.token != "" || e.due != mysql.TimeString(f.now) {
					t.Errorf("row %d after release: %+v; want delayed, due now, attempt 0", id[i], e)
				}
			}
			// Release by claim token: what B still holds (9, 11).
			res, err = f.drv.Release(ctx, driver.ReleaseParams{StreamID: f.stream.ID, Group: f.group, Now: f.now, ClaimToken: "tokB"})
			check("release by claim token", res, err)
			ex = f.exceptions(t)
			for _, i := range []int{9, 11} {
				if e := ex[id[i]]; e.state != "delayed" || e.token != "" {
					t.Errorf("row %d after releasing tokB: %+v; want delayed", id[i], e)
				}
			}
			if e := ex[id[7]]; e.state != "delayed" {
				t.Errorf("row %d after releasing tokB: %+v; want delayed", id[7], e)
			}
			if e := ex[id[4]]; e.state != "leased" || e.token != "tokA" {
				t.Errorf("row %d after releasing tokB: %+v; want still leased with tokA", id[4], e)
			}
		})
	}
}

// TestSettleLargeBatch: more deliveries than one statement names, on both
// paths.
func TestSettleLargeBatch(t *testing.T) {
	t.Parallel()
	for _, noReturning := range []bool{false, true} {
		t.Run(fmt.Sprintf("noReturning=%v", noReturning), func(t *testing.T) {
			t.Parallel()
			const n = 1200
			f := newSettleFixture(t, noReturning, n)
			got := f.claim(t, "tok", n)
			if len(got) != n {
				t.Fatalf("claimed %d; want %d", len(got), n)
			}
			leases := make([]driver.Lease, 0, n)
			var lost []int64
			for i, d := range got {
				tok := "tok"
				if i%100 == 7 {
					tok = "other"
					lost = append(lost, d.ID)
				}
				leases = append(leases, driver.Lease{ID: d.ID, Token: tok})
			}
			until := f.now.Add(2 * time.Hour)
			res, err := f.drv.Extend(testCtx(t), driver.ExtendParams{StreamID: f.stream.ID, Group: f.group, Leases: leases, Until: until, Now: f.now})
			if err != nil || !slices.Equal(res.Lost, lost) {
				t.Fatalf("extend: lost %d (%v); want %d", len(res.Lost), err, len(lost))
			}
			res, err = f.drv.Ack(testCtx(t), driver.AckParams{StreamID: f.stream.ID, Group: f.group, Leases: leases, Now: f.now})
			if err != nil || !slices.Equal(res.Lost, lost) {
				t.Fatalf("ack: lost %d (%v); want %d", len(res.Lost), err, len(lost))
			}
			if ex := f.exceptions(t); len(ex) != len(lost) {
				t.Errorf("%d exceptions left; want the %d acked with the wrong token", len(ex), len(lost))
			}
		})
	}
}

// TestHolder: every lease records the client that took it: the main claim,
// the exception claim, and rows deferred to members that can decode them.
func TestHolder(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	quiet := sqlstreams.WithLogger(slog.New(slog.DiscardHandler))
	a, err := sqlstreams.Open(testCtx(t), mysql.Open(dsn), sqlstreams.WithMaintenanceInterval(0), sqlstreams.WithIdentity("pod-a"), quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := sqlstreams.Open(testCtx(t), mysql.Open(dsn), sqlstreams.WithMaintenanceInterval(0), sqlstreams.WithIdentity("pod-b"), quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p, err := a.Stream[event]("holder").Producer().Register(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Produce(testCtx(t), event{N: 1}); err != nil {
		t.Fatal(err)
	}
	opts := &sqlstreams.ConsumerOptions{LeaseDuration: 100 * time.Millisecond}
	ca, err := a.Stream[event]("holder").Consumer("g").Register(testCtx(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := b.Stream[event]("holder").Consumer("g").Register(testCtx(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	db, _ := adminDB(t)
	// The delivery's one lease: its batch after the main claim, a row of
	// its own after the exception claim.
	holder := func() string {
		var h string
		name := dbName(t, dsn)
		if err := db.QueryRow("SELECT COALESCE(holder, '') FROM " + name + ".delivery_exception UNION ALL SELECT COALESCE(holder, '') FROM " + name + ".delivery_batch").Scan(&h); err != nil {
			t.Fatal(err)
		}
		return h
	}
	if ds, err := ca.Claim(testCtx(t), 1); err != nil || len(ds) != 1 {
		t.Fatalf("claim: %v, %v", ds, err)
	}
	if h := holder(); h != "pod-a" {
		t.Errorf("holder after the main claim: %q; want pod-a", h)
	}
	time.Sleep(150 * time.Millisecond)
	if ds, err := cb.Claim(testCtx(t), 1); err != nil || len(ds) != 1 || ds[0].Attempt != 2 {
		t.Fatalf("claim of the expired lease: %v, %v", ds, err)
	}
	if h := holder(); h != "pod-b" {
		t.Errorf("holder after the exception claim: %q; want pod-b", h)
	}
}

// TestClaimFence (C19): a change to a group's configuration waits for
// claims in flight, which hold a cursor lock; a claim that finds every
// cursor locked still hands out due exceptions, and with nothing due
// returns nothing.
func TestClaimFence(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	c := openClient(t, mysql.Open(dsn))
	stream := c.Stream[event]("fence")
	p, err := stream.Producer().Register(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := stream.Consumer("g").Register(testCtx(t), &sqlstreams.ConsumerOptions{Bindings: []string{"eu.#"}, LeaseDuration: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	id, err := p.Produce(testCtx(t), event{N: 1}, sqlstreams.RoutingKey("eu.x"))
	if err != nil {
		t.Fatal(err)
	}
	if ds, err := cons.Claim(testCtx(t), 1); err != nil || len(ds) != 1 {
		t.Fatalf("claim: %v, %v", ds, err)
	}
	// A claim in flight: a transaction holding the group's only cursor.
	db, _ := adminDB(t)
	tx, err := db.BeginTx(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var pos int64
	if err := tx.QueryRow("SELECT position FROM " + dbName(t, dsn) + ".group_cursor WHERE group_name = 'g' FOR UPDATE").Scan(&pos); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond) // the lease expires
	// Every cursor locked, an exception due: it is still claimed.
	ds, err := cons.Claim(testCtx(t), 10)
	if err != nil || len(ds) != 1 || ds[0].ID != id || ds[0].Attempt != 2 {
		t.Fatalf("claim with every cursor locked and a lease expired: %v, %v; want row %d at attempt 2", ds, err, id)
	}
	if err := ds[0].Ack(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if ds, err := cons.Claim(testCtx(t), 10); err != nil || len(ds) != 0 {
		t.Fatalf("claim with every cursor locked and nothing due: %v, %v; want nothing", ds, err)
	}
	// A registration that widens the bindings waits for the claim.
	done := make(chan error, 1)
	go func() {
		_, err := c.Stream[event]("fence").Consumer("g").Register(testCtx(t), &sqlstreams.ConsumerOptions{Bindings: []string{"us.#"}})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("the registration finished (%v) while a claim held a cursor", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("registration: %v", err)
	}
	us, err := p.Produce(testCtx(t), event{N: 2}, sqlstreams.RoutingKey("us.x"))
	if err != nil {
		t.Fatal(err)
	}
	if got := drainIDs(t, cons); !slices.Equal(got, []int64{us}) {
		t.Errorf("after the group was widened, the old member claimed %v; want [%d]", got, us)
	}
}

// TestPartitionLockTimeout: an append that waits for a partition held by
// an open ProduceTx fails after the lock timeout with ErrConflict naming the
// partition, and is not run again.
func TestPartitionLockTimeout(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	drv := mysql.Open(dsn)
	c := openClient(t, drv)
	p, err := c.Stream[event]("locks").Producer().Register(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := drv.DB().BeginTx(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := p.ProduceTx(testCtx(t), mysql.Tx(tx), event{N: 1}); err != nil {
		t.Fatal(err)
	}
	waiter, err := openClient(t, mysql.Open(dsn, mysql.WithLockTimeout(time.Second))).Stream[event]("locks").Producer().Register(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = waiter.Produce(testCtx(t), event{N: 2})
	waited := time.Since(start)
	if !errors.Is(err, sqlstreams.ErrConflict) || !strings.Contains(err.Error(), "partition 0") || !strings.Contains(err.Error(), "ProduceTx") {
		t.Fatalf("produce while a ProduceTx holds the partition: %v; want ErrConflict naming partition 0 and ProduceTx", err)
	}
	var me *gomysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1205 {
		t.Errorf("the server's error is not inside: %v", err)
	}
	if waited < 900*time.Millisecond || waited > 2500*time.Millisecond {
		t.Errorf("the produce waited %v with a lock timeout of 1s; want about 1s, tried once", waited)
	}
	// ProduceTx waiting in a second caller transaction: ErrConflict too, and
	// the caller's transaction is told to roll back.
	tx2, err := drv.DB().BeginTx(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx2.Rollback()
	_, err = waiter.ProduceTx(testCtx(t), mysql.Tx(tx2), event{N: 3})
	if !errors.Is(err, sqlstreams.ErrConflict) || !strings.Contains(err.Error(), "roll this transaction back") {
		t.Errorf("ProduceTx while another ProduceTx holds the partition: %v; want ErrConflict telling to roll back", err)
	}
}

// oldLogDDL is the log table of releases before migration 0003, with a
// JSON check on payload.
const oldLogDDL = "CREATE TABLE %s.message_log_%d (" + `
	id BIGINT NOT NULL AUTO_INCREMENT, ` + "`partition`" + ` INT NOT NULL, schema_version INT NOT NULL,
	schema_revision INT NOT NULL DEFAULT 0, msg_key VARBINARY(255) NULL, routing_key VARCHAR(255) NOT NULL,
	compaction_rank BIGINT NOT NULL, payload LONGTEXT NOT NULL CHECK (JSON_VALID(payload)),
	headers LONGTEXT NULL CHECK (headers IS NULL OR JSON_VALID(headers)), produced_at DATETIME(6) NOT NULL,
	PRIMARY KEY (id), KEY by_partition (` + "`partition`" + `, id), KEY by_version (schema_version, schema_revision)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`

// TestMigrateExistingStreams: a database written by a release before
// migration 0003 gets the holder and high-water columns, and its logs lose
// the JSON check on payload (MariaDB's refuses JSON nested deeper than 32),
// keeping their rows; running the migration again changes nothing.
func TestMigrateExistingStreams(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	name := dbName(t, dsn)
	old := mysql.Open(dsn)
	if err := mysql.MigrateTo(testCtx(t), old, 2); err != nil {
		t.Fatal(err)
	}
	old.Close()
	db, _ := adminDB(t)
	now := mysql.TimeString(time.Now())
	for _, stmt := range []string{
		fmt.Sprintf("INSERT INTO %s.stream_config (id, name, partitions, compacted, created_at) VALUES (7, 'old', 1, FALSE, '%s')", name, now),
		fmt.Sprintf("INSERT INTO %s.stream_partition (stream_id, `partition`) VALUES (7, 0)", name),
		fmt.Sprintf(oldLogDDL, name, 7),
		fmt.Sprintf(`INSERT INTO %s.message_log_7 (`+"`partition`"+`, schema_version, routing_key, compaction_rank, payload, produced_at) VALUES (0, 1, '', 0, '{"n":1}', '%s')`, name, now),
		// A stream whose log table went missing is passed over.
		fmt.Sprintf("INSERT INTO %s.stream_config (id, name, partitions, compacted, created_at) VALUES (8, 'lost', 1, FALSE, '%s')", name, now),
		fmt.Sprintf("INSERT INTO %s.stream_partition (stream_id, `partition`) VALUES (8, 0)", name),
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	deep := strings.Repeat("[", 100) + strings.Repeat("]", 100)
	if _, err := db.Exec(fmt.Sprintf("INSERT INTO %s.message_log_7 (`partition`, schema_version, routing_key, compaction_rank, payload, produced_at) VALUES (0, 1, '', 0, ?, ?)", name), deep, now); err == nil {
		t.Log("this server's JSON_VALID accepts JSON nested 100 deep")
	}
	checks := func() []string {
		var out []string
		rows, err := db.Query(`SELECT CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = ?`, name)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(c, "payload") {
				out = append(out, c)
			}
		}
		return out
	}
	if len(checks()) == 0 {
		t.Fatal("the old log has no payload check to drop")
	}
	for range 2 {
		drv := mysql.Open(dsn)
		if err := drv.Migrate(testCtx(t)); err != nil {
			t.Fatalf("migrate: %v", err)
		}
		drv.Close()
		if got := checks(); len(got) != 0 {
			t.Fatalf("payload checks left after the migration: %v", got)
		}
		for _, col := range []string{"delivery_exception.holder", "stream_partition.high_water"} {
			table, column, _ := strings.Cut(col, ".")
			var n int
			if err := db.QueryRow(`SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COLUMN_NAME = ?`,
				name, table, column).Scan(&n); err != nil || n != 1 {
				t.Fatalf("column %s: %d (%v)", col, n, err)
			}
		}
		// As if the migration had died before recording itself.
		if _, err := db.Exec("DELETE FROM " + name + ".sqlstreams_migration WHERE version = 3"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(fmt.Sprintf("INSERT INTO %s.message_log_7 (`partition`, schema_version, routing_key, compaction_rank, payload, produced_at) VALUES (0, 1, '', 0, ?, ?)", name),
		strings.Repeat("[", 1000)+strings.Repeat("]", 1000), now); err != nil {
		t.Errorf("a payload nested 1000 deep after the migration: %v", err)
	}
	c := openClient(t, mysql.Open(dsn))
	cons, err := c.Stream[sqlstreams.RawPayload]("old").Consumer("g").Register(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := cons.Claim(testCtx(t), 10)
	if err != nil || len(ds) < 2 || string(ds[0].Value.Data) != `{"n":1}` {
		t.Fatalf("claim from the migrated log: %v, %v", ds, err)
	}
	if h, err := c.Stream[sqlstreams.RawPayload]("old").Health(testCtx(t)); err != nil || h.HighWater != ds[len(ds)-1].ID {
		t.Errorf("health of the migrated stream: high water %d (%v); want %d", h.HighWater, err, ds[len(ds)-1].ID)
	}
}
