package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
)

// testdata/bench.txt is make bench-scale output of the three drivers, with
// two more runs of one benchmark (-count), a scenario that reports only
// ns/op, and a line of another benchmark.
func load(t *testing.T) []result {
	t.Helper()
	f, err := os.Open("testdata/bench.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rs, err := parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestParse(t *testing.T) {
	rs := load(t)
	if len(rs) != 14 {
		t.Fatalf("parsed %d results, want 14 (3 drivers × 2 scenarios × 2 sizes, and IdlePoll on SQLite): %+v", len(rs), rs)
	}
	got := map[string]float64{}
	for _, r := range rs {
		got[r.driver+"/"+r.scenario+"/"+r.size] = r.ms
	}
	for name, want := range map[string]float64{
		"Postgres/CompactedClaim/keys=100k":   84.61, // the median of 84.61, 80 and 90
		"MySQL/RetryBacklogClaim/retries=1k":  7.479, // ms/op, not ns/op
		"SQLite/IdlePoll/partitions=512":      31,    // ns/op in ms, when there is no ms/op
		"SQLite/RetryBacklogClaim/retries=1k": 0.4012,
	} {
		if got[name] != want {
			t.Errorf("%s = %v ms, want %v", name, got[name], want)
		}
	}
	if _, ok := got["SQLite/Produce100/"]; ok {
		t.Error("a line of another benchmark was parsed")
	}
}

func TestTable(t *testing.T) {
	out := table(load(t))
	for _, want := range []string{
		"| scenario | sizes | SQLite | PostgreSQL | MariaDB |\n",
		"| CompactedClaim | keys=100k → 1M | 1.87 → 2.52 ms (**1.4x**) | 84.6 → 554 ms (**6.5x**) | 15.7 → 35.8 ms (**2.3x**) |\n",
		"| RetryBacklogClaim | retries=1k → 100k | 0.401 → 45.1 ms (**112.4x**) | 4.86 → 8.97 ms (**1.8x**) | 7.48 → 13.0 ms (**1.7x**) |\n",
		// Sizes in increasing order whatever the order of the runs; no
		// figures where a driver has none.
		"| IdlePoll | partitions=1 → 512 | 0.250 → 31.0 ms (**124.0x**) | | |\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestChart(t *testing.T) {
	svg := chart(load(t))
	// Well-formed XML, an svg root, every scenario's panel, every driver in
	// the legend, each line's ratio.
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var root string
	var texts []string
	polylines := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("chart is not well-formed XML: %v\n%s", err, svg)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = el.Name.Local
			}
			if el.Name.Local == "polyline" {
				polylines++
			}
		case xml.CharData:
			if s := strings.TrimSpace(string(el)); s != "" {
				texts = append(texts, s)
			}
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q, want svg", root)
	}
	if polylines != 7 {
		t.Errorf("%d lines, want 7 (one per driver and scenario that has figures)", polylines)
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{"CompactedClaim", "RetryBacklogClaim", "IdlePoll", "SQLite", "PostgreSQL", "MariaDB",
		"keys=100k", "keys=1M", "554  (6.5x)", "45.1  (112.4x)", "0.401"} {
		if !strings.Contains(all, want) {
			t.Errorf("chart has no text %q; texts:\n%s", want, all)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, in := range []string{
		"BenchmarkScaleSQLite/CompactedClaim/keys=lots-2  20  1000 ns/op\n",
		"BenchmarkScaleSQLite/CompactedClaim/keys-2  20  1000 ns/op\n",
		"BenchmarkScaleSQLite/CompactedClaim/keys=1k-2  20  1000 B/op\n",
	} {
		if _, err := parse(strings.NewReader(in)); err == nil {
			t.Errorf("parse(%q) accepted it", in)
		}
	}
}
