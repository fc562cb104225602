// Package servers starts and stops database server instances of the
// scale-out tests: PostgreSQL clusters made with initdb and driven with
// pg_ctl, PostgreSQL clusters managed by Patroni with etcd (patroni.go),
// MariaDB servers and Galera clusters made with mariadb-install-db and run
// as child processes, all on free loopback ports in temporary
// directories, never touching the shared servers on 5432 and 3306. Every
// instance is stopped and its directory removed at the test's cleanup.
//
// A missing binary fails the test (it never skips): CI installs what these
// tests need (.ci/run), and a skip there would hide that nothing ran.
package servers

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
)

// startTimeout bounds how long an instance may take to come up on this
// loaded machine.
const startTimeout = 90 * time.Second

// FreePort returns a loopback TCP port for an instance to listen on. It is
// below the kernel's ephemeral range, so that no outgoing connection of
// this machine can take it between now and the instance's bind (which, for
// a Galera node, waits for its state transfer); nobody listens on it now;
// and no other process of these tests holds it (a lock file per port, held
// until this process exits). Ports handed out in this process are never
// handed out twice.
func FreePort(tb testing.TB) int {
	tb.Helper()
	portMu.Lock()
	defer portMu.Unlock()
	dir := filepath.Join(os.TempDir(), "sqlstreams-scaleout-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		tb.Fatalf("servers: port locks: %v", err)
	}
	low := ephemeralLow()
	for range 1000 {
		p := minPort + rand.IntN(low-minPort)
		if p == 5432 || p == 3306 || usedPorts[p] {
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(p)), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			tb.Fatalf("servers: port locks: %v", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close() // another test process holds it
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			f.Close()
			continue
		}
		l.Close()
		usedPorts[p] = true
		portLocks = append(portLocks, f)
		return p
	}
	tb.Fatal("servers: no free port found")
	return 0
}

// minPort is the lowest port FreePort hands out.
const minPort = 10000

// ephemeralLow is the first port of the kernel's range for outgoing
// connections (Linux: 32768 unless configured).
func ephemeralLow() int {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > minPort+1000 {
				low = n
			}
		}
	}
	return low
}

var (
	portMu    sync.Mutex
	usedPorts = map[int]bool{}
	portLocks []*os.File // held open: the locks last as long as this process
)

// Need fails the test when a program is missing, naming the package that
// has it.
func Need(tb testing.TB, pkg string, programs ...string) {
	tb.Helper()
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			if _, err := os.Stat(p); err != nil {
				tb.Fatalf("servers: %s is missing: install the Debian package %s (.ci/run does so)", p, pkg)
			}
		}
	}
}

