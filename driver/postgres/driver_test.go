package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/drivertest"
	"github.com/sqlstreams/sqlstreams/driver/postgres"
)

// event is the message these tests produce; tctx their context.
type event = drivertest.Event

var tctx = drivertest.Ctx

func open(t testing.TB, ns string, opts ...postgres.Option) *sqlstreams.Client {
	t.Helper()
	c, err := sqlstreams.Open(tctx(t), postgres.Open(ns, opts...), sqlstreams.WithMaintenanceInterval(0),
		sqlstreams.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func admin(t testing.TB) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(tctx(t), baseURL())
	if err != nil {
		t.Fatalf("postgres: cannot reach the test server: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func withParams(t testing.TB, base string, params map[string]string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	for k, v := range params {
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

func randomName(prefix string) string { return drivertest.RandomName(prefix, 5) }

// A wrong URL, database, user or permission fails at sqlstreams.Open with
// the server's own reason.
func TestOpenErrors(t *testing.T) {
	t.Parallel()
	ns := newSchema(t, nil)
	conn := admin(t)
	role := randomName("sqlstreams_noperm_")
	if _, err := conn.Exec(tctx(t), `CREATE ROLE `+role+` LOGIN`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = conn.Exec(context.Background(), `DROP ROLE IF EXISTS `+role) })
	noUsage, _ := url.Parse(ns)
	noUsage.User = url.User(role)
	// A schema the role may use but not create in: the server's own reason.
	noCreate, _ := url.Parse(newSchema(t, nil))
	noCreate.User = url.User(role)
	if _, err := conn.Exec(tctx(t), `GRANT USAGE ON SCHEMA `+noCreate.Query().Get("search_path")+` TO `+role); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), `REVOKE ALL ON SCHEMA `+noCreate.Query().Get("search_path")+` FROM `+role)
	})

	missingDB, _ := url.Parse(baseURL())
	missingDB.Path = "/" + randomName("nodb_")

	cases := []struct {
		name string
		url  string
		want string
	}{
		{"unparsable URL", "postgres://%zz", "postgres:"},
		{"missing database", missingDB.String(), "does not exist"},
		{"unknown user", withParams(t, baseURL(), map[string]string{"user": randomName("nobody_")}), "does not exist"},
		{"no schema on search_path", withParams(t, baseURL(), map[string]string{"search_path": randomName("missing_")}), "search_path"},
		{"no usage on schema", noUsage.String(), "permission denied for schema"},
		{"no create on schema", noCreate.String(), "permission denied for schema"},
		{"nothing listening", "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2", "127.0.0.1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := sqlstreams.Open(tctx(t), postgres.Open(tc.url))
			if err == nil {
				c.Close()
				t.Fatalf("Open succeeded, want an error containing %q", tc.want)
			}
			t.Log(err)
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open error %q does not contain %q", err, tc.want)
			}
		})
	}
}

