package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sqlstreams/sqlstreams/contrib/console/view"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// The page data below is what the templates render. The JSON form of each
// page (/api, ?format=json) is its document(): a type of package view, the
// shape the CLI's -o json prints too (docs/json.md).

// StreamsPage is the overview: one row per stream.
type StreamsPage struct {
	Streams []StreamRow
}

func (StreamsPage) title() string { return "Streams" }

func (p StreamsPage) document() any {
	out := view.Overview{Streams: []view.StreamSummary{}}
	for _, r := range p.Streams {
		out.Streams = append(out.Streams, view.StreamSummary{Stream: view.StreamOf(r.StreamInfo), HighWater: r.HighWater,
			Versions: r.Versions, Groups: r.Groups, Unread: r.Unread, Dead: r.Dead, Status: r.Status, Retirement: r.Retirement})
	}
	return out
}

// StreamRow is one stream of the overview.
type StreamRow struct {
	sqlstreams.StreamInfo
	HighWater int64
	// Versions present in the log or read by a group.
	Versions []int
	Groups   []string
	// Unread and Dead are summed over every group and version.
	Unread, Dead int64
	// Status is the stream's health, the worst of its groups'.
	Status view.Status
	// Retirement has the verdict of each version with a newer one beside
	// it; none for a stream with one version.
	Retirement []view.VersionVerdict
}

func (h *handler) streamsPage(r *http.Request) (any, error) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	infos, err := h.client.Streams(ctx)
	if err != nil {
		return nil, err
	}
	members, err := view.ReadMembers(ctx, h.client)
	if err != nil {
		return nil, err
	}
	page := StreamsPage{Streams: make([]StreamRow, len(infos))}
	// One health read per stream, two at a time: the page's cost is these
	// round trips.
	errs := make([]error, len(infos))
	sem := make(chan struct{}, overviewConcurrency)
	var wg sync.WaitGroup
	for i, info := range infos {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			page.Streams[i], errs[i] = h.streamRow(ctx, info, members)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	page.Streams = slices.DeleteFunc(page.Streams, func(s StreamRow) bool { return s.Name == "" })
	return page, nil
}

// overviewConcurrency is how many health reads the overview runs at once.
// Two: more wins nothing on SQLite, whose driver keeps two idle read
// connections (database/sql's default), so a third and fourth reader are
// opened and closed on every render (measured: ~70 vs ~63 CPU ms for 200
// streams).
const overviewConcurrency = 2

// streamRow reads one stream's row of the overview; a stream destroyed
// meanwhile is a zero row. members is view.ReadMembers' answer.
func (h *handler) streamRow(ctx context.Context, info sqlstreams.StreamInfo, members []sqlstreams.MemberInfo) (StreamRow, error) {
	s := h.client.Stream[sqlstreams.RawPayload](info.Name)
	hl, err := s.Health(ctx)
	if errors.Is(err, sqlstreams.ErrStreamNotFound) {
		return StreamRow{}, nil
	}
	if err != nil {
		return StreamRow{}, err
	}
	row := StreamRow{StreamInfo: info, HighWater: hl.HighWater, Retirement: view.Retiring(hl, nil), Versions: []int{}, Groups: []string{}}
	seen := map[string]bool{}
	for _, vh := range hl.Versions {
		row.Versions = append(row.Versions, vh.Version)
		for _, g := range vh.Groups {
			row.Unread += g.Unread
			row.Dead += g.Dead
			if !seen[g.Group] {
				seen[g.Group] = true
				row.Groups = append(row.Groups, g.Group)
			}
		}
	}
	// Health lists every group at some version, except a RawPayload group
	// of a stream with no version yet: only then list them apart.
	if len(hl.Versions) == 0 {
		groups, err := s.Groups(ctx)
		if errors.Is(err, sqlstreams.ErrStreamNotFound) {
			return StreamRow{}, nil
		}
		if err != nil {
			return StreamRow{}, err
		}
		for _, g := range groups {
			row.Groups = append(row.Groups, g.Name)
		}
	}
	slices.Sort(row.Groups)
	named := make([]sqlstreams.GroupInfo, len(row.Groups))
	for i, g := range row.Groups {
		named[i] = sqlstreams.GroupInfo{Name: g}
	}
	row.Status = view.StreamStatus(view.GroupsOf(info.Name, named, hl, members))
	return row, nil
}

