package console_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/chromedp"
	"github.com/sqlstreams/sqlstreams/contrib/avro"
	"github.com/sqlstreams/sqlstreams/contrib/protobuf"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

var updateScreenshots = flag.Bool("update-screenshots", false, "write the console's screenshots to docs/console/*.png")

// browser starts headless Chromium for one test, bounded by timeout. A
// missing chromium fails the test: make services installs it.
func browser(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed: %v; make services (or .ci/run) installs the Debian package", err)
	}
	dir, err := os.MkdirTemp("", "console-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Chromium's children may still write for a moment after it stops.
		var err error
		for range 50 {
			if err = os.RemoveAll(dir); err == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("could not remove %s: %v", dir, err)
	})
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900), chromedp.UserDataDir(dir),
		// A loaded CI machine can take a while to start Chromium; the
		// test's own timeout still bounds everything.
		chromedp.WSURLReadTimeout(timeout/2))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(cancelBrowser)
	ctx, cancel := context.WithTimeout(bctx, timeout)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

func textOf(t *testing.T, ctx context.Context, id string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID(id)))
	if err != nil {
		t.Fatalf("text of #%s: %v", id, err)
	}
	return strings.TrimSpace(s)
}

// TestBrowserReplay ticks the dead letter in Chromium, clicks Replay, and
// sees the dead count drop on the page and in Health.
func TestBrowserReplay(t *testing.T) {
	c := openClient(t, engines()[0])
	dead := seed(t, c)
	srv := serve(t, c, true).URL + prefix
	ctx := browser(t, 90*time.Second)

	if err := chromedp.Do(ctx, chromedp.Navigate(srv+"/streams/"+orders+"/groups/billing/dead")); err != nil {
		t.Fatal(err)
	}
	if got := textOf(t, ctx, "dead-count"); got != "1" {
		t.Fatalf("dead count on the page before: %q", got)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`input[name="id"][value="%d"]`, dead)))); err != nil {
		t.Fatal(err)
	}
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.ID("replay-selected")))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != 200 {
		t.Fatalf("after the click: status %d at %s", resp.Status, resp.URL)
	}
	if got := textOf(t, ctx, "dead-count"); got != "0" {
		t.Fatalf("dead count on the page after Replay: %q", got)
	}
	if got := textOf(t, ctx, "flash"); !strings.Contains(got, "Replayed 1 dead letter(s)") {
		t.Fatalf("flash: %q", got)
	}
	if n := deadOf(t, c, "billing"); n != 0 {
		t.Fatalf("Health says %d dead after Replay", n)
	}
	// The stream page agrees: v1's verdict lost its dead-letter reason.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv+"/streams/"+orders)); err != nil {
		t.Fatal(err)
	}
	v1, _ := health(t, c, orders).Version(1)
	got, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`p.verdict[data-version="1"]`)))
	if err != nil {
		t.Fatal(err)
	}
	if got != v1.Verdict() || strings.Contains(got, "dead") {
		t.Fatalf("v1 verdict on the page %q, Health %q", got, v1.Verdict())
	}
}

