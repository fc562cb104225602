package view

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Member is a client that recorded a heartbeat: where it runs, what built
// it, and whether it is alive ("live", "left" after a clean close, "gone"
// after missing several beats). An idle consumer that still beats is live:
// that is what tells it from a dead one.
type Member struct {
	Instance         string        `json:"instance"`
	Identity         string        `json:"identity"`
	Host             string        `json:"host"`
	PID              int           `json:"pid"`
	LibraryVersion   string        `json:"library_version"`
	State            string        `json:"state"`
	Groups           []MemberGroup `json:"groups"`
	StartedAt        *string       `json:"started_at"`
	LastSeen         *string       `json:"last_seen"`
	ClosedAt         *string       `json:"closed_at"`
	HeartbeatSeconds float64       `json:"heartbeat_seconds"`
}

// MemberGroup names a group a member runs consumers of.
type MemberGroup struct {
	Stream string `json:"stream"`
	Group  string `json:"group"`
}

// MemberOf is the view of m.
func MemberOf(m sqlstreams.MemberInfo) Member {
	out := Member{Instance: m.Instance, Identity: m.Identity, Host: m.Host, PID: m.PID, LibraryVersion: m.LibraryVersion,
		State: string(m.State), Groups: []MemberGroup{}, StartedAt: Time(m.StartedAt), LastSeen: Time(m.LastSeen),
		ClosedAt: Time(m.ClosedAt), HeartbeatSeconds: Seconds(m.HeartbeatEvery)}
	for _, g := range m.Groups {
		out.Groups = append(out.Groups, MemberGroup{Stream: g.Stream, Group: g.Group})
	}
	return out
}

// MembersOf is the view of ms.
func MembersOf(ms []sqlstreams.MemberInfo) []Member {
	out := []Member{}
	for _, m := range ms {
		out = append(out, MemberOf(m))
	}
	return out
}

// Heartbeats reports whether client's driver records members' heartbeats
// (driver.ClientDirectory). Without them no member is ever seen, which
// says nothing about the consumers: the views then show live counts as
// null, not 0.
func Heartbeats(client *sqlstreams.Client) bool {
	_, ok := client.Driver().(driver.ClientDirectory)
	return ok
}

// ReadMembers reads every member, or nil, with no error, when the driver
// records no heartbeats; a driver that does answers a non-nil list.
func ReadMembers(ctx context.Context, client *sqlstreams.Client) ([]sqlstreams.MemberInfo, error) {
	if !Heartbeats(client) {
		return nil, nil
	}
	ms, err := client.Members(ctx)
	if errors.Is(err, sqlstreams.ErrUnsupported) {
		return nil, nil
	}
	if ms == nil && err == nil {
		ms = []sqlstreams.MemberInfo{}
	}
	return ms, err
}

// liveIn counts the live members of a group; nil when members is nil (no
// heartbeats are recorded).
func liveIn(members []sqlstreams.MemberInfo, stream, group string) *int {
	if members == nil {
		return nil
	}
	n := 0
	for _, m := range members {
		if m.State == sqlstreams.MemberLive && slices.Contains(m.Groups, sqlstreams.MemberGroup{Stream: stream, Group: group}) {
			n++
		}
	}
	return &n
}

// Ago says how long before now t was, in the largest whole unit: "just
// now", "42s ago", "5m ago", "3h ago", "2d ago"; "-" for a zero t. It is for
// people (tables and pages); JSON carries the time itself.
func Ago(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < time.Second:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
}