// StreamPage is a stream's versions with the health read, the verdicts and
// the retirement checklist of each.
type StreamPage struct {
	Info     sqlstreams.StreamInfo
	Health   sqlstreams.Health
	Groups   []sqlstreams.GroupInfo
	Versions []VersionView
	// Live counts each group's live members; nil when the driver records
	// no heartbeats.
	Live map[string]int
	// Status is the stream's health and GroupStatus each group's.
	Status      view.Status
	GroupStatus map[string]view.Status
	// AlterPlan is a dry-run alter's plan, with the form that makes it.
	AlterPlan *view.AlterPlan
	Alter     *AlterForm
	// Activity: the driver keeps samples, so the page charts them.
	Activity bool

	members []sqlstreams.MemberInfo
}

func (p StreamPage) title() string { return p.Info.Name }

func (p StreamPage) document() any { return view.DescribeStream(p.Info, p.Groups, p.Health, p.members) }

// VersionView is one version of a stream with its verdict and checklist.
type VersionView struct {
	sqlstreams.VersionHealth
	// Verdict is VersionHealth.Verdict(): "retirable" or the reasons.
	Verdict string
	// Older: a newer version exists, so this one can be retired; only
	// then is there a Checklist.
	Older     bool
	Checklist []CheckItem
}

// CheckItem is one step of retiring a version.
type CheckItem = view.CheckItem

func (h *handler) streamPage(r *http.Request) (any, error) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	return h.stream(ctx, r.PathValue("stream"))
}

// stream reads what the stream page shows.
func (h *handler) stream(ctx context.Context, name string) (StreamPage, error) {
	s := h.client.Stream[sqlstreams.RawPayload](name)
	info, err := s.Get(ctx)
	if err != nil {
		return StreamPage{}, err
	}
	hl, err := s.Health(ctx)
	if err != nil {
		return StreamPage{}, err
	}
	groups, err := s.Groups(ctx)
	if err != nil {
		return StreamPage{}, err
	}
	members, err := view.ReadMembers(ctx, h.client)
	if err != nil {
		return StreamPage{}, err
	}
	page := StreamPage{Info: info, Health: hl, Groups: groups, members: members, GroupStatus: map[string]view.Status{},
		Activity: view.Samples(h.client)}
	gv := view.GroupsOf(info.Name, groups, hl, members)
	if members != nil {
		page.Live = map[string]int{}
	}
	for _, g := range gv {
		page.GroupStatus[g.Name] = g.Status
		if g.LiveMembers != nil {
			page.Live[g.Name] = *g.LiveMembers
		}
	}
	page.Status = view.StreamStatus(gv)
	newest := view.NewestVersion(hl, groups)
	for _, vh := range hl.Versions {
		vv := VersionView{VersionHealth: vh, Verdict: vh.Verdict(), Older: vh.Version < newest}
		if vv.Older {
			vv.Checklist = view.Checklist(info, vh, groups)
		}
		page.Versions = append(page.Versions, vv)
	}
	return page, nil
}

// GroupPage is a group: what it reads, its cursors against the high-water
// marks, holders, unresolved deliveries, and the reset and delete actions.
type GroupPage struct {
	Stream string
	sqlstreams.GroupDescription
	// Retirable reports that the group has nothing left at any version it
	// reads, so deleting it loses nothing.
	Retirable bool
	// Blockers are what keeps it from being retirable.
	Blockers []sqlstreams.Reason
	// Plan is a dry-run reset's planned moves, with the form that makes it.
	Plan  []sqlstreams.CursorChange
	Reset *ResetForm

	// Heartbeats: the driver records members, so an empty Members means
	// no client runs the group.
	Heartbeats bool
	// Status is the group's health.
	Status view.Status
	// Now is when the page was read, for the members' "last seen".
	Now time.Time

	health sqlstreams.Health
}

