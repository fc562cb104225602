package conformance

import "testing"

// scaleBenchmark is one cost that must stay flat as the work behind it
// grows: run measures one operation at one size (a sub-benchmark per size,
// named like "keys=100k"), so that the two sizes of each read side by side.
type scaleBenchmark struct {
	name string
	run  func(b *testing.B, target BenchTarget)
}

// scaleBenchmarks are the costs issue 11 names, each at two sizes. Each
// lives in a file of its own (bench_scale_*.go).
var scaleBenchmarks = []scaleBenchmark{
	{"CompactedClaim", benchCompactedClaim},
	{"RetryBacklogClaim", benchRetryBacklogClaim},
	{"IdlePoll", benchIdlePoll},
	{"Health", benchHealth},
	{"Maintain", benchMaintain},
}

// BenchmarkScale measures what one operation costs at two sizes of the
// work behind it: a compacted stream's claim at two key counts, an idle poll
// at two partition counts, the exception claim behind two retry backlogs,
// and Health and maintenance at two log sizes. A cost that grows with the
// size is a scan where an index or a bound was meant (make bench-scale;
// docs/benchmarks.md has the table and the chart).
func BenchmarkScale(b *testing.B, target BenchTarget) {
	for _, sb := range scaleBenchmarks {
		b.Run(sb.name, func(b *testing.B) { sb.run(b, target) })
	}
}
