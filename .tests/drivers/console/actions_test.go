package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/contrib/console/view"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// token reads the form token a page embeds.
func token(t testing.TB, srv string) string {
	t.Helper()
	_, body := get(t, srv, "/registry")
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no form token on the registry page")
	}
	return m[1]
}

// post sends a form without following redirects.
func post(t testing.TB, srv, path string, form url.Values, header ...string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(b)
}

func deadOf(t testing.TB, c *sqlstreams.Client, group string) int64 {
	t.Helper()
	var n int64
	for _, vh := range health(t, c, orders).Versions {
		for _, g := range vh.Groups {
			if g.Group == group {
				n += g.Dead
			}
		}
	}
	return n
}

func TestReadOnlyRefusesEveryPost(t *testing.T) {
	t.Parallel()
	c := openClient(t, engines()[0])
	dead := seed(t, c)
	srv := serve(t, c, false).URL + prefix
	tok := token(t, srv)
	_, body := get(t, srv, "/streams/"+orders+"/groups/billing/dead")
	if n := strings.Count(body, `disabled title="the console is read-only"`); n != 4 {
		t.Errorf("dead letters page: %d disabled buttons, want 4", n)
	}
	for _, path := range []string{"/streams/" + orders + "/groups/billing/dead/replay", "/streams/" + orders + "/groups/billing/dead/discard",
		"/streams/" + orders + "/groups/billing/reset", "/streams/" + orders + "/groups/billing/delete", "/registry/settings",
		"/streams/" + orders + "/groups/billing/pause", "/streams/" + orders + "/groups/billing/resume", "/streams/" + orders + "/alter"} {
		code, _, body := post(t, srv, path, url.Values{"csrf": {tok}, "all": {"1"}, "to": {"latest"}, "confirm": {"billing"}, "level": {"NONE"}})
		if code != http.StatusForbidden || !strings.Contains(body, "the console is read-only") {
			t.Errorf("POST %s: %d %s", path, code, text(body))
		}
	}
	if deadOf(t, c, "billing") != 1 {
		t.Fatal("a refused POST changed the dead count")
	}
	if _, err := c.Stream[sqlstreams.RawPayload](orders).Group("billing").DeadLetter(t.Context(), dead); err != nil {
		t.Fatal(err)
	}
}

func TestPostGuards(t *testing.T) {
	t.Parallel()
	c := openClient(t, engines()[0])
	seed(t, c)
	base := serve(t, c, true).URL
	srv := base + prefix
	tok := token(t, srv)
	path := "/streams/" + orders + "/groups/billing/dead/replay"
	for _, tc := range []struct {
		name   string
		form   url.Values
		header []string
		want   string
	}{
		{"cross-site fetch", url.Values{"csrf": {tok}, "all": {"1"}}, []string{"Sec-Fetch-Site", "cross-site"}, "cross-origin request refused"},
		{"foreign origin", url.Values{"csrf": {tok}, "all": {"1"}}, []string{"Origin", "https://evil.example"}, "cross-origin request refused"},
		{"no token", url.Values{"all": {"1"}}, nil, "missing or stale form token"},
		{"wrong token", url.Values{"csrf": {strings.Repeat("0", len(tok))}, "all": {"1"}}, nil, "missing or stale form token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := post(t, srv, path, tc.form, tc.header...)
			if code != http.StatusForbidden || !strings.Contains(body, tc.want) {
				t.Errorf("%d %s", code, text(body))
			}
		})
	}
	if deadOf(t, c, "billing") != 1 {
		t.Fatal("a refused POST changed the dead count")
	}
	// The same request from the console's own origin goes through.
	code, loc, body := post(t, srv, path, url.Values{"csrf": {tok}, "all": {"1"}}, "Sec-Fetch-Site", "same-origin", "Origin", base)
	if code != http.StatusSeeOther || loc != prefix+"/streams/"+orders+"/groups/billing/dead?done=replayed&n=1" {
		t.Fatalf("same-origin POST: %d %q %s", code, loc, text(body))
	}
}

