package conformance

import (
	"context"
	"os"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// benchTraceEnv names the environment variable that makes the benchmarks'
// clients trace what Run asks of the database (runTrace): set it to
// anything to have each benchmark log, per consumer group, its claims, ack
// writes and how much of the time the database was busy with them.
const benchTraceEnv = "SQLSTREAMS_BENCH_TRACE"

// benchCostEnv names the environment variable that adds the row
// Consume100/run-cost (runCost) to the benchmarks.
const benchCostEnv = "SQLSTREAMS_BENCH_COST"

// traceCall is one database call of a group as its hooks saw it.
type traceCall struct {
	start, end time.Time
	claim      bool // a claim (else an ack write)
	n          int  // rows claimed, or acks written
}

// runTrace records the claims and ack writes of a benchmark's clients
// through their hooks, to show where Run's time goes against the raw loop's
// one statement per batch: how many round trips and commits per 100
// messages, how many acks ride a claim, and how long the database sits idle
// while handlers run (and the other way round).
type runTrace struct {
	sqlstreams.MiddlewareDefaults
	mu    sync.Mutex
	calls map[string][]traceCall // by group
}

func (t *runTrace) add(group string, c traceCall) {
	t.mu.Lock()
	t.calls[group] = append(t.calls[group], c)
	t.mu.Unlock()
}

func (t *runTrace) Claimed(_ context.Context, e sqlstreams.ClaimEvent) {
	end := time.Now()
	t.add(e.Group, traceCall{start: end.Add(-e.Duration), end: end, claim: true, n: len(e.Deliveries)})
}

func (t *runTrace) Settled(_ context.Context, e sqlstreams.SettleEvent) {
	if e.Outcome != sqlstreams.OutcomeAck {
		return
	}
	end := time.Now()
	t.add(e.Group, traceCall{start: end.Add(-e.Duration), end: end, n: len(e.IDs)})
}

// log writes one line per group: claims (rows per claim, how many carried
// acks), separate ack writes, commits per 100 messages, and the share of
// the wall time (first call to last) with a call in flight.
func (t *runTrace) log(b *testing.B) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for group, calls := range t.calls {
		slices.SortFunc(calls, func(a, b traceCall) int { return a.start.Compare(b.start) })
		var claims, rows, carried, writes, acked int
		var busy, claimTime, writeTime time.Duration
		var busyUntil time.Time
		for i, c := range calls {
			if c.claim {
				claims++
				rows += c.n
				claimTime += c.end.Sub(c.start)
			} else if i+1 < len(calls) && calls[i+1].claim && calls[i+1].start.Sub(c.start).Abs() < 50*time.Microsecond ||
				i > 0 && calls[i-1].claim && calls[i-1].start.Sub(c.start).Abs() < 50*time.Microsecond {
				carried++ // the hooks of a claim that carried acks start together
			} else {
				writes++
				acked += c.n
				writeTime += c.end.Sub(c.start)
			}
			switch {
			case c.start.After(busyUntil):
				busy += c.end.Sub(c.start)
				busyUntil = c.end
			case c.end.After(busyUntil):
				busy += c.end.Sub(busyUntil)
				busyUntil = c.end
			}
		}
		if claims == 0 || rows == 0 {
			continue
		}
		wall := busyUntil.Sub(calls[0].start)
		per100 := func(n int) float64 { return float64(n) * 100 / float64(rows) }
		b.Logf("trace %s: %d rows; %d claims (%.0f rows each, %.0f µs each, %d carried acks); %d ack writes (%.0f acks each, %.0f µs each); "+
			"per 100 rows %.2f round trips, %.2f commits; database busy %.0f%% of %v",
			group, rows, claims, float64(rows)/float64(claims), us(claimTime, claims), carried, writes, float64(acked)/float64(max(writes, 1)),
			us(writeTime, writes), per100(claims+writes), per100(claims+writes), 100*busy.Seconds()/wall.Seconds(), wall.Round(time.Millisecond))
	}
	t.calls = map[string][]traceCall{}
}

func us(d time.Duration, n int) float64 {
	return float64(d.Microseconds()) / float64(max(n, 1))
}