// tempDir makes a directory any user can traverse (PostgreSQL runs as the
// postgres user when the tests run as root), removed at cleanup.
func tempDir(tb testing.TB, prefix string) string {
	tb.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// waitFor polls cond until it holds or d passes.
func waitFor(d time.Duration, cond func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func ping(driverName, dsn string) error {
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return db.PingContext(ctx)
}

// run runs a command to its end within d, as cred when not nil.
func run(d time.Duration, cred *syscall.Credential, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

// ---------------------------------------------------------------- PostgreSQL

// Postgres is a PostgreSQL cluster of its own, driven with pg_ctl.
type Postgres struct {
	Port    int
	Dir     string // the data directory
	sock    string
	logFile string
	cred    *syscall.Credential
	bin     string
}

// PgBin is the directory of the PostgreSQL programs.
func PgBin(tb testing.TB) string {
	tb.Helper()
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(real)
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(matches) == 0 {
		tb.Fatal("servers: pg_ctl is missing: install the Debian package postgresql (.ci/run does so)")
	}
	return filepath.Dir(matches[len(matches)-1])
}

// postgresCred is the user PostgreSQL runs as: initdb refuses root.
func postgresCred(tb testing.TB) *syscall.Credential {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		tb.Fatalf("servers: running as root, PostgreSQL needs the user postgres: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

func (p *Postgres) own(path string) error {
	if p.cred == nil {
		return nil
	}
	return os.Chown(path, int(p.cred.Uid), int(p.cred.Gid))
}

// PostgresOptions are settings of a new cluster.
type PostgresOptions struct {
	// Conf lines appended to postgresql.conf.
	Conf []string
	// HBA lines prepended to pg_hba.conf.
	HBA []string
}

// NewPostgres initializes a cluster (trust authentication, user postgres,
// database test) and starts it; it is stopped at cleanup.
func NewPostgres(tb testing.TB, opts PostgresOptions) *Postgres {
	tb.Helper()
	p := &Postgres{Port: FreePort(tb), cred: postgresCred(tb), bin: PgBin(tb)}
	base := tempDir(tb, "scaleout-pg-")
	p.Dir, p.sock, p.logFile = filepath.Join(base, "data"), filepath.Join(base, "sock"), filepath.Join(base, "log")
	for _, d := range []string{p.Dir, p.sock} {
		if err := os.Mkdir(d, 0o700); err != nil {
			tb.Fatal(err)
		}
		if err := p.own(d); err != nil {
			tb.Fatal(err)
		}
	}
	if err := os.WriteFile(p.logFile, nil, 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := p.own(p.logFile); err != nil {
		tb.Fatal(err)
	}
	if _, err := run(startTimeout, p.cred, filepath.Join(p.bin, "initdb"), "-D", p.Dir, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"); err != nil {
		tb.Fatalf("servers: initdb: %v", err)
	}
	conf := append([]string{
		"listen_addresses = '127.0.0.1'",
		fmt.Sprintf("port = %d", p.Port),
		fmt.Sprintf("unix_socket_directories = '%s'", p.sock),
		"max_connections = 200",
		"shared_buffers = 32MB",
		// The data does not outlive the test; an immediate shutdown still
		// runs crash recovery (the operating system keeps what was written).
		"fsync = off",
		"full_page_writes = off",
		"logging_collector = off",
	}, opts.Conf...)
	f, err := os.OpenFile(filepath.Join(p.Dir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		tb.Fatal(err)
	}
	_, err = f.WriteString("\n" + strings.Join(conf, "\n") + "\n")
	f.Close()
	if err != nil {
		tb.Fatal(err)
	}
	if len(opts.HBA) > 0 {
		hba := filepath.Join(p.Dir, "pg_hba.conf")
		old, err := os.ReadFile(hba)
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(hba, []byte(strings.Join(opts.HBA, "\n")+"\n"+string(old)), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	tb.Cleanup(func() { _ = p.Stop("immediate") })
	if err := p.Start(); err != nil {
		tb.Fatal(err)
	}
	if _, err := p.Psql("postgres", "CREATE DATABASE test"); err != nil {
		tb.Fatal(err)
	}
	return p
}

func (p *Postgres) pgctl(args ...string) (string, error) {
	return run(startTimeout, p.cred, filepath.Join(p.bin, "pg_ctl"), append([]string{"-D", p.Dir}, args...)...)
}

// Start starts the cluster and waits until it accepts connections.
func (p *Postgres) Start() error {
	if _, err := p.pgctl("-l", p.logFile, "-w", "-t", strconv.Itoa(int(startTimeout/time.Second)), "start"); err != nil {
		return fmt.Errorf("servers: start postgres on %d: %w\n%s", p.Port, err, p.Log())
	}
	return nil
}

// Stop stops the cluster with pg_ctl stop -m mode (smart, fast or
// immediate) and waits until it is down.
func (p *Postgres) Stop(mode string) error {
	_, err := p.pgctl("-m", mode, "-w", "stop")
	return err
}

// Restart runs pg_ctl restart -m mode.
func (p *Postgres) Restart(mode string) error {
	if _, err := p.pgctl("-m", mode, "-l", p.logFile, "-w", "restart"); err != nil {
		return fmt.Errorf("servers: restart postgres on %d: %w\n%s", p.Port, err, p.Log())
	}
	return nil
}

// Log is the server's log so far.
func (p *Postgres) Log() string {
	b, _ := os.ReadFile(p.logFile)
	return string(b)
}

// URL is a postgres:// URL for database db.
func (p *Postgres) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.Port, db)
}

// Psql runs SQL with psql on database db.
func (p *Postgres) Psql(db, sqlText string) (string, error) {
	out, err := run(time.Minute, nil, filepath.Join(p.bin, "psql"), "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
		"-p", strconv.Itoa(p.Port), "-U", "postgres", "-d", db, "-c", sqlText)
	return strings.TrimSpace(out), err
}

// ------------------------------------------------------------------- MariaDB

// MariaDB is a mariadbd child process with a datadir of its own.
type MariaDB struct {
	Port    int
	Dir     string
	logFile string
	args    []string
	galera  bool

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// MariaDBOptions are settings of a new server.
type MariaDBOptions struct {
	// Args are more mariadbd options (--name=value).
	Args []string
	// NoStart leaves the server stopped (a Galera node started later).
	NoStart bool
}

const mariadbd = "/usr/sbin/mariadbd"

// NewMariaDB installs a datadir (root with no password over TCP, database
// test) and starts mariadbd on a free port; it is killed at cleanup.
func NewMariaDB(tb testing.TB, opts MariaDBOptions) *MariaDB {
	tb.Helper()
	Need(tb, "mariadb-server", mariadbd, "mariadb-install-db")
	m := &MariaDB{Port: FreePort(tb)}
	base := tempDir(tb, "scaleout-my-")
	// As root, mariadbd runs as mysql, as it does when installed: Galera's
	// rsync state transfer runs its daemon as the server's user, and an
	// rsync daemon started by root would write as nobody.
	osUser := "root"
	var mysqlUID, mysqlGID int
	if os.Geteuid() == 0 {
		u, err := user.Lookup("mysql")
		if err != nil {
			tb.Fatalf("servers: running as root, MariaDB needs the user mysql (made by the mariadb-server package): %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		mysqlUID, mysqlGID = uid, gid
		if err := os.Chown(base, uid, gid); err != nil {
			tb.Fatal(err)
		}
		osUser = "mysql"
	} else if u, err := user.Current(); err == nil {
		osUser = u.Username
	}
	m.Dir, m.logFile = filepath.Join(base, "data"), filepath.Join(base, "error.log")
	// A temporary directory of its own, for the bootstrap and the server:
	// in the shared /tmp, a bootstrap failed now and then under load on
	// its temporary tables' files ("Error on delete of '/tmp/#sql-temptable-…'").
	tmp := filepath.Join(base, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		tb.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(tmp, mysqlUID, mysqlGID); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := run(startTimeout, nil, "mariadb-install-db", "--no-defaults", "--user="+osUser, "--datadir="+m.Dir,
		"--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve", "--tmpdir="+tmp); err != nil {
		tb.Fatalf("servers: mariadb-install-db: %v", err)
	}
	m.args = append([]string{"--no-defaults", "--user=" + osUser, "--datadir=" + m.Dir,
		"--port=" + strconv.Itoa(m.Port), "--bind-address=127.0.0.1", "--socket=" + filepath.Join(base, "sock"), "--tmpdir=" + tmp,
		"--pid-file=" + filepath.Join(base, "pid"), "--log-error=" + m.logFile, "--skip-name-resolve",
		"--innodb-buffer-pool-size=64M", "--innodb-log-file-size=48M", "--innodb-flush-log-at-trx-commit=2",
		"--max-connections=300", "--skip-log-bin", "--character-set-server=utf8mb4", "--collation-server=utf8mb4_bin",
	}, opts.Args...)
	tb.Cleanup(func() { m.Kill(syscall.SIGKILL) })
	if !opts.NoStart {
		if err := m.Start(); err != nil {
			tb.Fatal(err)
		}
		if err := m.Exec("CREATE DATABASE IF NOT EXISTS test"); err != nil {
			tb.Fatal(err)
		}
	}
	return m
}

// Start starts mariadbd (with extra options for this start only) and waits
// until it accepts connections.
func (m *MariaDB) Start(extra ...string) error {
	m.mu.Lock()
	if m.cmd != nil {
		m.mu.Unlock()
		return errors.New("servers: mariadbd already running")
	}
	cmd := exec.Command(mariadbd, append(append([]string{}, m.args...), extra...)...)
	// The server dies with the test process, whatever ends it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		m.mu.Unlock()
		return fmt.Errorf("servers: start mariadbd: %w", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	m.cmd, m.done = cmd, done
	m.mu.Unlock()
	err := waitFor(startTimeout, func() error {
		select {
		case <-done:
			return errors.New("mariadbd exited")
		default:
		}
		if err := ping("mysql", m.DSN("")); err != nil {
			return err
		}
		if m.galera {
			ready, err := m.Query("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_READY'")
			if err != nil {
				return err
			}
			if ready != "ON" {
				return fmt.Errorf("wsrep_ready is %q", ready)
			}
		}
		return nil
	})
	if err != nil {
		m.Kill(syscall.SIGKILL)
		return fmt.Errorf("servers: mariadbd on %d did not come up: %w\n%s", m.Port, err, tail(m.Log(), 4000))
	}
	return nil
}

// Kill sends sig to mariadbd and waits until it has exited (SIGTERM is a
// clean shutdown, SIGKILL a crash).
func (m *MariaDB) Kill(sig syscall.Signal) {
	m.mu.Lock()
	cmd, done := m.cmd, m.done
	m.cmd = nil
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(startTimeout):
		_ = cmd.Process.Kill()
		<-done
	}
}

// Running reports whether mariadbd is running.
func (m *MariaDB) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cmd != nil
}

// DSN is a go-sql-driver DSN for database db.
func (m *MariaDB) DSN(db string) string {
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/%s?timeout=5s&readTimeout=30s&writeTimeout=30s", m.Port, db)
}

// Exec runs statements on the server.
func (m *MariaDB) Exec(stmts ...string) error {
	db, err := sql.Open("mysql", m.DSN(""))
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// Query returns the first column of the first row.
func (m *MariaDB) Query(q string) (string, error) {
	db, err := sql.Open("mysql", m.DSN(""))
	if err != nil {
		return "", err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var s sql.NullString
	err = db.QueryRowContext(ctx, q).Scan(&s)
	return s.String, err
}

// Log is the server's error log so far.
func (m *MariaDB) Log() string {
	b, _ := os.ReadFile(m.logFile)
	return string(b)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// NewStandby makes a streaming replica of primary with pg_basebackup
// (replication slot-less, WAL streamed during the copy) and starts it. The
// primary needs "host replication all 127.0.0.1/32 trust" in pg_hba.conf.
// conf lines are appended to the standby's postgresql.conf after the
// primary's.
func NewStandby(tb testing.TB, primary *Postgres, name string, conf ...string) *Postgres {
	tb.Helper()
	p := &Postgres{Port: FreePort(tb), cred: primary.cred, bin: primary.bin}
	base := tempDir(tb, "scaleout-pg-")
	p.Dir, p.sock, p.logFile = filepath.Join(base, "data"), filepath.Join(base, "sock"), filepath.Join(base, "log")
	for _, d := range []string{p.Dir, p.sock} {
		if err := os.Mkdir(d, 0o700); err != nil {
			tb.Fatal(err)
		}
		if err := p.own(d); err != nil {
			tb.Fatal(err)
		}
	}
	if err := os.WriteFile(p.logFile, nil, 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := p.own(p.logFile); err != nil {
		tb.Fatal(err)
	}
	if _, err := run(startTimeout, p.cred, filepath.Join(p.bin, "pg_basebackup"), "-h", "127.0.0.1", "-p", strconv.Itoa(primary.Port),
		"-U", "postgres", "-D", p.Dir, "-X", "stream", "-R", "--no-sync", "-c", "fast"); err != nil {
		tb.Fatalf("servers: pg_basebackup: %v", err)
	}
	lines := append([]string{
		fmt.Sprintf("port = %d", p.Port),
		fmt.Sprintf("unix_socket_directories = '%s'", p.sock),
		fmt.Sprintf("primary_conninfo = 'host=127.0.0.1 port=%d user=postgres application_name=%s'", primary.Port, name),
	}, conf...)
	f, err := os.OpenFile(filepath.Join(p.Dir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		tb.Fatal(err)
	}
	_, err = f.WriteString("\n" + strings.Join(lines, "\n") + "\n")
	f.Close()
	if err != nil {
		tb.Fatal(err)
	}
	// pg_basebackup -R wrote primary_conninfo too, into postgresql.auto.conf,
	// which wins: drop it there.
	auto := filepath.Join(p.Dir, "postgresql.auto.conf")
	if b, err := os.ReadFile(auto); err == nil {
		var keep []string
		for _, l := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(strings.TrimSpace(l), "primary_conninfo") {
				keep = append(keep, l)
			}
		}
		if err := os.WriteFile(auto, []byte(strings.Join(keep, "\n")), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	tb.Cleanup(func() { _ = p.Stop("immediate") })
	if err := p.Start(); err != nil {
		tb.Fatal(err)
	}
	return p
}

// Promote makes a standby the primary (pg_ctl promote) and waits until it
// accepts writes.
func (p *Postgres) Promote() error {
	if _, err := p.pgctl("-w", "-t", strconv.Itoa(int(startTimeout/time.Second)), "promote"); err != nil {
		return fmt.Errorf("servers: promote postgres on %d: %w\n%s", p.Port, err, p.Log())
	}
	return nil
}