func (p GroupPage) title() string { return p.Group + " · " + p.Stream }

func (p GroupPage) document() any {
	return view.DescribeGroup(p.GroupDescription, p.health, p.Heartbeats)
}

// ResetForm is a reset-cursors request as the form sends it.
type ResetForm struct {
	To         string // earliest, latest, id, time, shift
	Value      string
	Partitions string
}

func (h *handler) groupPage(r *http.Request) (any, error) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	return h.group(ctx, r.PathValue("stream"), r.PathValue("group"))
}

func (h *handler) group(ctx context.Context, stream, group string) (GroupPage, error) {
	s := h.client.Stream[sqlstreams.RawPayload](stream)
	d, err := s.Group(group).Describe(ctx)
	if err != nil {
		return GroupPage{}, err
	}
	hl, err := s.Health(ctx)
	if err != nil {
		return GroupPage{}, err
	}
	page := GroupPage{Stream: stream, GroupDescription: d, Blockers: []sqlstreams.Reason{}, health: hl,
		Heartbeats: view.Heartbeats(h.client), Now: time.Now()}
	for _, vh := range hl.Versions {
		for _, b := range vh.Blockers {
			if b.Group == group {
				page.Blockers = append(page.Blockers, b)
			}
		}
	}
	page.Retirable = len(page.Blockers) == 0
	page.Status = view.DescribeGroup(d, hl, page.Heartbeats).Status
	return page, nil
}

// DeadPage lists a group's dead letters, a page at a time.
type DeadPage struct {
	Stream, Group string
	// Dead counts the group's dead deliveries at every version (Health).
	Dead    int64
	Letters []sqlstreams.DeadLetter
	// After is this page's start; Next the start of the next page, 0 when
	// this is the last.
	After, Next int64
}

func (p DeadPage) title() string { return "Dead letters · " + p.Group }

func (p DeadPage) document() any {
	return view.DeadLetterPage{Stream: p.Stream, Group: p.Group, Dead: p.Dead, DeadLetters: view.DeadLettersOf(p.Letters), NextAfter: p.Next}
}

const deadPageSize = 50

func (h *handler) deadPage(r *http.Request) (any, error) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	after, err := intParam(r, "after")
	if err != nil {
		return nil, err
	}
	g := h.client.Stream[sqlstreams.RawPayload](r.PathValue("stream")).Group(r.PathValue("group"))
	d, err := g.Describe(ctx)
	if err != nil {
		return nil, err
	}
	dls, next, err := view.ReadDeadLetters(ctx, g, after, deadPageSize)
	if err != nil {
		return nil, err
	}
	page := DeadPage{Stream: d.Stream, Group: d.Group, Dead: d.Dead, After: after, Letters: dls, Next: next}
	if page.Letters == nil {
		page.Letters = []sqlstreams.DeadLetter{}
	}
	return page, nil
}

// DeadLetterPage is one dead letter with its payload, headers, error and
// failure history.
type DeadLetterPage struct {
	Stream, Group string
	Letter        sqlstreams.DeadLetter
}

func (p DeadLetterPage) title() string {
	return fmt.Sprintf("Dead letter %d · %s", p.Letter.ID, p.Group)
}

func (p DeadLetterPage) document() any { return view.DeadLetterOf(p.Letter) }

