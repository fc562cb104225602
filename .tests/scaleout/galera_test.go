package scaleout_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/sqlstreams/sqlstreams/conformance"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/mysql"
	"github.com/sqlstreams/sqlstreams/driver/mysql/mysqltest"
	"github.com/sqlstreams/sqlstreams/scaleout/servers"
	"github.com/sqlstreams/sqlstreams/tests/drivers/targets"
)

// galeraDatabase creates a database on the cluster (DDL replicates to every
// node) and returns its DSN on each node.
func galeraDatabase(t *testing.T, g *servers.Galera) []string {
	t.Helper()
	db := fmt.Sprintf("g_%d", time.Now().UnixNano())
	if err := g.Nodes[0].Exec("CREATE DATABASE " + db + " CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		t.Fatal(err)
	}
	if err := g.WaitDatabase(db); err != nil {
		t.Fatal(err)
	}
	return g.DSNs(db)
}

// TestGalera runs every Galera scenario on one 3-node cluster.
//
// The Galera tests do not run in parallel with the package's other tests,
// and the conformance suite runs on clusters of its own: a node of MariaDB
// 10.11.19 can start to grow by hundreds of megabytes a second at some
// point of a run until the kernel kills it (docs/decisions.md, "Galera test
// nodes do not run migrations down"), so a cluster lives as briefly as its
// tests allow.
func TestGalera(t *testing.T) {
	g := servers.NewGalera(t, 3)
	t.Run("Detection", func(t *testing.T) { testGaleraDetection(t, g) })
	t.Run("CommitOrderAcrossNodes", func(t *testing.T) { testGaleraCommitOrder(t, g) })
	t.Run("MigrateAcrossNodes", func(t *testing.T) { testGaleraMigrate(t, g) })
	t.Run("DisjointPartitionsDoNotConflict", func(t *testing.T) { testGaleraDisjointAppends(t, g) })
	t.Run("LoadWithNodeKill", func(t *testing.T) { testGaleraLoad(t, g) })
}

// galeraShards is how many clusters the conformance suite is spread over,
// one after another, each living about 15 seconds of tests (40 loaded).
const galeraShards = 4

// TestGaleraConformance runs the whole conformance suite on three-node
// clusters, each test's database on one of the nodes in turn.
func TestGaleraConformance(t *testing.T) {
	for shard := range galeraShards {
		t.Run(fmt.Sprintf("Shard%d", shard), func(t *testing.T) {
			testGaleraConformance(t, servers.NewGalera(t, 3), shard)
		})
	}
}

func testGaleraDetection(t *testing.T, g *servers.Galera) {
	dsns := galeraDatabase(t, g)
	ctx := context.Background()
	for i, dsn := range dsns {
		d := mysql.Open(dsn)
		c, err := sqlstreams.Open(ctx, d)
		if err != nil {
			t.Fatalf("node %d: Open on Galera: %v", i+1, err)
		}
		info := d.Server()
		if !info.Galera {
			t.Errorf("node %d: the driver did not detect Galera: %+v", i+1, info)
		}
		var wait int
		if err := d.DB().QueryRowContext(ctx, "SELECT @@SESSION.wsrep_sync_wait").Scan(&wait); err != nil {
			t.Fatal(err)
		}
		if wait&1 == 0 {
			t.Errorf("node %d: sessions run with wsrep_sync_wait %d; the driver sets 1 (causal reads)", i+1, wait)
		}
		// The cluster runs with Galera's defaults: each node steps ids by
		// the cluster's size from an offset of its own, so the scenarios
		// and the conformance suite below run on ids that are not dense.
		var control, incr, offset int
		if err := d.DB().QueryRowContext(ctx, "SELECT @@GLOBAL.wsrep_auto_increment_control, @@SESSION.auto_increment_increment, @@SESSION.auto_increment_offset").
			Scan(&control, &incr, &offset); err != nil {
			t.Fatal(err)
		}
		if control != 1 || incr != len(dsns) || offset < 1 || offset > len(dsns) {
			t.Errorf("node %d: wsrep_auto_increment_control %d, auto_increment_increment %d, offset %d; want ON, the cluster size %d, an offset up to it",
				i+1, control, incr, offset, len(dsns))
		}
		c.Close()
	}
}