// ProduceTx writes inside the caller's pgx.Tx: consumers see the message
// exactly when the business write commits, in both exec modes.
func TestProduceTx(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name string
		opts []postgres.Option
	}{{"default", nil}, {"simple-protocol", []postgres.Option{postgres.WithSimpleProtocol()}}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			ns := newSchema(t, nil)
			c := open(t, ns, mode.opts...)
			pool := c.Driver().(*postgres.Driver).Pool()
			if _, err := pool.Exec(tctx(t), `CREATE TABLE orders (id int PRIMARY KEY)`); err != nil {
				t.Fatal(err)
			}
			p, err := c.Stream[event]("orders.placed").Producer().Register(tctx(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			cons, err := c.Stream[event]("orders.placed").Consumer("g").Register(tctx(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			cases := []struct {
				name   string
				commit bool
				opts   pgx.TxOptions
			}{
				{"commit", true, pgx.TxOptions{}},
				{"rollback", false, pgx.TxOptions{}},
				{"commit repeatable read", true, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}},
				{"commit serializable", true, pgx.TxOptions{IsoLevel: pgx.Serializable}},
				{"rollback serializable", false, pgx.TxOptions{IsoLevel: pgx.Serializable}},
			}
			for i, tc := range cases {
				tx, err := pool.BeginTx(tctx(t), tc.opts)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tx.Exec(tctx(t), `INSERT INTO orders (id) VALUES ($1)`, i); err != nil {
					t.Fatal(err)
				}
				id, err := p.ProduceTx(tctx(t), postgres.Tx(tx), event{N: i}, sqlstreams.Key(fmt.Sprint(i)))
				if err != nil {
					t.Fatalf("%s: ProduceTx: %v", tc.name, err)
				}
				if ds, err := cons.Claim(tctx(t), 10); err != nil || len(ds) != 0 {
					t.Fatalf("%s: before commit a claim got %d deliveries (err %v), want none", tc.name, len(ds), err)
				}
				if tc.commit {
					err = tx.Commit(tctx(t))
				} else {
					err = tx.Rollback(tctx(t))
				}
				if err != nil {
					t.Fatal(err)
				}
				ds, err := cons.Claim(tctx(t), 10)
				if err != nil {
					t.Fatal(err)
				}
				var orders int
				_ = pool.QueryRow(tctx(t), `SELECT count(*) FROM orders WHERE id = $1`, i).Scan(&orders)
				switch {
				case tc.commit && (len(ds) != 1 || ds[0].ID != id || ds[0].Value.N != i || orders != 1):
					t.Errorf("%s: after commit got %d deliveries and %d orders, want row %d and its order", tc.name, len(ds), orders, id)
				case !tc.commit && (len(ds) != 0 || orders != 0):
					t.Errorf("%s: after rollback got %d deliveries and %d orders, want none", tc.name, len(ds), orders)
				}
				if len(ds) > 0 {
					if err := cons.Ack(tctx(t), ds...); err != nil {
						t.Fatal(err)
					}
				}
			}
			if _, err := p.ProduceTx(tctx(t), foreignTx{}, event{}); !errors.Is(err, sqlstreams.ErrForeignTx) {
				t.Errorf("ProduceTx with another driver's transaction: %v, want ErrForeignTx", err)
			}
		})
	}
}

type foreignTx struct{}

func (foreignTx) DriverName() string { return "sqlite" }

