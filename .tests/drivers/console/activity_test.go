package console_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
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

// TestBrowserActivity: in Chromium on SQLite and PostgreSQL, the stream
// page's Activity charts draw the points of a running producer and
// consumer, and the day toggle draws them again.
func TestBrowserActivity(t *testing.T) {
	for _, tg := range engines()[:2] {
		t.Run(tg.Name, func(t *testing.T) {
			c := openClient(t, tg, sqlstreams.WithSampleInterval(activitySamples))
			seed(t, c)
			seedActivity(t, c, 4)
			srv := serve(t, c, false).URL + prefix
			ctx := browser(t, 2*time.Minute)
			if err := chromedp.Do(ctx, chromedp.Navigate(srv+"/streams/payments"),
				chromedp.WaitVisible(chromedp.CSS(`#activity[data-state="drawn"]`))); err != nil {
				t.Fatal(err)
			}
			drawn := func() {
				t.Helper()
				for _, id := range []string{"chart-produce", "chart-consume", "chart-lag", "chart-dead"} {
					pts, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.ID(id), "data-points"))
					if n, _ := strconv.Atoi(pts.Value); err != nil || n < 3 {
						t.Fatalf("#%s drew %q points (%v); want at least 3", id, pts.Value, err)
					}
					if _, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#"+id+" .uplot canvas"))); err != nil {
						t.Fatalf("#%s has no uPlot canvas: %v", id, err)
					}
				}
				legend, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#chart-consume .u-legend")))
				if err != nil || !strings.Contains(legend, "ledger") {
					t.Fatalf("consume chart legend %q (%v); want the ledger group", legend, err)
				}
			}
			drawn()
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#activity button[data-window="24h"]`)),
				chromedp.WaitVisible(chromedp.CSS(`#activity[data-window="24h"][data-state="drawn"]`))); err != nil {
				t.Fatal(err)
			}
			drawn()
		})
	}
}
