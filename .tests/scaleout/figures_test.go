package scaleout_test

import (
	"encoding/json"
	"os"
	"sync"
	"testing"
)

// record logs a scenario's figures and, when SQLSTREAMS_SCALEOUT_FIGURES
// names a file, appends them there as a JSON line (docs/scaleout.md is
// written from such a run).
func record(t testing.TB, scenario string, f loadFigures) {
	t.Logf("%s: %s", scenario, f)
	path := os.Getenv("SQLSTREAMS_SCALEOUT_FIGURES")
	if path == "" {
		return
	}
	figuresMu.Lock()
	defer figuresMu.Unlock()
	b, _ := json.Marshal(map[string]any{"scenario": scenario, "figures": f})
	fh, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Errorf("figures: %v", err)
		return
	}
	defer fh.Close()
	fh.Write(append(b, '\n'))
}

var figuresMu sync.Mutex
