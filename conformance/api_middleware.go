package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

func init() { register("API_Middleware", testMiddleware) }

// recorderMW implements every seam and records what it sees; it adds a
// header named after itself to every message it produces.
type recorderMW struct {
	sqlstreams.MiddlewareDefaults
	name string
	log  *mwLog
	// refuse fails produces to this stream without calling next.
	refuse string
}

type mwLog struct {
	mu      sync.Mutex
	entries []string
	calls   []*sqlstreams.ProduceCall
	handled []sqlstreams.DeliveryInfo
	claims  []sqlstreams.ClaimEvent
	settles []sqlstreams.SettleEvent
	maint   int
}

func (l *mwLog) add(s string) {
	l.mu.Lock()
	l.entries = append(l.entries, s)
	l.mu.Unlock()
}

func (l *mwLog) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.entries)
}

var errRefusedByMiddleware = errors.New("conformance: refused by middleware")

func (m *recorderMW) Produce(ctx context.Context, call *sqlstreams.ProduceCall, next func(context.Context) ([]int64, error)) ([]int64, error) {
	m.log.add(m.name + " produce " + call.Stream.Name)
	if call.Stream.Name == m.refuse {
		return nil, errRefusedByMiddleware
	}
	for _, msg := range call.Messages {
		msg.Headers["mw-"+m.name] = fmt.Sprintf("tx=%v batch=%v", call.Tx, call.Batch)
	}
	if m.name == "outer" {
		m.log.mu.Lock()
		m.log.calls = append(m.log.calls, call)
		m.log.mu.Unlock()
	}
	return next(ctx)
}

func (m *recorderMW) Handle(ctx context.Context, d *sqlstreams.DeliveryInfo, next func(context.Context) error) error {
	m.log.add(fmt.Sprintf("%s enter %d", m.name, d.ID))
	err := next(context.WithValue(ctx, mwKey(m.name), true))
	m.log.add(fmt.Sprintf("%s exit %d %v", m.name, d.ID, err != nil))
	if m.name == "outer" {
		m.log.mu.Lock()
		m.log.handled = append(m.log.handled, *d)
		m.log.mu.Unlock()
	}
	return err
}

func (m *recorderMW) Claimed(_ context.Context, e sqlstreams.ClaimEvent) {
	if m.name == "outer" && (len(e.Deliveries) > 0 || e.Err != nil) {
		m.log.mu.Lock()
		m.log.claims = append(m.log.claims, e)
		m.log.mu.Unlock()
	}
}

func (m *recorderMW) Settled(_ context.Context, e sqlstreams.SettleEvent) {
	if m.name == "outer" {
		m.log.mu.Lock()
		m.log.settles = append(m.log.settles, e)
		m.log.mu.Unlock()
	}
}

func (m *recorderMW) Maintained(context.Context, sqlstreams.MaintenanceReport, error) {
	if m.name == "outer" {
		m.log.mu.Lock()
		m.log.maint++
		m.log.mu.Unlock()
	}
}

type mwKey string

