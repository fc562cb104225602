package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/contrib/console/view"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// get fetches a page and returns its status and body.
func get(t testing.TB, srv string, path string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func getJSON[T any](t testing.TB, srv, path string) T {
	t.Helper()
	code, body := get(t, srv, path, "Accept", "application/json")
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	var v T
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, body)
	}
	return v
}

// groupRow is a group's row of a version's table on the stream page, from
// Health's own figures.
func groupRow(vh sqlstreams.VersionHealth, group string) string {
	for _, g := range vh.Groups {
		if g.Group == group {
			return fmt.Sprintf("%s %d %d %d %d %d %d", g.Group, g.Unread, g.Leased, g.Delayed, g.Dead, g.CursorDistance, g.RemovedUnread)
		}
	}
	return "no group " + group + " in health"
}

var tagRE = regexp.MustCompile(`<[^>]*>`)

// text is a page's visible text with the tags removed and spaces collapsed.
func text(body string) string {
	s := strings.Join(strings.Fields(html.UnescapeString(tagRE.ReplaceAllString(body, " "))), " ")
	return strings.ReplaceAll(s, " ,", ",")
}

func TestPages(t *testing.T) {
	for _, tg := range engines() {
		t.Run(tg.Name, func(t *testing.T) {
			t.Parallel()
			// Beating once an hour, the client stays a live member of
			// every group it registered however long the test takes.
			c := openClient(t, tg, sqlstreams.WithHeartbeatInterval(time.Hour))
			dead := seed(t, c)
			recorded(t, c, 4)
			// v2 has a level of its own: its revisions are judged by it, and
			// the pages say so; v1 keeps the stream's.
			if err := c.Registry().SetVersionLevel(context.Background(), orders, 2, schema.Full); err != nil {
				t.Fatal(err)
			}
			srv := serve(t, c, false).URL + prefix
			h := health(t, c, orders)
			v1, _ := h.Version(1)
			v2, _ := h.Version(2)
			if v1.Verdict() != ordersV1Text || v2.Verdict() != "retirable" {
				t.Fatalf("seeded health is not what the test expects: v1 %q, v2 %q", v1.Verdict(), v2.Verdict())
			}
			deadPath := fmt.Sprintf("/streams/%s/groups/billing/dead/%d", orders, dead)
			cases := []struct {
				name, path string
				want       []string
			}{
				// Health and retirement apart: the stream has dead letters
				// (its worst), and v1, which v2 replaces, is not yet
				// retirable; payments, one version read to the end, is ok
				// with nothing to retire.
				{"streams", "/", []string{"orders.placed 2 no forever 6 v1 v2 audit, billing, shipping 4 1 dead letters v1 not yet retirable",
					"payments 1 no forever 1 v1 ledger 0 0 ok —"}},
				{"stream", "/streams/" + orders, []string{"orders.placed dead letters audit: 4 unread billing: 1 dead letter(s) to replay or discard",
					"v1 v1 not yet retirable " + ordersV1Text, "v2 newest 2 row(s), 0 compaction head(s).",
					"billing dead letters v1 1", "audit lagging v1 1", "shipping ok v2 1",
					"4 row(s), 0 compaction head(s)", groupRow(v1, "audit"), groupRow(v1, "billing"), groupRow(v2, "shipping"),
					"☐ group billing has no dead letters at v1 (1 dead: replay or discard them)",
					"☐ delete group audit, which reads only v1", "High-water id 6",
					"Cursor distance is the high-water id minus the group's cursor, summed over partitions: every id past the cursor, at any version or key"}},
				{"group", "/streams/" + orders + "/groups/billing", []string{"Group billing dead letters 1 dead letter(s) to replay or discard", "Version v1",
					"Deleting it now would lose: group billing has 1 dead (replay or discard them)", "Leased 0 · Delayed 0 · Dead 1",
					"Partition Next id High-water Distance Lag", "Delete group billing",
					"Distance is the high-water id minus the last id read: every id past the cursor, at any version or key, so it may be larger than Lag"}},
				{"group audit", "/streams/" + orders + "/groups/audit", []string{"Group audit lagging 4 unread", "group audit has 4 unread",
					"live console-test"}},
				{"dead", "/streams/" + orders + "/groups/billing/dead", []string{"Dead letters of billing: 1",
					fmt.Sprintf("%d v1 acct-1 1", dead), "card declined", "Replay all"}},
				{"dead letter", deadPath, []string{fmt.Sprintf("Dead letter %d", dead), "Key acct-1", `"order_id": "o-1"`,
					"trace t-1", "Attempt At Holder Error 1", "console-test card declined"}},
				{"messages", "/streams/" + orders + "/messages", []string{"v1 acct-0", "v2 acct-1", `"cents": 100`, "trace=t-0"}},
				{"messages by version", "/streams/" + orders + "/messages?version=2", []string{"v2 acct-0"}},
				{"messages by key", "/streams/" + orders + "/messages?key=acct-3", []string{"v1 acct-3"}},
				{"messages by id", fmt.Sprintf("/streams/%s/messages?id=%d", orders, dead), []string{"v1 acct-1"}},
				{"schemas", "/streams/" + orders + "/schemas", []string{"Compatibility level BACKWARD (set by stream)",
					"Mode READWRITE (set by default)", "v1 subject orders.placed-v1 Level BACKWARD (set by stream) · Mode READWRITE (set by default)",
					"v2 subject orders.placed-v2 Level FULL (set by version) · Mode READWRITE (set by default)"}},
				{"schema diff", "/streams/" + orders + "/schemas/2", []string{"v2: revision 1 → revision 2",
					"Problems at FULL (level set by version)", "new reader, old data TYPE_CHANGED #/properties/cents/type"}},
				{"registry", "/registry", []string{"Compatibility level BACKWARD (set by default)", "orders.placed-v2 orders.placed v2 JSON 2 2 FULL (version)",
					"payments-v1 payments v1 JSON 1 1 BACKWARD (default) READWRITE (default)"}},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					code, body := get(t, srv, tc.path)
					if code != http.StatusOK {
						t.Fatalf("GET %s: %d\n%s", tc.path, code, text(body))
					}
					txt := text(body)
					for _, w := range tc.want {
						if !strings.Contains(txt, w) {
							t.Errorf("GET %s: no %q in\n%s", tc.path, w, txt)
						}
					}
				})
			}
			t.Run("messages filters exclude", func(t *testing.T) {
				page := getJSON[view.RecordPage](t, srv, "/streams/"+orders+"/messages?key=acct-1&version=1")
				if len(page.Records) != 1 || page.Records[0].ID != dead || page.Records[0].Key == nil || *page.Records[0].Key != "acct-1" {
					t.Fatalf("key+version filter: %+v", page.Records)
				}
				part := fatal{t}.on(c.Stream[sqlstreams.RawPayload](orders).Browse(t.Context(), sqlstreams.BrowseOptions{}))
				p0 := 0
				for _, r := range part.Records {
					if r.Partition == 0 {
						p0++
					}
				}
				page = getJSON[view.RecordPage](t, srv, "/streams/"+orders+"/messages?partition=0")
				if len(page.Records) != p0 {
					t.Fatalf("partition 0: %d records, want %d", len(page.Records), p0)
				}
				for _, r := range page.Records {
					if r.Partition != 0 {
						t.Fatalf("partition filter let %+v through", r)
					}
				}
			})
			t.Run("json equals Health", func(t *testing.T) {
				sp := getJSON[view.StreamDescription](t, srv, "/streams/"+orders+"?format=json")
				if len(sp.Health.Versions) != len(h.Versions) {
					t.Fatalf("versions %d, want %d", len(sp.Health.Versions), len(h.Versions))
				}
				for i, v := range sp.Health.Versions {
					want := h.Versions[i]
					if v.Verdict != want.Verdict() || v.Rows != want.Rows || len(v.Groups) != len(want.Groups) {
						t.Errorf("v%d: %+v, want %+v", v.Version, v, want)
					}
					for j, g := range v.Groups {
						wg := want.Groups[j]
						if g.Group != wg.Group || g.Unread != wg.Unread || g.Dead != wg.Dead || g.Leased != wg.Leased || g.CursorDistance != wg.CursorDistance {
							t.Errorf("v%d group %s: %+v, want %+v", v.Version, g.Group, g, wg)
						}
					}
				}
				ov := getJSON[view.Overview](t, srv, "/api/streams")
				var unread, deadN int64
				for _, vh := range h.Versions {
					for _, g := range vh.Groups {
						unread, deadN = unread+g.Unread, deadN+g.Dead
					}
				}
				if len(ov.Streams) != 2 || ov.Streams[0].Name != orders || ov.Streams[0].Unread != unread || ov.Streams[0].Dead != deadN ||
					ov.Streams[0].HighWater != h.HighWater || ov.Streams[0].Status.State != view.StateDeadLetters ||
					len(ov.Streams[0].Retirement) != 1 || ov.Streams[0].Retirement[0].Version != 1 || ov.Streams[0].Retirement[0].Retirable ||
					ov.Streams[1].Status.State != view.StateOK || len(ov.Streams[1].Retirement) != 0 {
					t.Errorf("overview %+v; health unread %d dead %d high-water %d", ov.Streams, unread, deadN, h.HighWater)
				}
				gp := getJSON[view.GroupDescription](t, srv, "/api/streams/"+orders+"/groups/billing")
				d := fatal{t}.on(c.Stream[sqlstreams.RawPayload](orders).Group("billing").Describe(t.Context()))
				if gp.Dead != d.Dead || gp.Dead != 1 || gp.Retirable || len(gp.Partitions) != 2 || gp.Partitions[1].HighWater != d.Partitions[1].HighWater {
					t.Errorf("group page %+v, describe %+v", gp, d)
				}
				dp := getJSON[view.DeadLetterPage](t, srv, "/streams/"+orders+"/groups/billing/dead")
				if dp.Dead != 1 || len(dp.DeadLetters) != 1 || dp.DeadLetters[0].ID != dead || dp.DeadLetters[0].Error != "card declined" {
					t.Errorf("dead page %+v", dp)
				}
				dl := getJSON[view.DeadLetter](t, srv, deadPath)
				if len(dl.History) != 1 || dl.Headers["trace"] != "t-1" {
					t.Errorf("dead letter %+v", dl)
				}
				diff := getJSON[view.SchemaDiff](t, srv, "/streams/"+orders+"/schemas/2?a=1&b=2")
				if diff.Compatible || len(diff.Problems) == 0 || diff.Level != "FULL" || diff.LevelSource != "version" {
					t.Errorf("diff %+v", diff)
				}
				same := getJSON[view.SchemaDiff](t, srv, "/streams/"+orders+"/schemas/2?a=2&b=2&level=FULL")
				if !same.Compatible || len(same.Differences) != 0 || same.LevelSource != "asked" {
					t.Errorf("same revision diff %+v", same)
				}
				sch := getJSON[view.Schemas](t, srv, "/streams/"+orders+"/schemas")
				if len(sch.Versions) != 2 || sch.Versions[0].Level != (view.Setting{Value: "BACKWARD", Scope: "stream"}) ||
					sch.Versions[1].Level != (view.Setting{Value: "FULL", Scope: "version"}) || sch.Versions[1].Mode.Scope != "default" {
					t.Errorf("settings per version: %+v", sch.Versions)
				}
				readers := map[string]bool{}
				for _, v := range sch.Versions {
					for _, r := range v.Revisions {
						for _, g := range r.Readers {
							readers[fmt.Sprintf("%s@v%d.%d", g, v.Version, r.Revision)] = true
						}
					}
				}
				if !readers["billing@v1.1"] || !readers["audit@v1.1"] || !readers["shipping@v2.1"] || len(readers) != 3 {
					t.Errorf("readers %v", readers)
				}
				feat := getJSON[view.Features](t, srv, "/api/features")
				if feat.Driver != tg.Name || !feat.ReadOnly || !feat.Registry || !feat.Notify { // LISTEN/NOTIFY; SQLite's write-ahead log watch; MySQL's watch of the newest id
					t.Errorf("features %+v", feat)
				}
			})
			t.Run("errors", func(t *testing.T) {
				for _, tc := range []struct {
					path string
					code int
					want string
				}{
					{"/streams/nope", 404, `stream \"nope\"`},
					{"/streams/" + orders + "/groups/nope", 404, `has no group \"nope\"`},
					{"/streams/" + orders + "/groups/billing/dead/999999", 404, "dead letter not found"},
					{"/streams/" + orders + "/groups/billing/dead/x", 400, "use the numeric id"},
					{"/streams/" + orders + "/messages?after=-1", 400, "use a whole number"},
					{"/streams/" + orders + "/messages?partition=9", 400, "has partitions 0 to 1"},
					{"/streams/" + orders + "/messages?id=999999", 404, "has no message 999999"},
					{"/streams/" + orders + "/schemas/2?a=7", 400, "revisions at v2 are 1, 2"},
					{"/streams/" + orders + "/schemas/2?level=SOMETIMES", 400, "unknown compatibility level"},
					{"/streams/" + orders + "/schemas/9", 404, "no schema recorded at version 9"},
					{"/nowhere", 404, "no console page"},
				} {
					code, body := get(t, srv, tc.path, "Accept", "application/json")
					if code != tc.code || !strings.Contains(body, tc.want) {
						t.Errorf("GET %s: %d %s, want %d with %q", tc.path, code, body, tc.code, tc.want)
					}
				}
				code, body := get(t, srv, "/streams/nope")
				if code != 404 || !strings.Contains(text(body), "404 Not Found") {
					t.Errorf("HTML 404: %d %s", code, text(body))
				}
			})
			t.Run("healthz", func(t *testing.T) {
				for path, want := range map[string]string{"/healthz": `"status": "ok"`, "/healthz?complete": `"database": "ok"`} {
					code, body := get(t, srv, path)
					if code != 200 || !strings.Contains(body, want) {
						t.Errorf("GET %s: %d %s", path, code, body)
					}
				}
			})
		})
	}
}

