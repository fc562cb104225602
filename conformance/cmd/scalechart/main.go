// Command scalechart turns the output of the scale benchmarks (make
// bench-scale) into the scale table and chart of docs/benchmarks.md: it
// reads `go test -bench 'BenchmarkScale…'` output of any of the drivers on
// standard input, writes an SVG chart (cost per op against size, one panel
// per scenario, one line per driver) and prints the markdown table.
//
//	make bench-scale | tee /tmp/scale.txt
//	go run ./conformance/cmd/scalechart < /tmp/scale.txt
//
// A cost is the benchmark's ms/op metric (what the scenario times), or its
// ns/op where it reports none; repeated runs (-count) give their median.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

func main() {
	out := flag.String("o", "docs/benchmarks/scale.svg", "where to write the chart")
	flag.Parse()
	rs, err := parse(os.Stdin)
	if err == nil && len(rs) == 0 {
		err = errors.New("no BenchmarkScale results on standard input (run make bench-scale)")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "scalechart:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, chart(rs), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "scalechart:", err)
		os.Exit(1)
	}
	fmt.Print(table(rs))
	fmt.Fprintf(os.Stderr, "scalechart: wrote %s\n", *out)
}

// drivers are the benchmark names of the drivers, in table order, with the
// database each runs against.
var drivers = []struct{ bench, label, color string }{
	{"SQLite", "SQLite", "#2f6fb0"},
	{"Postgres", "PostgreSQL", "#d1495b"},
	{"MySQL", "MariaDB", "#2a9d55"},
}

// result is the cost of one scenario on one driver at one size.
type result struct {
	scenario string
	driver   string // as in drivers[].bench
	size     string // the sub-benchmark name, "keys=100k"
	value    float64
	ms       float64 // the median of the runs
}

// parse reads benchmark lines such as
//
//	BenchmarkScalePostgres/CompactedClaim/keys=100k-2  20  40918219 ns/op  40.92 ms/op
//
// and returns one result per scenario, driver and size, in input order.
func parse(r io.Reader) ([]result, error) {
	type key struct{ scenario, driver, size string }
	runs := map[key][]float64{}
	var order []key
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "BenchmarkScale") {
			continue
		}
		parts := strings.Split(fields[0], "/")
		if len(parts) != 3 {
			continue // a parent benchmark's line, or another benchmark's
		}
		drv := strings.TrimPrefix(parts[0], "BenchmarkScale")
		size := parts[2]
		if i := strings.LastIndexByte(size, '-'); i > 0 {
			if _, err := strconv.Atoi(size[i+1:]); err == nil {
				size = size[:i] // the -GOMAXPROCS suffix
			}
		}
		ms, ok := cost(fields[2:])
		if !ok {
			return nil, fmt.Errorf("%s: no ns/op or ms/op in %q", fields[0], sc.Text())
		}
		k := key{parts[1], drv, size}
		if _, seen := runs[k]; !seen {
			order = append(order, k)
		}
		runs[k] = append(runs[k], ms)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out := make([]result, 0, len(order))
	for _, k := range order {
		v, err := sizeValue(k.size)
		if err != nil {
			return nil, fmt.Errorf("BenchmarkScale%s/%s/%s: %w", k.driver, k.scenario, k.size, err)
		}
		out = append(out, result{scenario: k.scenario, driver: k.driver, size: k.size, value: v, ms: median(runs[k])})
	}
	return out, nil
}

// cost reads a benchmark line's metrics (value, unit pairs): ms/op, else
// ns/op in milliseconds.
func cost(metrics []string) (float64, bool) {
	ns, haveNs := 0.0, false
	for i := 0; i+1 < len(metrics); i += 2 {
		v, err := strconv.ParseFloat(metrics[i], 64)
		if err != nil {
			continue
		}
		switch metrics[i+1] {
		case "ms/op":
			return v, true
		case "ns/op":
			ns, haveNs = v, true
		}
	}
	return ns / 1e6, haveNs
}

// sizeValue reads the number of a size such as "keys=100k", "retries=1M"
// or "partitions=512".
func sizeValue(size string) (float64, error) {
	_, n, ok := strings.Cut(size, "=")
	if !ok || n == "" {
		return 0, fmt.Errorf("size %q is not name=count", size)
	}
	mult := 1.0
	switch n[len(n)-1] {
	case 'k', 'K':
		mult, n = 1e3, n[:len(n)-1]
	case 'M':
		mult, n = 1e6, n[:len(n)-1]
	}
	v, err := strconv.ParseFloat(n, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: count %q is not a number", size, n)
	}
	return v * mult, nil
}

func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// scenario is one scenario's results: its sizes in increasing order and,
// per driver, the cost at each size (NaN where missing).
type scenario struct {
	name  string
	sizes []string
	costs map[string][]float64
}

func scenarios(rs []result) []scenario {
	var out []scenario
	index := map[string]int{}
	values := map[string]float64{}
	for _, r := range rs {
		i, ok := index[r.scenario]
		if !ok {
			i = len(out)
			index[r.scenario] = i
			out = append(out, scenario{name: r.scenario, costs: map[string][]float64{}})
		}
		if !slices.Contains(out[i].sizes, r.size) {
			out[i].sizes = append(out[i].sizes, r.size)
		}
		values[r.size] = r.value
	}
	for i := range out {
		s := &out[i]
		slices.SortStableFunc(s.sizes, func(a, b string) int { return cmpFloat(values[a], values[b]) })
		for _, d := range drivers {
			cs := make([]float64, len(s.sizes))
			for j := range cs {
				cs[j] = math.NaN()
			}
			s.costs[d.bench] = cs
		}
	}
	for _, r := range rs {
		s := &out[index[r.scenario]]
		if cs, ok := s.costs[r.driver]; ok {
			cs[slices.Index(s.sizes, r.size)] = r.ms
		}
	}
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// table is the markdown scale table: per scenario and driver, the cost at
// the smallest and the largest size and their ratio.
func table(rs []result) string {
	var sb strings.Builder
	sb.WriteString("| scenario | sizes |")
	for _, d := range drivers {
		sb.WriteString(" " + d.label + " |")
	}
	sb.WriteString("\n| --- | --- |")
	for range drivers {
		sb.WriteString(" ---: |")
	}
	sb.WriteString("\n")
	for _, s := range scenarios(rs) {
		first, last := 0, len(s.sizes)-1
		fmt.Fprintf(&sb, "| %s | %s |", s.name, sizeRange(s.sizes))
		for _, d := range drivers {
			cs := s.costs[d.bench]
			switch {
			case math.IsNaN(cs[first]) || math.IsNaN(cs[last]):
				sb.WriteString(" |")
			case first == last:
				fmt.Fprintf(&sb, " %s ms |", num(cs[first]))
			default:
				fmt.Fprintf(&sb, " %s → %s ms (**%.1fx**) |", num(cs[first]), num(cs[last]), cs[last]/cs[first])
			}
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

// sizeRange is "keys=100k → 1M".
func sizeRange(sizes []string) string {
	if len(sizes) == 1 {
		return sizes[0]
	}
	_, last, _ := strings.Cut(sizes[len(sizes)-1], "=")
	return sizes[0] + " → " + last
}

// num prints a cost with three significant digits.
func num(ms float64) string {
	switch {
	case ms >= 100:
		return strconv.FormatFloat(ms, 'f', 0, 64)
	case ms >= 10:
		return strconv.FormatFloat(ms, 'f', 1, 64)
	case ms >= 1:
		return strconv.FormatFloat(ms, 'f', 2, 64)
	}
	return strconv.FormatFloat(ms, 'f', 3, 64)
}