func TestActions(t *testing.T) {
	for _, tg := range engines() {
		t.Run(tg.Name, func(t *testing.T) {
			t.Parallel()
			c := openClient(t, tg)
			dead := seed(t, c)
			srv := serve(t, c, true).URL + prefix
			tok := token(t, srv)
			group := "/streams/" + orders + "/groups/"
			form := func(kv ...string) url.Values {
				v := url.Values{"csrf": {tok}}
				for i := 0; i+1 < len(kv); i += 2 {
					v.Add(kv[i], kv[i+1])
				}
				return v
			}

			t.Run("replay selected", func(t *testing.T) {
				code, loc, body := post(t, srv, group+"billing/dead/replay", form("id", fmt.Sprint(dead)))
				if code != http.StatusSeeOther {
					t.Fatalf("%d %s", code, text(body))
				}
				if n := deadOf(t, c, "billing"); n != 0 {
					t.Fatalf("Health dead %d after replay", n)
				}
				u, _ := url.Parse(loc)
				_, page := get(t, srv, strings.TrimPrefix(u.Path, prefix)+"?"+u.RawQuery)
				if txt := text(page); !strings.Contains(txt, "Replayed 1 dead letter(s)") || !strings.Contains(txt, "Dead letters of billing: 0") {
					t.Fatalf("after replay: %s", txt)
				}
				// Make it dead again for discard.
				billing := fatal{t}.on(c.Stream[OrderV1](orders).Consumer("billing").Register(t.Context(), nil))
				ds := claimAll(t, t.Context(), billing, 1)
				if ds[0].ID != dead || ds[0].Attempt != 1 {
					t.Fatalf("replayed delivery %d at attempt %d, want %d at 1", ds[0].ID, ds[0].Attempt, dead)
				}
				if err := ds[0].Dead(t.Context(), fmt.Errorf("still declined")); err != nil {
					t.Fatal(err)
				}
			})
			t.Run("discard all as JSON", func(t *testing.T) {
				code, _, body := post(t, srv, group+"billing/dead/discard", form("all", "1"), "Accept", "application/json")
				if code != http.StatusOK || !strings.Contains(body, `"action": "discarded"`) || !strings.Contains(body, `"count": 1`) {
					t.Fatalf("%d %s", code, body)
				}
				if n := deadOf(t, c, "billing"); n != 0 {
					t.Fatalf("Health dead %d after discard", n)
				}
			})
			t.Run("no selection", func(t *testing.T) {
				code, _, body := post(t, srv, group+"billing/dead/replay", form())
				if code != http.StatusBadRequest || !strings.Contains(body, "no dead letter selected") {
					t.Fatalf("%d %s", code, text(body))
				}
			})
			t.Run("reset cursors: dry run, then apply", func(t *testing.T) {
				admin := c.Stream[sqlstreams.RawPayload](orders).Group("billing")
				before := fatal{t}.on(admin.Describe(t.Context()))
				code, _, body := post(t, srv, group+"billing/reset", form("to", "earliest", "dry_run", "1"))
				if code != http.StatusOK {
					t.Fatalf("dry run: %d %s", code, text(body))
				}
				plan := fatal{t}.on(admin.ResetCursors(t.Context(), sqlstreams.ResetOptions{To: sqlstreams.ResetToEarliest(), DryRun: true}))
				txt := text(body)
				for _, ch := range plan {
					if want := fmt.Sprintf("%d %d %d", ch.Partition, ch.From+1, ch.To+1); !strings.Contains(txt, "Dry-run plan Partition Next id New next id") || !strings.Contains(txt, want) {
						t.Errorf("plan row %q missing: %s", want, txt)
					}
				}
				if !strings.Contains(body, `id="apply-reset"`) {
					t.Error("the plan has no apply button")
				}
				mid := fatal{t}.on(admin.Describe(t.Context()))
				for i := range mid.Partitions {
					if mid.Partitions[i].Cursor != before.Partitions[i].Cursor {
						t.Fatalf("the dry run moved partition %d", i)
					}
				}
				code, loc, body := post(t, srv, group+"billing/reset", form("to", "earliest"))
				if code != http.StatusSeeOther || !strings.HasSuffix(loc, "?done=reset&n=2") {
					t.Fatalf("apply: %d %q %s", code, loc, text(body))
				}
				after := fatal{t}.on(admin.Describe(t.Context()))
				for _, ch := range plan {
					if after.Partitions[ch.Partition].Cursor != ch.To {
						t.Errorf("partition %d at %d, planned %d", ch.Partition, after.Partitions[ch.Partition].Cursor, ch.To)
					}
				}
				code, _, body = post(t, srv, group+"billing/reset", form("to", "shift", "value", "x"))
				if code != http.StatusBadRequest || !strings.Contains(body, "give a whole number for shift") {
					t.Errorf("bad shift: %d %s", code, text(body))
				}
				code, _, body = post(t, srv, group+"billing/reset", form("to", "latest", "partitions", "7"))
				if code != http.StatusBadRequest || !strings.Contains(body, "has partitions 0 to 1") {
					t.Errorf("bad partition: %d %s", code, text(body))
				}
			})
			t.Run("pause and resume", func(t *testing.T) {
				admin := c.Stream[sqlstreams.RawPayload](orders).Group("audit")
				code, loc, body := post(t, srv, group+"audit/pause", form())
				if code != http.StatusSeeOther || loc != prefix+group+"audit?done=paused" {
					t.Fatalf("pause: %d %q %s", code, loc, text(body))
				}
				if d := (fatal{t}).on(admin.Describe(t.Context())); d.PausedAt.IsZero() {
					t.Fatal("the group is not paused after the pause action")
				}
				_, page := get(t, srv, group+"audit?done=paused")
				if txt := text(page); !strings.Contains(txt, "Group paused") || !strings.Contains(page, `id="resume-group"`) || !strings.Contains(page, `data-state="paused"`) {
					t.Fatalf("paused group page: %s", txt)
				}
				g := getJSON[view.GroupDescription](t, srv, group+"audit")
				if g.PausedAt == nil || g.Status.State != view.StatePaused {
					t.Fatalf("paused group as JSON: paused_at %v, status %+v", g.PausedAt, g.Status)
				}
				code, loc, body = post(t, srv, group+"audit/resume", form())
				if code != http.StatusSeeOther || loc != prefix+group+"audit?done=resumed" {
					t.Fatalf("resume: %d %q %s", code, loc, text(body))
				}
				if d := (fatal{t}).on(admin.Describe(t.Context())); !d.PausedAt.IsZero() {
					t.Fatalf("still paused at %v after resume", d.PausedAt)
				}
				if code, _, body := post(t, srv, group+"nope/pause", form()); code != http.StatusNotFound {
					t.Fatalf("pause of a missing group: %d %s", code, text(body))
				}
			})
			t.Run("alter: dry run, then apply", func(t *testing.T) {
				s := c.Stream[sqlstreams.RawPayload](orders)
				before := fatal{t}.on(s.Get(t.Context()))
				code, _, body := post(t, srv, "/streams/"+orders+"/alter", form("partitions", "3", "max_age", "24h", "dry_run", "1"))
				if code != http.StatusOK {
					t.Fatalf("dry run: %d %s", code, text(body))
				}
				txt := text(body)
				for _, want := range []string{"Dry-run plan", "partitions 2 3", "max-age - 24h0m0s", "keys move to their new partition", "apply at the next maintenance"} {
					if !strings.Contains(txt, want) {
						t.Errorf("plan lacks %q: %s", want, txt)
					}
				}
				if !strings.Contains(body, `id="apply-alter"`) {
					t.Error("the plan has no apply button")
				}
				mid := fatal{t}.on(s.Get(t.Context()))
				if mid.Partitions != before.Partitions || mid.Retention != before.Retention {
					t.Fatalf("the dry run changed the stream: %+v", mid)
				}
				for _, bad := range []struct{ field, value, want string }{
					{"partitions", "1", "can only be added"}, {"partitions", "x", "give a count of 1 or more"},
					{"max_age", "soon", "give a duration"}, {"hard", "maybe", "choose on, off"},
				} {
					code, _, body := post(t, srv, "/streams/"+orders+"/alter", form(bad.field, bad.value, "dry_run", "1"))
					if code != http.StatusBadRequest || !strings.Contains(body, bad.want) {
						t.Errorf("%s=%s: %d %s", bad.field, bad.value, code, text(body))
					}
				}
				code, loc, body := post(t, srv, "/streams/"+orders+"/alter", form("partitions", "3", "max_age", "24h"))
				if code != http.StatusSeeOther || loc != prefix+"/streams/"+orders+"?done=altered" {
					t.Fatalf("apply: %d %q %s", code, loc, text(body))
				}
				after := fatal{t}.on(s.Get(t.Context()))
				if after.Partitions != 3 || after.Retention.MaxAge != 24*time.Hour {
					t.Fatalf("after apply: %+v", after)
				}
			})
			t.Run("delete needs the name unless retirable", func(t *testing.T) {
				code, _, body := post(t, srv, group+"audit/delete", form())
				if code != http.StatusConflict || !strings.Contains(body, "group audit is not retirable (group audit has 4 unread)") {
					t.Fatalf("%d %s", code, text(body))
				}
				code, loc, body := post(t, srv, group+"audit/delete", form("confirm", "audit"))
				if code != http.StatusSeeOther || loc != prefix+"/streams/"+orders+"?done=deleted" {
					t.Fatalf("%d %q %s", code, loc, text(body))
				}
				// shipping is retirable: no name needed.
				if code, _, body := post(t, srv, group+"shipping/delete", form()); code != http.StatusSeeOther {
					t.Fatalf("retirable delete: %d %s", code, text(body))
				}
				groups := fatal{t}.on(c.Stream[sqlstreams.RawPayload](orders).Groups(t.Context()))
				if len(groups) != 1 || groups[0].Name != "billing" {
					t.Fatalf("groups left: %+v", groups)
				}
				if code, _ := get(t, srv, group+"audit"); code != http.StatusNotFound {
					t.Fatalf("deleted group page: %d", code)
				}
			})
			t.Run("registry settings", func(t *testing.T) {
				code, loc, body := post(t, srv, "/registry/settings", form("stream", orders, "level", "FULL", "mode", "READONLY"))
				if code != http.StatusSeeOther || loc != prefix+"/streams/"+orders+"/schemas?done=settings" {
					t.Fatalf("%d %q %s", code, loc, text(body))
				}
				sp := getJSON[view.Schemas](t, srv, "/streams/"+orders+"/schemas")
				if sp.Level.Value != "FULL" || sp.Level.Scope != "stream" || sp.Mode.Value != string(sqlstreams.ModeReadOnly) {
					t.Fatalf("after save: %+v %+v", sp.Level, sp.Mode)
				}
				// READONLY refuses a level change: a 409 saying so.
				code, _, body = post(t, srv, "/registry/settings", form("stream", orders, "level", "NONE"))
				if code != http.StatusConflict || !strings.Contains(body, "set the mode to READWRITE first") {
					t.Fatalf("level under READONLY: %d %s", code, text(body))
				}
				code, _, _ = post(t, srv, "/registry/settings", form("stream", orders, "level", "INHERIT", "mode", "INHERIT"))
				if code != http.StatusSeeOther {
					t.Fatalf("inherit: %d", code)
				}
				sp = getJSON[view.Schemas](t, srv, "/streams/"+orders+"/schemas")
				if sp.Level.Scope != "default" || sp.Mode.Scope != "default" {
					t.Fatalf("after inherit: %+v %+v", sp.Level, sp.Mode)
				}
				code, _, body = post(t, srv, "/registry/settings", form("level", "SOMETIMES"))
				if code != http.StatusBadRequest || !strings.Contains(body, "unknown compatibility level") {
					t.Fatalf("bad level: %d %s", code, text(body))
				}
			})
		})
	}
}

