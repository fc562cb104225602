package console_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/sqlstreams/sqlstreams/contrib/console"
	"github.com/sqlstreams/sqlstreams/contrib/console/view"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// activitySamples is the sample interval of the activity tests: short, so
// that maintenance passes a moment apart fall in different buckets.
const activitySamples = 200 * time.Millisecond

// seedActivity runs a producer and the ledger consumer on the payments
// stream, with maintenance between, until maintenance has stored samples
// samples of the stream (History's points are one fewer); every tenth
// payment goes dead, for the dead-letter chart.
func seedActivity(t testing.TB, c *sqlstreams.Client, samples int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := fatal{t}.on(c.Stream[Payment]("payments").Producer().Register(ctx, nil))
	ledger := fatal{t}.on(c.Stream[Payment]("payments").Consumer("ledger").Register(ctx, nil))
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() {
		ran <- ledger.Run(runCtx, func(_ context.Context, d sqlstreams.Delivery[Payment]) error {
			if strings.HasSuffix(d.Value.ID, "0") {
				return sqlstreams.Dead(errors.New("unknown account"))
			}
			return nil
		})
	}()
	n := 0
	for points := 0; points < samples-1; {
		for range 5 {
			n++
			fatal{t}.on(p.Produce(ctx, Payment{ID: fmt.Sprint("act-", n)}))
		}
		caughtUp(t, ctx, c)
		if _, err := c.Maintain(ctx); err != nil {
			t.Fatalf("maintain: %v", err)
		}
		history, err := c.Stream[Payment]("payments").History(ctx, time.Now().Add(-time.Hour))
		if err != nil {
			t.Fatalf("history within a minute (%d points): %v", points, err)
		}
		points = len(history)
		time.Sleep(activitySamples / 4) // pacing the producer, not waiting for a result
	}
	stop()
	if err := <-ran; err != nil {
		t.Fatalf("run: %v", err)
	}
}

// caughtUp waits, bounded by ctx, until the ledger group has nothing
// unread or leased on the payments stream.
func caughtUp(t testing.TB, ctx context.Context, c *sqlstreams.Client) {
	t.Helper()
	for {
		h, err := c.Stream[sqlstreams.RawPayload]("payments").Health(ctx)
		if err != nil {
			t.Fatalf("health: %v", err)
		}
		var backlog int64
		for _, v := range h.Versions {
			for _, g := range v.Groups {
				backlog += g.Unread + g.Leased + g.Delayed
			}
		}
		if backlog == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the ledger consumer still has %d to do", backlog)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestActivityAPI: on every engine, /api/streams/{s}/history has a point per
// sample after the first, with the produce rate, the group's consume rate,
// lag and dead arrivals; a window other than 1h and 24h is refused.
func TestActivityAPI(t *testing.T) {
	for _, tg := range engines() {
		t.Run(tg.Name, func(t *testing.T) {
			t.Parallel()
			c := openClient(t, tg, sqlstreams.WithSampleInterval(activitySamples))
			seed(t, c)
			seedActivity(t, c, 4)
			srv := serve(t, c, false).URL + prefix
			for _, window := range []string{"1h", "24h"} {
				h := getJSON[view.History](t, srv, "/api/streams/payments/history?window="+window)
				if h.Stream != "payments" || h.Window != window || len(h.Points) < 3 || h.Since == nil {
					t.Fatalf("history %s: %+v; want at least 3 points", window, h)
				}
				if strings.Join(h.Groups, ",") != "ledger" || len(h.Versions) != 1 {
					t.Fatalf("groups %v, versions %v; want ledger at one version", h.Groups, h.Versions)
				}
				var produced, consumed float64
				var dead int64
				for _, p := range h.Points {
					produced += p.ProduceRate * p.SpanSeconds
					if len(p.Groups) != 1 {
						t.Fatalf("point %+v; want the ledger group", p)
					}
					consumed += p.Groups[0].ConsumeRate * p.SpanSeconds
					dead += p.Groups[0].DeadArrivals
				}
				if produced < 10 || consumed < 10 || dead < 1 {
					t.Errorf("over the window: %.1f produced, %.1f consumed, %d dead arrivals; want production and consumption", produced, consumed, dead)
				}
			}
			if code, body := get(t, srv, "/api/streams/payments/history?window=7d"); code != http.StatusBadRequest || !strings.Contains(body, "use 1h or 24h") {
				t.Errorf("window 7d: %d %s", code, body)
			}
			if code, _ := get(t, srv, "/api/streams/nope/history"); code != http.StatusNotFound {
				t.Errorf("history of a missing stream: %d", code)
			}
		})
	}
}

// keepActive runs, until the returned stop, a producer and the ledger
// consumer on the payments stream and a maintenance pass every sample
// interval, so that samples keep arriving while a page is open. stop
// reports what failed.
func keepActive(t testing.TB, c *sqlstreams.Client) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := fatal{t}.on(c.Stream[Payment]("payments").Producer().Register(ctx, nil))
	ledger := fatal{t}.on(c.Stream[Payment]("payments").Consumer("ledger").Register(ctx, nil))
	errs := make(chan error, 2)
	go func() {
		errs <- ledger.Run(ctx, func(context.Context, sqlstreams.Delivery[Payment]) error { return nil })
	}()
	go func() {
		tick := time.NewTicker(activitySamples)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-ctx.Done():
				errs <- nil
				return
			case <-tick.C:
			}
			if _, err := p.Produce(ctx, Payment{ID: fmt.Sprint("live-", n)}); err != nil && ctx.Err() == nil {
				errs <- fmt.Errorf("produce: %w", err)
				return
			}
			if _, err := c.Maintain(ctx); err != nil && ctx.Err() == nil {
				errs <- fmt.Errorf("maintain: %w", err)
				return
			}
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			for range 2 {
				if err := <-errs; err != nil && !errors.Is(err, context.Canceled) {
					t.Errorf("keeping the stream active: %v", err)
				}
			}
		})
	}
	t.Cleanup(stop) // a failed test stops them too
	return stop
}

