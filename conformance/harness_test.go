package conformance

import (
	"fmt"
	"testing"
)

// nsRecorder is a test that records what is asked of it.
type nsRecorder struct {
	testing.TB
	cleanups []func()
	fatal    string
	errors   []string
}

func (r *nsRecorder) Helper()                        {}
func (r *nsRecorder) Cleanup(f func())               { r.cleanups = append(r.cleanups, f) }
func (r *nsRecorder) Fatalf(format string, a ...any) { r.fatal = fmt.Sprintf(format, a...) }
func (r *nsRecorder) Errorf(format string, a ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, a...))
}

// A pooled namespace belongs to the suite's root test, which drops it at
// the end, but a failure to create it is the failure of the test that
// asked for it: the root's Fatal from that test's goroutine would end the
// whole run with a panic.
func TestPooledNamespaceOwnership(t *testing.T) {
	root, test := &nsRecorder{TB: t}, &nsRecorder{TB: t}
	h := &harness{root: root, pool: &nsPool{}, target: Target{
		NewNamespace: func(tb testing.TB) string {
			tb.Cleanup(func() {}) // dropped when its owner ends
			tb.Fatalf("no server")
			return "ns"
		},
		ResetNamespace: func(string) error { return nil },
	}}
	if got := h.ns(test); got != "ns" {
		t.Fatalf("namespace %q", got)
	}
	if len(root.cleanups) != 1 || root.fatal != "" {
		t.Errorf("the root got %d cleanups and failure %q; want the namespace's cleanup and no failure", len(root.cleanups), root.fatal)
	}
	if test.fatal != "no server" || len(test.cleanups) != 1 {
		t.Errorf("the test got failure %q and %d cleanups; want the failure and only its reset", test.fatal, len(test.cleanups))
	}
}

// The namespace's cleanup runs when the root ends, long after the test
// that made it: a failure it reports (a database that cannot be dropped)
// is the root's, since reporting to an ended test panics and ends the run.
func TestPooledNamespaceCleanupReportsToRoot(t *testing.T) {
	root, test := &nsRecorder{TB: t}, &nsRecorder{TB: t}
	h := &harness{root: root, pool: &nsPool{}, target: Target{
		NewNamespace: func(tb testing.TB) string {
			tb.Errorf("while the test runs")
			tb.Cleanup(func() { tb.Errorf("at the root's end") })
			return "ns"
		},
		ResetNamespace: func(string) error { return nil },
	}}
	h.ns(test)
	for _, f := range root.cleanups {
		f()
	}
	if len(test.errors) != 1 || len(root.errors) != 1 || root.errors[0] != "at the root's end" {
		t.Errorf("the test got %q and the root %q; want the report while the test ran on the test, the cleanup's on the root", test.errors, root.errors)
	}
}

// A test runs where the target offers all it needs, and the log names
// what is missing.
func TestTargetNeeds(t *testing.T) {
	for _, tc := range []struct {
		target  Target
		needs   need
		missing string
	}{
		{Target{}, needSQL | needMigrationsDown, ""},
		{Target{NoSQL: true}, needProcesses, ""},
		{Target{NoSQL: true}, needSQL | needMigrationsDown, "SQL (NoSQL)"},
		{Target{NoSQL: true, NoMigrationsDown: true}, needSQL | needMigrationsDown, "SQL (NoSQL) and migrations down (NoMigrationsDown)"},
		{Target{SingleProcess: true, NoMigrationsDown: true}, needMigrationsDown, "migrations down (NoMigrationsDown)"},
	} {
		missing := tc.target.lacks(tc.needs)
		if got := missing.String(); missing != 0 && got != tc.missing || missing == 0 && tc.missing != "" {
			t.Errorf("%+v needing %d lacks %q; want %q", tc.target, tc.needs, got, tc.missing)
		}
		if tc.target.has(tc.needs) != (tc.missing == "") {
			t.Errorf("%+v has %d: %v", tc.target, tc.needs, tc.target.has(tc.needs))
		}
	}
}

// The shards of the suite run every contract once between them.
func TestShardsCoverTheSuite(t *testing.T) {
	for _, shards := range []int{1, 2, 3} {
		seen := map[string]int{}
		for shard := range shards {
			for _, c := range shardOf(shard, shards) {
				seen[c.name]++
			}
		}
		if len(seen) != len(contracts) {
			t.Errorf("%d shards run %d contracts; want %d", shards, len(seen), len(contracts))
		}
		for name, n := range seen {
			if n != 1 {
				t.Errorf("%d shards run %s %d times", shards, name, n)
			}
		}
	}
}
