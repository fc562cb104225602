package servers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Patroni timings. ttl is how long the leader key outlives its last renewal,
// so it is what a machine loss costs before the replica may take over: 20 s
// is the smallest value Patroni's documentation allows (3.0.2, Debian 12's
// package, does not check it; below it the test would prove a set-up nobody
// may run), and loop_wait 1 s the smallest loop. retry_timeout is how
// long a DCS or PostgreSQL call may take before Patroni gives up on it and
// demotes a leader; it plays no part in a machine loss, so it keeps 5 s, not
// the documented minimum of 3 s, which a loaded CI machine could exceed and
// turn into a failover the test did not ask for (Patroni's rule
// loop_wait + 2*retry_timeout <= ttl holds: 1 + 10 <= 20).
const (
	patroniTTL          = 20
	patroniLoopWait     = 1
	patroniRetryTimeout = 5
)

// process is a child process with its output in a file.
type process struct {
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// startProcess starts name as cred (when not nil) with its output
// appended to logFile. It dies with the test process (Pdeathsig), whatever
// ends it; what it started itself may not (see PatroniNode.Kill).
func startProcess(cred *syscall.Credential, env []string, logFile, name string, args ...string) (*process, error) {
	out, err := os.OpenFile(logFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr, cmd.Env = out, out, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("servers: start %s: %w", name, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); out.Close(); close(p.done) }()
	return p, nil
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL and waits until the process has exited.
func (p *process) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// childEnv is the environment of etcd and Patroni: no PG* variables of the
// test's own (libpq in Patroni would read them), HOME in the instance's
// directory (the postgres user cannot write root's).
func childEnv(home string) []string {
	return []string{"HOME=" + home, "PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C"}
}

// ---------------------------------------------------------------------- etcd

// Etcd is a one-member etcd cluster on loopback ports: Patroni's DCS.
type Etcd struct {
	ClientPort, PeerPort int
	logFile              string
	proc                 *process
}

// NewEtcd starts etcd with a data directory of its own and waits until it
// reports itself healthy; it is killed at cleanup.
func NewEtcd(tb testing.TB) *Etcd {
	tb.Helper()
	Need(tb, "etcd-server", "etcd")
	cred := postgresCred(tb)
	e := &Etcd{ClientPort: FreePort(tb), PeerPort: FreePort(tb)}
	base := tempDir(tb, "scaleout-etcd-")
	if cred != nil {
		if err := os.Chown(base, int(cred.Uid), int(cred.Gid)); err != nil {
			tb.Fatal(err)
		}
	}
	e.logFile = filepath.Join(base, "etcd.log")
	client, peer := fmt.Sprintf("http://127.0.0.1:%d", e.ClientPort), fmt.Sprintf("http://127.0.0.1:%d", e.PeerPort)
	proc, err := startProcess(cred, childEnv(base), e.logFile, "etcd", "--name", "etcd1", "--data-dir", filepath.Join(base, "data"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "etcd1="+peer, "--initial-cluster-state", "new", "--initial-cluster-token", "scaleout")
	if err != nil {
		tb.Fatal(err)
	}
	e.proc = proc
	tb.Cleanup(proc.kill)
	err = waitFor(startTimeout, func() error {
		if proc.exited() {
			return errors.New("etcd exited")
		}
		var h struct{ Health string }
		if err := getJSON(client+"/health", &h); err != nil {
			return err
		}
		if h.Health != "true" {
			return fmt.Errorf("etcd health is %q", h.Health)
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("servers: etcd on %d did not come up: %v\n%s", e.ClientPort, err, tail(readFile(e.logFile), 4000))
	}
	return e
}

// getJSON GETs url and decodes a 200 answer's body into v.
func getJSON(url string, v any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	return json.Unmarshal(b, v)
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// ------------------------------------------------------------------- Patroni

// Patroni is a PostgreSQL cluster managed by Patroni with etcd: one leader
// and synchronous replicas (synchronous_mode), each node a Patroni process
// with a REST API port of its own running a PostgreSQL of the version
// PgBin finds.
type Patroni struct {
	Etcd  *Etcd
	Nodes []*PatroniNode
}

// PatroniNode is one member: its PostgreSQL (Port, Dir, Psql, URL; the
// embedded Postgres's Log is Patroni's log, which PostgreSQL writes to
// too) and the Patroni process managing it.
type PatroniNode struct {
	*Postgres
	Name    string
	APIPort int
	config  string
	proc    *process
	killed  bool
}

// NewPatroni starts etcd and a cluster of n nodes: node 1 bootstraps it
// (initdb) and leads, the others are made by Patroni with pg_basebackup.
// It returns once every replica streams and one is synchronous, so a
// commit the leader reports is on a replica. Everything is killed and
// removed at cleanup.
func NewPatroni(tb testing.TB, n int) *Patroni {
	tb.Helper()
	Need(tb, "patroni", "patroni")
	c := &Patroni{Etcd: NewEtcd(tb)}
	for i := range n {
		c.Nodes = append(c.Nodes, c.newNode(tb, i+1))
	}
	for i, node := range c.Nodes {
		if err := node.start(); err != nil {
			tb.Fatal(err)
		}
		if i == 0 {
			// Replicas are copied from the leader: wait for it first.
			if err := waitFor(startTimeout, func() error { return node.checkWritable(node.proc) }); err != nil {
				tb.Fatalf("servers: patroni node1 did not bootstrap a writable primary: %v\n%s", err, node.LogTail(6000))
			}
			if _, err := node.Psql("postgres", "CREATE DATABASE test"); err != nil {
				tb.Fatal(err)
			}
		}
	}
	leader := c.Nodes[0]
	err := waitFor(startTimeout, func() error {
		for _, node := range c.Nodes {
			if node.proc.exited() {
				return fmt.Errorf("patroni %s exited", node.Name)
			}
		}
		out, err := leader.Psql("postgres", "SELECT count(*) FILTER (WHERE state = 'streaming'), count(*) FILTER (WHERE sync_state = 'sync') FROM pg_stat_replication")
		if err != nil {
			return err
		}
		if want := fmt.Sprintf("%d|1", n-1); out != want {
			return fmt.Errorf("streaming|sync replicas: %s, want %s", out, want)
		}
		return nil
	})
	if err != nil {
		var logs strings.Builder
		for _, node := range c.Nodes {
			fmt.Fprintf(&logs, "--- %s\n%s\n", node.Name, node.LogTail(4000))
		}
		tb.Fatalf("servers: the Patroni replicas did not become streaming and synchronous: %v\n%s", err, logs.String())
	}
	return c
}

func (c *Patroni) newNode(tb testing.TB, i int) *PatroniNode {
	tb.Helper()
	cred := postgresCred(tb)
	node := &PatroniNode{Name: fmt.Sprintf("node%d", i), APIPort: FreePort(tb),
		Postgres: &Postgres{Port: FreePort(tb), cred: cred, bin: PgBin(tb)}}
	base := tempDir(tb, "scaleout-patroni-")
	if err := node.own(base); err != nil {
		tb.Fatal(err)
	}
	// Patroni runs initdb or pg_basebackup into data itself.
	node.Dir, node.sock, node.logFile = filepath.Join(base, "data"), filepath.Join(base, "sock"), filepath.Join(base, "patroni.log")
	if err := os.Mkdir(node.sock, 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := node.own(node.sock); err != nil {
		tb.Fatal(err)
	}
	api := fmt.Sprintf("127.0.0.1:%d", node.APIPort)
	pg := fmt.Sprintf("127.0.0.1:%d", node.Port)
	// JSON is YAML: Patroni reads it as its configuration file.
	conf := map[string]any{
		"scope":   "sqlstreams",
		"name":    node.Name,
		"restapi": map[string]any{"listen": api, "connect_address": api},
		"etcd3":   map[string]any{"hosts": []string{fmt.Sprintf("127.0.0.1:%d", c.Etcd.ClientPort)}},
		"bootstrap": map[string]any{
			"dcs": map[string]any{
				"ttl": patroniTTL, "loop_wait": patroniLoopWait, "retry_timeout": patroniRetryTimeout,
				// A commit waits until a replica has it, and only that
				// replica may be promoted: nothing reported committed is lost.
				"synchronous_mode": true,
				"postgresql": map[string]any{
					"use_pg_rewind": false,
					"use_slots":     true,
					"parameters": map[string]any{
						"wal_level": "replica", "hot_standby": "on", "max_connections": 200,
						"max_wal_senders": 10, "max_replication_slots": 10, "wal_keep_size": "256MB",
						// As in NewPostgres: the data does not outlive the
						// test, and a killed process leaves its writes with the
						// operating system.
						"fsync": "off", "full_page_writes": "off",
					},
				},
			},
			"initdb": []any{map[string]string{"encoding": "UTF8"}, "no-sync"},
			"pg_hba": []string{
				"local all all trust",
				"host all all 127.0.0.1/32 trust",
				"host replication all 127.0.0.1/32 trust",
			},
		},
		"postgresql": map[string]any{
			"listen": pg, "connect_address": pg,
			"data_dir": node.Dir, "bin_dir": node.bin,
			"pgpass": filepath.Join(base, "pgpass"),
			// A replica's copy starts with a checkpoint: a spread one
			// would take minutes.
			"basebackup": []any{map[string]string{"checkpoint": "fast"}, "no-sync"},
			"authentication": map[string]any{
				"superuser":   map[string]string{"username": "postgres"},
				"replication": map[string]string{"username": "postgres"},
			},
			"parameters": map[string]any{
				"unix_socket_directories": node.sock, "shared_buffers": "32MB", "logging_collector": "off",
			},
		},
		// Patroni would use a watchdog device if it found one; there is
		// none here, and none is wanted.
		"watchdog": map[string]any{"mode": "off"},
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	node.config = filepath.Join(base, "patroni.yml")
	if err := os.WriteFile(node.config, b, 0o644); err != nil {
		tb.Fatal(err)
	}
	// Registered after tempDir, so it runs before the directory is removed:
	// Patroni first (or it would start PostgreSQL again), then PostgreSQL,
	// which Patroni started in a session of its own.
	tb.Cleanup(func() {
		if node.proc != nil {
			node.proc.kill()
		}
		if !node.killed {
			_ = node.Stop("immediate")
		}
	})
	return node
}

// LogTail is the last n bytes of the node's log without Patroni's
// once-a-loop lines that say nothing happened.
func (n *PatroniNode) LogTail(size int) string {
	var keep []string
	for _, l := range strings.Split(n.Log(), "\n") {
		if strings.Contains(l, "INFO: no action.") || strings.Contains(l, "INFO: Lock owner: ") || strings.HasSuffix(l, "in progress") {
			continue
		}
		keep = append(keep, l)
	}
	return tail(strings.Join(keep, "\n"), size)
}

func (n *PatroniNode) start() error {
	proc, err := startProcess(n.cred, childEnv(filepath.Dir(n.config)), n.logFile, "patroni", n.config)
	if err != nil {
		return err
	}
	n.proc = proc
	return nil
}

// checkWritable is nil when the node's PostgreSQL accepts connections and
// is out of recovery, that is, takes writes. proc, when not nil, must
// still run.
func (n *PatroniNode) checkWritable(proc *process) error {
	if proc != nil && proc.exited() {
		return fmt.Errorf("patroni %s exited", n.Name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, n.URL("postgres")+"&connect_timeout=2")
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var recovery bool
	if err := conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&recovery); err != nil {
		return err
	}
	if recovery {
		return fmt.Errorf("%s is in recovery", n.Name)
	}
	return nil
}

// Writable reports whether the node's PostgreSQL takes writes now.
func (n *PatroniNode) Writable() bool { return n.checkWritable(nil) == nil }

// Role is the node's role as its Patroni REST API reports it ("master",
// "primary" or "replica"), or the error of asking.
func (n *PatroniNode) Role() (string, error) {
	var st struct{ Role string }
	err := getJSON(fmt.Sprintf("http://127.0.0.1:%d/patroni", n.APIPort), &st)
	return st.Role, err
}

// Leader is the node whose PostgreSQL takes writes, or nil.
func (c *Patroni) Leader() *PatroniNode {
	for _, n := range c.Nodes {
		if !n.killed && n.Writable() {
			return n
		}
	}
	return nil
}

// Kill loses the node's machine: SIGKILL to Patroni, then to the postmaster
// and every process it started, with no shutdown of any kind. It returns
// once they are gone. The node stays down (coming back would need
// pg_rewind or a new copy).
func (n *PatroniNode) Kill() error {
	n.killed = true
	// Patroni first, so that it cannot start PostgreSQL again.
	n.proc.kill()
	b, err := os.ReadFile(filepath.Join(n.Dir, "postmaster.pid"))
	if err != nil {
		return fmt.Errorf("servers: %s: read postmaster.pid: %w", n.Name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		return fmt.Errorf("servers: %s: postmaster.pid: %w", n.Name, err)
	}
	// Backends are no process group of the postmaster's (each calls
	// setsid), so they are found by their parent.
	pids := append([]int{pid}, children(pid)...)
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	return waitFor(startTimeout, func() error {
		for _, p := range pids {
			if alive(p) {
				return fmt.Errorf("servers: %s: process %d still runs after SIGKILL", n.Name, p)
			}
		}
		return nil
	})
}

// children lists the processes whose parent is pid.
func children(pid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _ := procStat(p); ppid == pid {
			out = append(out, p)
		}
	}
	return out
}

// procStat reads the parent and the state of process pid from
// /proc/pid/stat ("pid (comm) state ppid ..."; comm may hold spaces).
func procStat(pid int) (ppid int, state string) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, ""
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, f[0]
}

// alive reports whether pid runs (a zombie waiting for its parent to reap
// it does not).
func alive(pid int) bool {
	_, state := procStat(pid)
	return state != "" && state != "Z" && state != "X"
}
