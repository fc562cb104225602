package sqlstreamscli_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var built struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// binary builds cmd/sqlstreams once per test run.
func binary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "sqlstreams-bin-")
		if err != nil {
			built.err = err
			return
		}
		built.path = filepath.Join(dir, "sqlstreams")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", built.path, "./cmd/sqlstreams")
		built.out, built.err = cmd.CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("go build ./cmd/sqlstreams: %v\n%s", built.err, built.out)
	}
	return built.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.path != "" {
		_ = os.RemoveAll(filepath.Dir(built.path))
	}
	os.Exit(code)
}

// runBinary runs the built command with exactly the environment given
// (plus PATH and HOME).
func runBinary(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run sqlstreams: %v", err)
	}
	return result{stdout.String(), stderr.String(), code}
}

// TestBinary checks the built command's exit codes, SQLSTREAMS_URL, --url
// over the environment, and --yes.
func TestBinary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url := "sqlite:" + filepath.Join(dir, "app.db")
	env := []string{"SQLSTREAMS_URL=" + url}
	seed(t, url)
	bad, good := filepath.Join(dir, "bad.json"), filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, []byte(`{"type":"object","properties":{"a":{"type":"string"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(`{"type":"object","properties":{"a":{"type":"integer"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		env    []string
		args   []string
		code   int
		stdout string // a substring; "" means empty
		stderr string // a substring; "" means empty
	}{
		{"env", env, []string{"streams", "list"}, 0, "orders", ""},
		{"url flag over env", []string{"SQLSTREAMS_URL=redis://nowhere"}, []string{"--url", url, "streams", "list"}, 0, "orders", ""},
		{"no url", nil, []string{"streams", "list"}, 2, "", "pass --url or set SQLSTREAMS_URL"},
		{"unknown scheme", []string{"SQLSTREAMS_URL=redis://nowhere"}, []string{"streams", "list"}, 2, "", "unknown scheme \"redis\""},
		{"unknown flag", env, []string{"streams", "list", "--colour"}, 2, "", "unknown flag: --colour"},
		{"unknown command", env, []string{"stream", "list"}, 2, "", "unknown command \"stream\""},
		{"missing argument", env, []string{"health"}, 2, "", "accepts 1 arg(s)"},
		{"library error", env, []string{"health", "nope"}, 1, "", "sqlstreams: stream \"nope\": stream not found; 'sqlstreams streams list' lists the streams"},
		{"not retirable", env, []string{"health", "orders", "--retirable", "v1"}, 3, "v1 is not retirable", "group billing has 1 dead"},
		{"never had", env, []string{"health", "orders", "--retirable", "v3"}, 3, "v3 is not a version of orders", "has never had version 3"},
		{"offline incompatible", nil, []string{"schema", "check", "--offline", good, bad}, 3, "TYPE_CHANGED", "is not compatible at level BACKWARD"},
		{"offline compatible", nil, []string{"schema", "check", "--offline", good, good, "--level", "FULL_TRANSITIVE"}, 0, "compatible at level FULL_TRANSITIVE", ""},
		{"pending migrations", []string{"SQLSTREAMS_URL=sqlite:" + filepath.Join(dir, "empty.db")}, []string{"migrate", "validate"}, 3, "", "migrations 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 are not applied"},
		{"destroy without --yes", env, []string{"streams", "destroy", "accounts"}, 2, "", "add --yes to confirm"},
		{"still there", env, []string{"streams", "describe", "accounts"}, 0, "accounts", ""},
		{"discard without --yes", env, []string{"dead", "discard", "orders", "billing", "--all"}, 2, "", "add --yes to confirm"},
		{"delete group without --yes", env, []string{"groups", "delete", "orders", "audit"}, 2, "", "add --yes to confirm"},
		{"destroy with deliveries left", env, []string{"streams", "destroy", "orders", "--yes"}, 3, "", "add --force to destroy it anyway"},
		{"destroy with --yes", env, []string{"streams", "destroy", "accounts", "--yes"}, 0, "destroyed stream accounts", ""},
		{"gone", env, []string{"streams", "describe", "accounts"}, 1, "", "stream not found"},
		{"version", nil, []string{"version"}, 0, "sqlstreams ", ""},
	}
	for _, c := range cases { // in order: later cases see what earlier ones did
		r := runBinary(t, c.env, c.args...)
		if r.code != c.code {
			t.Errorf("%s: sqlstreams %s: exit %d, want %d\n%v", c.name, strings.Join(c.args, " "), r.code, c.code, r)
			continue
		}
		for _, out := range []struct{ got, want, which string }{{r.stdout, c.stdout, "stdout"}, {r.stderr, c.stderr, "stderr"}} {
			if (out.want == "" && out.got != "") || !strings.Contains(out.got, out.want) {
				t.Errorf("%s: %s = %q, want %q", c.name, out.which, out.got, out.want)
			}
		}
	}
}

// TestBinaryFollowInterrupt: tail --follow stops on SIGINT with exit 0.
func TestBinaryFollowInterrupt(t *testing.T) {
	t.Parallel()
	url := "sqlite:" + filepath.Join(t.TempDir(), "app.db")
	seed(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), "--url", url, "-o", "jsonl", "tail", "orders", "--follow")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	for i := range 5 { // the seeded rows
		if !lines.Scan() {
			t.Fatalf("tail --follow printed %d lines, then: %v; stderr %s", i, lines.Err(), stderr.String())
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	for lines.Scan() {
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("tail --follow after SIGINT: %v; stderr %s", err, stderr.String())
	}
}