// traceOption is the client option that installs a trace, logged when b
// ends, if benchTraceEnv is set.
func traceOption(b *testing.B) []sqlstreams.ClientOption {
	if os.Getenv(benchTraceEnv) == "" {
		return nil
	}
	t := &runTrace{calls: map[string][]traceCall{}}
	b.Cleanup(func() { t.log(b) })
	return []sqlstreams.ClientOption{sqlstreams.WithMiddleware(t)}
}

// processCPU is the CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// backendCPU is the CPU time used by the PostgreSQL backends that serve
// this process's connections (found by their process titles, which name
// the client's port), on the same host; 0 where there are none (MariaDB's
// threads, SQLite in process). Backends of connections closed since are
// missed: measure over spans in which the pools stay open.
func backendCPU() time.Duration {
	ports := map[string]bool{}
	inodes := map[string]bool{}
	fds, _ := os.ReadDir("/proc/self/fd")
	for _, fd := range fds {
		if l, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	tcp, _ := os.ReadFile("/proc/net/tcp")
	for _, line := range strings.Split(string(tcp), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 9 && inodes[f[9]] && strings.HasSuffix(f[2], ":1538") { // remote port 5432
			p, _ := strconv.ParseInt(f[1][strings.IndexByte(f[1], ':')+1:], 16, 32)
			ports["("+strconv.Itoa(int(p))+")"] = true
		}
	}
	var total time.Duration
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		cmd, err := os.ReadFile("/proc/" + p.Name() + "/cmdline")
		if err != nil || !strings.HasPrefix(string(cmd), "postgres: ") {
			continue
		}
		for port := range ports {
			if !strings.Contains(string(cmd), port) {
				continue
			}
			stat, _ := os.ReadFile("/proc/" + p.Name() + "/stat")
			f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
			if len(f) > 12 {
				u, _ := strconv.ParseInt(f[11], 10, 64)
				s, _ := strconv.ParseInt(f[12], 10, 64)
				total += time.Duration(u+s) * 10 * time.Millisecond // USER_HZ 100
			}
		}
	}
	return total
}

// runCost measures what Run and the limit cost per message in CPU, which a
// loaded machine changes less than it changes their rates: this process's
// CPU (the client; SQLite's database too), the part of it the garbage
// collector spent while Run ran, and, on PostgreSQL, the CPU of the
// backends serving it. Each side consumes b.N batches from a stream of
// its own, the limit first, then Run, then the limit again (half each).
func runCost(b *testing.B, target BenchTarget) {
	c, _, _ := setupConsume(b, target.Target, b.N*benchBatch)
	cons := consumer[benchEvent](b, c, "bench", "bench-cost", &sqlstreams.ConsumerOptions{Concurrency: 100})
	raw, rawStream := rawConsumer(b, target)
	b.Cleanup(func() { _ = raw.Close() })
	limit := rawConsumes(raw, rawStream)[1]
	measure := func(f func()) (wall, client, server time.Duration) {
		t0, c0, s0 := time.Now(), processCPU(), backendCPU()
		f()
		return time.Since(t0), processCPU() - c0, backendCPU() - s0
	}
	var runGC time.Duration
	limitOps := func(from, to int) func() {
		return func() {
			for i := from; i < to; i++ {
				if err := limit.op(i); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.ResetTimer()
	lw1, lc1, ls1 := measure(limitOps(0, b.N/2))
	rw, rc, rs := measure(func() {
		gc0 := gcCPU()
		runUntil(b, cons, b.N*benchBatch)
		runGC = gcCPU() - gc0
	})
	lw2, lc2, ls2 := measure(limitOps(b.N/2, b.N))
	b.StopTimer()
	n := float64(b.N * benchBatch)
	perMsg := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / n / 1000 }
	b.ReportMetric(perMsg(rc), "run-client-µs/msg")
	b.ReportMetric(perMsg(rs), "run-server-µs/msg")
	b.ReportMetric(perMsg(runGC), "run-gc-µs/msg")
	b.ReportMetric(perMsg(lc1+lc2), "limit-client-µs/msg")
	b.ReportMetric(perMsg(ls1+ls2), "limit-server-µs/msg")
	b.ReportMetric(float64(lw1+lw2)/float64(rw), "x-limit-wall")
	b.ReportMetric(float64(lc1+lc2+ls1+ls2)/float64(rc+rs), "x-limit-cpu")
}

// gcCPU is the CPU time the garbage collector has spent in this process.
func gcCPU() time.Duration {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	return time.Duration(s[0].Value.Float64() * float64(time.Second))
}
