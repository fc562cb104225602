package servers

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// GaleraProvider is where Debian's galera-4 installs the wsrep provider.
const GaleraProvider = "/usr/lib/galera/libgalera_smm.so"

// Galera is a MariaDB Galera cluster of nodes on 127.0.0.1, each a mariadbd
// with a datadir of its own; joiners get their state by rsync SST.
type Galera struct {
	Nodes []*MariaDB
}

// NewGalera starts an n-node cluster: the first node bootstraps it, the
// others join one after another. Every node is killed at cleanup.
func NewGalera(tb testing.TB, n int) *Galera {
	tb.Helper()
	Need(tb, "galera-4", GaleraProvider)
	Need(tb, "rsync", "rsync")
	type ports struct{ gcomm, ist, sst int }
	ps := make([]ports, n)
	var addrs []string
	for i := range ps {
		ps[i] = ports{FreePort(tb), FreePort(tb), FreePort(tb)}
		addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(ps[i].gcomm))
	}
	g := &Galera{}
	for i := range n {
		m := NewMariaDB(tb, MariaDBOptions{NoStart: true, Args: []string{
			"--binlog-format=ROW", "--default-storage-engine=InnoDB", "--innodb-autoinc-lock-mode=2",
			"--wsrep-on=ON", "--wsrep-provider=" + GaleraProvider, "--wsrep-cluster-name=sqlstreams-scaleout",
			"--wsrep-cluster-address=gcomm://" + strings.Join(addrs, ","),
			"--wsrep-node-name=node" + strconv.Itoa(i+1), "--wsrep-node-address=127.0.0.1",
			// A node is suspected after 20 s without word from it, not
			// Galera's 5 s: on a loaded machine a node can go that long
			// without the CPU and leave the primary component, failing
			// the tests on it for no fault of the driver. A SIGKILLed node
			// is still evicted within the tests' outage wait.
			fmt.Sprintf("--wsrep-provider-options=gmcast.listen_addr=tcp://127.0.0.1:%d;ist.recv_addr=127.0.0.1:%d;gcache.size=128M;evs.suspect_timeout=PT20S;evs.inactive_timeout=PT40S;evs.install_timeout=PT30S;pc.wait_prim_timeout=PT60S",
				ps[i].gcomm, ps[i].ist),
			"--wsrep-sst-method=rsync", fmt.Sprintf("--wsrep-sst-receive-address=127.0.0.1:%d", ps[i].sst),
			"--wsrep-slave-threads=2",
			// wsrep_auto_increment_control stays ON, Galera's default:
			// each node steps ids by the cluster's size from an offset of
			// its own, so nodes never pick one id and inserts do not
			// conflict in certification (see the mysql driver's doc).
			// Reads wait until the node has applied what the cluster
			// committed before them (see the mysql driver's doc).
			"--wsrep-sync-wait=1",
		}})
		m.galera = true
		g.Nodes = append(g.Nodes, m)
	}
	var first []string
	for i, m := range g.Nodes {
		if i == 0 {
			first = []string{"--wsrep-new-cluster"}
		} else {
			first = nil
		}
		if err := m.Start(first...); err != nil {
			var logs []string
			for j, n := range g.Nodes[:i] {
				logs = append(logs, fmt.Sprintf("node %d's log:\n%s", j+1, tail(n.Log(), 6000)))
			}
			tb.Fatalf("galera node %d: %v\n%s", i+1, err, strings.Join(logs, "\n"))
		}
	}
	if err := g.WaitSynced(n); err != nil {
		tb.Fatal(err)
	}
	if err := g.Nodes[0].Exec("CREATE DATABASE IF NOT EXISTS test"); err != nil {
		tb.Fatal(err)
	}
	return g
}

// WaitSynced waits until every running node is Synced in a primary
// component of size nodes.
func (g *Galera) WaitSynced(nodes int) error {
	return waitFor(startTimeout, func() error {
		for i, m := range g.Nodes {
			if !m.Running() {
				continue
			}
			size, err := m.Query("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_CLUSTER_SIZE'")
			if err != nil {
				return fmt.Errorf("galera node %d: %w", i+1, err)
			}
			state, err := m.Query("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_LOCAL_STATE_COMMENT'")
			if err != nil {
				return fmt.Errorf("galera node %d: %w", i+1, err)
			}
			if size != strconv.Itoa(nodes) || state != "Synced" {
				return fmt.Errorf("galera node %d: cluster size %s, state %s; want %d, Synced", i+1, size, state, nodes)
			}
		}
		return nil
	})
}

// Restart starts a stopped node again; it rejoins the cluster (IST, or SST
// when its gcache position is gone).
func (g *Galera) Restart(i int) error {
	return g.Nodes[i].Start()
}

// WaitDatabase waits until every running node has database db (DDL of
// one node is applied by the others a moment later).
func (g *Galera) WaitDatabase(db string) error {
	return waitFor(startTimeout, func() error {
		for i, m := range g.Nodes {
			if !m.Running() {
				continue
			}
			n, err := m.Query("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = '" + db + "'")
			if err != nil {
				return fmt.Errorf("galera node %d: %w", i+1, err)
			}
			if n != "1" {
				return fmt.Errorf("galera node %d has no database %s yet", i+1, db)
			}
		}
		return nil
	})
}

// DSNs are DSNs of database db on every node.
func (g *Galera) DSNs(db string) []string {
	var out []string
	for _, m := range g.Nodes {
		out = append(out, m.DSN(db))
	}
	return out
}
