package conformance

import (
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

func init() { register("API_Members", testMembers) }

// Members: each client records a heartbeat (identity, host, process,
// library version, the groups it has consumers of, when it was last seen)
// so that an operator tells a live idle consumer from a dead one: live
// while it beats, left once it closed, gone when it missed beats; records
// older than MemberRetention are pruned by maintenance. A driver without
// driver.ClientDirectory answers ErrUnsupported.
func testMembers(t *testing.T, h *harness) {
	probe := h.client(t, sqlstreams.WithIdentity("probe"))
	dir, ok := probe.Driver().(driver.ClientDirectory)
	if !ok {
		if _, err := probe.Members(ctx(t)); !errors.Is(err, sqlstreams.ErrUnsupported) {
			t.Fatalf("Members on a driver without client records: %v; want ErrUnsupported", err)
		}
		return
	}
	// A's beat is long, so that a loaded machine never makes it late
	// enough to count as gone; B's is short, to watch it beat.
	a := h.client(t, sqlstreams.WithIdentity("member-a"))
	b := h.client(t, sqlstreams.WithIdentity("member-b"), sqlstreams.WithHeartbeatInterval(20*time.Millisecond))
	quiet := h.client(t, sqlstreams.WithIdentity("member-quiet"), sqlstreams.WithHeartbeatInterval(0))
	consumer[EventV1](t, a, "members", "billing", nil)
	consumer[EventV1](t, b, "members", "audit", nil)
	consumer[EventV1](t, quiet, "members", "quiet", nil)

	byIdentity := func() map[string]sqlstreams.MemberInfo {
		t.Helper()
		ms, err := probe.Members(ctx(t))
		if err != nil {
			t.Fatalf("members: %v", err)
		}
		out := map[string]sqlstreams.MemberInfo{}
		for _, m := range ms {
			out[m.Identity] = m
		}
		return out
	}
	var firstSeen time.Time
	eventually(t, 30*time.Second, "both clients to record their groups", func() bool {
		ms := byIdentity()
		firstSeen = ms["member-b"].LastSeen
		return len(ms["member-a"].Groups) == 1 && len(ms["member-b"].Groups) == 1
	})
	host, _ := os.Hostname()
	ms := byIdentity()
	ma := ms["member-a"]
	if ma.State != sqlstreams.MemberLive || ma.PID != os.Getpid() || ma.Host != host || ma.LibraryVersion == "" || ma.Instance == "" ||
		ma.HeartbeatEvery != sqlstreams.DefaultHeartbeatInterval || ma.StartedAt.IsZero() || ma.LastSeen.Before(ma.StartedAt) || !ma.ClosedAt.IsZero() {
		t.Errorf("member-a's record: %+v; want a live record of this process", ma)
	}
	if want := []sqlstreams.MemberGroup{{Stream: "members", Group: "billing"}}; !slices.Equal(ma.Groups, want) {
		t.Errorf("member-a's groups: %v; want %v", ma.Groups, want)
	}
	if _, ok := ms["member-quiet"]; ok {
		t.Errorf("a client with heartbeats off recorded itself: %+v", ms["member-quiet"])
	}
	eventually(t, 30*time.Second, "member-b to beat again", func() bool { return byIdentity()["member-b"].LastSeen.After(firstSeen) })

	// Describe lists the group's own members only.
	d, err := probe.Stream[EventV1]("members").Group("billing").Describe(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Members) != 1 || d.Members[0].Identity != "member-a" {
		t.Errorf("billing's members: %+v; want member-a only", d.Members)
	}

	// A clean close is "left".
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if mb := byIdentity()["member-b"]; mb.State != sqlstreams.MemberLeft || mb.ClosedAt.IsZero() {
		t.Errorf("member-b after Close: %+v; want left with its close time", mb)
	}

	// A client that stopped beating without closing is "gone"; one gone
	// for longer than MemberRetention is pruned by maintenance.
	now := time.Now().UTC().Truncate(time.Microsecond)
	for _, r := range []driver.ClientRecord{
		{Instance: "dead-recent", Identity: "crashed", Host: "h", PID: 1, LibraryVersion: "v0", StartedAt: now.Add(-2 * time.Hour), LastSeen: now.Add(-time.Hour), HeartbeatEvery: 15 * time.Second},
		{Instance: "dead-old", Identity: "ancient", Host: "h", PID: 2, LibraryVersion: "v0", StartedAt: now.Add(-50 * time.Hour), LastSeen: now.Add(-sqlstreams.MemberRetention - time.Hour), HeartbeatEvery: 15 * time.Second},
	} {
		if err := dir.RecordClient(ctx(t), driver.RecordClientParams{Client: r}); err != nil {
			t.Fatal(err)
		}
	}
	ms = byIdentity()
	if m := ms["crashed"]; m.State != sqlstreams.MemberGone || !m.LastSeen.Equal(now.Add(-time.Hour)) {
		t.Errorf("a client last seen an hour ago: %+v; want gone", m)
	}
	rep, err := probe.Maintain(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	ms = byIdentity()
	if _, ok := ms["ancient"]; ok || rep.Members != 1 {
		t.Errorf("maintenance removed %d client records and left ancient: %v; want it removed alone", rep.Members, ok)
	}
	if _, ok := ms["crashed"]; !ok {
		t.Errorf("maintenance removed a record within MemberRetention")
	}
}
