package sqlstreamsfx_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	sqlstreamsfx "github.com/sqlstreams/sqlstreams/contrib/fx"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/memdriver"
)

// watched is an in-memory driver that counts the calls with which opening
// the client, registering a producer and registering a member start, and
// can fail Migrate (the first thing sqlstreams.Open does).
type watched struct {
	*memdriver.Driver
	calls      atomic.Int64
	migrateErr error
}

func newWatched() *watched { return &watched{Driver: memdriver.Open()} }

func (w *watched) Migrate(ctx context.Context) error {
	w.calls.Add(1)
	if w.migrateErr != nil {
		return w.migrateErr
	}
	return w.Driver.Migrate(ctx)
}

func (w *watched) CheckPrivileges(ctx context.Context, p driver.CheckPrivilegesParams) error {
	w.calls.Add(1)
	return w.Driver.CheckPrivileges(ctx, p)
}

func (w *watched) LookupStream(ctx context.Context, p driver.LookupStreamParams) (driver.StreamConfig, error) {
	w.calls.Add(1)
	return w.Driver.LookupStream(ctx, p)
}

func (w *watched) CreateStream(ctx context.Context, p driver.CreateStreamParams) (driver.StreamConfig, error) {
	w.calls.Add(1)
	return w.Driver.CreateStream(ctx, p)
}

func (w *watched) RegisterGroup(ctx context.Context, p driver.RegisterGroupParams) (driver.GroupConfig, error) {
	w.calls.Add(1)
	return w.Driver.RegisterGroup(ctx, p)
}

func supplyDriver(d driver.Driver) fx.Option {
	return fx.Supply(fx.Annotate(d, fx.As(new(driver.Driver))))
}

// mustPanic runs f and reports whether it panicked with a message that
// contains want.
func mustPanic(t *testing.T, what, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if s, _ := r.(string); !strings.Contains(s, want) {
			t.Errorf("%s before start: panic %v; want one that says %q", what, r, want)
		}
	}()
	f()
}

// fx.New makes handles and hooks only: the client opens, the producer and
// the member register when the app starts, and Get says so when called
// before.
func TestNothingTouchesTheDatabaseBeforeStart(t *testing.T) {
	t.Parallel()
	drv := newWatched()
	seen := newSeen()
	var client *sqlstreamsfx.Client
	var producer *sqlstreamsfx.ProducerOf[EvV1]
	app := fxtest.New(t, sqlstreamsfx.Module, supplyDriver(drv), fx.Supply(seen), fx.NopLogger,
		sqlstreamsfx.OTel(nil),
		sqlstreamsfx.Producer[EvV1]("events", nil),
		sqlstreamsfx.Consumer[EvV1]("events", "g", fast, handlerFor("g")),
		fx.Populate(&client, &producer))
	if n := drv.calls.Load(); n != 0 {
		t.Fatalf("fx.New made %d driver calls; want none", n)
	}
	mustPanic(t, "Client.Get", "before the app started", func() { client.Get() })
	mustPanic(t, "ProducerOf.Get", `producer on "events" is used before the app started`, func() { producer.Get() })
	app.RequireStart()
	if drv.calls.Load() == 0 {
		t.Fatal("the app started without a driver call")
	}
	if _, err := producer.Get().Produce(context.Background(), EvV1{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	receive(t, seen, 1)
	app.RequireStop()
	if _, err := client.Get().Streams(context.Background()); !errors.Is(err, sqlstreams.ErrClosed) {
		t.Errorf("after stop, Streams: %v; want ErrClosed", err)
	}
}

// A database that cannot be opened fails app.Start, not fx.New, and the
// hooks after the client's do not run.
func TestOpenFailureFailsStart(t *testing.T) {
	t.Parallel()
	drv := newWatched()
	drv.migrateErr = errors.New("connection refused")
	var registered bool
	app := fx.New(sqlstreamsfx.Module, supplyDriver(drv), fx.NopLogger,
		sqlstreamsfx.Producer[EvV1]("events", nil),
		fx.Invoke(func(lc fx.Lifecycle, p *sqlstreamsfx.ProducerOf[EvV1]) {
			lc.Append(fx.StartHook(func() { registered = true }))
		}))
	if err := app.Err(); err != nil {
		t.Fatalf("fx.New: %v; the database is only reached on start", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := app.Start(ctx); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("Start: %v; want the open error", err)
	}
	if registered {
		t.Error("a hook after the client's ran although the client did not open")
	}
	if n := drv.calls.Load(); n != 1 {
		t.Errorf("%d driver calls; want Migrate only", n)
	}
	if err := app.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

// Three consumers whose handlers block until their context is cancelled
// (which Run does once ShutdownTimeout has passed) stop together: every
// handler sees all three cancelled before any returns, which a stop of one
// consumer after another cannot do, and the app stops within one
// ShutdownTimeout, well under three.
func TestConsumersStopTogether(t *testing.T) {
	t.Parallel()
	const shutdown = 2 * time.Second
	opts := &sqlstreams.ConsumerOptions{PollInterval: 20 * time.Millisecond, ShutdownTimeout: shutdown}
	started := make(chan string, 3)
	allCancelled := make(chan struct{})
	var cancelled, early atomic.Int32
	blocking := func() sqlstreams.Handler[EvV1] {
		return func(ctx context.Context, d sqlstreams.Delivery[EvV1]) error {
			started <- d.Value.ID
			<-ctx.Done()
			if cancelled.Add(1) == 3 {
				close(allCancelled)
			}
			select {
			case <-allCancelled:
			case <-time.After(4 * shutdown):
				early.Add(1)
			}
			return ctx.Err()
		}
	}
	var producer *sqlstreamsfx.ProducerOf[EvV1]
	// The client logs each cut-off handler; the test needs no such line.
	quiet := slog.New(slog.DiscardHandler)
	app := fxtest.New(t, fx.StopTimeout(time.Minute), sqlstreamsfx.Module, fx.Provide(memDriver), fx.NopLogger, fx.Supply(quiet),
		sqlstreamsfx.Producer[EvV1]("events", nil),
		sqlstreamsfx.Consumer[EvV1]("events", "g1", opts, blocking),
		sqlstreamsfx.Consumer[EvV1]("events", "g2", opts, blocking),
		sqlstreamsfx.Consumer[EvV1]("events", "g3", opts, blocking),
		fx.Populate(&producer))
	app.RequireStart()
	if _, err := producer.Get().Produce(context.Background(), EvV1{ID: "x"}); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(60 * time.Second)
	for range 3 {
		select {
		case <-started:
		case <-timeout:
			t.Fatal("the three handlers did not start")
		}
	}
	begin := time.Now()
	app.RequireStop()
	took := time.Since(begin)
	if n := early.Load(); n != 0 {
		t.Errorf("%d handlers returned before all three were cancelled: the consumers stopped one after another", n)
	}
	if took >= 2*shutdown {
		t.Errorf("stopping three consumers took %v; with ShutdownTimeout %v they stop together, in under %v", took, shutdown, 2*shutdown)
	}
}
