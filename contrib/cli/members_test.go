package sqlstreamscli_test

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// crashedMember records, as a client that died an hour ago would have left
// it, a member of stream's group that stopped beating at lastSeen.
func crashedMember(t *testing.T, client *sqlstreams.Client, stream, group, identity string, lastSeen time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	info, err := client.Stream[sqlstreams.RawPayload](stream).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir, ok := client.Driver().(driver.ClientDirectory)
	if !ok {
		t.Fatalf("the %s driver records no heartbeats", client.Driver().Name())
	}
	rec := driver.ClientRecord{Instance: "instance-" + identity, Identity: identity, Host: "host-9", PID: 4242, LibraryVersion: "v0.0.9",
		Groups: []driver.ClientGroup{{StreamID: info.ID, Group: group}}, StartedAt: lastSeen.Add(-time.Hour), LastSeen: lastSeen,
		HeartbeatEvery: 15 * time.Second}
	if err := dir.RecordClient(ctx, driver.RecordClientParams{Client: rec}); err != nil {
		t.Fatal(err)
	}
}

// TestMembers: groups describe lists the clients that ran a group's
// consumers with their state (live while beating, also when idle; left
// after Close; gone after missing beats), identity, host, pid, version
// and how long ago each was seen; groups list and streams describe count
// the live ones.
func TestMembers(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, url string) {
		ctx := t.Context()
		// An hour between beats: the record a test reads stays as it was
		// written, whatever the machine's load.
		live := goClient(t, url, sqlstreams.WithIdentity("idle-1"), sqlstreams.WithHeartbeatInterval(time.Hour))
		if _, err := live.Stream[OrderV1]("orders").Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := live.Stream[OrderV1]("orders").Consumer("billing").Register(ctx, nil); err != nil {
			t.Fatal(err)
		}
		left := goClient(t, url, sqlstreams.WithIdentity("closed-2"), sqlstreams.WithHeartbeatInterval(time.Hour))
		if _, err := left.Stream[OrderV1]("orders").Consumer("billing").Register(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := left.Stream[OrderV1]("orders").Consumer("audit").Register(ctx, nil); err != nil {
			t.Fatal(err)
		}
		// A registration records the member at once, in the background.
		eventually(t, "both clients record their groups", func() bool {
			ms, err := live.Members(ctx)
			n := 0
			for _, m := range ms {
				n += len(m.Groups)
			}
			return err == nil && n == 3
		})
		if err := left.Close(); err != nil {
			t.Fatal(err)
		}
		crashedMember(t, live, "orders", "billing", "crashed-3", time.Now().Add(-3*time.Hour))

		table := must(t, url, "groups", "describe", "orders", "billing")
		for _, want := range []string{
			`(?m)^MEMBER +STATE +HOST +PID +VERSION +LAST-SEEN$`,
			`(?m)^closed-2 +left +\S+ +\d+ +\S+ +(just now|\d+s ago)$`,
			`(?m)^crashed-3 +gone +host-9 +4242 +v0\.0\.9 +3h ago$`,
			`(?m)^idle-1 +live +\S+ +\d+ +\S+ +(just now|\d+[sm] ago)$`,
		} {
			if !regexp.MustCompile(want).MatchString(table) {
				t.Errorf("groups describe: no line matching %s in\n%s", want, table)
			}
		}

		type member struct {
			Identity string  `json:"identity"`
			State    string  `json:"state"`
			Host     string  `json:"host"`
			PID      int     `json:"pid"`
			Version  string  `json:"library_version"`
			LastSeen *string `json:"last_seen"`
			ClosedAt *string `json:"closed_at"`
		}
		d := decode[struct {
			LiveMembers *int     `json:"live_members"`
			Members     []member `json:"members"`
		}](t, must(t, url, "groups", "describe", "orders", "billing", "-o", "json"))
		states := map[string]string{}
		for _, m := range d.Members {
			states[m.Identity] = m.State
			if m.LastSeen == nil || (m.State == "left") != (m.ClosedAt != nil) {
				t.Errorf("member %+v: last_seen must be set, closed_at only when it left", m)
			}
		}
		if len(d.Members) != 3 || states["idle-1"] != "live" || states["closed-2"] != "left" || states["crashed-3"] != "gone" ||
			d.LiveMembers == nil || *d.LiveMembers != 1 {
			t.Fatalf("groups describe -o json: live %v, members %+v", d.LiveMembers, d.Members)
		}

		type counted struct {
			Name        string `json:"name"`
			LiveMembers *int   `json:"live_members"`
		}
		lists := map[string][]counted{
			"groups list": decode[struct {
				Groups []counted `json:"groups"`
			}](t, must(t, url, "groups", "list", "orders", "-o", "json")).Groups,
			"streams describe": decode[struct {
				Groups []counted `json:"groups"`
			}](t, must(t, url, "streams", "describe", "orders", "-o", "json")).Groups,
		}
		for cmd, groups := range lists {
			live := map[string]int{}
			for _, g := range groups {
				if g.LiveMembers == nil {
					t.Fatalf("%s: %s has live_members null on a driver that records heartbeats", cmd, g.Name)
				}
				live[g.Name] = *g.LiveMembers
			}
			// audit's only member left: no live consumer.
			if len(live) != 2 || live["billing"] != 1 || live["audit"] != 0 {
				raw, _ := json.Marshal(groups)
				t.Errorf("%s: live members %s", cmd, raw)
			}
		}
	})
}
