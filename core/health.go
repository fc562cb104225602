package sqlstreams

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Health is a stream's state per schema version, and the verdict on whether
// each version can be retired.
type Health struct {
	Stream    string
	Compacted bool
	// HighWater is the greatest id ever assigned in the stream. It never
	// goes down: compaction and retention remove rows, not the mark.
	HighWater int64
	// Versions lists every version present in the log or read by a group,
	// in ascending order.
	Versions []VersionHealth
	ReadAt   time.Time
}

// VersionHealth is one schema version of a stream.
type VersionHealth struct {
	Version int
	// Rows counts rows at this version in the log.
	Rows int64
	// Heads counts compaction heads at this version.
	Heads int64
	// Groups lists the groups that read this version.
	Groups []GroupHealth
	// Retirable is true when no heads, no unread rows and no unresolved
	// exceptions remain at the version. Rows already processed do not block
	// retirement: retention removes them in its own time.
	Retirable bool
	// Reasons says what blocks retirement, one phrase per cause (the Text of
	// each of Blockers).
	Reasons []string
	// Blockers are the same causes with a stable code for tools.
	Blockers []Reason
	// Notes say what is worth knowing but does not block retirement, such
	// as rows no group reads.
	Notes []Reason
}

// Reason codes of VersionHealth.Blockers and Notes. They are stable: tools
// may match them instead of the words.
const (
	ReasonHeadsRemain = "heads_remain" // compaction heads at the version
	ReasonUnread      = "unread"       // a group has rows past its cursor
	ReasonLeased      = "leased"       // a group has leased deliveries
	ReasonDelayed     = "delayed"      // a group has delayed deliveries (retries, or rows left for members with a converter)
	ReasonDead        = "dead"         // a group has dead deliveries
	ReasonNoGroup     = "no_group"     // rows at the version that no group reads (a note)
)

// Reason is one cause of a verdict.
type Reason struct {
	Code string
	// Group is the group concerned, "" for the version as a whole.
	Group string
	Count int64
	Text  string
}

// GroupHealth is one group's standing at one version.
type GroupHealth struct {
	Group string
	// AllVersions marks a RawPayload group, which reads every version.
	AllVersions bool
	// Unread counts rows at this version past the group's cursors that match
	// its bindings and are claimable.
	Unread int64
	// Leased, Delayed and Dead count unresolved deliveries by state;
	// Unresolved is their sum.
	Leased, Delayed, Dead, Unresolved int64
	// CursorDistance is the high-water id minus the cursor, summed over
	// partitions. It spans ids at every version and ids the group's bindings
	// skip, so it is the raw distance, not work to do.
	CursorDistance int64
	// RemovedUnread counts rows a hard retention limit removed before the
	// group resolved them (all versions).
	RemovedUnread int64
	// Partitions are the per-partition figures behind Unread and
	// CursorDistance.
	Partitions []PartitionHealth
}

// PartitionHealth is a group's standing in one partition, at one version.
type PartitionHealth struct {
	Partition int
	// Cursor is the last id the group's main claim passed; HighWater the
	// greatest id ever assigned in the partition.
	Cursor, HighWater int64
	// Distance is HighWater minus Cursor (all versions, all keys).
	Distance int64
	// Unread counts rows at the version past the cursor that the group
	// reads (bindings, heads).
	Unread int64
}

// Health reads the stream's state per version (C13). It takes the name only;
// any T works, and Stream[RawPayload] is the usual handle.
func (s *Stream[T]) Health(ctx context.Context) (Health, error) {
	cfg, err := s.lookup(ctx, false)
	if err != nil {
		return Health{}, err
	}
	now := time.Now().UTC()
	st, err := s.client.drv.Health(ctx, driver.HealthParams{StreamID: cfg.ID, Now: now})
	if err != nil {
		return Health{}, fmt.Errorf("sqlstreams: health of %q: %w", s.name, classify(err))
	}
	return buildHealth(cfg, st, now), nil
}

