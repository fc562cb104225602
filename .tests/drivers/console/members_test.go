package console_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/contrib/console/view"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// seedMembers makes the members of the seeded database: c itself, live in
// every group it registered (billing, audit, shipping, ledger), and the
// records of a client that ran shipping and closed a minute ago (left) and
// of one of audit that stopped beating two hours ago (gone). c must beat
// rarely (an hour), so that what a test reads is what was written, whatever
// the machine's load.
func seedMembers(t testing.TB, c *sqlstreams.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	info := fatal{t}.on(c.Stream[sqlstreams.RawPayload](orders).Get(ctx))
	dir := c.Driver().(driver.ClientDirectory)
	now := time.Now()
	for _, r := range []driver.ClientRecord{
		{Instance: "instance-closed-2", Identity: "closed-2", Host: "host-8", PID: 88, LibraryVersion: "v0.0.8",
			Groups: []driver.ClientGroup{{StreamID: info.ID, Group: "shipping"}}, StartedAt: now.Add(-time.Hour), LastSeen: now.Add(-time.Minute),
			ClosedAt: now.Add(-time.Minute), HeartbeatEvery: 15 * time.Second},
		{Instance: "instance-crashed-3", Identity: "crashed-3", Host: "host-9", PID: 99, LibraryVersion: "v0.0.9",
			Groups: []driver.ClientGroup{{StreamID: info.ID, Group: "audit"}}, StartedAt: now.Add(-3 * time.Hour), LastSeen: now.Add(-2 * time.Hour),
			HeartbeatEvery: 15 * time.Second},
	} {
		if err := dir.RecordClient(ctx, driver.RecordClientParams{Client: r}); err != nil {
			t.Fatal(err)
		}
	}
	recorded(t, c, 4)
}

// membersGone runs two real clients of group on namespace ns beside c,
// each beating every 50ms: one closes cleanly (left), the other loses its
// database first, so that neither its beats nor its close are recorded,
// and its record is left to go stale (gone after three missed beats). It
// returns their instances once c reads them as left and gone.
func membersGone(t testing.TB, c *sqlstreams.Client, tg conformance.Target, ns, group string) (closed, lost string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const beat = 50 * time.Millisecond
	clean := openOn(t, tg, ns, sqlstreams.WithIdentity("closed-cleanly"), sqlstreams.WithHeartbeatInterval(beat))
	fatal{t}.on(clean.Stream[OrderV1](orders).Consumer(group).Register(ctx, nil))
	recorded(t, clean, 1)
	if err := clean.Close(); err != nil {
		t.Fatal(err)
	}
	drv, err := tg.Open(ns)
	if err != nil {
		t.Fatal(err)
	}
	dying, err := sqlstreams.Open(ctx, drv, sqlstreams.WithIdentity("lost-database"), sqlstreams.WithHeartbeatInterval(beat),
		sqlstreams.WithMaintenanceInterval(0), sqlstreams.WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	fatal{t}.on(dying.Stream[OrderV1](orders).Consumer(group).Register(ctx, nil))
	recorded(t, dying, 1)
	// The database goes away under the client: every later write of its
	// record, the close too, fails.
	if err := drv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := dying.Close(); !errors.Is(err, sqlstreams.ErrClosed) {
		t.Fatalf("closing the client whose database went away: %v, want ErrClosed", err)
	}
	var cm, lm sqlstreams.MemberInfo
	wait, stop := context.WithTimeout(ctx, 30*time.Second) // within ctx, so that Members can still answer
	defer stop()
	for wait.Err() == nil {
		states := map[string]sqlstreams.MemberInfo{}
		members := fatal{t}.on(c.Members(ctx))
		for _, m := range members {
			states[m.Identity] = m
		}
		cm, lm = states["closed-cleanly"], states["lost-database"]
		if cm.State == sqlstreams.MemberLeft && lm.State == sqlstreams.MemberGone {
			return cm.Instance, lm.Instance
		}
		time.Sleep(20 * time.Millisecond) // polling the records, bounded by wait
	}
	t.Fatalf("closed-cleanly is %q, lost-database %q; want left and gone", cm.State, lm.State)
	return "", ""
}

// recorded waits until c's heartbeat record lists n groups: a client
// records the groups it registers in the background.
func recorded(t testing.TB, c *sqlstreams.Client, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		got, members := 0, fatal{t}.on(c.Members(ctx))
		for _, m := range members {
			if m.Identity == c.Identity() {
				got = len(m.Groups)
			}
		}
		if got == n {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the client recorded %d of its %d groups", got, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMembers: the group page lists the group's members with state,
// identity, host, pid, version and last seen, so an idle consumer reads as
// live and a dead one as gone; the stream page counts each group's live
// members; the JSON says the same.
func TestMembers(t *testing.T) {
	t.Parallel()
	for _, tg := range engines() {
		t.Run(tg.Name, func(t *testing.T) {
			t.Parallel()
			c := openClient(t, tg, sqlstreams.WithHeartbeatInterval(time.Hour))
			seed(t, c)
			seedMembers(t, c)
			srv := serve(t, c, false).URL + prefix

			_, body := get(t, srv, "/streams/"+orders+"/groups/audit")
			for _, want := range []string{
				`<tr data-member="instance-crashed-3">\s*<td><span class="badge bad">gone</span></td><td>crashed-3</td><td>host-9</td><td class="num">99</td><td>v0.0.9</td>\s*<td title="[^"]+">2h ago</td>`,
				`<td><span class="badge ok">live</span></td><td>console-test</td>`,
			} {
				if !regexp.MustCompile(want).MatchString(body) {
					t.Errorf("audit's page: nothing matches %s in\n%s", want, text(body))
				}
			}
			_, body = get(t, srv, "/streams/"+orders+"/groups/shipping")
			if !regexp.MustCompile(`<span class="badge muted">left</span></td><td>closed-2</td>.*\s*<td title="[^"]+">\d+m ago</td>`).MatchString(body) {
				t.Errorf("shipping's page shows no left member:\n%s", text(body))
			}

			_, body = get(t, srv, "/streams/"+orders)
			for g, n := range map[string]int{"billing": 1, "audit": 1, "shipping": 1} {
				want := fmt.Sprintf(`(?s)<tr data-group="%s">.*?<td class="num live">%d</td>`, g, n)
				if !regexp.MustCompile(want).MatchString(body) {
					t.Errorf("stream page: group %s has no live count %d", g, n)
				}
			}

			gd := getJSON[view.GroupDescription](t, srv, "/api/streams/"+orders+"/groups/audit")
			states := map[string]string{}
			for _, m := range gd.Members {
				states[m.Identity] = m.State
			}
			if gd.LiveMembers == nil || *gd.LiveMembers != 1 || len(states) != 2 || states["crashed-3"] != "gone" || states["console-test"] != "live" {
				t.Errorf("audit as JSON: live %v, members %v", gd.LiveMembers, states)
			}
		})
	}
}