func (h *handler) deadLetterPage(r *http.Request) (any, error) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		return nil, fmt.Errorf("%w: dead letter id %q; use the numeric id from the list", errBadRequest, r.PathValue("id"))
	}
	g := h.client.Stream[sqlstreams.RawPayload](r.PathValue("stream")).Group(r.PathValue("group"))
	dl, err := g.DeadLetter(ctx, id)
	if err != nil {
		return nil, err
	}
	return DeadLetterPage{Stream: r.PathValue("stream"), Group: g.Name(), Letter: dl}, nil
}

// MessagesPage is a page of the log, read without claiming.
type MessagesPage struct {
	Stream     string
	Partitions int
	Filter     MessageFilter
	Records    []sqlstreams.Record
	// Next is the "after" of the next page; Done says no row follows it
	// now.
	Next int64
	Done bool
	// TailAfter and TailQuery are where a live tail (Filter.Follow) starts
	// and the filter it keeps.
	TailAfter int64
	TailQuery string
}

func (p MessagesPage) title() string { return "Messages · " + p.Stream }

func (p MessagesPage) document() any {
	return view.RecordPage{Stream: p.Stream, Records: view.RecordsOf(p.Records), NextAfter: p.Next, Done: p.Done}
}

// MessageFilter is the messages page's query: ?id=, or ?after= with
// version=, key=, partition=, and last=1 for the newest rows.
type MessageFilter struct {
	ID, After int64
	Version   int
	Key       string
	HasKey    bool
	Partition *int
	// From starts at the first row produced at or after it (RFC 3339).
	From time.Time
	Last bool
	// Follow keeps the page open on new rows (a live tail): the page polls
	// the JSON API for rows after TailAfter.
	Follow bool
}

const messagesPageSize = 50

func (h *handler) messagesPage(r *http.Request) (any, error) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	s := h.client.Stream[sqlstreams.RawPayload](r.PathValue("stream"))
	info, err := s.Get(ctx)
	if err != nil {
		return nil, err
	}
	f, err := messageFilter(r, info.Partitions)
	if err != nil {
		return nil, err
	}
	bp, err := s.Browse(ctx, f.browseOptions())
	if err != nil {
		return nil, err
	}
	page := MessagesPage{Stream: info.Name, Partitions: info.Partitions, Filter: f, Records: bp.Records, Next: bp.Next, Done: bp.Done}
	if f.ID > 0 {
		page.Records = slices.DeleteFunc(bp.Records, func(rec sqlstreams.Record) bool { return rec.ID != f.ID })
		if len(page.Records) == 0 {
			return nil, fmt.Errorf("%w: stream %q has no message %d (it may have been compacted or retained away)", errNotFound, info.Name, f.ID)
		}
		page.Done = true
	}
	if page.Records == nil {
		page.Records = []sqlstreams.Record{}
	}
	if f.Follow {
		if page.TailAfter, err = tailStart(ctx, s, page.Records); err != nil {
			return nil, err
		}
		page.TailQuery = f.tailQuery()
	}
	return page, nil
}

// messageFilter reads the messages page's query.
func messageFilter(r *http.Request, partitions int) (MessageFilter, error) {
	var f MessageFilter
	var err error
	if f.ID, err = intParam(r, "id"); err != nil {
		return f, err
	}
	if f.After, err = intParam(r, "after"); err != nil {
		return f, err
	}
	v, err := intParam(r, "version")
	if err != nil {
		return f, err
	}
	f.Version = int(v)
	q := r.URL.Query()
	if q.Has("key") && q.Get("key") != "" {
		f.Key, f.HasKey = q.Get("key"), true
	}
	if ps := q.Get("partition"); ps != "" {
		p, err := strconv.Atoi(ps)
		if err != nil {
			return f, fmt.Errorf("%w: partition %q; use a number from 0 to %d", errBadRequest, ps, partitions-1)
		}
		f.Partition = &p
	}
	if fs := q.Get("from"); fs != "" {
		if f.From, err = time.Parse(time.RFC3339, fs); err != nil {
			return f, fmt.Errorf("%w: from=%q; use RFC 3339, such as 2026-01-02T15:04:05Z", errBadRequest, fs)
		}
	}
	// A live tail starts from the newest rows, as tail -f does.
	f.Follow = q.Get("follow") == "1" && f.ID == 0
	f.Last = q.Get("last") == "1" || f.Follow
	return f, nil
}