// C5 under real concurrency: many producer transactions, some slow, some
// rolled back, committing out of id order across partitions, while several
// consumers of one group claim the whole time. Every committed row is
// delivered, no rolled-back row is, and a claim returns each partition's
// rows in id order.
func TestNoSkipUnderConcurrency(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		partitions int
		producers  int
		consumers  int
		perProd    int
		simple     bool
	}{
		{"1 partition", 1, 8, 2, 25, false},
		{"3 partitions", 3, 12, 3, 20, false},
		{"3 partitions simple protocol", 3, 8, 3, 15, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var opts []postgres.Option
			if tc.simple {
				opts = append(opts, postgres.WithSimpleProtocol())
			}
			ns := newSchema(t, nil)
			pc := open(t, ns, append(opts, postgres.WithPoolConfig(func(c *pgxpool.Config) { c.MaxConns = int32(tc.producers + 2) }))...)
			cc := open(t, ns, opts...)
			if _, err := pc.Stream[event]("c5").Create(tctx(t), &sqlstreams.StreamOptions{Partitions: tc.partitions}); err != nil {
				t.Fatal(err)
			}
			p, err := pc.Stream[event]("c5").Producer().Register(tctx(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			pool := pc.Driver().(*postgres.Driver).Pool()

			var mu sync.Mutex
			committed, rolledBack := map[int64]bool{}, map[int64]bool{}
			delivered := map[int64]int{}
			var orderErrs []string

			stop := make(chan struct{})
			var consumers sync.WaitGroup
			for range tc.consumers {
				cons, err := cc.Stream[event]("c5").Consumer("g").Register(tctx(t), &sqlstreams.ConsumerOptions{LeaseDuration: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				consumers.Go(func() {
					for {
						ds, err := cons.Claim(tctx(t), 7)
						if err != nil {
							t.Errorf("claim: %v", err)
							return
						}
						mu.Lock()
						last := map[int]int64{}
						for _, d := range ds {
							delivered[d.ID]++
							if d.ID <= last[d.Partition] {
								orderErrs = append(orderErrs, fmt.Sprintf("partition %d: one claim returned row %d after row %d", d.Partition, d.ID, last[d.Partition]))
							}
							last[d.Partition] = d.ID
						}
						mu.Unlock()
						if len(ds) > 0 {
							if err := cons.Ack(tctx(t), ds...); err != nil {
								t.Errorf("ack: %v", err)
								return
							}
							continue
						}
						select {
						case <-stop:
							return
						case <-time.After(time.Millisecond):
						}
					}
				})
			}

			var producers sync.WaitGroup
			for w := range tc.producers {
				producers.Go(func() {
					rng := mrand.New(mrand.NewPCG(uint64(w), 5))
					for i := range tc.perProd {
						key := sqlstreams.Key(fmt.Sprintf("k%d-%d", w, i))
						switch mode := rng.IntN(10); {
						case mode < 6: // a slow transaction, sometimes rolled back
							tx, err := pool.Begin(tctx(t))
							if err != nil {
								t.Error(err)
								return
							}
							id, err := p.ProduceTx(tctx(t), postgres.Tx(tx), event{N: i}, key)
							if err != nil {
								t.Errorf("ProduceTx: %v", err)
								_ = tx.Rollback(tctx(t))
								return
							}
							time.Sleep(time.Duration(rng.IntN(8)) * time.Millisecond)
							rollback := mode == 0
							if rollback {
								err = tx.Rollback(tctx(t))
							} else {
								err = tx.Commit(tctx(t))
							}
							if err != nil {
								t.Errorf("end tx: %v", err)
								return
							}
							mu.Lock()
							if rollback {
								rolledBack[id] = true
							} else {
								committed[id] = true
							}
							mu.Unlock()
						case mode < 8:
							id, err := p.Produce(tctx(t), event{N: i}, key)
							if err != nil {
								t.Errorf("Produce: %v", err)
								return
							}
							mu.Lock()
							committed[id] = true
							mu.Unlock()
						default:
							msgs := []sqlstreams.Message[event]{
								sqlstreams.NewMessage(event{N: i}, key),
								sqlstreams.NewMessage(event{N: i}, sqlstreams.Key(fmt.Sprintf("b%d-%d", w, i))),
								sqlstreams.NewMessage(event{N: i}),
							}
							ids, err := p.ProduceBatch(tctx(t), msgs...)
							if err != nil {
								t.Errorf("ProduceBatch: %v", err)
								return
							}
							mu.Lock()
							for _, id := range ids {
								committed[id] = true
							}
							mu.Unlock()
						}
					}
				})
			}
			producers.Wait()
			// Let the consumers catch up, then stop them.
			deadline := time.Now().Add(time.Minute)
			for {
				mu.Lock()
				n := 0
				for id := range committed {
					if delivered[id] > 0 {
						n++
					}
				}
				mu.Unlock()
				if n == len(committed) || time.Now().After(deadline) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			close(stop)
			consumers.Wait()

			mu.Lock()
			defer mu.Unlock()
			var missing, ghosts []int64
			for id := range committed {
				if delivered[id] == 0 {
					missing = append(missing, id)
				}
			}
			for id := range delivered {
				if rolledBack[id] || !committed[id] {
					ghosts = append(ghosts, id)
				}
			}
			slices.Sort(missing)
			slices.Sort(ghosts)
			if len(missing) > 0 {
				t.Errorf("%d of %d committed rows were never delivered (skipped by the cursor): %v", len(missing), len(committed), missing)
			}
			if len(ghosts) > 0 {
				t.Errorf("rows delivered that were rolled back or never reported committed: %v", ghosts)
			}
			for id, n := range delivered {
				if n > 1 {
					t.Errorf("row %d delivered %d times while its lease held", id, n)
				}
			}
			for _, e := range orderErrs {
				t.Error(e)
			}
			if len(rolledBack) == 0 {
				t.Errorf("no transaction rolled back; the test did not exercise rollbacks")
			}
			t.Logf("%d rows committed, %d rolled back, all committed rows delivered once", len(committed), len(rolledBack))
		})
	}
}

// A connection lost before commit loses the row and reports an error; it
// never reports success for a row that is not committed. Consumers keep
// running through dropped connections.
func TestConnectionLoss(t *testing.T) {
	t.Parallel()
	app := randomName("sqlstreams_test_")
	ns := withParams(t, newSchema(t, nil), map[string]string{"application_name": app})
	c := open(t, ns)
	conn := admin(t)
	killAll := func() int {
		var n int
		if err := conn.QueryRow(tctx(t), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()`, app).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	p, err := c.Stream[event]("loss").Producer().Register(tctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := c.Stream[event]("loss").Consumer("g").Register(tctx(t), &sqlstreams.ConsumerOptions{PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}

	// The transaction's connection dies between the produce and the commit.
	tx, err := c.Driver().(*postgres.Driver).Pool().Begin(tctx(t))
	if err != nil {
		t.Fatal(err)
	}
	lost, err := p.ProduceTx(tctx(t), postgres.Tx(tx), event{N: -1})
	if err != nil {
		t.Fatal(err)
	}
	if killAll() == 0 {
		t.Fatal("no backend to terminate")
	}
	if err := tx.Commit(tctx(t)); err == nil {
		t.Fatal("commit on a terminated connection succeeded")
	}

	// A consumer runs on while every connection is dropped again and again.
	var mu sync.Mutex
	handled := map[int64]bool{}
	rctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- cons.Run(rctx, func(ctx context.Context, d sqlstreams.Delivery[event]) error {
			mu.Lock()
			handled[d.ID] = true
			mu.Unlock()
			return nil
		})
	}()
	var produced []int64
	for i := range 30 {
		if i%10 == 5 {
			killAll()
		}
		id, err := p.Produce(tctx(t), event{N: i})
		if err != nil {
			// Reported failures are allowed mid-kill; reported successes must be delivered.
			continue
		}
		produced = append(produced, id)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := 0
		for _, id := range produced {
			if handled[id] {
				n++
			}
		}
		ghost := handled[lost]
		mu.Unlock()
		if ghost {
			t.Fatalf("row %d from a transaction whose commit failed was delivered", lost)
		}
		if n == len(produced) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumer handled %d of %d rows after connection losses", n, len(produced))
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run returned %v", err)
	}
	// Each kill fails the next use of every pooled connection once (the
	// driver cannot tell whether such a statement ran, so it does not retry
	// appends); most produces must still succeed.
	if len(produced) < 15 {
		t.Errorf("only %d of 30 produces succeeded around the kills", len(produced))
	}
}

// NOTIFY wakes a consumer in another client long before its poll interval.
func TestNotifyWakesOtherClients(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name string
		opts []postgres.Option
	}{{"default", nil}, {"simple-protocol", []postgres.Option{postgres.WithSimpleProtocol()}}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			ns := newSchema(t, nil)
			producerClient := open(t, ns, mode.opts...)
			consumerClient := open(t, ns, mode.opts...)
			p, err := producerClient.Stream[event]("wake").Producer().Register(tctx(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			cons, err := consumerClient.Stream[event]("wake").Consumer("g").Register(tctx(t), &sqlstreams.ConsumerOptions{PollInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan time.Time, 16)
			rctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				_ = cons.Run(rctx, func(ctx context.Context, d sqlstreams.Delivery[event]) error {
					got <- time.Now()
					return nil
				})
			}()
			time.Sleep(300 * time.Millisecond) // let the listener LISTEN and the first poll pass
			for i := range 3 {
				start := time.Now()
				if _, err := p.Produce(tctx(t), event{N: i}); err != nil {
					t.Fatal(err)
				}
				select {
				case at := <-got:
					t.Logf("woken after %v", at.Sub(start))
				case <-time.After(10 * time.Second):
					t.Fatalf("message %d not handled within 10s: no wake-up arrived (poll interval is 1h)", i)
				}
			}
			// ProduceTx: the wake-up follows the caller's commit.
			pool := producerClient.Driver().(*postgres.Driver).Pool()
			for i := range 3 {
				start := time.Now()
				tx, err := pool.Begin(tctx(t))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := p.ProduceTx(tctx(t), postgres.Tx(tx), event{N: 10 + i}); err != nil {
					t.Fatal(err)
				}
				if err := tx.Commit(tctx(t)); err != nil {
					t.Fatal(err)
				}
				select {
				case at := <-got:
					t.Logf("ProduceTx: woken after %v", at.Sub(start))
				case <-time.After(10 * time.Second):
					t.Fatalf("ProduceTx message %d not handled within 10s: no wake-up arrived (poll interval is 1h)", i)
				}
			}
		})
	}
}

var _ driver.Notifier = (*postgres.Driver)(nil)

// An append's wait for a partition lock that an open ProduceTx holds ends
// after WithLockTimeout in ErrConflict naming the partition, also inside a
// caller's transaction; the bound applies to the lock statement only, so a
// caller's transaction keeps its own lock_timeout.
func TestLockTimeout(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name string
		opts []postgres.Option
	}{{"default", nil}, {"simple-protocol", []postgres.Option{postgres.WithSimpleProtocol()}}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			ns := newSchema(t, nil)
			c := open(t, ns, append(mode.opts, postgres.WithLockTimeout(300*time.Millisecond))...)
			pool := c.Driver().(*postgres.Driver).Pool()
			p, err := c.Stream[event]("locks").Producer().Register(tctx(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			holder, err := pool.Begin(tctx(t))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.ProduceTx(tctx(t), postgres.Tx(holder), event{N: 1}); err != nil {
				t.Fatal(err)
			}
			for _, inTx := range []bool{false, true} {
				start := time.Now()
				if inTx {
					tx, berr := pool.Begin(tctx(t))
					if berr != nil {
						t.Fatal(berr)
					}
					_, err = p.ProduceTx(tctx(t), postgres.Tx(tx), event{N: 2})
					_ = tx.Rollback(tctx(t))
				} else {
					_, err = p.Produce(tctx(t), event{N: 2})
				}
				waited := time.Since(start)
				t.Log(err)
				if !errors.Is(err, sqlstreams.ErrConflict) || !strings.Contains(err.Error(), "partition 0") || !strings.Contains(err.Error(), "ProduceTx") {
					t.Errorf("produce (in a transaction: %v) while another transaction holds the partition: %v; want ErrConflict naming partition 0 and ProduceTx", inTx, err)
				}
				if waited > 5*time.Second {
					t.Errorf("the produce waited %v with a lock timeout of 300ms", waited)
				}
			}
			if err := holder.Rollback(tctx(t)); err != nil {
				t.Fatal(err)
			}
			// The caller's own lock_timeout, local or from the session, is
			// what it was after a ProduceTx.
			for _, local := range []string{"", "7s"} {
				tx, err := pool.Begin(tctx(t))
				if err != nil {
					t.Fatal(err)
				}
				var before, after string
				if local != "" {
					if _, err := tx.Exec(tctx(t), `SET LOCAL lock_timeout = '`+local+`'`); err != nil {
						t.Fatal(err)
					}
				}
				if err := tx.QueryRow(tctx(t), `SELECT current_setting('lock_timeout')`).Scan(&before); err != nil {
					t.Fatal(err)
				}
				if _, err := p.ProduceTx(tctx(t), postgres.Tx(tx), event{N: 3}); err != nil {
					t.Fatal(err)
				}
				if err := tx.QueryRow(tctx(t), `SELECT current_setting('lock_timeout')`).Scan(&after); err != nil {
					t.Fatal(err)
				}
				if err := tx.Commit(tctx(t)); err != nil {
					t.Fatal(err)
				}
				if before != after {
					t.Errorf("lock_timeout was %q before ProduceTx and %q after it", before, after)
				}
			}
		})
	}
}

// An append to a destroyed stream, or to one whose partition rows are gone,
// fails with ErrStreamNotFound and writes nothing.
func TestAppendToMissingPartitions(t *testing.T) {
	t.Parallel()
	ns := newSchema(t, nil)
	c := open(t, ns)
	pool := c.Driver().(*postgres.Driver).Pool()
	p, err := c.Stream[event]("gone").Producer().Register(tctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := c.Stream[event]("gone").Get(tctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(tctx(t), `DELETE FROM stream_partition WHERE stream_id = $1`, cfg.ID); err != nil {
		t.Fatal(err)
	}
	for _, inTx := range []bool{false, true} {
		if inTx {
			tx, berr := pool.Begin(tctx(t))
			if berr != nil {
				t.Fatal(berr)
			}
			_, err := p.ProduceTx(tctx(t), postgres.Tx(tx), event{N: 1})
			if !errors.Is(err, sqlstreams.ErrStreamNotFound) {
				t.Errorf("ProduceTx without partition rows: %v; want ErrStreamNotFound", err)
			}
			// Even a caller that commits after the error writes nothing.
			_ = tx.Commit(tctx(t))
		} else if _, err := p.Produce(tctx(t), event{N: 1}); !errors.Is(err, sqlstreams.ErrStreamNotFound) {
			t.Errorf("Produce without partition rows: %v; want ErrStreamNotFound", err)
		}
	}
	var n int
	if err := pool.QueryRow(tctx(t), `SELECT count(*) FROM message_log_`+fmt.Sprint(cfg.ID)).Scan(&n); err != nil || n != 0 {
		t.Errorf("the log holds %d rows (%v); want none", n, err)
	}
	if err := c.Stream[event]("gone").Destroy(tctx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Produce(tctx(t), event{N: 2}); !errors.Is(err, sqlstreams.ErrStreamNotFound) {
		t.Errorf("Produce to a destroyed stream: %v; want ErrStreamNotFound", err)
	}
}

// Claims record the claiming client's identity with every lease they take.
func TestHolder(t *testing.T) {
	t.Parallel()
	ns := newSchema(t, nil)
	c, err := sqlstreams.Open(tctx(t), postgres.Open(ns), sqlstreams.WithMaintenanceInterval(0), sqlstreams.WithIdentity("worker-7:42"),
		sqlstreams.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	p, err := c.Stream[event]("holder").Producer().Register(tctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := c.Stream[event]("holder").Consumer("g").Register(tctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Produce(tctx(t), event{N: 1}); err != nil {
		t.Fatal(err)
	}
	ds, err := cons.Claim(tctx(t), 10)
	if err != nil || len(ds) != 1 {
		t.Fatalf("claim: %d deliveries, %v", len(ds), err)
	}
	var holder string
	// The holder is read from the delivery's lease: the claim's batch.
	if err := c.Driver().(*postgres.Driver).Pool().QueryRow(tctx(t), `SELECT holder FROM delivery_batch WHERE $1 = ANY(ids)`, ds[0].ID).Scan(&holder); err != nil {
		t.Fatal(err)
	}
	if holder != "worker-7:42" {
		t.Errorf("holder %q; want the client's identity", holder)
	}
}

// Migration 0003 converts the logs of streams created before it: payloads
// from jsonb to bytea (reading back what jsonb returned), compaction ranks to
// bigint; and adds the lease holder and the high-water mark.
func TestMigrationConvertsExistingStreams(t *testing.T) {
	t.Parallel()
	ns := newSchema(t, nil)
	conn, err := pgx.Connect(tctx(t), ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	for _, f := range []string{"migrations/0001_init.sql", "migrations/0002_registry.sql"} {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.PgConn().Exec(tctx(t), string(body)).ReadAll(); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	// A compacted stream as CreateStream made it before 0003, with a head.
	var id int64
	if err := conn.QueryRow(tctx(t), `INSERT INTO stream_config (name, partitions, compacted, created_at) VALUES ('old', 1, true, now()) RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	log := fmt.Sprintf("message_log_%d", id)
	if _, err := conn.Exec(tctx(t), `
		CREATE TABLE sqlstreams_migration (version integer PRIMARY KEY, applied_at timestamptz NOT NULL);
		INSERT INTO sqlstreams_migration VALUES (1, now()), (2, now());
		CREATE TABLE `+log+` (id bigserial PRIMARY KEY, partition integer NOT NULL, schema_version integer NOT NULL,
			schema_revision integer NOT NULL DEFAULT 0, msg_key text, routing_key text NOT NULL, compaction_rank integer NOT NULL,
			payload jsonb NOT NULL, headers jsonb, produced_at timestamptz NOT NULL);
		CREATE INDEX `+log+`_partition ON `+log+` (partition, id);
		INSERT INTO stream_partition VALUES (`+fmt.Sprint(id)+`, 0);
		INSERT INTO `+log+` (partition, schema_version, msg_key, routing_key, compaction_rank, payload, headers, produced_at)
			VALUES (0, 1, 'k', '', 5, '{"s":"é",  "n":1}', '{"h":"v"}', now());
		INSERT INTO compaction_head VALUES (`+fmt.Sprint(id)+`, 'k', 1, 1, 5);`); err != nil {
		t.Fatal(err)
	}
	c := open(t, ns)
	cons, err := c.Stream[sqlstreams.RawPayload]("old").Consumer("g").Register(tctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := cons.Claim(tctx(t), 10)
	if err != nil || len(ds) != 1 {
		t.Fatalf("claim after migrating: %d deliveries, %v", len(ds), err)
	}
	if d := ds[0]; string(d.Value.Data) != `{"n": 1, "s": "é"}` || d.CompactionRank != 5 || d.Headers["h"] != "v" || d.Key != "k" {
		t.Errorf("migrated row reads %s at rank %d with headers %v; want jsonb's text at rank 5", d.Value.Data, d.CompactionRank, d.Headers)
	}
	// A rank beyond 32 bits wins the head.
	p, err := c.Stream[sqlstreams.RawPayload]("old").Producer().Register(tctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	next, err := p.Produce(tctx(t), sqlstreams.RawPayload{Version: 1, Data: []byte(`{"n":2}`)}, sqlstreams.Key("k"), sqlstreams.CompactionRank(1<<40))
	if err != nil {
		t.Fatal(err)
	}
	if err := cons.Ack(tctx(t), ds...); err != nil {
		t.Fatal(err)
	}
	if ds, err = cons.Claim(tctx(t), 10); err != nil || len(ds) != 1 || ds[0].ID != next || ds[0].CompactionRank != 1<<40 || string(ds[0].Value.Data) != `{"n":2}` {
		t.Fatalf("claim of the new head: %+v, %v; want row %d at rank 2^40", ds, err, next)
	}
	types := map[string]string{}
	rows, err := conn.Query(tctx(t), `SELECT table_name || '.' || column_name, data_type FROM information_schema.columns
		WHERE table_schema = current_schema() AND column_name IN ('payload', 'compaction_rank', 'holder', 'high_water')`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var col, typ string
		if err := rows.Scan(&col, &typ); err != nil {
			t.Fatal(err)
		}
		types[col] = typ
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for col, want := range map[string]string{log + ".payload": "bytea", log + ".compaction_rank": "bigint", "compaction_head.compaction_rank": "bigint",
		"delivery_exception.holder": "text", "stream_partition.high_water": "bigint"} {
		if types[col] != want {
			t.Errorf("%s is %q; want %s", col, types[col], want)
		}
	}
}

// Settling applies to each delivery leased with its own token, whatever
// order and mix of tokens a call brings, and reports exactly the others as
// lost; Fail stores each failure's own state, due time and error. The
// deliveries failed, extended or released alone become rows of their own,
// which the test reads; the others stay members of their claim's batch.
func TestSettlePerDelivery(t *testing.T) {
	t.Parallel()
	for _, mode := range execModes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			c := open(t, newSchema(t, nil), mode.opts...)
			drv := c.Driver().(*postgres.Driver)
			p, err := c.Stream[event]("settle").Producer().Register(tctx(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Stream[event]("settle").Consumer("g").Register(tctx(t), nil); err != nil {
				t.Fatal(err)
			}
			msgs := make([]sqlstreams.Message[event], 12)
			for i := range msgs {
				msgs[i] = sqlstreams.NewMessage(event{N: i})
			}
			if _, err := p.ProduceBatch(tctx(t), msgs...); err != nil {
				t.Fatal(err)
			}
			info, err := c.Stream[event]("settle").Get(tctx(t))
			if err != nil {
				t.Fatal(err)
			}
			stream := driver.StreamConfig{ID: info.ID, Name: info.Name, Partitions: info.Partitions}
			now := time.Now().UTC()
			claim := func(token string, n int) []driver.Delivery {
				res, err := drv.Claim(tctx(t), driver.ClaimParams{Stream: stream, Group: "g", Member: driver.Member{SchemaVersion: 1}, Limit: n,
					Token: token, Holder: "h", Now: now, LeaseUntil: now.Add(time.Minute)})
				if err != nil || len(res.Deliveries) != n {
					t.Fatalf("claim: %d deliveries, %v", len(res.Deliveries), err)
				}
				return res.Deliveries
			}
			a, b := claim("tok-a", 6), claim("tok-b", 6)
			lease := func(d driver.Delivery, tok string) driver.Lease { return driver.Lease{ID: d.ID, Token: tok} }
			state := func(id int64) (st string, due time.Time, lastErr string, token *string) {
				if err := drv.Pool().QueryRow(tctx(t), `SELECT state, due_at, COALESCE(last_error, ''), lease_token FROM delivery_exception WHERE msg_id = $1
					UNION ALL SELECT 'leased', lease_until, '', lease_token FROM delivery_batch WHERE $1 = ANY(ids)`, id).
					Scan(&st, &due, &lastErr, &token); err != nil {
					return "gone", time.Time{}, "", nil
				}
				return st, due.UTC(), lastErr, token
			}

			// Fail: mixed tokens, unsorted, one with the wrong token.
			fails := []driver.Failure{
				{Lease: lease(b[1], "tok-b"), Error: "e1", Due: now.Add(time.Hour)},
				{Lease: lease(a[0], "tok-a"), Error: "e2", Dead: true},
				{Lease: lease(a[1], "tok-b"), Error: "lost", Due: now.Add(time.Hour)},
				{Lease: lease(b[0], "tok-b"), Error: "e1", Due: now.Add(2 * time.Hour)},
			}
			res, err := drv.Fail(tctx(t), driver.FailParams{StreamID: stream.ID, Group: "g", Failures: fails, Now: now})
			if err != nil || !slices.Equal(res.Lost, []int64{a[1].ID}) {
				t.Fatalf("fail: lost %v, %v; want only %d", res.Lost, err, a[1].ID)
			}
			for _, w := range []struct {
				id    int64
				state string
				due   time.Time
				err   string
			}{{b[1].ID, "delayed", now.Add(time.Hour), "e1"}, {a[0].ID, "dead", now, "e2"}, {b[0].ID, "delayed", now.Add(2 * time.Hour), "e1"}, {a[1].ID, "leased", now.Add(time.Minute), ""}} {
				st, due, le, _ := state(w.id)
				if st != w.state || !due.Equal(w.due.Truncate(time.Microsecond)) || le != w.err {
					t.Errorf("row %d: %s due %v error %q; want %s due %v error %q", w.id, st, due, le, w.state, w.due, w.err)
				}
			}

			// Extend, Release and Ack, each with a lost lease among kept ones.
			until := now.Add(time.Hour)
			res, err = drv.Extend(tctx(t), driver.ExtendParams{StreamID: stream.ID, Group: "g", Until: until, Now: now,
				Leases: []driver.Lease{lease(b[2], "tok-b"), lease(a[2], "tok-a"), lease(a[3], "nope"), lease(b[0], "tok-b")}})
			if err != nil || !slices.Equal(res.Lost, []int64{a[3].ID, b[0].ID}) {
				t.Errorf("extend: lost %v, %v; want %d and %d", res.Lost, err, a[3].ID, b[0].ID)
			}
			for _, id := range []int64{b[2].ID, a[2].ID} {
				if st, due, _, tok := state(id); st != "leased" || !due.Equal(until.Truncate(time.Microsecond)) || tok == nil {
					t.Errorf("row %d after extend: %s due %v token %v", id, st, due, tok)
				}
			}
			res, err = drv.Release(tctx(t), driver.ReleaseParams{StreamID: stream.ID, Group: "g", Now: now,
				Leases: []driver.Lease{lease(b[3], "tok-b"), lease(a[4], "tok-b")}})
			if err != nil || !slices.Equal(res.Lost, []int64{a[4].ID}) {
				t.Errorf("release: lost %v, %v; want %d", res.Lost, err, a[4].ID)
			}
			if st, _, _, tok := state(b[3].ID); st != "delayed" || tok != nil {
				t.Errorf("released row %d: %s token %v", b[3].ID, st, tok)
			}
			res, err = drv.Ack(tctx(t), driver.AckParams{StreamID: stream.ID, Group: "g", Now: now,
				Leases: []driver.Lease{lease(b[5], "tok-b"), lease(a[5], "tok-a"), lease(b[4], "tok-a"), lease(a[4], "tok-a"), lease(b[3], "tok-b")}})
			if err != nil || !slices.Equal(res.Lost, []int64{b[4].ID, b[3].ID}) {
				t.Errorf("ack: lost %v, %v; want %d and %d", res.Lost, err, b[4].ID, b[3].ID)
			}
			for _, id := range []int64{b[5].ID, a[5].ID, a[4].ID} {
				if st, _, _, _ := state(id); st != "gone" {
					t.Errorf("acked row %d is still %s", id, st)
				}
			}
			if st, _, _, _ := state(b[4].ID); st != "leased" {
				t.Errorf("row %d acked with another claim's token is %s; want it still leased", b[4].ID, st)
			}
			// A claim whose outcome is unknown gives back all it leased.
			res, err = drv.Release(tctx(t), driver.ReleaseParams{StreamID: stream.ID, Group: "g", ClaimToken: "tok-b", Now: now})
			if err != nil || len(res.Lost) != 0 {
				t.Errorf("release by claim token: %v, %v", res.Lost, err)
			}
			if st, _, _, _ := state(b[4].ID); st != "delayed" {
				t.Errorf("row %d after releasing its claim: %s", b[4].ID, st)
			}
		})
	}
}