// TestRetirementFromTheConsole walks v1 of the seeded stream to retirement
// with the console's own actions, once the application has drained its
// backlog: discard the dead letter, see the verdict turn, delete the
// groups that read only v1.
func TestRetirementFromTheConsole(t *testing.T) {
	for _, tg := range engines() {
		t.Run(tg.Name, func(t *testing.T) {
			t.Parallel()
			c := openClient(t, tg)
			seed(t, c)
			srv := serve(t, c, true).URL + prefix
			tok := token(t, srv)
			// The v1 audit consumers finish their backlog.
			audit := fatal{t}.on(c.Stream[OrderV1](orders).Consumer("audit").Register(t.Context(), nil))
			if err := audit.Ack(t.Context(), claimAll(t, t.Context(), audit, 4)...); err != nil {
				t.Fatal(err)
			}
			_, body := get(t, srv, "/streams/"+orders)
			if txt := text(body); !strings.Contains(txt, "v1 v1 not yet retirable group billing has 1 dead (replay or discard them)") {
				t.Fatalf("before discarding: %s", txt)
			}
			if code, _, body := post(t, srv, "/streams/"+orders+"/groups/billing/dead/discard", url.Values{"csrf": {tok}, "all": {"1"}}); code != http.StatusSeeOther {
				t.Fatalf("discard: %d %s", code, text(body))
			}
			_, body = get(t, srv, "/streams/"+orders)
			if txt := text(body); !strings.Contains(txt, "v1 v1 retirable retirable") {
				t.Fatalf("after discarding: %s", txt)
			}
			for _, g := range []string{"audit", "billing"} {
				if code, _, body := post(t, srv, "/streams/"+orders+"/groups/"+g+"/delete", url.Values{"csrf": {tok}}); code != http.StatusSeeOther {
					t.Fatalf("delete %s: %d %s", g, code, text(body))
				}
			}
			v1, _ := health(t, c, orders).Version(1)
			if !v1.Retirable || len(v1.Groups) != 0 {
				t.Fatalf("v1 after the walk: %+v", v1)
			}
			_, body = get(t, srv, "/streams/"+orders)
			if txt := text(body); !strings.Contains(txt, "v1 v1 retirable retirable no group reads version 1 (4 rows)") {
				t.Fatalf("final stream page: %s", txt)
			}
		})
	}
}