// TestSchemasDeleted: a stream's schemas page lists soft-deleted revisions
// only when asked (deleted=true, as Confluent's REST API), marked, on
// every engine; a permanently deleted one is gone either way.
func TestSchemasDeleted(t *testing.T) {
	t.Parallel()
	for _, tg := range engines() {
		t.Run(tg.Name, func(t *testing.T) {
			t.Parallel()
			c := openClient(t, tg)
			reg := c.Registry()
			for _, doc := range []string{`{"type":"object","properties":{"a":{"type":"string"}}}`,
				`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}`,
				`{"type":"object","properties":{"a":{"type":"string"},"c":{"type":"string"}}}`} {
				if _, err := reg.Register(context.Background(), "ledger", 1, []byte(doc)); err != nil {
					t.Fatal(err)
				}
			}
			for _, del := range []struct {
				revision  int
				permanent bool
			}{{2, false}, {3, false}, {3, true}} {
				if _, err := reg.DeleteRevision(context.Background(), "ledger", 1, del.revision, del.permanent); err != nil {
					t.Fatal(err)
				}
			}
			srv := serve(t, c, false).URL + prefix
			revisions := func(path string) (out []string, deleted bool) {
				sch := getJSON[view.Schemas](t, srv, path)
				for _, v := range sch.Versions {
					for _, r := range v.Revisions {
						out = append(out, fmt.Sprintf("v%d.%d deleted=%v", v.Version, r.Revision, r.Deleted))
					}
				}
				return out, sch.Deleted
			}
			if got, asked := revisions("/streams/ledger/schemas"); asked || !slices.Equal(got, []string{"v1.1 deleted=false"}) {
				t.Errorf("schemas without deleted=true: %v (deleted %v); want revision 1 only", got, asked)
			}
			if got, asked := revisions("/streams/ledger/schemas?deleted=true"); !asked || !slices.Equal(got, []string{"v1.1 deleted=false", "v1.2 deleted=true"}) {
				t.Errorf("schemas with deleted=true: %v (deleted %v); want revision 1, and 2 marked soft-deleted", got, asked)
			}
			code, body := get(t, srv, "/streams/ledger/schemas?deleted=true")
			if page := text(body); code != 200 || !strings.Contains(page, "2 soft-deleted") || !strings.Contains(page, "Hide soft-deleted revisions") {
				t.Errorf("the page with deleted=true: %d %s", code, page)
			}
			code, body = get(t, srv, "/streams/ledger/schemas")
			if page := text(body); code != 200 || strings.Contains(page, "2 soft-deleted") || !strings.Contains(page, "Show soft-deleted revisions") {
				t.Errorf("the page without deleted=true: %d %s", code, page)
			}
		})
	}
}