// Middleware and hooks sit under every path: every produce entry point
// (Produce, ProduceBatch, ProduceTx, RawPayload, a handler that re-produces)
// goes through produce middleware, which sees each message and whose headers
// are what the row stores; every handler call in Run goes through handle
// middleware, client-wide outside consumer-level, first outermost; claims
// (pull and Run), settles (ack, retry, dead, release) and maintenance are
// observed.
func testMiddleware(t *testing.T, h *harness) {
	log := &mwLog{}
	drv, err := h.target.Open(h.ns(t))
	if err != nil {
		t.Fatal(err)
	}
	c := h.clientOn(t, drv, sqlstreams.WithMiddleware(&recorderMW{name: "outer", log: log, refuse: "mw-refused"},
		&recorderMW{name: "inner", log: log}))
	const in, out = "mw-in", "mw-out"
	pIn, pOut := producer[EventV1](t, c, in), producer[EventV1](t, c, out)
	raw := producer[sqlstreams.RawPayload](t, c, in)

	// Every produce path.
	if _, err := pIn.Produce(ctx(t), EventV1{Seq: 1}, sqlstreams.Key("k1"), sqlstreams.RoutingKey("eu.web")); err != nil {
		t.Fatal(err)
	}
	if _, err := pIn.ProduceBatch(ctx(t), sqlstreams.NewMessage(EventV1{Seq: 2}), sqlstreams.NewMessage(EventV1{Seq: 3}, sqlstreams.Header("h", "v"))); err != nil {
		t.Fatal(err)
	}
	tx, commit, _, err := h.target.BeginTx(ctx(t), c.Driver())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pIn.ProduceTx(ctx(t), tx, EventV1{Seq: 4}); err != nil {
		t.Fatal(err)
	}
	if err := commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Produce(ctx(t), sqlstreams.RawPayload{Version: 1, Data: []byte(`{"seq":5}`)}); err != nil {
		t.Fatal(err)
	}
	refused := producer[EventV1](t, c, "mw-refused")
	if _, err := refused.Produce(ctx(t), EventV1{}); !errors.Is(err, errRefusedByMiddleware) {
		t.Errorf("a produce the middleware failed: %v; want its error", err)
	}
	if hl := health(t, c, "mw-refused"); hl.HighWater != 0 {
		t.Errorf("the refused produce wrote a row (high-water %d)", hl.HighWater)
	}

	// Run: a bridge re-produces each delivery; one fails, one dies.
	consumerLog := &mwLog{}
	bridge := consumer[EventV1](t, c, in, "bridge", fastRetry(sqlstreams.ConsumerOptions{
		Middleware: []sqlstreams.Middleware{&recorderMW{name: "consumer", log: log}, &recorderMW{name: "own", log: consumerLog}}}))
	seen := map[int]int{}
	var mu sync.Mutex
	stop := runFor(t, bridge, func(ctx context.Context, d sqlstreams.Delivery[EventV1]) error {
		for _, k := range []string{"outer", "inner", "consumer"} {
			if ctx.Value(mwKey(k)) == nil {
				t.Errorf("handler context lacks what middleware %q put in it", k)
			}
		}
		mu.Lock()
		seen[d.Value.Seq]++
		n := seen[d.Value.Seq]
		mu.Unlock()
		switch {
		case d.Value.Seq == 2 && n == 1:
			return errTest // retried once
		case d.Value.Seq == 3:
			return sqlstreams.Dead(errTest)
		}
		_, err := pOut.Produce(ctx, EventV1{Seq: 100 + d.Value.Seq})
		return err
	})
	eventually(t, time.Minute, "the bridge to finish", func() bool {
		g := groupAt(t, health(t, c, in), 1, "bridge")
		return g.Unread == 0 && g.Leased+g.Delayed == 0
	})
	stop()

	// Pull claims, a release, maintenance.
	pull := consumer[EventV1](t, c, out, "pull", nil)
	ds, err := pull.Claim(ctx(t), 10)
	if err != nil || len(ds) != 4 {
		t.Fatalf("pull claim: %v, %v; want the 4 bridged rows", idsOf(ds), err)
	}
	for _, d := range ds {
		if d.Headers["mw-outer"] != "tx=false batch=false" || d.Headers["mw-inner"] == "" {
			t.Errorf("bridged row %d has headers %v; want the middleware's headers", d.ID, d.Headers)
		}
	}
	if err := pull.Ack(ctx(t), ds...); err != nil {
		t.Fatal(err)
	}
	// Run stops while it holds three deliveries: the running one ends with
	// its cancelled context after ShutdownTimeout, and all three are
	// released. ShutdownTimeout is also the grace a cancelled handler gets
	// to return; a loaded machine can take longer than a few milliseconds
	// to run it, so the timeout is not made tiny.
	hold := consumer[EventV1](t, c, out, "hold", &sqlstreams.ConsumerOptions{Concurrency: 1, BatchSize: 3, ShutdownTimeout: 2 * time.Second})
	started := make(chan struct{}, 3)
	rctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() {
		runDone <- hold.Run(rctx, func(ctx context.Context, _ sqlstreams.Delivery[EventV1]) error {
			started <- struct{}{}
			<-ctx.Done()
			return ctx.Err()
		})
	}()
	<-started
	eventually(t, 30*time.Second, "Run to hold three", func() bool { return groupAt(t, health(t, c, out), 1, "hold").Leased == 3 })
	cancel()
	if err := <-runDone; err != nil {
		t.Fatal(err)
	}
	if _, err := c.Maintain(ctx(t)); err != nil {
		t.Fatal(err)
	}

	log.mu.Lock()
	defer log.mu.Unlock()
	// Produce: 4 calls on "mw-in" (single, batch, tx, raw), 4 re-produces,
	// and the refused one; order outer then inner.
	entries := strings.Join(log.entries, "\n")
	for _, want := range []string{"outer produce mw-in\ninner produce mw-in", "outer produce mw-refused"} {
		if !strings.Contains(entries, want) {
			t.Errorf("the middleware log lacks %q:\n%s", want, entries)
		}
	}
	if strings.Contains(entries, "inner produce mw-refused") {
		t.Errorf("the inner middleware ran for a produce the outer one failed")
	}
	var kinds []string
	for _, call := range log.calls {
		kinds = append(kinds, fmt.Sprintf("%s tx=%v batch=%v n=%d", call.Stream.Name, call.Tx, call.Batch, len(call.Messages)))
	}
	want := []string{"mw-in tx=false batch=false n=1", "mw-in tx=false batch=true n=2", "mw-in tx=true batch=false n=1",
		"mw-in tx=false batch=false n=1", "mw-out tx=false batch=false n=1", "mw-out tx=false batch=false n=1", "mw-out tx=false batch=false n=1",
		"mw-out tx=false batch=false n=1"}
	slices.Sort(kinds)
	slices.Sort(want)
	if !slices.Equal(kinds, want) {
		t.Errorf("produce calls seen: %v; want %v", kinds, want)
	}
	if first := log.calls[0].Messages[0]; first.Key != "k1" || !first.HasKey || first.RoutingKey != "eu.web" || first.SchemaVersion != 1 || first.PayloadSize == 0 {
		t.Errorf("the first produce's message: %+v", first)
	}

	// Handle: every call, nested outer > inner > consumer, outcomes seen.
	var ids []int64
	for _, d := range log.handled {
		if d.Group == "hold" {
			continue
		}
		ids = append(ids, d.ID)
		if d.Stream != in || d.Group != "bridge" || d.Attempt < 1 || d.SchemaVersion != 1 || d.ProducedAt.IsZero() {
			t.Errorf("delivery info %+v", d)
		}
	}
	if len(ids) != 6 { // seq 1..5, and seq 2 twice
		t.Errorf("handle middleware saw %d handler calls of the bridge (%v); want 6", len(ids), ids)
	}
	d0 := log.handled[0].ID
	want = []string{fmt.Sprintf("outer enter %d", d0), fmt.Sprintf("inner enter %d", d0), fmt.Sprintf("consumer enter %d", d0)}
	if i := slices.Index(log.entries, want[0]); i < 0 || !slices.Equal(log.entries[i:i+3], want) {
		t.Errorf("handle order for %d: want %v in\n%s", d0, want, entries)
	}
	if got := strings.Count(strings.Join(consumerLog.snapshot(), "\n"), "enter"); got != 6 { // only the bridge's
		t.Errorf("the consumer's own middleware saw %d handler calls; want 6", got)
	}
	if !strings.Contains(entries, " true") {
		t.Errorf("no middleware saw a failing outcome:\n%s", entries)
	}

	// Claims from both sources, settles of every outcome, maintenance.
	sources := map[string]bool{}
	for _, e := range log.claims {
		sources[e.Source] = true
		if e.Requested < len(e.Deliveries) || e.Stream == "" {
			t.Errorf("claim event %+v", e)
		}
	}
	if !sources[sqlstreams.ClaimSourcePull] || !sources[sqlstreams.ClaimSourceRun] {
		t.Errorf("claim sources seen: %v; want claim and run", sources)
	}
	outcomes := map[string]int{}
	for _, e := range log.settles {
		outcomes[e.Outcome] += len(e.IDs)
	}
	// Acks: four bridged rows and four pulled; "hold" released its three.
	if outcomes[sqlstreams.OutcomeAck] != 8 || outcomes[sqlstreams.OutcomeRetry] != 1 || outcomes[sqlstreams.OutcomeDead] != 1 ||
		outcomes[sqlstreams.OutcomeRelease] != 3 {
		t.Errorf("settled outcomes: %v; want 8 acks, 1 retry, 1 dead, 3 releases", outcomes)
	}
	if log.maint != 1 {
		t.Errorf("maintenance hook called %d times; want 1", log.maint)
	}
}