func (f MessageFilter) browseOptions() sqlstreams.BrowseOptions {
	o := sqlstreams.BrowseOptions{AfterID: f.After, Partition: f.Partition, From: f.From, Last: f.Last, Limit: messagesPageSize}
	if f.ID > 0 {
		o = sqlstreams.BrowseOptions{AfterID: f.ID - 1, Limit: 1}
	}
	if f.Version > 0 {
		o.Versions = []int{f.Version}
	}
	if f.HasKey {
		o.Key = &f.Key
	}
	return o
}

// tailQuery is the filter a live tail keeps while it polls for new rows.
func (f MessageFilter) tailQuery() string {
	q := url.Values{}
	if f.Version > 0 {
		q.Set("version", strconv.Itoa(f.Version))
	}
	if f.HasKey {
		q.Set("key", f.Key)
	}
	if f.Partition != nil {
		q.Set("partition", strconv.Itoa(*f.Partition))
	}
	return q.Encode()
}

// tailStart is the id a live tail reads after: the newest row shown, or,
// when the filter shows none, the stream's high-water mark, so that a tail
// shows what arrives from now on rather than the whole history.
func tailStart(ctx context.Context, s *sqlstreams.Stream[sqlstreams.RawPayload], shown []sqlstreams.Record) (int64, error) {
	var after int64
	for _, rec := range shown {
		after = max(after, rec.ID)
	}
	if after > 0 {
		return after, nil
	}
	hl, err := s.Health(ctx)
	if err != nil {
		return 0, err
	}
	return hl.HighWater, nil
}

func intParam(r *http.Request, name string) (int64, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: %s=%q; use a whole number of 0 or more", errBadRequest, name, s)
	}
	return n, nil
}

// SchemasPage is a stream's registry: revisions per version, the readers
// of each, and the effective level and mode with where they are set.
type SchemasPage struct {
	Stream string
	// NoRegistry is set when the driver keeps no schema registry.
	NoRegistry bool
	// Deleted is set when soft-deleted revisions are listed too (asked
	// with deleted=true, as Confluent's REST API asks); they are marked.
	Deleted  bool
	Level    sqlstreams.Setting[schema.Level]
	Mode     sqlstreams.Setting[sqlstreams.Mode]
	Versions []SchemaVersion
	Readers  []sqlstreams.Reader
}

func (p SchemasPage) title() string { return "Schemas · " + p.Stream }

func (p SchemasPage) document() any {
	out := view.Schemas{Stream: p.Stream, NoRegistry: p.NoRegistry, Deleted: p.Deleted, Versions: []view.SchemaVersion{}, Readers: []view.Reader{}}
	if !p.NoRegistry {
		level, mode := view.LevelOf(p.Level), view.ModeOf(p.Mode)
		out.Level, out.Mode = &level, &mode
	}
	for _, v := range p.Versions {
		sv := view.SchemaVersion{Version: v.Version, Subject: v.Subject, Level: view.LevelOf(v.Level), Mode: view.ModeOf(v.Mode), Revisions: []view.Revision{}}
		for _, rv := range v.Revisions {
			sv.Revisions = append(sv.Revisions, view.Revision{Revision: rv.Revision, Fingerprint: rv.Fingerprint,
				CreatedAt: view.Time(rv.CreatedAt), Readers: rv.Readers, Deleted: rv.Deleted})
		}
		out.Versions = append(out.Versions, sv)
	}
	for _, rd := range p.Readers {
		out.Readers = append(out.Readers, view.Reader{Group: rd.Group, Version: rd.Version, Revision: rd.Revision, RegisteredAt: view.Time(rd.RegisteredAt)})
	}
	return out
}

