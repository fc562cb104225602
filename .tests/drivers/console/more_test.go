package console_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/contrib/console"
	"github.com/sqlstreams/sqlstreams/contrib/console/view"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// A delivery claimed and not settled shows its holder on the group page,
// and blocks the version as leased.
func TestGroupShowsHolders(t *testing.T) {
	t.Parallel()
	c := openClient(t, engines()[0])
	seed(t, c)
	srv := serve(t, c, false).URL + prefix
	audit := fatal{t}.on(c.Stream[OrderV1](orders).Consumer("audit").Register(t.Context(), nil))
	claimAll(t, t.Context(), audit, 1)
	d := fatal{t}.on(c.Stream[sqlstreams.RawPayload](orders).Group("audit").Describe(t.Context()))
	if len(d.Holders) != 1 || d.Leased != 1 {
		t.Fatalf("describe: %+v", d)
	}
	_, body := get(t, srv, "/streams/"+orders+"/groups/audit")
	txt := text(body)
	want := fmt.Sprintf("Lease holders Holder Leases Until console-test 1 %s", d.Holders[0].Until.UTC().Format("2006-01-02 15:04:05Z"))
	for _, w := range []string{want, "Leased 1 · Delayed 0 · Dead 0", "group audit has 1 leased"} {
		if !strings.Contains(txt, w) {
			t.Errorf("no %q in %s", w, txt)
		}
	}
}

// Dead letters come 50 a page, with a link to the next.
func TestDeadLettersPaged(t *testing.T) {
	t.Parallel()
	c := openClient(t, engines()[0])
	srv := serve(t, c, false).URL + prefix
	ctx := t.Context()
	p := fatal{t}.on(c.Stream[Payment]("refunds").Producer().Register(ctx, nil))
	msgs := make([]sqlstreams.Message[Payment], 55)
	for i := range msgs {
		msgs[i] = sqlstreams.NewMessage(Payment{ID: fmt.Sprint("r-", i)})
	}
	fatal{t}.on(p.ProduceBatch(ctx, msgs...))
	g := fatal{t}.on(c.Stream[Payment]("refunds").Consumer("refunder").Register(ctx, nil))
	for _, d := range claimAll(t, ctx, g, 55) {
		if err := d.Dead(ctx, errors.New("no account")); err != nil {
			t.Fatal(err)
		}
	}
	first := getJSON[view.DeadLetterPage](t, srv, "/streams/refunds/groups/refunder/dead")
	if first.Dead != 55 || len(first.DeadLetters) != 50 || first.NextAfter != first.DeadLetters[49].ID {
		t.Fatalf("first page: dead %d, %d letters, next %d", first.Dead, len(first.DeadLetters), first.NextAfter)
	}
	_, body := get(t, srv, "/streams/refunds/groups/refunder/dead")
	if !strings.Contains(body, fmt.Sprintf(`href="%s/streams/refunds/groups/refunder/dead?after=%d" id="next"`, prefix, first.NextAfter)) {
		t.Fatal("no next-page link")
	}
	second := getJSON[view.DeadLetterPage](t, srv, fmt.Sprintf("/streams/refunds/groups/refunder/dead?after=%d", first.NextAfter))
	if len(second.DeadLetters) != 5 || second.NextAfter != 0 || second.DeadLetters[0].ID <= first.NextAfter {
		t.Fatalf("second page: %d letters, next %d", len(second.DeadLetters), second.NextAfter)
	}
}

