package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/contrib/console"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// benchGet serves one request straight through the handler and fails on
// anything but 200 with want in the body.
func benchGet(b *testing.B, h http.Handler, path, want string) {
	b.Helper()
	b.ReportAllocs()
	before := cpuTime(b)
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), want) {
			b.Fatalf("GET %s: %d %.300s", path, rec.Code, rec.Body.String())
		}
	}
	// The process's CPU time per page, next to the wall time: on a shared
	// machine the wall time also counts waiting for a core.
	b.ReportMetric(float64((cpuTime(b)-before).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkStreamsPage renders the overview of 200 streams on SQLite, each
// with rows at a version and a group that has read part of them.
func BenchmarkStreamsPage(b *testing.B) {
	c := openClient(b, engines()[0])
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for i := range 200 {
		s := c.Stream[OrderV1](fmt.Sprintf("bench.s%03d", i))
		p := fatal{b}.on(s.Producer().Register(ctx, nil))
		msgs := make([]sqlstreams.Message[OrderV1], 10)
		for j := range msgs {
			msgs[j] = sqlstreams.NewMessage(OrderV1{OrderID: fmt.Sprint(j)})
		}
		fatal{b}.on(p.ProduceBatch(ctx, msgs...))
		g := fatal{b}.on(s.Consumer("reader").Register(ctx, nil))
		if err := g.Ack(ctx, fatal{b}.on(g.Claim(ctx, 4))...); err != nil {
			b.Fatal(err)
		}
	}
	h, err := console.New(c, console.Options{Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	benchGet(b, h, "/", "bench.s199")
}

// BenchmarkMessagesPage browses a 100k-row stream on SQLite: the first
// page, a page deep in the log, the newest rows, one message by id, and a
// version filter.
func BenchmarkMessagesPage(b *testing.B) {
	c := openClient(b, engines()[0])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	s := c.Stream[OrderV1]("bench.big")
	fatal{b}.on(s.Create(ctx, &sqlstreams.StreamOptions{Partitions: 4}))
	p := fatal{b}.on(s.Producer().Register(ctx, nil))
	msgs := make([]sqlstreams.Message[OrderV1], 1000)
	for batch := range 100 {
		for j := range msgs {
			n := batch*1000 + j
			msgs[j] = sqlstreams.NewMessage(OrderV1{OrderID: fmt.Sprint("o-", n)}, sqlstreams.Key(fmt.Sprint("k-", n%5000)),
				sqlstreams.Header("trace", fmt.Sprint(n)))
		}
		fatal{b}.on(p.ProduceBatch(ctx, msgs...))
	}
	h, err := console.New(c, console.Options{Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, query, want string }{
		{"first", "", `data-id="50"`},
		{"deep", "?after=90000", `data-id="90050"`},
		{"newest", "?last=1", `data-id="100000"`},
		{"by-id", "?id=77777", `data-id="77777"`},
		{"partition", "?partition=3&after=50000", `<td class="num">3</td>`},
		{"version", "?version=1&after=99000", `data-id="99001"`},
	} {
		b.Run(bc.name, func(b *testing.B) { benchGet(b, h, "/streams/bench.big/messages"+bc.query, bc.want) })
	}
}