// SchemaVersion is the revisions recorded at one version, with the level
// and mode that judge them (the version's own, else the stream's, ...).
type SchemaVersion struct {
	Version   int
	Subject   string
	Level     sqlstreams.Setting[schema.Level]
	Mode      sqlstreams.Setting[sqlstreams.Mode]
	Revisions []RevisionView
}

// RevisionView is one revision with the groups that read it; Deleted
// marks a soft-deleted one.
type RevisionView struct {
	Revision    int
	Fingerprint string
	CreatedAt   time.Time
	Readers     []string
	Deleted     bool
}

func (h *handler) schemasPage(r *http.Request) (any, error) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	stream := r.PathValue("stream")
	info, err := h.client.Stream[sqlstreams.RawPayload](stream).Get(ctx)
	if err != nil {
		return nil, err
	}
	page := SchemasPage{Stream: info.Name, Deleted: r.URL.Query().Get("deleted") == "true", Versions: []SchemaVersion{}, Readers: []sqlstreams.Reader{}}
	if !h.hasRegistry {
		page.NoRegistry = true
		return page, nil
	}
	reg := h.client.Registry()
	if page.Level, err = reg.Level(ctx, stream); err != nil {
		return nil, err
	}
	if page.Mode, err = reg.Mode(ctx, stream); err != nil {
		return nil, err
	}
	list := reg.Revisions
	if page.Deleted {
		list = reg.RevisionsWithDeleted
	}
	revs, err := list(ctx, stream, 0)
	if err != nil {
		return nil, err
	}
	if page.Readers, err = reg.Readers(ctx, stream); err != nil {
		return nil, err
	}
	for _, rv := range revs {
		if len(page.Versions) == 0 || page.Versions[len(page.Versions)-1].Version != rv.Version {
			sv := SchemaVersion{Version: rv.Version, Subject: Subject(stream, rv.Version)}
			if sv.Level, sv.Mode, err = versionSettings(ctx, reg, stream, rv.Version); err != nil {
				return nil, err
			}
			page.Versions = append(page.Versions, sv)
		}
		view := RevisionView{Revision: rv.Revision, Fingerprint: rv.Fingerprint, CreatedAt: rv.CreatedAt, Readers: []string{}, Deleted: rv.Deleted}
		for _, rd := range page.Readers {
			if rd.Version == rv.Version && rd.Revision == rv.Revision {
				view.Readers = append(view.Readers, rd.Group)
			}
		}
		sv := &page.Versions[len(page.Versions)-1]
		sv.Revisions = append(sv.Revisions, view)
	}
	return page, nil
}

// versionSettings are the level and mode in force for a stream version's
// revisions, each with where it is set: the version's own, the stream's,
// registry-wide or the default.
func versionSettings(ctx context.Context, reg *sqlstreams.Registry, stream string, version int) (sqlstreams.Setting[schema.Level], sqlstreams.Setting[sqlstreams.Mode], error) {
	level, err := reg.VersionLevel(ctx, stream, version)
	if err != nil {
		return level, sqlstreams.Setting[sqlstreams.Mode]{}, err
	}
	mode, err := reg.VersionMode(ctx, stream, version)
	return level, mode, err
}

// Subject is a stream version's name in the Confluent REST naming:
// "{stream}-v{version}".
func Subject(stream string, version int) string { return stream + "-v" + strconv.Itoa(version) }

// SchemaDiffPage shows two revisions of a version side by side, judged
// with the client's formats at a level.
type SchemaDiffPage struct {
	Stream    string
	Version   int
	Revisions []int
	A, B      int
	Comparison
}

func (p SchemaDiffPage) title() string {
	return fmt.Sprintf("Schema diff · %s v%d", p.Stream, p.Version)
}

