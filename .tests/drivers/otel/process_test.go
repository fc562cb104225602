package otelsqlstreams_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/conformance/proctest"
	otelsqlstreams "github.com/sqlstreams/sqlstreams/contrib/otel"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func TestMain(m *testing.M) {
	proctest.Dispatch(map[string]proctest.Role{"consume-one": consumeOne})
	// mysqltest keeps one admin connection pool for the life of the test
	// binary (it creates each test's database); everything else must be
	// gone once the tests closed their clients.
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/go-sql-driver/mysql.(*mysqlConn).startWatcher.func1"),
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"))
}

type childSpec struct {
	Driver, Namespace, Out string
}

// consumeOne runs in a child process: it consumes one message with the
// middleware on its own SDK and records its process span's trace id and
// link.
func consumeOne(ctx context.Context, raw json.RawMessage) int {
	var spec childSpec
	if err := json.Unmarshal(raw, &spec); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := consumeOneErr(ctx, spec); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

func consumeOneErr(ctx context.Context, spec childSpec) error {
	target, ok := targetNamed(spec.Driver)
	if !ok {
		return fmt.Errorf("no driver %q", spec.Driver)
	}
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	drv, err := target.Open(spec.Namespace)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	c, err := sqlstreams.Open(ctx, drv, otelsqlstreams.Option(&otelsqlstreams.Config{TracerProvider: tp, Propagator: testProp}))
	if err != nil {
		return err
	}
	defer c.Close()
	cons, err := c.Stream[OrderV1]("s").Consumer("g").Register(ctx, &sqlstreams.ConsumerOptions{PollInterval: 20 * time.Millisecond})
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	if err := cons.Run(runCtx, func(context.Context, sqlstreams.Delivery[OrderV1]) error { stop(); return nil }); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	rec, err := proctest.OpenRecorder(spec.Out)
	if err != nil {
		return err
	}
	defer rec.Close()
	for _, s := range exp.GetSpans() {
		if s.Name == "process s" && len(s.Links) == 1 {
			return rec.Record("process", s.SpanContext.TraceID(), s.Links[0].SpanContext.TraceID(), s.Links[0].SpanContext.SpanID())
		}
	}
	return fmt.Errorf("no process span with a link among %d spans", len(exp.GetSpans()))
}

// A child process consumes what this process produced: its process span
// links to this process's send span, carried only by the stored headers.
func TestAcrossProcesses(t *testing.T) {
	forEachDriver(t, func(t *testing.T, target conformance.Target) {
		e := newEnv(t, target, nil)
		p := e.producer(t, "s")
		if _, err := e.client.Stream[OrderV1]("s").Consumer("g").Register(ctxT(t), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Produce(ctxT(t), OrderV1{ID: "o"}); err != nil {
			t.Fatal(err)
		}
		send := e.named("send s")[0].SpanContext
		out := filepath.Join(t.TempDir(), "records")
		child := proctest.Spawn(t, "consume-one", childSpec{Driver: target.Name, Namespace: e.ns, Out: out})
		child.Wait(t, 90*time.Second, "the consuming child")
		recs := proctest.Records(t, out)
		if len(recs) != 1 || len(recs[0]) != 4 {
			t.Fatalf("records %v; child output:\n%s", recs, child.Output())
		}
		r := recs[0]
		if r[2] != send.TraceID().String() || r[3] != send.SpanID().String() {
			t.Errorf("child's process span links to %s/%s, want the send span %s/%s", r[2], r[3], send.TraceID(), send.SpanID())
		}
		if r[1] == send.TraceID().String() {
			t.Errorf("the child's process span joined the producer's trace; it should link, not parent")
		}
	})
}
