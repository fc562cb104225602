package console_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/contrib/console/view"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// seedBadges adds to the seeded database (orders.placed: billing has a dead
// letter, audit 4 unread; payments: ledger read to the end) a compacted
// stream with one version and no group, and a stream whose only group's
// consumer (another client on namespace ns) closed with a row left. c beats
// once an hour, so its members stay live for the whole test.
func seedBadges(t testing.TB, c *sqlstreams.Client, tg conformance.Target, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fatal{t}.on(c.Stream[Payment]("profiles").Create(ctx, &sqlstreams.StreamOptions{Compacted: true}))
	pp := fatal{t}.on(c.Stream[Payment]("profiles").Producer().Register(ctx, nil))
	fatal{t}.on(pp.Produce(ctx, Payment{ID: "p-1"}, sqlstreams.Key("u-1")))

	fatal{t}.on(c.Stream[Payment]("refunds").Create(ctx, nil))
	rp := fatal{t}.on(c.Stream[Payment]("refunds").Producer().Register(ctx, nil))
	fatal{t}.on(rp.Produce(ctx, Payment{ID: "r-1"}))
	gone := openOn(t, tg, ns, sqlstreams.WithIdentity("stopped"), sqlstreams.WithHeartbeatInterval(time.Hour))
	fatal{t}.on(gone.Stream[Payment]("refunds").Consumer("refunder").Register(ctx, nil))
	recorded(t, gone, 1)
	if err := gone.Close(); err != nil {
		t.Fatal(err)
	}
	recorded(t, c, 4)
}

// stateRE reads the state of a health badge.
var stateRE = regexp.MustCompile(`data-state="([a-z_]+)"`)

// TestHealthBadges: health (ok, lagging, dead letters, no live consumer)
// is shown on every stream and group, apart from retirement, which only a
// version with a newer one has: a compacted stream with no group is ok
// with nothing to retire, a backlog read by live consumers is lagging, not
// red, and only dead letters and a group nobody runs are red.
func TestHealthBadges(t *testing.T) {
	t.Parallel()
	for _, tg := range engines() {
		t.Run(tg.Name, func(t *testing.T) {
			t.Parallel()
			ns := tg.NewNamespace(t)
			c := openOn(t, tg, ns, sqlstreams.WithHeartbeatInterval(time.Hour))
			seed(t, c)
			seedBadges(t, c, tg, ns)
			srv := serve(t, c, false).URL + prefix

			ov := getJSON[view.Overview](t, srv, "/api/streams")
			want := map[string]struct {
				state    string
				retiring string
			}{
				orders:     {view.StateDeadLetters, "v1:false"},
				"payments": {view.StateOK, ""},
				"profiles": {view.StateOK, ""},
				"refunds":  {view.StateNoLiveConsumer, ""},
			}
			_, page := get(t, srv, "/")
			seen := 0
			for _, s := range ov.Streams {
				w, ok := want[s.Name]
				if !ok {
					continue
				}
				seen++
				var retiring []string
				for _, r := range s.Retirement {
					retiring = append(retiring, fmt.Sprintf("v%d:%t", r.Version, r.Retirable))
				}
				if s.Status.State != w.state || strings.Join(retiring, ",") != w.retiring {
					t.Errorf("%s in /api/streams: status %+v, retirement %v; want %s, %q", s.Name, s.Status, retiring, w.state, w.retiring)
				}
				row := regexp.MustCompile(`(?s)<tr data-stream="` + regexp.QuoteMeta(s.Name) + `">.*?</tr>`).FindString(page)
				if m := stateRE.FindStringSubmatch(row); m == nil || m[1] != w.state {
					t.Errorf("%s on the overview: badge %v, want %s\n%s", s.Name, m, w.state, row)
				}
				if w.retiring == "" && (strings.Contains(row, "retirable") || strings.Contains(row, "blocked")) {
					t.Errorf("%s on the overview has a retirement badge but one version:\n%s", s.Name, row)
				}
			}

			if seen != len(want) {
				t.Errorf("/api/streams lists %d of the %d streams", seen, len(want))
			}
			// The compacted stream with no group: ok, its one version the
			// newest, no checklist and nothing red.
			_, page = get(t, srv, "/streams/profiles")
			if txt := text(page); !strings.Contains(txt, "profiles ok") || !strings.Contains(txt, "v1 newest") ||
				strings.Contains(txt, "Retirement checklist") || strings.Contains(page, "badge bad") {
				t.Errorf("compacted stream with no group: %s", txt)
			}
			// Per group, on the stream page and each group's heading.
			for stream, groups := range map[string]map[string]string{
				orders:    {"billing": view.StateDeadLetters, "audit": view.StateLagging, "shipping": view.StateOK},
				"refunds": {"refunder": view.StateNoLiveConsumer},
			} {
				_, page := get(t, srv, "/streams/"+stream)
				for g, state := range groups {
					row := regexp.MustCompile(`(?s)<tr data-group="` + g + `">\s*<td><a[^>]*>[^<]*</a></td>\s*<td class="health">.*?</td>`).FindString(page)
					if m := stateRE.FindStringSubmatch(row); m == nil || m[1] != state {
						t.Errorf("%s/%s on the stream page: badge %v, want %s", stream, g, m, state)
					}
					_, gp := get(t, srv, "/streams/"+stream+"/groups/"+g)
					h1 := regexp.MustCompile(`(?s)<h1>.*?</h1>`).FindString(gp)
					if m := stateRE.FindStringSubmatch(h1); m == nil || m[1] != state {
						t.Errorf("%s/%s heading: %s, want %s", stream, g, h1, state)
					}
				}
			}
		})
	}
}

// TestBrowserHealthBadges: the same badges in Chromium on SQLite and
// PostgreSQL, read from the rendered overview.
func TestBrowserHealthBadges(t *testing.T) {
	for _, tg := range engines()[:2] {
		t.Run(tg.Name, func(t *testing.T) {
			ns := tg.NewNamespace(t)
			c := openOn(t, tg, ns, sqlstreams.WithHeartbeatInterval(time.Hour))
			seed(t, c)
			seedBadges(t, c, tg, ns)
			srv := serve(t, c, false).URL + prefix
			ctx := browser(t, 90*time.Second)
			if err := chromedp.Do(ctx, chromedp.Navigate(srv+"/")); err != nil {
				t.Fatal(err)
			}
			for stream, want := range map[string]string{orders: "dead letters", "payments": "ok", "profiles": "ok", "refunds": "no live consumer"} {
				got, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`tr[data-stream="`+stream+`"] td.health .badge`)))
				if err != nil {
					t.Fatalf("%s: %v", stream, err)
				}
				if strings.TrimSpace(got) != want {
					t.Errorf("%s: health badge %q, want %q", stream, got, want)
				}
			}
			for stream, want := range map[string]string{orders: "v1 not yet retirable", "profiles": "—"} {
				got, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`tr[data-stream="`+stream+`"] td.retirement`)))
				if err != nil {
					t.Fatalf("%s: %v", stream, err)
				}
				if strings.TrimSpace(got) != want {
					t.Errorf("%s's retirement: %q, want %q", stream, got, want)
				}
			}
		})
	}
}