// buildHealth turns the driver's counts into the health read: the rows and
// heads per version, and each group's backlog at each version it reads.
func buildHealth(cfg driver.StreamConfig, st driver.HealthStats, now time.Time) Health {
	h := Health{Stream: cfg.Name, Compacted: cfg.Compacted, ReadAt: now}
	for _, hw := range st.HighWater {
		h.HighWater = max(h.HighWater, hw)
	}
	b := newHealthBuilder(st)
	b.addUnread()
	b.addExceptions()
	// A RawPayload group is listed at every version present.
	for _, g := range st.Groups {
		if g.AllVersions {
			for v := range b.versions {
				b.at(g.Name, v)
			}
		}
	}
	h.Versions = b.versionHealths()
	return h
}

// groupVersion keys a group's figures at one version.
type groupVersion struct {
	group   string
	version int
}

// healthBuilder gathers a health read's figures per version and per group
// and version, making each entry on first use so that a version or group
// with nothing counted is still listed.
type healthBuilder struct {
	st       driver.HealthStats
	versions map[int]*VersionHealth
	groups   map[string]driver.GroupStats
	figures  map[groupVersion]*GroupHealth
	matchers map[string]func(string) bool
}

// newHealthBuilder lists every version with rows or heads, and every group
// at the version it reads and the versions it converts from (R7).
func newHealthBuilder(st driver.HealthStats) *healthBuilder {
	b := &healthBuilder{st: st, versions: map[int]*VersionHealth{}, groups: map[string]driver.GroupStats{},
		figures: map[groupVersion]*GroupHealth{}, matchers: map[string]func(string) bool{}}
	for _, vs := range st.Versions {
		vh := b.version(vs.Version)
		vh.Rows, vh.Heads = vs.Rows, vs.Heads
	}
	for _, g := range st.Groups {
		b.groups[g.Name] = g
		if !g.AllVersions {
			b.version(g.SchemaVersion)
		}
	}
	for _, g := range st.Groups {
		b.matchers[g.Name] = matcher(g.Bindings)
		if !g.AllVersions {
			b.at(g.Name, g.SchemaVersion)
			for _, v := range g.ConvertsFrom { // it reads these too (R7)
				b.at(g.Name, v)
			}
		}
	}
	return b
}

func (b *healthBuilder) version(v int) *VersionHealth {
	if b.versions[v] == nil {
		b.versions[v] = &VersionHealth{Version: v}
	}
	return b.versions[v]
}

// at returns the figures of group at version v, or nil when the group does
// not read v: rows at a version a group neither reads nor converts from are
// not its backlog.
func (b *healthBuilder) at(group string, v int) *GroupHealth {
	g, ok := b.groups[group]
	if !ok || (!g.AllVersions && g.SchemaVersion != v && !slices.Contains(g.ConvertsFrom, v)) {
		return nil
	}
	k := groupVersion{group, v}
	if b.figures[k] == nil {
		f := &GroupHealth{Group: group, AllVersions: g.AllVersions, RemovedUnread: g.RemovedUnread,
			CursorDistance: cursorDistance(g.Cursors, b.st.HighWater)}
		for p, c := range g.Cursors {
			ph := PartitionHealth{Partition: p, Cursor: c}
			if p < len(b.st.HighWater) {
				ph.HighWater = b.st.HighWater[p]
				ph.Distance = max(ph.HighWater-c, 0)
			}
			f.Partitions = append(f.Partitions, ph)
		}
		b.figures[k] = f
		b.version(v)
	}
	return b.figures[k]
}

// addUnread counts the unread rows each group reads: those its bindings
// match, at a version it reads.
func (b *healthBuilder) addUnread() {
	for _, u := range b.st.Unread {
		if m := b.matchers[u.Group]; m != nil && !m(u.RoutingKey) {
			continue
		}
		if f := b.at(u.Group, u.Version); f != nil {
			f.Unread += u.Rows
			if u.Partition >= 0 && u.Partition < len(f.Partitions) {
				f.Partitions[u.Partition].Unread += u.Rows
			}
		}
	}
}

// addExceptions counts the leased, delayed and dead deliveries.
func (b *healthBuilder) addExceptions() {
	for _, e := range b.st.Exceptions {
		f := b.at(e.Group, e.Version)
		if f == nil {
			continue
		}
		switch e.State {
		case driver.StateLeased:
			f.Leased += e.Count
		case driver.StateDelayed:
			f.Delayed += e.Count
		case driver.StateDead:
			f.Dead += e.Count
		}
		f.Unresolved += e.Count
	}
}