// testGaleraCommitOrder: a transaction on node 1 produces to partition 0
// and stays open; node 1 then commits a row to partition 1 (so that the
// next id is above the held one on every node), node 2 produces to
// partition 0 and commits, and a consumer on node 3 claims and acknowledges
// node 2's row. On one server the append lock would make node 2 wait; on
// Galera that lock is node-local, so node 2's row, with the higher id,
// commits first and the claim moves partition 0's cursor past the id node 1
// holds. The driver must not let node 1's row commit below the cursor: its
// commit fails (a certification conflict on the partition's lock row, 1213,
// which the caller runs again), or, if it commits, its row is delivered.
// Without the driver's Galera path node 1's commit succeeds and its row is
// never delivered.
func testGaleraCommitOrder(t *testing.T, g *servers.Galera) {
	dsns := galeraDatabase(t, g)
	ctx := context.Background()
	open := func(i int) (*sqlstreams.Client, *mysql.Driver) {
		d := mysql.Open(dsns[i])
		c, err := sqlstreams.Open(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, d
	}
	c1, d1 := open(0)
	c2, d2 := open(1)
	c3, _ := open(2)
	if _, err := c1.Stream[Msg]("order").Create(ctx, &sqlstreams.StreamOptions{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	keyOf := map[int]string{}
	for i := 0; len(keyOf) < 2; i++ {
		k := fmt.Sprint("k", i)
		if _, ok := keyOf[sqlstreams.PartitionForKey(k, 2)]; !ok {
			keyOf[sqlstreams.PartitionForKey(k, 2)] = k
		}
	}
	cons, err := c3.Stream[Msg]("order").Consumer("g").Register(ctx, &sqlstreams.ConsumerOptions{LeaseDuration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	p1, err := c1.Stream[Msg]("order").Producer().Register(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := c2.Stream[Msg]("order").Producer().Register(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	claimAll := func(want int64) bool {
		ds, err := cons.Claim(ctx, 10)
		if err != nil {
			t.Logf("claim: %v", err)
		}
		found := false
		for _, d := range ds {
			found = found || d.Value.Seq == want
			if err := d.Ack(ctx); err != nil {
				t.Errorf("ack: %v", err)
			}
		}
		return found
	}
	rounds, commitsRefused := 4, 0
	for round := range rounds {
		heldSeq, otherSeq, lateSeq := int64(1000*round+1), int64(1000*round+2), int64(1000*round+3)
		tx, err := d1.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		heldID, err := p1.ProduceTx(ctx, mysql.Tx(tx), Msg{Seq: heldSeq}, sqlstreams.Key(keyOf[0]))
		if err != nil {
			t.Fatalf("round %d: ProduceTx on node 1: %v", round, err)
		}
		otherID, err := p1.Produce(ctx, Msg{Seq: otherSeq}, sqlstreams.Key(keyOf[1]))
		if err != nil {
			t.Fatalf("round %d: Produce to partition 1 on node 1: %v", round, err)
		}
		// A causal read on node 2 returns once node 2 has applied what the
		// cluster committed before it, so node 2's next id is above otherID.
		var one int
		if err := d2.DB().QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
			t.Fatal(err)
		}
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		lateID, err := p2.Produce(pctx, Msg{Seq: lateSeq}, sqlstreams.Key(keyOf[0]))
		cancel()
		if err != nil {
			t.Fatalf("round %d: Produce on node 2 while node 1 holds its transaction: %v", round, err)
		}
		waitUntil(t, time.Minute, "node 3 to claim node 2's row", func() bool { return claimAll(lateSeq) })
		commitErr := tx.Commit()
		t.Logf("round %d: held id %d, node 1's other id %d, node 2's id %d, commit of node 1: %v", round, heldID, otherID, lateID, commitErr)
		if commitErr != nil {
			var me *gomysql.MySQLError
			if !errors.As(commitErr, &me) || me.Number != 1213 {
				t.Fatalf("round %d: node 1's commit failed with %v; want a certification conflict (1213) the caller retries", round, commitErr)
			}
			commitsRefused++
			continue
		}
		// Node 1's row committed: it must reach the group.
		waitUntil(t, 30*time.Second, fmt.Sprintf("round %d: the row node 1 committed (id %d, below node 2's %d) to be delivered", round, heldID, lateID),
			func() bool { return claimAll(heldSeq) })
	}
	t.Logf("node 1's held commits refused by certification: %d of %d", commitsRefused, rounds)
}

// testGaleraDisjointAppends: with wsrep_auto_increment_control ON each
// node takes ids of its own, so producers on the three nodes, each writing
// its own partition, never conflict: no transaction fails certification or
// is aborted by a replicated one. (With the control OFF two nodes take the
// same next id, and one insert of each such pair fails and runs again.)
func testGaleraDisjointAppends(t *testing.T, g *servers.Galera) {
	dsns := galeraDatabase(t, g)
	ctx := context.Background()
	const stream, perNode = "disjoint", 150
	var producers []*sqlstreams.Producer[Msg]
	var first *sqlstreams.Client
	for i, dsn := range dsns {
		c, err := sqlstreams.Open(ctx, mysql.Open(dsn), sqlstreams.WithMaintenanceInterval(0))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if i == 0 {
			first = c
			if _, err := c.Stream[Msg](stream).Create(ctx, &sqlstreams.StreamOptions{Partitions: len(dsns)}); err != nil {
				t.Fatal(err)
			}
		}
		p, err := c.Stream[Msg](stream).Producer().Register(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		producers = append(producers, p)
	}
	keyOf := map[int]string{}
	for i := 0; len(keyOf) < len(dsns); i++ {
		k := fmt.Sprint("k", i)
		if _, ok := keyOf[sqlstreams.PartitionForKey(k, len(dsns))]; !ok {
			keyOf[sqlstreams.PartitionForKey(k, len(dsns))] = k
		}
	}
	// Certification failures and brute-force aborts, summed over the nodes.
	conflicts := func() int64 {
		var sum int64
		for i, m := range g.Nodes {
			for _, v := range []string{"WSREP_LOCAL_CERT_FAILURES", "WSREP_LOCAL_BF_ABORTS"} {
				n, err := m.Query("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = '" + v + "'")
				if err != nil {
					t.Fatalf("galera node %d: %v", i+1, err)
				}
				x, err := strconv.ParseInt(n, 10, 64)
				if err != nil {
					t.Fatalf("galera node %d: %s = %q: %v", i+1, v, n, err)
				}
				sum += x
			}
		}
		return sum
	}
	before := conflicts()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(producers))
	for i, p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range perNode {
				if _, err := p.Produce(ctx, Msg{Seq: int64(i*perNode + n)}, sqlstreams.Key(keyOf[i])); err != nil {
					errs <- fmt.Errorf("node %d, produce %d: %w", i+1, n, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got := conflicts() - before
	if got != 0 {
		t.Errorf("%d certification failures or aborts while each node appended to its own partition; want none", got)
	}
	hl, err := first.Stream[Msg](stream).Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if vh, ok := hl.Version(1); !ok || vh.Rows != int64(len(producers)*perNode) {
		t.Errorf("the log holds %+v; want %d rows", hl.Versions, len(producers)*perNode)
	}
	t.Logf("%d appends through %d nodes, one partition each, in %s: %d certification failures or aborts",
		len(producers)*perNode, len(producers), elapsed.Round(time.Millisecond), got)
}

// testGaleraLoad: producers (one of them holding each transaction open a
// while, so that transactions of different nodes commit out of order) and
// consumers spread over the three nodes; node 2 is killed with SIGKILL mid-
// load and started again, and rejoins. Every produce that succeeded is
// delivered, none twice while leased.
func testGaleraLoad(t *testing.T, g *servers.Galera) {
	dsns := galeraDatabase(t, g)
	drivers := sync.Map{}
	l := startLoad(t, loadSpec{Producers: 3, Consumers: 3, Partitions: 4, Open: func(i int) driver.Driver {
		d := mysql.Open(dsns[i%len(dsns)])
		drivers.Store(i, d)
		return d
	}, TxHold: 20 * time.Millisecond, TxProducers: 1, BeginTx: func(d driver.Driver) (driver.Tx, func() error, func() error, error) {
		tx, err := d.(*mysql.Driver).DB().BeginTx(context.Background(), nil)
		if err != nil {
			return nil, nil, nil, err
		}
		return mysql.Tx(tx), tx.Commit, tx.Rollback, nil
	}})
	l.waitProgress(200, outageWait, "before the kill")
	victim := g.Nodes[1]
	killedAt := time.Now()
	victim.Kill(syscall.SIGKILL)
	l.waitProgress(100, outageWait, "on the surviving nodes")
	if err := g.Restart(1); err != nil {
		t.Fatal(err)
	}
	if err := g.WaitSynced(3); err != nil {
		t.Fatal(err)
	}
	rejoined := time.Since(killedAt)
	l.waitProgress(200, outageWait, "after node 2 rejoined")
	f := l.stop()
	t.Logf("node 2 killed and rejoined after %s; %s", rejoined.Round(time.Millisecond), f)
	record(t, "galera 3 nodes, node 2 SIGKILL", f)
}

// testGaleraConformance runs one shard of the conformance suite on the
// cluster, each test's database on one of the three nodes in turn.
func testGaleraConformance(t *testing.T, g *servers.Galera, shard int) {
	// mysqltest reads the admin server from the environment, also in the
	// suite's child processes.
	t.Setenv("SQLSTREAMS_MYSQL_DSN", g.Nodes[0].DSN("test"))
	target := targets.MySQL()
	target.Name = "mysql-galera"
	// Taking migrations down and up again is one trigger of the purge spin
	// TestGalera describes: those tests run on the other targets.
	target.NoMigrationsDown = true
	var next atomic.Int64
	target.NewNamespace = func(tb testing.TB) string {
		dsn := mysqltest.NewDatabase(tb) // on node 1
		cfg, err := gomysql.ParseDSN(dsn)
		if err != nil {
			tb.Fatal(err)
		}
		if err := g.WaitDatabase(cfg.DBName); err != nil {
			tb.Fatal(err)
		}
		node := g.Nodes[int(next.Add(1))%len(g.Nodes)]
		cfg.Addr = fmt.Sprintf("127.0.0.1:%d", node.Port)
		return cfg.FormatDSN()
	}
	conformance.RunShard(t, target, shard, galeraShards)
}

// driverRefused reports a COMMIT the server answered with an error: it did
// not commit (on Galera, a certification conflict is 1213 at COMMIT).
func driverRefused(err error) bool {
	var me *gomysql.MySQLError
	return errors.As(err, &me)
}