// TestScreenshots renders every page in Chromium and checks each is a
// 1280-pixel-wide PNG; with -update-screenshots it writes them to
// docs/console for reviewers.
func TestScreenshots(t *testing.T) {
	c := openClient(t, engines()[0], sqlstreams.WithSampleInterval(activitySamples), sqlstreams.WithHeartbeatInterval(time.Hour),
		sqlstreams.WithFormats(avro.Format(), protobuf.Format()))
	dead := seed(t, c)
	seedTypes(t, c)
	seedMembers(t, c)
	seedActivity(t, c, 6)
	srv := serve(t, c, true).URL + prefix
	ctx := browser(t, 3*time.Minute)
	// Every error the browser logs (a CSP refusal, a failed asset) fails
	// the test; only the favicon the host serves, not the console, may 404.
	var mu sync.Mutex
	var errs []string
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*cdplog.EventEntryAdded); ok && e.Entry.Level == cdplog.EntryLevelError && !strings.HasSuffix(e.Entry.URL, "/favicon.ico") {
			mu.Lock()
			errs = append(errs, fmt.Sprintf("%s: %s (%s)", e.Entry.Source, e.Entry.Text, e.Entry.URL))
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, cdplog.Enable, cdp.Empty{})
		return err
	})); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if *updateScreenshots {
		dir = filepath.Join("..", "..", "..", "docs", "console")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s := "/streams/" + orders
	shots := []struct {
		name, path string
		then       []chromedp.Action[chromedp.Void]
	}{
		{"streams", "/", nil},
		{"stream", s, []chromedp.Action[chromedp.Void]{chromedp.WaitVisible(chromedp.CSS(`#activity[data-state="drawn"]`))}},
		{"activity", "/streams/payments", []chromedp.Action[chromedp.Void]{chromedp.WaitVisible(chromedp.CSS(`#activity[data-state="drawn"]`))}},
		{"group", s + "/groups/billing", nil},
		{"group-members", s + "/groups/audit", []chromedp.Action[chromedp.Void]{chromedp.WaitVisible(chromedp.CSS(`#members tr[data-member="instance-crashed-3"]`))}},
		{"reset-plan", s + "/groups/audit", []chromedp.Action[chromedp.Void]{chromedp.Click(chromedp.ID("plan-reset")), chromedp.WaitVisible(chromedp.ID("plan"))}},
		{"alter-plan", s, []chromedp.Action[chromedp.Void]{chromedp.SendKeys(chromedp.CSS(`#alter input[name="partitions"]`), "4"),
			chromedp.SendKeys(chromedp.CSS(`#alter input[name="max_age"]`), "72h"), chromedp.Click(chromedp.ID("plan-alter")), chromedp.WaitVisible(chromedp.ID("alter-plan"))}},
		{"dead-letters", s + "/groups/billing/dead", nil},
		{"dead-letter", fmt.Sprintf("%s/groups/billing/dead/%d", s, dead), nil},
		{"messages", s + "/messages", nil},
		{"messages-tail", s + "/messages?follow=1", []chromedp.Action[chromedp.Void]{chromedp.WaitVisible(chromedp.ID("tail"))}},
		{"schemas", s + "/schemas", nil},
		{"schema-diff", s + "/schemas/2?a=1&b=2", nil},
		{"registry", "/registry", nil},
		{"schema-diff-avro", "/streams/" + avroStream + "/schemas/1", nil},
		{"subject", "/registry/subjects/" + paymentsSubject, nil},
		{"subject-diff-protobuf", "/registry/subjects/" + protoSubject + "/diff", nil},
		// Last: it pauses a group the shots above show running.
		{"group-paused", s + "/groups/audit", []chromedp.Action[chromedp.Void]{chromedp.Click(chromedp.ID("pause-group")), chromedp.WaitVisible(chromedp.ID("resume-group"))}},
	}
	for _, sh := range shots {
		steps := append([]chromedp.Action[chromedp.Void]{chromedp.Navigate(srv + sh.path)}, sh.then...)
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", sh.name, err)
		}
		img, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("%s: screenshot: %v", sh.name, err)
		}
		cfg, err := png.DecodeConfig(bytes.NewReader(img))
		if err != nil || cfg.Width != 1280 || cfg.Height < 300 {
			t.Fatalf("%s: not a 1280-wide PNG: %+v %v", sh.name, cfg, err)
		}
		if err := os.WriteFile(filepath.Join(dir, sh.name+".png"), img, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) > 0 {
		t.Fatalf("the browser logged errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestBrowserMembers: in Chromium on SQLite and PostgreSQL, the group page
// shows the members that went away beside the idle consumer that is live:
// a real client that closed cleanly as left, a real client that lost its
// database as gone once it missed its beats, and a record of one that
// stopped beating two hours ago as gone.
func TestBrowserMembers(t *testing.T) {
	for _, tg := range engines()[:2] {
		t.Run(tg.Name, func(t *testing.T) {
			ns := tg.NewNamespace(t)
			c := openOn(t, tg, ns, sqlstreams.WithHeartbeatInterval(time.Hour))
			seed(t, c)
			seedMembers(t, c)
			closed, lost := membersGone(t, c, tg, ns, "audit")
			srv := serve(t, c, false).URL + prefix
			ctx := browser(t, 90*time.Second)
			if err := chromedp.Do(ctx, chromedp.Navigate(srv+"/streams/"+orders+"/groups/audit")); err != nil {
				t.Fatal(err)
			}
			live := fmt.Sprintf(`#members tr:not([data-member="instance-crashed-3"]):not([data-member="%s"]):not([data-member="%s"]) td:first-child`, closed, lost)
			for sel, want := range map[string]string{
				`#members tr[data-member="instance-crashed-3"] td:first-child`: "gone",
				`#members tr[data-member="` + lost + `"] td:first-child`:       "gone",
				`#members tr[data-member="` + closed + `"] td:first-child`:     "left",
				live: "live",
			} {
				got, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
				if err != nil {
					t.Fatalf("%s: %v", sel, err)
				}
				if strings.TrimSpace(got) != want {
					t.Errorf("%s: %q, want %q", sel, got, want)
				}
			}
			rows, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#members tbody")))
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"closed-cleanly", "lost-database", "crashed-3", "console-test"} {
				if !strings.Contains(rows, id) {
					t.Errorf("the members table has no %s:\n%s", id, rows)
				}
			}
		})
	}
}

// TestBrowserPauseAndAlter: in Chromium on SQLite and PostgreSQL, Pause on
// a group's page pauses it for every member (the badge and Describe say
// so) and Resume undoes it; the stream page's alter form shows the plan of
// a change, with what it means, before anything changes.
func TestBrowserPauseAndAlter(t *testing.T) {
	for _, tg := range engines()[:2] {
		t.Run(tg.Name, func(t *testing.T) {
			c := openClient(t, tg)
			seed(t, c)
			srv := serve(t, c, true).URL + prefix
			ctx := browser(t, 2*time.Minute)
			admin := c.Stream[sqlstreams.RawPayload](orders).Group("audit")
			if err := chromedp.Do(ctx, chromedp.Navigate(srv+"/streams/"+orders+"/groups/audit"), chromedp.Click(chromedp.ID("pause-group")),
				chromedp.WaitVisible(chromedp.ID("resume-group"))); err != nil {
				t.Fatal(err)
			}
			if got := textOf(t, ctx, "paused"); !strings.HasPrefix(got, "Paused since ") {
				t.Fatalf("paused note: %q", got)
			}
			state, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS("h1 .badge"), "data-state"))
			if err != nil || state.Value != "paused" {
				t.Fatalf("badge of the paused group: %+v %v", state, err)
			}
			if d := (fatal{t}).on(admin.Describe(t.Context())); d.PausedAt.IsZero() {
				t.Fatal("Describe: not paused after the click")
			}
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("resume-group")), chromedp.WaitVisible(chromedp.ID("pause-group"))); err != nil {
				t.Fatal(err)
			}
			if d := (fatal{t}).on(admin.Describe(t.Context())); !d.PausedAt.IsZero() {
				t.Fatal("Describe: still paused after Resume")
			}

			if err := chromedp.Do(ctx, chromedp.Navigate(srv+"/streams/"+orders), chromedp.SendKeys(chromedp.CSS(`#alter input[name="partitions"]`), "4"),
				chromedp.Click(chromedp.ID("plan-alter")), chromedp.WaitVisible(chromedp.ID("alter-plan"))); err != nil {
				t.Fatal(err)
			}
			after, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#alter-plan tr[data-setting="partitions"]`)))
			if err != nil || strings.Join(strings.Fields(after), " ") != "partitions 2 4" {
				t.Fatalf("plan row: %q %v", after, err)
			}
			if got := textOf(t, ctx, "alter-notes"); !strings.Contains(got, "keys move to their new partition") {
				t.Fatalf("plan notes: %q", got)
			}
			if info := (fatal{t}).on(c.Stream[sqlstreams.RawPayload](orders).Get(t.Context())); info.Partitions != 2 {
				t.Fatalf("the plan changed the stream: %d partitions", info.Partitions)
			}
		})
	}
}