// versionHealths returns the versions in order, each with its groups by
// name and its retirement verdict.
func (b *healthBuilder) versionHealths() []VersionHealth {
	for k, f := range b.figures {
		vh := b.versions[k.version]
		vh.Groups = append(vh.Groups, *f)
	}
	var out []VersionHealth
	for _, vh := range b.versions {
		slices.SortFunc(vh.Groups, func(a, b GroupHealth) int { return strings.Compare(a.Group, b.Group) })
		vh.verdict()
		out = append(out, *vh)
	}
	slices.SortFunc(out, func(a, b VersionHealth) int { return a.Version - b.Version })
	return out
}

func cursorDistance(cursors, highWater []int64) int64 {
	var d int64
	for p, c := range cursors {
		if p < len(highWater) && highWater[p] > c {
			d += highWater[p] - c
		}
	}
	return d
}

func (vh *VersionHealth) verdict() {
	block := func(code, group string, n int64, text string) {
		vh.Blockers = append(vh.Blockers, Reason{Code: code, Group: group, Count: n, Text: text})
		vh.Reasons = append(vh.Reasons, text)
	}
	if vh.Heads > 0 {
		block(ReasonHeadsRemain, "", vh.Heads, "compaction heads remain")
	}
	for _, g := range vh.Groups {
		if g.Unread > 0 {
			block(ReasonUnread, g.Group, g.Unread, fmt.Sprintf("group %s has %d unread", g.Group, g.Unread))
		}
		if g.Leased > 0 {
			block(ReasonLeased, g.Group, g.Leased, fmt.Sprintf("group %s has %d leased", g.Group, g.Leased))
		}
		if g.Delayed > 0 {
			block(ReasonDelayed, g.Group, g.Delayed, fmt.Sprintf("group %s has %d delayed", g.Group, g.Delayed))
		}
		if g.Dead > 0 {
			block(ReasonDead, g.Group, g.Dead, fmt.Sprintf("group %s has %d dead (replay or discard them)", g.Group, g.Dead))
		}
	}
	if vh.Rows > 0 && len(vh.Groups) == 0 {
		vh.Notes = append(vh.Notes, Reason{Code: ReasonNoGroup, Count: vh.Rows,
			Text: fmt.Sprintf("no group reads version %d (%d rows)", vh.Version, vh.Rows)})
	}
	vh.Retirable = len(vh.Blockers) == 0
}

// Verdict returns "retirable" or the reasons that block retirement.
func (vh VersionHealth) Verdict() string {
	if vh.Retirable {
		return "retirable"
	}
	return strings.Join(vh.Reasons, "; ")
}

// Version returns the health of one version, and whether it is present.
func (h Health) Version(v int) (VersionHealth, bool) {
	for _, vh := range h.Versions {
		if vh.Version == v {
			return vh, true
		}
	}
	return VersionHealth{}, false
}

// WriteTable prints the health read as an aligned table, one line per
// (version, group), with the verdict per version.
func (h Health) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "stream %s (high-water id %d)\n", h.Stream, h.HighWater)
	fmt.Fprintln(tw, "VERSION\tROWS\tHEADS\tGROUP\tUNREAD\tLEASED\tDELAYED\tDEAD\tDISTANCE\tVERDICT")
	for _, vh := range h.Versions {
		verdict := vh.Verdict()
		if len(vh.Groups) == 0 {
			for _, n := range vh.Notes {
				verdict += "; " + n.Text
			}
			fmt.Fprintf(tw, "v%d\t%d\t%d\t-\t-\t-\t-\t-\t-\t%s\n", vh.Version, vh.Rows, vh.Heads, verdict)
			continue
		}
		for i, g := range vh.Groups {
			v, rows, heads := fmt.Sprintf("v%d", vh.Version), fmt.Sprint(vh.Rows), fmt.Sprint(vh.Heads)
			if i > 0 {
				v, rows, heads, verdict = "", "", "", ""
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", v, rows, heads, g.Group, g.Unread, g.Leased, g.Delayed, g.Dead, g.CursorDistance, verdict)
		}
	}
	return tw.Flush()
}
