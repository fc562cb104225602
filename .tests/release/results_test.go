package main

import (
	"strings"
	"testing"
)

// TestCountPassed: the third-party suite counts only when tests ran and
// every one passed; a skip is a failure (a skipped contract proves nothing).
func TestCountPassed(t *testing.T) {
	t.Parallel()
	ev := func(action, test string) string {
		return `{"Action":"` + action + `","Package":"example.com/xdriver","Test":"` + test + `"}` + "\n"
	}
	for _, tc := range []struct {
		name, out string
		want      int
		wantErr   string
	}{
		{"all pass", ev("run", "TestConformance") + ev("pass", "TestConformance/C1") + ev("pass", "TestConformance"), 2, ""},
		{"one fails", ev("pass", "TestConformance/C1") + ev("fail", "TestConformance/C2"), 1, "fail TestConformance/C2"},
		{"one skipped", ev("pass", "TestConformance/C1") + ev("skip", "TestConformance/C17"), 1, "skip TestConformance/C17"},
		{"none ran", `{"Action":"pass","Package":"example.com/xdriver"}` + "\n", 0, "no test ran"},
		{"output lines between", ev("pass", "TestA") + "not json\n" + ev("output", "TestA"), 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := countPassed(tc.out)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("passed = %d, want %d", got, tc.want)
			}
		})
	}
}