// TestBrowserLiveTail: in Chromium on SQLite and PostgreSQL, a messages page
// with ?follow=1 shows messages produced after it opened, in id order,
// without a reload, and keeps its filter (a key here).
func TestBrowserLiveTail(t *testing.T) {
	for _, tg := range engines()[:2] {
		t.Run(tg.Name, func(t *testing.T) {
			c := openClient(t, tg)
			seed(t, c)
			srv := serve(t, c, false).URL + prefix
			ctx := browser(t, 2*time.Minute)
			if err := chromedp.Do(ctx, chromedp.Navigate(srv+"/streams/"+orders+"/messages?follow=1&key=acct-7"), chromedp.WaitVisible(chromedp.ID("tail"))); err != nil {
				t.Fatal(err)
			}
			p := (fatal{t}).on(c.Stream[OrderV1](orders).Producer().Register(t.Context(), nil))
			var ids []int64
			for i, key := range []string{"acct-7", "acct-8", "acct-7"} {
				id := (fatal{t}).on(p.Produce(t.Context(), OrderV1{OrderID: fmt.Sprint("live-", i)}, sqlstreams.Key(key)))
				if key == "acct-7" {
					ids = append(ids, id)
				}
			}
			last := fmt.Sprintf(`#messages tr[data-id="%d"]`, ids[len(ids)-1])
			if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(last))); err != nil {
				t.Fatalf("the tail never showed message %d: %v", ids[len(ids)-1], err)
			}
			shown, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#messages tbody")))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(shown, "live-1") || !strings.Contains(shown, "live-0") || !strings.Contains(shown, "live-2") ||
				strings.Index(shown, "live-0") > strings.Index(shown, "live-2") {
				t.Fatalf("the tail of key acct-7 shows:\n%s", shown)
			}
		})
	}
}