func (p SchemaDiffPage) document() any {
	return view.SchemaDiff{Stream: p.Stream, Version: p.Version, Revisions: p.Revisions, A: p.A, B: p.B, Comparison: p.Comparison.view()}
}

func (h *handler) schemaDiffPage(r *http.Request) (any, error) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	stream := r.PathValue("stream")
	version, err := strconv.Atoi(r.PathValue("version"))
	if err != nil || version < 1 {
		return nil, fmt.Errorf("%w: version %q; use a schema version number such as 1", errBadRequest, r.PathValue("version"))
	}
	if !h.hasRegistry {
		return nil, fmt.Errorf("%w: %w", errNotFound, sqlstreams.ErrNoRegistry)
	}
	reg := h.client.Registry()
	revs, err := reg.Revisions(ctx, stream, version)
	if err != nil {
		return nil, err
	}
	if len(revs) == 0 {
		return nil, fmt.Errorf("%w: stream %q has no schema recorded at version %d", errNotFound, stream, version)
	}
	page := SchemaDiffPage{Stream: stream, Version: version}
	byRev := map[int]sqlstreams.Revision{}
	for _, rv := range revs {
		page.Revisions = append(page.Revisions, rv.Revision)
		byRev[rv.Revision] = rv
	}
	if page.A, page.B, err = pickPair(r, page.Revisions, fmt.Sprintf("revisions at v%d", version)); err != nil {
		return nil, err
	}
	page.Comparison, err = judgePair(r, page.A, page.B, func() (sqlstreams.Setting[schema.Level], error) { return reg.VersionLevel(ctx, stream, version) },
		func(n int) (schema.Document, string, error) {
			d, err := revisionDocument(ctx, reg, stream, byRev[n])
			return d, revisionText(byRev[n]), err
		})
	if err != nil {
		return nil, err
	}
	return page, nil
}

// revisionDocument is a revision as the diff judges it. A JSON Schema is
// judged as it always was here, Go-aware and without its references, as
// a stream's own schema reflected from Go is; another type is the
// registry's own document of it (RevisionDocument).
func revisionDocument(ctx context.Context, reg *sqlstreams.Registry, stream string, rv sqlstreams.Revision) (schema.Document, error) {
	if rv.Schema != nil {
		return schema.JSONDocument(rv.Schema, schema.GoAware), nil
	}
	return reg.RevisionDocument(ctx, stream, rv.Version, rv.Revision)
}

// revisionText is a revision as the diff shows it: a JSON Schema's
// canonical form, another type's text as registered.
func revisionText(rv sqlstreams.Revision) string {
	if rv.Schema != nil {
		return view.PrettyJSON(rv.Schema.Canonical())
	}
	return documentText(rv.Type, rv.Text)
}

// RegistryPage is the registry-wide settings and every subject.
type RegistryPage struct {
	NoRegistry bool
	Level      sqlstreams.Setting[schema.Level]
	Mode       sqlstreams.Setting[sqlstreams.Mode]
	Subjects   []SubjectView
	// FreeSubjects are the subjects bound to no stream (such as
	// "orders-value"), by name.
	FreeSubjects []FreeSubjectView
	Levels       []schema.Level
	Modes        []sqlstreams.Mode
}

func (RegistryPage) title() string { return "Registry" }

func (p RegistryPage) document() any {
	out := view.Registry{NoRegistry: p.NoRegistry, Subjects: []view.Subject{}}
	if !p.NoRegistry {
		level, mode := view.LevelOf(p.Level), view.ModeOf(p.Mode)
		out.Level, out.Mode = &level, &mode
	}
	for _, s := range p.Subjects {
		out.Subjects = append(out.Subjects, view.Subject{Subject: s.Subject, Stream: s.Stream, Version: s.Version, Type: string(s.Type),
			Revisions: s.Revisions, LatestRevision: s.LatestRevision, Level: view.LevelOf(s.Level), Mode: view.ModeOf(s.Mode)})
	}
	out.FreeSubjects = make([]view.FreeSubject, 0, len(p.FreeSubjects))
	for _, s := range p.FreeSubjects {
		out.FreeSubjects = append(out.FreeSubjects, view.FreeSubject{Subject: s.Subject, Versions: s.Versions, Latest: s.Latest.Version,
			ID: s.Latest.ID, Type: string(s.Latest.Type), Level: view.LevelOf(s.Level), Mode: view.ModeOf(s.Mode)})
	}
	return out
}

