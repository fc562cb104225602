// Package proctest runs parts of a test in other OS processes, so that
// tests can kill a real consumer with SIGKILL or run producers and
// consumers side by side as separate programs.
//
// A test re-executes its own binary with a role and a JSON spec in the
// environment; the binary's TestMain calls Dispatch first, which runs the
// role instead of the tests. Children report what they did through a
// Recorder file: one record a line, written whole, so that a line torn by
// SIGKILL is recognised and dropped.
package proctest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	envRole = "SQLSTREAMS_PROCTEST_ROLE"
	envSpec = "SQLSTREAMS_PROCTEST_SPEC"
)

// Role runs in a child process with the spec the parent passed; its return
// is the exit code. ctx ends when the parent asks the child to stop
// (Terminate): a role treats that, at any instant, as a clean stop.
type Role func(ctx context.Context, spec json.RawMessage) int

// readyLine is what a child prints once SIGTERM ends its context instead of
// killing it; Terminate waits for it, so that a stop requested while the
// child is still starting is a clean stop too.
const readyLine = "proctest: stopping on SIGTERM\n"

// Dispatch runs the role named in the environment and exits, or returns
// when this process is not a child. Call it first in TestMain.
func Dispatch(roles map[string]Role) {
	name := os.Getenv(envRole)
	if name == "" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	os.Stdout.WriteString(readyLine)
	role, ok := roles[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "proctest: unknown role %q\n", name)
		os.Exit(2)
	}
	code := role(ctx, json.RawMessage(os.Getenv(envSpec)))
	stop()
	os.Exit(code)
}

// Child is a running child process.
type Child struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan error
}

// Spawn starts this test binary in role with spec (marshalled to JSON). The
// child is killed at the end of the test if it still runs.
func Spawn(t testing.TB, role string, spec any) *Child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envRole+"="+role, envSpec+"="+string(js))
	c := &Child{cmd: cmd, out: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = c.out, c.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s child: %v", role, err)
	}
	go func() { c.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		c.exit()
	})
	return c
}

func (c *Child) exit() error {
	err := <-c.done
	c.done <- err
	return err
}

// Output returns what the child printed so far.
func (c *Child) Output() string { return c.out.String() }

// Wait waits for the child to exit and fails the test unless it exited 0.
func (c *Child) Wait(t testing.TB, within time.Duration, what string) {
	t.Helper()
	select {
	case err := <-c.done:
		c.done <- err
		if err != nil {
			t.Fatalf("%s exited with %v; output:\n%s", what, err, c.Output())
		}
	case <-time.After(within):
		t.Fatalf("%s still running after %v; output:\n%s", what, within, c.Output())
	}
}

// Kill sends SIGKILL and waits until the process is gone.
func (c *Child) Kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	_ = c.exit()
}

// Terminate asks the child to stop gracefully with SIGTERM. It first waits
// until the child handles the signal (or has exited), so that the request
// is never the signal's default action, whatever the child was doing.
func (c *Child) Terminate() {
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(c.Output(), readyLine) && time.Now().Before(deadline) {
		select {
		case err := <-c.done:
			c.done <- err
			return // already gone
		case <-time.After(5 * time.Millisecond):
		}
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Recorder appends whole records to a file that the parent reads.
type Recorder struct {
	mu sync.Mutex
	f  *os.File
}

// OpenRecorder opens (creating or appending to) a record file.
func OpenRecorder(path string) (*Recorder, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &Recorder{f: f}, nil
}

// Record writes one record: the fields separated by spaces.
func (r *Recorder) Record(fields ...any) error {
	var sb strings.Builder
	for i, f := range fields {
		if i > 0 {
			sb.WriteByte(' ')
		}
		fmt.Fprint(&sb, f)
	}
	sb.WriteString(" ;\n")
	r.mu.Lock()
	defer r.mu.Unlock()
	_, err := r.f.WriteString(sb.String())
	return err
}

// Close closes the file.
func (r *Recorder) Close() error { return r.f.Close() }

// Records reads a record file; a missing file has no records. Each record
// is its fields; the first names its kind.
func Records(t testing.TB, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || fields[len(fields)-1] != ";" {
			continue // torn by SIGKILL mid-write
		}
		out = append(out, fields[:len(fields)-1])
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
