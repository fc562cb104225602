package servers

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// PgBouncer is a pgbouncer child process in transaction mode in front of a
// Postgres of the tests; every database of the server is reachable through
// it under its own name.
type PgBouncer struct {
	Port int
}

// NewPgBouncer starts pgbouncer (pool_mode = transaction) for pg; it is
// killed at cleanup.
func NewPgBouncer(tb testing.TB, pg *Postgres) *PgBouncer {
	tb.Helper()
	Need(tb, "pgbouncer", "pgbouncer")
	b := &PgBouncer{Port: FreePort(tb)}
	dir := tempDir(tb, "scaleout-pgb-")
	if err := pg.own(dir); err != nil {
		tb.Fatal(err)
	}
	conf := strings.Join([]string{
		"[databases]",
		fmt.Sprintf("* = host=127.0.0.1 port=%d", pg.Port),
		"[pgbouncer]",
		"listen_addr = 127.0.0.1",
		fmt.Sprintf("listen_port = %d", b.Port),
		"unix_socket_dir =",
		"auth_type = trust",
		"auth_file = " + filepath.Join(dir, "users.txt"),
		"pool_mode = transaction",
		"max_client_conn = 1000",
		"default_pool_size = 60",
		"max_db_connections = 150",
		"server_reset_query =",
		"ignore_startup_parameters = extra_float_digits",
		"logfile = " + filepath.Join(dir, "pgbouncer.log"),
		"pidfile = " + filepath.Join(dir, "pgbouncer.pid"),
		"",
	}, "\n")
	for name, body := range map[string]string{"pgbouncer.ini": conf, "users.txt": `"postgres" ""` + "\n"} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	cmd := exec.Command("pgbouncer", filepath.Join(dir, "pgbouncer.ini"))
	// pgbouncer refuses to run as root.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: pg.cred}
	out, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		tb.Fatalf("servers: start pgbouncer: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); out.Close(); close(done) }()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	if err := waitFor(startTimeout, func() error {
		select {
		case <-done:
			log, _ := os.ReadFile(filepath.Join(dir, "stderr"))
			return fmt.Errorf("pgbouncer exited: %s", log)
		default:
		}
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(b.Port), time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	}); err != nil {
		tb.Fatal(err)
	}
	return b
}