// SubjectView is one stream version in the REST naming; Type is its
// latest revision's.
type SubjectView struct {
	Subject        string
	Stream         string
	Version        int
	Type           schema.Type
	Revisions      int
	LatestRevision int
	Level          sqlstreams.Setting[schema.Level]
	Mode           sqlstreams.Setting[sqlstreams.Mode]
}

func (h *handler) registryPage(r *http.Request) (any, error) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	page := RegistryPage{Subjects: []SubjectView{}, Levels: schema.Levels(),
		Modes: []sqlstreams.Mode{sqlstreams.ModeReadWrite, sqlstreams.ModeReadOnly, sqlstreams.ModeImport}}
	if !h.hasRegistry {
		page.NoRegistry = true
		return page, nil
	}
	reg := h.client.Registry()
	var err error
	if page.Level, err = reg.Level(ctx, sqlstreams.RegistryWide); err != nil {
		return nil, err
	}
	if page.Mode, err = reg.Mode(ctx, sqlstreams.RegistryWide); err != nil {
		return nil, err
	}
	infos, err := h.client.Streams(ctx)
	if err != nil {
		return nil, err
	}
	for _, info := range infos {
		revs, err := reg.Revisions(ctx, info.Name, 0)
		if errors.Is(err, sqlstreams.ErrStreamNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if len(revs) == 0 {
			continue
		}
		for _, rv := range revs {
			n := len(page.Subjects)
			if n == 0 || page.Subjects[n-1].Stream != info.Name || page.Subjects[n-1].Version != rv.Version {
				sv := SubjectView{Subject: Subject(info.Name, rv.Version), Stream: info.Name, Version: rv.Version}
				if sv.Level, sv.Mode, err = versionSettings(ctx, reg, info.Name, rv.Version); err != nil {
					return nil, err
				}
				page.Subjects = append(page.Subjects, sv)
				n++
			}
			page.Subjects[n-1].Revisions++
			page.Subjects[n-1].Type = rv.Type
			page.Subjects[n-1].LatestRevision = max(page.Subjects[n-1].LatestRevision, rv.Revision)
		}
	}
	slices.SortStableFunc(page.Subjects, func(a, b SubjectView) int { return strings.Compare(a.Subject, b.Subject) })
	if page.FreeSubjects, err = freeSubjects(ctx, reg); err != nil {
		return nil, err
	}
	return page, nil
}

// Features is what /api/features reports about the console and its driver.
type Features = view.Features

func (h *handler) features(w http.ResponseWriter, r *http.Request) {
	drv := h.client.Driver()
	writeJSON(w, http.StatusOK, view.Features{Driver: drv.Name(), Notify: drv.Capabilities().Notify, ReadOnly: !h.opts.AllowActions,
		Registry: h.hasRegistry, Identity: h.client.Identity(), FormToken: h.csrf})
}

// healthz answers 200 while the process is up; with ?complete it also
// makes a database round trip and answers 503 when that fails.
func (h *handler) healthz(w http.ResponseWriter, r *http.Request) {
	if !r.URL.Query().Has("complete") {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), min(h.opts.RequestTimeout, 5*time.Second))
	defer cancel()
	if _, err := h.client.Driver().ListStreams(ctx, driver.ListStreamsParams{}); err != nil {
		h.opts.Logger.Warn("sqlstreams console: health check failed", "error", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "error": "the database did not answer; see the server log"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "database": "ok"})
}