func TestHealthzCompleteFailsWhenTheDatabaseIsGone(t *testing.T) {
	t.Parallel()
	tg := engines()[0]
	c := openClient(t, tg)
	srv := serve(t, c, false).URL + prefix
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	code, body := get(t, srv, "/healthz?complete")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "unavailable") {
		t.Fatalf("after Close: %d %s", code, body)
	}
	if code, _ := get(t, srv, "/healthz"); code != 200 {
		t.Fatalf("minimal healthz: %d", code)
	}
}

var linkRE = regexp.MustCompile(`(?:href|action|formaction)="([^"]*)"`)

// TestLinksStayUnderPrefix crawls every page reachable from the root and
// checks that every link, form action and asset is under the prefix and
// answers 200.
func TestLinksStayUnderPrefix(t *testing.T) {
	t.Parallel()
	c := openClient(t, engines()[0])
	seed(t, c)
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprint("actions=", allow), func(t *testing.T) {
			base := serve(t, c, allow).URL
			seen := map[string]bool{prefix + "/": true}
			queue := []string{prefix + "/"}
			posts := map[string]bool{}
			for len(queue) > 0 && len(seen) < 400 {
				p := queue[0]
				queue = queue[1:]
				code, body := get(t, base, p)
				if code != http.StatusOK {
					t.Errorf("GET %s: %d", p, code)
					continue
				}
				if !strings.HasPrefix(p, prefix+"/static/") {
					// Every page is also JSON, when asked and under /api.
					api := prefix + "/api" + strings.TrimPrefix(p, prefix)
					if strings.TrimSuffix(api, "/") == prefix+"/api" {
						api = prefix + "/api/streams"
					}
					for _, jp := range []string{p, api} {
						code, jb := get(t, base, jp, "Accept", "application/json")
						var v map[string]any
						if err := json.Unmarshal([]byte(jb), &v); code != http.StatusOK || err != nil {
							t.Errorf("GET %s as JSON: %d %v %.100s", jp, code, err, jb)
						}
					}
				}
				for _, m := range linkRE.FindAllStringSubmatch(body, -1) {
					link := html.UnescapeString(m[1])
					u, err := url.Parse(link)
					if err != nil || u.Host != "" || !strings.HasPrefix(u.Path, prefix+"/") {
						t.Errorf("page %s links to %q, outside %s", p, link, prefix)
						continue
					}
					if strings.HasPrefix(m[0], "href") {
						if !seen[link] {
							seen[link] = true
							queue = append(queue, link)
						}
					} else {
						posts[u.Path] = true
					}
				}
			}
			for _, must := range []string{prefix + "/registry", prefix + "/static/console.css", prefix + "/streams/payments/groups/ledger",
				prefix + "/streams/orders.placed/groups/billing/dead", prefix + "/streams/orders.placed/schemas/2"} {
				if !seen[must] {
					t.Errorf("the crawl never reached %s", must)
				}
			}
			if len(posts) < 5 {
				t.Errorf("only %d form targets found: %v", len(posts), posts)
			}
			t.Logf("crawled %d pages, %d form targets", len(seen), len(posts))
		})
	}
}
