package conformance

import (
	"fmt"
	"testing"
)

// nsRecorder is a test that records what is asked of it.
type nsRecorder struct {
	testing.TB
	cleanups int
	fatal    string
}

func (r *nsRecorder) Helper()                        {}
func (r *nsRecorder) Cleanup(func())                 { r.cleanups++ }
func (r *nsRecorder) Fatalf(format string, a ...any) { r.fatal = fmt.Sprintf(format, a...) }

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
	if root.cleanups != 1 || root.fatal != "" {
		t.Errorf("the root got %d cleanups and failure %q; want the namespace's cleanup and no failure", root.cleanups, root.fatal)
	}
	if test.fatal != "no server" || test.cleanups != 1 {
		t.Errorf("the test got failure %q and %d cleanups; want the failure and only its reset", test.fatal, test.cleanups)
	}
}
