package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// Multi-process tests re-execute the test binary with a role and a spec in
// the environment; Main sees the role and runs the child instead of tests.
const (
	envRole = "SQLSTREAMS_CONFORMANCE_ROLE"
	envSpec = "SQLSTREAMS_CONFORMANCE_SPEC"
)

// childSpec tells a child process what to do.
type childSpec struct {
	Namespace   string
	Stream      string
	Group       string
	Out         string // file the child appends its record lines to
	Count       int
	Lease       time.Duration
	Concurrency int
	Batch       int
}

// child is a running child process.
type child struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan error
}

// spawn starts the test binary in a child role.
func spawn(t testing.TB, role string, spec childSpec) *child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(spec)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envRole+"="+role, envSpec+"="+string(js))
	c := &child{cmd: cmd, stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	cmd.Stderr = &lockedWriter{w: c.stderr}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s child: %v", role, err)
	}
	go func() { c.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-c.done
	})
	return c
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (c *child) output() string {
	lw := c.cmd.Stderr.(*lockedWriter)
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.w.String()
}

// wait waits for the child to exit and fails the test unless it exited 0.
func (c *child) wait(t testing.TB, within time.Duration, what string) {
	t.Helper()
	select {
	case err := <-c.done:
		c.done <- err
		if err != nil {
			t.Fatalf("%s exited with %v; output:\n%s", what, err, c.output())
		}
	case <-time.After(within):
		t.Fatalf("%s still running after %v; output:\n%s", what, within, c.output())
	}
}

// kill sends SIGKILL and waits for the process to go.
func (c *child) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	err := <-c.done
	c.done <- err
}

// readRecords reads a child's record file: one record a line, fields
// separated by spaces, the first being the record kind.
func readRecords(t testing.TB, path string) [][]string {
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
		line := sc.Text()
		if !strings.HasSuffix(line, ";") {
			continue // torn by SIGKILL mid-write
		}
		out = append(out, strings.Fields(strings.TrimSuffix(line, ";")))
	}
	return out
}

// recorder appends complete lines to a file shared with the parent.
type recorder struct {
	mu sync.Mutex
	f  *os.File
}

func (r *recorder) record(fields ...any) error {
	var sb strings.Builder
	for i, f := range fields {
		if i > 0 {
			sb.WriteByte(' ')
		}
		fmt.Fprint(&sb, f)
	}
	sb.WriteString(";\n")
	r.mu.Lock()
	defer r.mu.Unlock()
	_, err := r.f.WriteString(sb.String())
	return err
}

func runChild(role string, target Target) int {
	var spec childSpec
	if err := json.Unmarshal([]byte(os.Getenv(envSpec)), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "bad child spec:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	drv, err := target.Open(spec.Namespace)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open driver:", err)
		return 2
	}
	client, err := sqlstreams.Open(ctx, drv, sqlstreams.WithMaintenanceInterval(0), sqlstreams.WithLogger(logger))
	if err != nil {
		fmt.Fprintln(os.Stderr, "open client:", err)
		return 2
	}
	defer client.Close()
	f, err := os.OpenFile(spec.Out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer f.Close()
	rec := &recorder{f: f}
	roles := map[string]func(context.Context, *sqlstreams.Client, childSpec, *recorder) error{
		"claim-ack": childClaimAck,
		"produce":   childProduce,
		"consume":   childConsume,
	}
	run, ok := roles[role]
	if !ok {
		fmt.Fprintln(os.Stderr, "unknown role", role)
		return 2
	}
	if err := run(ctx, client, spec, rec); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", role, err)
		return 1
	}
	return 0
}

// childClaimAck claims batches, records each delivery as it handles it,
// acks the batch and records the ack, until it is killed.
func childClaimAck(ctx context.Context, c *sqlstreams.Client, spec childSpec, rec *recorder) error {
	cons, err := c.Stream[EventV1](spec.Stream).Consumer(spec.Group).Register(ctx, &sqlstreams.ConsumerOptions{LeaseDuration: spec.Lease})
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		ds, err := cons.Claim(ctx, spec.Batch)
		if err != nil {
			return err
		}
		if len(ds) == 0 {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		for _, d := range ds {
			if err := rec.record("got", d.ID, d.Attempt); err != nil {
				return err
			}
			time.Sleep(time.Millisecond) // the work
		}
		if err := cons.Ack(ctx, ds...); err != nil {
			return err
		}
		for _, d := range ds {
			if err := rec.record("acked", d.ID); err != nil {
				return err
			}
		}
	}
	return nil
}

// childProduce produces Count events, alternating single produces and
// batches of ten, recording every id.
func childProduce(ctx context.Context, c *sqlstreams.Client, spec childSpec, rec *recorder) error {
	p, err := c.Stream[EventV1](spec.Stream).Producer().Register(ctx, nil)
	if err != nil {
		return err
	}
	for n := 0; n < spec.Count; {
		var ids []int64
		if n%20 == 0 && spec.Count-n >= 10 {
			msgs := make([]sqlstreams.Message[EventV1], 10)
			for i := range msgs {
				msgs[i] = sqlstreams.NewMessage(EventV1{Seq: n + i}, sqlstreams.Key(fmt.Sprintf("k%d-%d", os.Getpid(), n+i)))
			}
			if ids, err = p.ProduceBatch(ctx, msgs...); err != nil {
				return err
			}
		} else {
			id, err := p.Produce(ctx, EventV1{Seq: n}, sqlstreams.Key(fmt.Sprintf("k%d-%d", os.Getpid(), n)))
			if err != nil {
				return err
			}
			ids = []int64{id}
		}
		for _, id := range ids {
			if err := rec.record("produced", id); err != nil {
				return err
			}
		}
		n += len(ids)
	}
	return nil
}

// childConsume runs a group member until SIGTERM, recording each handled id.
func childConsume(ctx context.Context, c *sqlstreams.Client, spec childSpec, rec *recorder) error {
	cons, err := c.Stream[EventV1](spec.Stream).Consumer(spec.Group).Register(ctx, &sqlstreams.ConsumerOptions{
		LeaseDuration: spec.Lease, Concurrency: spec.Concurrency, BatchSize: spec.Batch, PollInterval: 20 * time.Millisecond})
	if err != nil {
		return err
	}
	pid := strconv.Itoa(os.Getpid())
	if err := rec.record("ready", 0, 0, pid); err != nil {
		return err
	}
	return cons.Run(ctx, func(ctx context.Context, d sqlstreams.Delivery[EventV1]) error {
		return rec.record("handled", d.ID, d.Attempt, pid)
	})
}