// pointsDrawn reads how many points #activity drew last.
func pointsDrawn(t *testing.T, ctx context.Context) int {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.ID("activity"), "data-points"))
	n, convErr := strconv.Atoi(v.Value)
	if err != nil || convErr != nil {
		t.Fatalf("#activity data-points %q: %v %v", v.Value, err, convErr)
	}
	return n
}

// chartsDrawn is what chartsJS reads of the Activity charts at one moment.
type chartsDrawn struct {
	Charts []struct {
		ID     string `json:"id"`
		Points string `json:"points"`
		Canvas bool   `json:"canvas"`
	} `json:"charts"`
	Legend string `json:"legend"`
}

const chartsJS = `(() => ({
  charts: ["chart-produce", "chart-consume", "chart-lag", "chart-dead"].map((id) => {
    const el = document.getElementById(id);
    return { id: id, points: el.dataset.points, canvas: el.querySelector(".uplot canvas") !== null };
  }),
  legend: (document.querySelector("#chart-consume .u-legend") || { textContent: "" }).textContent,
}))()`

// TestBrowserActivity: in Chromium on SQLite and PostgreSQL, the stream
// page's Activity charts draw the points of a running producer and
// consumer, and the day toggle draws them again; while they keep running
// the open page draws more points as samples arrive, without a reload.
func TestBrowserActivity(t *testing.T) {
	for _, tg := range engines()[:2] {
		t.Run(tg.Name, func(t *testing.T) {
			c := openClient(t, tg, sqlstreams.WithSampleInterval(activitySamples))
			seed(t, c)
			seedActivity(t, c, 4)
			srv := serveWith(t, c, console.Options{ChartRefresh: 250 * time.Millisecond}).URL + prefix
			ctx := browser(t, 2*time.Minute)
			if err := chromedp.Do(ctx, chromedp.Navigate(srv+"/streams/payments"),
				chromedp.WaitVisible(chromedp.CSS(`#activity[data-state="drawn"][data-refresh-ms="250"]`))); err != nil {
				t.Fatal(err)
			}
			// drawn reads every chart in one evaluation: the page redraws
			// each ChartRefresh, replacing the canvases, so separate reads
			// could straddle a redraw.
			drawn := func() {
				t.Helper()
				got, err := chromedp.Run(ctx, chromedp.Evaluate[chartsDrawn](chartsJS))
				if err != nil || len(got.Charts) != 4 {
					t.Fatalf("reading the charts: %+v %v", got, err)
				}
				for _, ch := range got.Charts {
					if n, _ := strconv.Atoi(ch.Points); n < 3 || !ch.Canvas {
						t.Fatalf("#%s drew %q points, uPlot canvas %t; want at least 3 on a canvas", ch.ID, ch.Points, ch.Canvas)
					}
				}
				if !strings.Contains(got.Legend, "ledger") {
					t.Fatalf("consume chart legend %q; want the ledger group", got.Legend)
				}
			}
			drawn()
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#activity button[data-window="24h"]`)),
				chromedp.WaitVisible(chromedp.CSS(`#activity[data-window="24h"][data-state="drawn"]`))); err != nil {
				t.Fatal(err)
			}
			drawn()

			// Live: a mark set on the page now would not survive a reload.
			if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.sameLoad = true`)); err != nil {
				t.Fatal(err)
			}
			before := pointsDrawn(t, ctx)
			stop := keepActive(t, c)
			// Wait with a margin of its own inside the browser's deadline,
			// so that the failure says what the page drew.
			wait, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			for n := before; n < before+2; n = pointsDrawn(t, ctx) {
				select {
				case <-wait.Done():
					t.Fatalf("the open page still draws %d points, had %d: no live refresh", n, before)
				case <-time.After(100 * time.Millisecond): // polling the page, bounded by wait
				}
			}
			stop()
			if same, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.sameLoad === true`)); err != nil || !same {
				t.Fatalf("the page was reloaded to draw the new points (%v)", err)
			}
			drawn()
		})
	}
}