// withoutAlter hides a driver's driver.Alterer, as an out-of-tree driver
// written before Stream.Alter lacks it.
type withoutAlter struct {
	driver.Driver
	driver.Registry
}

// A driver that cannot alter streams: the console answers 501 with the
// driver's reason and changes nothing.
func TestAlterUnsupported(t *testing.T) {
	t.Parallel()
	tg := engines()[0]
	drv, err := tg.Open(tg.NewNamespace(t))
	if err != nil {
		t.Fatal(err)
	}
	full, ok := drv.(interface {
		driver.Driver
		driver.Registry
	})
	if !ok {
		t.Fatalf("the %s driver is not a registry", tg.Name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := sqlstreams.Open(ctx, withoutAlter{full, full}, sqlstreams.WithMaintenanceInterval(0), sqlstreams.WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	s := c.Stream[OrderV1](orders)
	fatal{t}.on(s.Create(ctx, &sqlstreams.StreamOptions{Partitions: 2}))
	srv := serve(t, c, true).URL + prefix
	code, _, body := post(t, srv, "/streams/"+orders+"/alter", url.Values{"csrf": {token(t, srv)}, "partitions": {"3"}})
	if code != http.StatusNotImplemented || !strings.Contains(body, "cannot alter streams") {
		t.Fatalf("apply without driver.Alterer: %d %s", code, text(body))
	}
	after := fatal{t}.on(s.Get(ctx))
	if after.Partitions != 2 {
		t.Errorf("the stream has %d partitions after the refusal, want 2", after.Partitions)
	}
}
