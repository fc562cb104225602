package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
)

// countPassed reads go test -json output and counts the tests that passed,
// failing when any failed, was skipped, or when none ran: a suite that
// runs nothing proves nothing.
func countPassed(out string) (int, error) {
	var passed int
	var bad []string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev struct{ Action, Test string }
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Test == "" {
			continue
		}
		switch ev.Action {
		case "pass":
			passed++
		case "fail", "skip":
			bad = append(bad, ev.Action+" "+ev.Test)
		}
	}
	if len(bad) > 0 {
		return passed, fmt.Errorf("%d test(s) did not pass: %s", len(bad), strings.Join(bad, ", "))
	}
	if passed == 0 {
		return 0, fmt.Errorf("no test ran")
	}
	return passed, nil
}

func runBinary(ctx context.Context, bin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w\n%s", bin, strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}
