package view

import (
	"fmt"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// Group is a consumer group with its backlog summed over every version it
// reads.
type Group struct {
	Stream string `json:"stream"`
	Name   string `json:"name"`
	// Reads is what the group reads in words: "v2", or "all (raw)" for a
	// RawPayload group.
	Reads         string   `json:"reads"`
	SchemaVersion int      `json:"schema_version"`
	AllVersions   bool     `json:"all_versions"`
	Bindings      []string `json:"bindings"`
	ConvertsFrom  []int    `json:"converts_from"`
	// Start is where a new group starts: "earliest" or "latest".
	Start     string  `json:"start"`
	CreatedAt *string `json:"created_at"`
	// PausedAt is when an operator paused the group; null while it runs.
	PausedAt   *string `json:"paused_at"`
	Unread     int64   `json:"unread"`
	Unresolved int64   `json:"unresolved"`
	Dead       int64   `json:"dead"`
	// LiveMembers counts the live clients running consumers of the group;
	// null when the driver records no heartbeats.
	LiveMembers *int `json:"live_members"`
	// Status is the group's health: dead letters, no live consumer,
	// lagging, or ok.
	Status Status `json:"status"`
}

// GroupList is the document of a list of groups.
type GroupList struct {
	Groups []Group `json:"groups"`
}

// Reads says what a group reads: "v2", or "all (raw)".
func Reads(all bool, version int) string {
	if all {
		return "all (raw)"
	}
	return fmt.Sprintf("v%d", version)
}

// Start names a start position.
func Start(p sqlstreams.StartPosition) string {
	if p == sqlstreams.StartLatest {
		return "latest"
	}
	return "earliest"
}

// GroupsOf is the view of a stream's groups, with their backlog from h and
// their live members from members (ReadMembers: nil when the driver records
// no heartbeats).
func GroupsOf(stream string, groups []sqlstreams.GroupInfo, h sqlstreams.Health, members []sqlstreams.MemberInfo) []Group {
	out := []Group{}
	for _, g := range groups {
		j := Group{Stream: stream, Name: g.Name, Reads: Reads(g.AllVersions, g.SchemaVersion), SchemaVersion: g.SchemaVersion,
			AllVersions: g.AllVersions, Bindings: list(g.Bindings), ConvertsFrom: list(g.ConvertsFrom), Start: Start(g.Start),
			CreatedAt: Time(g.CreatedAt), PausedAt: Time(g.PausedAt), LiveMembers: liveIn(members, stream, g.Name)}
		for _, vh := range h.Versions {
			for _, gh := range vh.Groups {
				if gh.Group == g.Name {
					j.Unread, j.Unresolved, j.Dead = j.Unread+gh.Unread, j.Unresolved+gh.Unresolved, j.Dead+gh.Dead
				}
			}
		}
		j.Status = groupStatus(j.Unread, j.Dead, j.LiveMembers, j.PausedAt)
		out = append(out, j)
	}
	return out
}

// GroupPartition is a group's cursor in one partition: the next id it
// reads there, the high-water mark, the rows it still reads (lag) and the
// raw distance over every version and key.
type GroupPartition struct {
	Partition int   `json:"partition"`
	NextID    int64 `json:"next_id"`
	HighWater int64 `json:"high_water"`
	Lag       int64 `json:"lag"`
	Distance  int64 `json:"distance"`
}

// Holder is a client holding some of the group's leases.
type Holder struct {
	Holder string  `json:"holder"`
	Leases int64   `json:"leases"`
	Until  *string `json:"until"`
}

// GroupVersion is the group's backlog at one version it reads, with that
// version's verdict ("-" when the health read has no such version).
type GroupVersion struct {
	Version int `json:"version"`
	GroupHealth
	Verdict string `json:"verdict"`
}

// GroupDescription is one group: what it reads, its cursors, lease holders
// and backlog per version, and whether deleting it would lose anything. It
// is the document of `sqlstreams groups describe` and of the console's
// /api/streams/{stream}/groups/{group}.
type GroupDescription struct {
	Group
	Leased        int64            `json:"leased"`
	Delayed       int64            `json:"delayed"`
	RemovedUnread int64            `json:"removed_unread"`
	Partitions    []GroupPartition `json:"partitions"`
	Holders       []Holder         `json:"holders"`
	Versions      []GroupVersion   `json:"versions"`
	// Retirable: the group has nothing left at any version it reads, so
	// deleting it loses nothing; Blockers say what is left.
	Retirable bool     `json:"retirable"`
	Blockers  []Reason `json:"blockers"`
	// Members are the clients that ran consumers of the group within
	// sqlstreams.MemberRetention, live, left or gone.
	Members []Member `json:"members"`
}

// DescribeGroup is the view of d, with verdicts and blockers from h;
// heartbeats says whether the driver records members (Heartbeats), so that
// no member reads as "none alive" only where members are recorded.
func DescribeGroup(d sqlstreams.GroupDescription, h sqlstreams.Health, heartbeats bool) GroupDescription {
	info := sqlstreams.GroupInfo{Name: d.Group, SchemaVersion: d.SchemaVersion, AllVersions: d.AllVersions, ConvertsFrom: d.ConvertsFrom,
		Bindings: d.Bindings, Start: d.Start, CreatedAt: d.CreatedAt, PausedAt: d.PausedAt}
	var members []sqlstreams.MemberInfo
	if heartbeats {
		members = append([]sqlstreams.MemberInfo{}, d.Members...)
	}
	out := GroupDescription{Group: GroupsOf(d.Stream, []sqlstreams.GroupInfo{info}, h, members)[0], Leased: d.Leased, Delayed: d.Delayed,
		RemovedUnread: d.RemovedUnread, Partitions: []GroupPartition{}, Holders: []Holder{}, Versions: []GroupVersion{}, Blockers: []Reason{},
		Members: MembersOf(d.Members)}
	for _, p := range d.Partitions {
		out.Partitions = append(out.Partitions, GroupPartition{p.Partition, p.Cursor + 1, p.HighWater, p.Lag, p.Distance})
	}
	for _, hd := range d.Holders {
		out.Holders = append(out.Holders, Holder{hd.Holder, hd.Leases, Time(hd.Until)})
	}
	for _, v := range d.Versions {
		verdict := "-"
		if vh, ok := h.Version(v.Version); ok {
			verdict = vh.Verdict()
		}
		out.Versions = append(out.Versions, GroupVersion{Version: v.Version, GroupHealth: GroupHealthOf(v.GroupHealth), Verdict: verdict})
	}
	for _, vh := range h.Versions {
		for _, b := range vh.Blockers {
			if b.Group == d.Group {
				out.Blockers = append(out.Blockers, ReasonsOf([]sqlstreams.Reason{b})...)
			}
		}
	}
	out.Retirable = len(out.Blockers) == 0
	return out
}

// CursorChange is one partition's cursor before and after a reset, each as
// the next id the group reads there.
type CursorChange struct {
	Partition int   `json:"partition"`
	NextID    int64 `json:"next_id"`
	NewNextID int64 `json:"new_next_id"`
}

// CursorChangesOf is the view of a reset's changes.
func CursorChangesOf(cs []sqlstreams.CursorChange) []CursorChange {
	out := []CursorChange{}
	for _, c := range cs {
		out = append(out, CursorChange{Partition: c.Partition, NextID: c.From + 1, NewNextID: c.To + 1})
	}
	return out
}

// ActionResult is the console's JSON answer to an action: what it did, how
// many things it changed, and for a cursor reset the changes (planned, on a
// dry run).
type ActionResult struct {
	Action  string         `json:"action"`
	Count   int64          `json:"count"`
	Changes []CursorChange `json:"changes"`
}
