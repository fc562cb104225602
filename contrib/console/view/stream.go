package view

import (
	"fmt"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// Stream is a stream's configuration.
type Stream struct {
	ID         int64  `json:"id"`
	Name       string `json:"name"`
	Partitions int    `json:"partitions"`
	Compacted  bool   `json:"compacted"`
	// MaxAgeSeconds and MaxRows are the retention limits; 0 is none.
	MaxAgeSeconds float64 `json:"max_age_seconds"`
	MaxRows       int64   `json:"max_rows"`
	Hard          bool    `json:"hard"`
	CreatedAt     *string `json:"created_at"`
}

// StreamOf is the view of s.
func StreamOf(s sqlstreams.StreamInfo) Stream {
	return Stream{ID: s.ID, Name: s.Name, Partitions: s.Partitions, Compacted: s.Compacted, MaxAgeSeconds: Seconds(s.Retention.MaxAge),
		MaxRows: s.Retention.MaxRows, Hard: s.Retention.Hard, CreatedAt: Time(s.CreatedAt)}
}

// StreamList is the document of a list of streams.
type StreamList struct {
	Streams []Stream `json:"streams"`
}

// StreamDescription is one stream: its configuration, its status (the
// worst of its groups' health), its groups with their backlog, the health
// read, and the retirement checklist of each version that has a newer one.
// It is the document of `sqlstreams streams describe` and of the console's
// /api/streams/{stream}.
type StreamDescription struct {
	Stream     Stream              `json:"stream"`
	Status     Status              `json:"status"`
	Groups     []Group             `json:"groups"`
	Health     Health              `json:"health"`
	Retirement []VersionRetirement `json:"retirement"`
}

// DescribeStream builds the description of a stream from what it is made
// of; members is ReadMembers' answer.
func DescribeStream(info sqlstreams.StreamInfo, groups []sqlstreams.GroupInfo, h sqlstreams.Health, members []sqlstreams.MemberInfo) StreamDescription {
	out := StreamDescription{Stream: StreamOf(info), Groups: GroupsOf(info.Name, groups, h, members), Health: HealthOf(h), Retirement: []VersionRetirement{}}
	out.Status = StreamStatus(out.Groups)
	newest := NewestVersion(h, groups)
	for _, vh := range h.Versions {
		if vh.Version < newest {
			out.Retirement = append(out.Retirement, VersionRetirement{Version: vh.Version, Retirable: vh.Retirable, Verdict: vh.Verdict(),
				Checklist: Checklist(info, vh, groups)})
		}
	}
	return out
}

// VersionRetirement is one version's retirement verdict and the steps to
// retire it.
type VersionRetirement struct {
	Version   int         `json:"version"`
	Retirable bool        `json:"retirable"`
	Verdict   string      `json:"verdict"`
	Checklist []CheckItem `json:"checklist"`
}

// CheckItem is one step of retiring a version.
type CheckItem struct {
	Done bool   `json:"done"`
	Text string `json:"text"`
	// Group names the group the step is about; "" for none.
	Group string `json:"group"`
	// Dead says the step is about the group's dead letters.
	Dead bool `json:"dead"`
}

// Checklist lists the steps of retiring vh's version, each done when the
// health read shows it done. The order is the order an operator works in:
// drain, resolve the exceptions, wait out compaction, delete the groups that
// read only this version.
func Checklist(info sqlstreams.StreamInfo, vh sqlstreams.VersionHealth, groups []sqlstreams.GroupInfo) []CheckItem {
	items := []CheckItem{}
	for _, g := range vh.Groups {
		items = append(items, CheckItem{Done: g.Unread == 0, Group: g.Group,
			Text: fmt.Sprintf("group %s has read every row at v%d (%d unread)", g.Group, vh.Version, g.Unread)})
		items = append(items, CheckItem{Done: g.Leased+g.Delayed == 0, Group: g.Group,
			Text: fmt.Sprintf("group %s has nothing in flight at v%d (%d leased, %d delayed)", g.Group, vh.Version, g.Leased, g.Delayed)})
		items = append(items, CheckItem{Done: g.Dead == 0, Group: g.Group, Dead: g.Dead > 0,
			Text: fmt.Sprintf("group %s has no dead letters at v%d (%d dead: replay or discard them)", g.Group, vh.Version, g.Dead)})
	}
	if info.Compacted {
		items = append(items, CheckItem{Done: vh.Heads == 0,
			Text: fmt.Sprintf("no compaction heads at v%d (%d remain: each key needs a newer version's row)", vh.Version, vh.Heads)})
	}
	for _, g := range groups {
		if !g.AllVersions && g.SchemaVersion == vh.Version {
			items = append(items, CheckItem{Done: false, Group: g.Name,
				Text: fmt.Sprintf("delete group %s, which reads only v%d, once the steps above are done and its consumers are stopped", g.Name, vh.Version)})
		}
	}
	if vh.Rows > 0 {
		items = append(items, CheckItem{Done: vh.Retirable,
			Text: fmt.Sprintf("%d row(s) at v%d stay until retention removes them; they do not block retirement", vh.Rows, vh.Version)})
	}
	return items
}

// Reason is one reason in a verdict: a blocker or a note.
type Reason struct {
	Code  string `json:"code"`
	Group string `json:"group"`
	Count int64  `json:"count"`
	Text  string `json:"text"`
}

// ReasonsOf is the view of rs.
func ReasonsOf(rs []sqlstreams.Reason) []Reason {
	out := []Reason{}
	for _, r := range rs {
		out = append(out, Reason{Code: r.Code, Group: r.Group, Count: r.Count, Text: r.Text})
	}
	return out
}

// PartitionHealth is a group's cursor in one partition as the health read
// sees it.
type PartitionHealth struct {
	Partition int   `json:"partition"`
	NextID    int64 `json:"next_id"`
	HighWater int64 `json:"high_water"`
	Distance  int64 `json:"distance"`
	Unread    int64 `json:"unread"`
}

// GroupHealth is a group's backlog at one version.
type GroupHealth struct {
	Group          string            `json:"group"`
	AllVersions    bool              `json:"all_versions"`
	Unread         int64             `json:"unread"`
	Leased         int64             `json:"leased"`
	Delayed        int64             `json:"delayed"`
	Dead           int64             `json:"dead"`
	Unresolved     int64             `json:"unresolved"`
	CursorDistance int64             `json:"cursor_distance"`
	RemovedUnread  int64             `json:"removed_unread"`
	Partitions     []PartitionHealth `json:"partitions"`
}

// GroupHealthOf is the view of g.
func GroupHealthOf(g sqlstreams.GroupHealth) GroupHealth {
	out := GroupHealth{Group: g.Group, AllVersions: g.AllVersions, Unread: g.Unread, Leased: g.Leased, Delayed: g.Delayed,
		Dead: g.Dead, Unresolved: g.Unresolved, CursorDistance: g.CursorDistance, RemovedUnread: g.RemovedUnread,
		Partitions: []PartitionHealth{}}
	for _, p := range g.Partitions {
		out.Partitions = append(out.Partitions, PartitionHealth{p.Partition, p.Cursor + 1, p.HighWater, p.Distance, p.Unread})
	}
	return out
}

// VersionHealth is one version of the health read.
type VersionHealth struct {
	Version   int           `json:"version"`
	Rows      int64         `json:"rows"`
	Heads     int64         `json:"heads"`
	Retirable bool          `json:"retirable"`
	Verdict   string        `json:"verdict"`
	Blockers  []Reason      `json:"blockers"`
	Notes     []Reason      `json:"notes"`
	Groups    []GroupHealth `json:"groups"`
}

// Health is a stream's health read.
type Health struct {
	Stream    string          `json:"stream"`
	Compacted bool            `json:"compacted"`
	HighWater int64           `json:"high_water"`
	ReadAt    *string         `json:"read_at"`
	Versions  []VersionHealth `json:"versions"`
}

// HealthOf is the view of h.
func HealthOf(h sqlstreams.Health) Health {
	out := Health{Stream: h.Stream, Compacted: h.Compacted, HighWater: h.HighWater, ReadAt: Time(h.ReadAt), Versions: []VersionHealth{}}
	for _, vh := range h.Versions {
		v := VersionHealth{Version: vh.Version, Rows: vh.Rows, Heads: vh.Heads, Retirable: vh.Retirable, Verdict: vh.Verdict(),
			Blockers: ReasonsOf(vh.Blockers), Notes: ReasonsOf(vh.Notes), Groups: []GroupHealth{}}
		for _, g := range vh.Groups {
			v.Groups = append(v.Groups, GroupHealthOf(g))
		}
		out.Versions = append(out.Versions, v)
	}
	return out
}
