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
	"github.com/sqlstreams/sqlstreams/driver/mysql"
)

type event struct {
	N int `json:"n"`
}

func (event) SchemaVersion() int { return 1 }

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func openClient(t testing.TB, drv *mysql.Driver) *sqlstreams.Client {
	t.Helper()
	c, err := sqlstreams.Open(testCtx(t), drv, sqlstreams.WithMaintenanceInterval(0), sqlstreams.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatalf("sqlstreams.Open: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// withParams adds DSN parameters (already escaped) to dsn.
func withParams(dsn, params string) string {
	if params == "" {
		return dsn
	}
	if strings.Contains(dsn, "?") {
		return dsn + "&" + params
	}
	return dsn + "?" + params
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

// TestMigrateConcurrently: processes starting at once apply the schema once.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for range 6 {
		wg.Go(func() {
			d := mysql.Open(dsn)
			defer d.Close()
			errs <- d.Migrate(testCtx(t))
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent Migrate: %v", err)
		}
	}
	db, _ := adminDB(t)
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM " + dbName(t, dsn) + ".sqlstreams_migration").Scan(&n); err != nil || n != mysql.MigrationCount() {
		t.Fatalf("migrations recorded: %d (%v), want %d", n, err, mysql.MigrationCount())
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
			// Due times compare in UTC too: a retry 300ms out is not due at
			// once and is due after.
			if err := ds[0].Retry(testCtx(t), 300*time.Millisecond, errors.New("later")); err != nil {
				t.Fatal(err)
			}
			if err := ds[1].Ack(testCtx(t)); err != nil {
				t.Fatal(err)
			}
			if again, err := cons.Claim(testCtx(t), 10); err != nil || len(again) != 0 {
				t.Fatalf("claim right after a 300ms retry: %d deliveries, %v; want none", len(again), err)
			}
			time.Sleep(350 * time.Millisecond)
			again, err := cons.Claim(testCtx(t), 10)
			if err != nil || len(again) != 1 || again[0].ID != ds[0].ID || again[0].Attempt != 2 {
				t.Fatalf("claim after the retry delay: %v, %v; want row %d at attempt 2", again, err, ds[0].ID)
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