// The messages page starts at a time with ?from=.
func TestMessagesFrom(t *testing.T) {
	t.Parallel()
	c := openClient(t, engines()[0])
	seed(t, c)
	srv := serve(t, c, false).URL + prefix
	all := fatal{t}.on(c.Stream[sqlstreams.RawPayload](orders).Browse(t.Context(), sqlstreams.BrowseOptions{}))
	last := all.Records[len(all.Records)-1]
	page := getJSON[view.RecordPage](t, srv, "/streams/"+orders+"/messages?from="+last.ProducedAt.UTC().Format(time.RFC3339Nano))
	if len(page.Records) == 0 || page.Records[len(page.Records)-1].ID != last.ID {
		t.Fatalf("from the last row's time: %+v", page.Records)
	}
	for _, r := range page.Records {
		if at, err := time.Parse(time.RFC3339Nano, *r.ProducedAt); err != nil || at.Before(last.ProducedAt) {
			t.Fatalf("row %d produced %v, before %v", r.ID, *r.ProducedAt, last.ProducedAt)
		}
	}
	if code, body := get(t, srv, "/streams/"+orders+"/messages?from=yesterday"); code != 400 || !strings.Contains(body, "use RFC 3339") {
		t.Fatalf("bad from: %d %s", code, text(body))
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A failing database call shows a generic message on the page and the
// error itself only in the log.
func TestFailuresAreLoggedNotShown(t *testing.T) {
	t.Parallel()
	c := openClient(t, engines()[0])
	var logs syncBuffer
	h, err := console.New(c, console.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	code, body := get(t, srv.URL, "/")
	if code != http.StatusInternalServerError || !strings.Contains(body, "the database call failed; see the server log") || strings.Contains(body, "closed") {
		t.Fatalf("GET / on a closed client: %d %s", code, text(body))
	}
	if l := logs.String(); !strings.Contains(l, "request failed") || !strings.Contains(l, "closed") {
		t.Fatalf("log: %s", l)
	}
}

// A big payload is cut in the list and shown whole on its own page.
func TestMessagesPreview(t *testing.T) {
	t.Parallel()
	c := openClient(t, engines()[0])
	srv := serve(t, c, false).URL + prefix
	p := fatal{t}.on(c.Stream[Payment]("blobs").Producer().Register(t.Context(), nil))
	id := fatal{t}.on(p.Produce(t.Context(), Payment{ID: strings.Repeat("é", 3000)}))
	_, list := get(t, srv, "/streams/blobs/messages")
	if !strings.Contains(list, "bytes; open the message for all of it)") || strings.Contains(list, strings.Repeat("é", 3000)) {
		t.Fatal("the list shows the whole payload")
	}
	_, one := get(t, srv, fmt.Sprintf("/streams/blobs/messages?id=%d", id))
	if !strings.Contains(one, strings.Repeat("é", 3000)) {
		t.Fatal("the message page cuts the payload")
	}
}

// A scripted client reads the form token from /api/features and posts
// with it in a header.
func TestScriptedPost(t *testing.T) {
	t.Parallel()
	c := openClient(t, engines()[0])
	seed(t, c)
	srv := serve(t, c, true).URL + prefix
	feat := getJSON[view.Features](t, srv, "/api/features")
	code, _, body := post(t, srv, "/streams/"+orders+"/groups/billing/dead/replay", url.Values{"all": {"1"}},
		"X-CSRF-Token", feat.FormToken, "Accept", "application/json")
	if code != http.StatusOK || !strings.Contains(body, `"count": 1`) {
		t.Fatalf("%d %s", code, body)
	}
}

// A compacted stream, a group with bindings and a converter, and a raw
// group: the pages show what each reads and the heads checklist item.
func TestCompactedBindingsConverterRaw(t *testing.T) {
	t.Parallel()
	// Beating once an hour, the client stays live however long the test
	// takes: each group has one live member.
	c := openClient(t, engines()[0], sqlstreams.WithHeartbeatInterval(time.Hour))
	srv := serve(t, c, false).URL + prefix
	ctx := t.Context()
	const s = "accounts"
	fatal{t}.on(c.Stream[OrderV1](s).Create(ctx, &sqlstreams.StreamOptions{Compacted: true}))
	p := fatal{t}.on(c.Stream[OrderV1](s).Producer().Register(ctx, nil))
	fatal{t}.on(p.Produce(ctx, OrderV1{OrderID: "a"}, sqlstreams.Key("acct-1"), sqlstreams.RoutingKey("eu.web")))
	conv := sqlstreams.ConvertFrom(func(_ context.Context, o OrderV1) (OrderV2, error) { return OrderV2{OrderID: o.OrderID}, nil })
	fatal{t}.on(c.Stream[OrderV2](s).Consumer("eu-v2").Register(ctx, &sqlstreams.ConsumerOptions{Bindings: []string{"eu.#"},
		Converters: []sqlstreams.Converter{conv}}))
	fatal{t}.on(c.Stream[sqlstreams.RawPayload](s).Consumer("archive").Register(ctx, nil))
	recorded(t, c, 2)
	h := health(t, c, s)
	v1, _ := h.Version(1)
	_, body := get(t, srv, "/streams/"+s)
	txt := text(body)
	for _, w := range []string{
		"Compacted yes",
		"accounts lagging archive: 1 unread eu-v2: 1 unread",
		"v1 v1 not yet retirable " + v1.Verdict(),
		"compaction heads remain",
		"☐ no compaction heads at v1 (1 remain: each key needs a newer version's row)",
		"archive raw",
		"archive lagging every version (raw) 1 — every key",
		"eu-v2 lagging v2 1 1 eu.#",
	} {
		if !strings.Contains(txt, w) {
			t.Errorf("stream page: no %q in %s", w, txt)
		}
	}
	_, body = get(t, srv, "/streams/"+s+"/groups/eu-v2")
	txt = text(body)
	for _, w := range []string{"Version v2 Converts from 1 Bindings eu.#", "group eu-v2 has 1 unread"} {
		if !strings.Contains(txt, w) {
			t.Errorf("group page: no %q in %s", w, txt)
		}
	}
	_, body = get(t, srv, "/streams/"+s+"/messages")
	if txt := text(body); !strings.Contains(txt, "v1 acct-1 eu.web") {
		t.Errorf("messages: %s", txt)
	}
}

// A handler's panic is stored with its stack; the dead letter page shows
// the error whole, stack included, and the list shows it too.
func TestDeadLetterShowsPanicStack(t *testing.T) {
	t.Parallel()
	c := openClient(t, engines()[0])
	srv := serve(t, c, false).URL + prefix
	ctx := t.Context()
	p := fatal{t}.on(c.Stream[Payment]("fraud").Producer().Register(ctx, nil))
	id := fatal{t}.on(p.Produce(ctx, Payment{ID: "p-9"}))
	g := fatal{t}.on(c.Stream[Payment]("fraud").Consumer("scorer").Register(ctx, nil))
	d := claimAll(t, ctx, g, 1)[0]
	stack := "goroutine 7 [running]:\nexample.com/fraud.score(...)\n\t/src/fraud/score.go:42 +0x1d"
	if err := d.Dead(ctx, &sqlstreams.PanicError{Value: "index out of range", Stack: stack}); err != nil {
		t.Fatal(err)
	}
	_, body := get(t, srv, fmt.Sprintf("/streams/fraud/groups/scorer/dead/%d", id))
	want := `<pre class="err" id="error-text">handler panicked: index out of range` + "\n" +
		"goroutine 7 [running]:\nexample.com/fraud.score(...)\n\t/src/fraud/score.go:42 &#43;0x1d</pre>"
	if !strings.Contains(body, want) {
		t.Fatalf("no stack in the page:\n%s", body)
	}
}
