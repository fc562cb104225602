package sqlstreams

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// ErrDeadLetterNotFound: the group has no dead delivery with that id (it was
// replayed, discarded, never died, or the id is wrong).
var ErrDeadLetterNotFound = errors.New("dead letter not found")

// GroupAdmin administers a consumer group by name, for operators and tools:
// it registers nothing, records no reader schema and works whatever version
// the group reads. Get one with Stream.Group; any T works, and
// Stream[RawPayload] is the usual handle.
type GroupAdmin struct {
	client *Client
	stream string
	name   string
}

// Group returns a name-only handle on the stream's consumer group name.
func (s *Stream[T]) Group(name string) *GroupAdmin {
	return &GroupAdmin{client: s.client, stream: s.name, name: name}
}

// Name returns the group name.
func (g *GroupAdmin) Name() string { return g.name }

// GroupInfo is a consumer group's stored configuration.
type GroupInfo struct {
	Name          string
	SchemaVersion int
	// AllVersions marks a RawPayload group, which reads every version.
	AllVersions  bool
	ConvertsFrom []int
	// Bindings select routing keys; none means every key.
	Bindings  []string
	Start     StartPosition
	CreatedAt time.Time
	// PausedAt is when an operator paused the group (GroupAdmin.Pause);
	// zero while it runs.
	PausedAt time.Time
}

// Groups lists the stream's consumer groups, ordered by name.
func (s *Stream[T]) Groups(ctx context.Context) ([]GroupInfo, error) {
	cfg, err := s.lookup(ctx, false)
	if err != nil {
		return nil, err
	}
	gs, err := s.client.drv.ListGroups(ctx, driver.ListGroupsParams{StreamID: cfg.ID})
	if err != nil {
		return nil, fmt.Errorf("sqlstreams: groups of %q: %w", s.name, classify(err))
	}
	out := make([]GroupInfo, len(gs))
	for i, g := range gs {
		out[i] = GroupInfo{Name: g.Name, SchemaVersion: g.SchemaVersion, AllVersions: g.AllVersions, ConvertsFrom: g.ConvertsFrom,
			Bindings: g.Bindings, Start: StartPosition(g.Start), CreatedAt: g.CreatedAt, PausedAt: g.PausedAt}
	}
	return out, nil
}

func (g *GroupAdmin) resolve(ctx context.Context) (driver.StreamConfig, error) {
	if err := validateName("group", g.name); err != nil {
		return driver.StreamConfig{}, err
	}
	return g.client.Stream[RawPayload](g.stream).lookup(ctx, false)
}

// resolveGroup is resolve for the operations on a group's deliveries: a
// misspelt group name fails with ErrGroupNotFound instead of finding nothing
// to list, replay or discard.
func (g *GroupAdmin) resolveGroup(ctx context.Context) (driver.StreamConfig, error) {
	cfg, err := g.resolve(ctx)
	if err != nil {
		return cfg, err
	}
	gs, err := g.client.drv.ListGroups(ctx, driver.ListGroupsParams{StreamID: cfg.ID})
	if err != nil {
		return cfg, g.wrap("look up", err)
	}
	if !slices.ContainsFunc(gs, func(x driver.GroupConfig) bool { return x.Name == g.name }) {
		names := make([]string, len(gs))
		for i, x := range gs {
			names[i] = x.Name
		}
		return cfg, g.notFound(names)
	}
	return cfg, nil
}

// notFound is ErrGroupNotFound naming the groups the stream has, so that a
// misspelt name is seen at once.
func (g *GroupAdmin) notFound(names []string) error {
	has := "no groups"
	if len(names) > 0 {
		has = strings.Join(names, ", ")
	}
	return fmt.Errorf("sqlstreams: stream %q has no group %q: %w; it has %s", g.stream, g.name, ErrGroupNotFound, has)
}

func (g *GroupAdmin) wrap(op string, err error) error {
	return fmt.Errorf("sqlstreams: %s for group %q on %q: %w", op, g.name, g.stream, classify(err))
}

// GroupDescription is a group's configuration and standing, as Kafka's
// consumer-group describe shows it.
type GroupDescription struct {
	Stream        string
	Group         string
	SchemaVersion int
	// AllVersions marks a RawPayload group, which reads every version.
	AllVersions  bool
	ConvertsFrom []int
	// Bindings select routing keys; none means every key.
	Bindings  []string
	Start     StartPosition
	CreatedAt time.Time
	// PausedAt is when an operator paused the group; zero while it runs.
	PausedAt time.Time
	// Partitions are the group's cursors against the log.
	Partitions []GroupPartition
	// Holders are the clients holding the group's leases.
	Holders []Holder
	// Versions is the group's backlog per version it reads.
	Versions []GroupVersion
	// Leased, Delayed and Dead count unresolved deliveries at every
	// version the group reads.
	Leased, Delayed, Dead int64
	// RemovedUnread counts rows a hard retention limit removed unread.
	RemovedUnread int64
	// Members are the clients that registered consumers of the group and
	// were seen within MemberRetention: live, left or gone (none when the
	// driver keeps no heartbeats).
	Members []MemberInfo
}

// GroupPartition is a group's cursor in one partition.
type GroupPartition struct {
	Partition int
	// Cursor is the last id the main claim passed; HighWater the greatest
	// id ever assigned in the partition.
	Cursor, HighWater int64
	// Lag counts rows past the cursor the group reads (its versions and
	// bindings, heads only on compacted streams): work still to do.
	Lag int64
	// Distance is HighWater minus Cursor: the raw distance, over every
	// version and key.
	Distance int64
}

// Holder is a client holding leases of a group.
type Holder struct {
	// Holder is the client's identity (WithIdentity).
	Holder string
	Leases int64
	// Until is when the last of its leases expires.
	Until time.Time
}

// GroupVersion is a group's standing at one version.
type GroupVersion struct {
	Version int
	GroupHealth
}

// Describe reads the group's configuration and standing. It fails with
// ErrGroupNotFound when there is no such group.
func (g *GroupAdmin) Describe(ctx context.Context) (GroupDescription, error) {
	cfg, err := g.resolve(ctx)
	if err != nil {
		return GroupDescription{}, err
	}
	now := time.Now().UTC()
	st, err := g.client.drv.Health(ctx, driver.HealthParams{StreamID: cfg.ID, Now: now})
	if err != nil {
		return GroupDescription{}, g.wrap("describe", err)
	}
	i := slices.IndexFunc(st.Groups, func(s driver.GroupStats) bool { return s.Name == g.name })
	if i < 0 {
		names := make([]string, len(st.Groups))
		for j, x := range st.Groups {
			names[j] = x.Name
		}
		return GroupDescription{}, g.notFound(names)
	}
	gs := st.Groups[i]
	d := GroupDescription{Stream: cfg.Name, Group: gs.Name, SchemaVersion: gs.SchemaVersion, AllVersions: gs.AllVersions,
		ConvertsFrom: gs.ConvertsFrom, Bindings: gs.Bindings, Start: StartPosition(gs.Start), CreatedAt: gs.CreatedAt,
		PausedAt: gs.PausedAt, RemovedUnread: gs.RemovedUnread}
	for p, c := range gs.Cursors {
		gp := GroupPartition{Partition: p, Cursor: c}
		if p < len(st.HighWater) {
			gp.HighWater = st.HighWater[p]
			gp.Distance = max(gp.HighWater-c, 0)
		}
		d.Partitions = append(d.Partitions, gp)
	}
	for _, vh := range buildHealth(cfg, st, now).Versions {
		for _, gh := range vh.Groups {
			if gh.Group != g.name {
				continue
			}
			d.Versions = append(d.Versions, GroupVersion{Version: vh.Version, GroupHealth: gh})
			d.Leased, d.Delayed, d.Dead = d.Leased+gh.Leased, d.Delayed+gh.Delayed, d.Dead+gh.Dead
			for _, ph := range gh.Partitions {
				d.Partitions[ph.Partition].Lag += ph.Unread
			}
		}
	}
	for _, h := range st.Holders {
		if h.Group == g.name {
			d.Holders = append(d.Holders, Holder{Holder: h.Holder, Leases: h.Leases, Until: h.Until})
		}
	}
	members, err := g.client.Members(ctx)
	if err != nil && !errors.Is(err, ErrUnsupported) {
		return GroupDescription{}, err
	}
	for _, m := range members {
		if slices.Contains(m.Groups, MemberGroup{Stream: cfg.Name, Group: g.name}) {
			d.Members = append(d.Members, m)
		}
	}
	return d, nil
}

// DeadLetters lists up to limit dead deliveries of the group with ids above
// afterID, in id order; pass the last id seen to page.
func (g *GroupAdmin) DeadLetters(ctx context.Context, afterID int64, limit int) ([]DeadLetter, error) {
	cfg, err := g.resolveGroup(ctx)
	if err != nil {
		return nil, err
	}
	return deadLetters(ctx, g.client, cfg, g.name, afterID, limit, false)
}

// DeadLetter returns one dead delivery with its payload and its failure
// history, or ErrDeadLetterNotFound.
func (g *GroupAdmin) DeadLetter(ctx context.Context, id int64) (DeadLetter, error) {
	cfg, err := g.resolveGroup(ctx)
	if err != nil {
		return DeadLetter{}, err
	}
	dls, err := deadLetters(ctx, g.client, cfg, g.name, id-1, 1, true)
	if err != nil {
		return DeadLetter{}, err
	}
	if len(dls) == 0 || dls[0].ID != id {
		return DeadLetter{}, fmt.Errorf("sqlstreams: group %q on %q: delivery %d: %w; list them with DeadLetters", g.name, g.stream, id, ErrDeadLetterNotFound)
	}
	return dls[0], nil
}

// Replay makes the given dead deliveries due now with attempts reset; it
// returns how many were dead.
func (g *GroupAdmin) Replay(ctx context.Context, ids ...int64) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	return g.onDead(ctx, ids, replay)
}

// ReplayAll replays every dead delivery of the group.
func (g *GroupAdmin) ReplayAll(ctx context.Context) (int64, error) { return g.onDead(ctx, nil, replay) }

// Discard resolves the given dead deliveries without processing them.
func (g *GroupAdmin) Discard(ctx context.Context, ids ...int64) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	return g.onDead(ctx, ids, discard)
}

// DiscardAll resolves every dead delivery of the group.
func (g *GroupAdmin) DiscardAll(ctx context.Context) (int64, error) {
	return g.onDead(ctx, nil, discard)
}

func (g *GroupAdmin) onDead(ctx context.Context, ids []int64, do func(context.Context, *Client, driver.StreamConfig, string, []int64) (int64, error)) (int64, error) {
	cfg, err := g.resolveGroup(ctx)
	if err != nil {
		return 0, err
	}
	return do(ctx, g.client, cfg, g.name, ids)
}

// Delete removes the group with its cursors, unresolved and dead deliveries
// and reader schemas (Stream.DeleteGroup).
func (g *GroupAdmin) Delete(ctx context.Context) error {
	return g.client.Stream[RawPayload](g.stream).DeleteGroup(ctx, g.name)
}

// ResetTo says where ResetCursors moves a cursor. Make one with
// ResetToEarliest, ResetToLatest, ResetToID, ResetToTime or ResetShift.
type ResetTo struct {
	kind  resetKind
	id    int64
	at    time.Time
	shift int64
}

type resetKind int

const (
	resetNone resetKind = iota
	resetEarliest
	resetLatest
	resetID
	resetTime
	resetShift
)

// ResetToEarliest makes the group read again from the first retained row.
func ResetToEarliest() ResetTo { return ResetTo{kind: resetEarliest} }

// ResetToLatest makes the group skip everything in the log now.
func ResetToLatest() ResetTo { return ResetTo{kind: resetLatest} }

// ResetToID makes row id (or the first row after it) the next the group
// reads in each partition.
func ResetToID(id int64) ResetTo { return ResetTo{kind: resetID, id: id} }

// ResetToTime makes the first row produced at or after t the next the group
// reads, as far as produce times follow ids (they are set by the producers'
// clocks just before the ids are taken).
func ResetToTime(t time.Time) ResetTo { return ResetTo{kind: resetTime, at: t} }

// ResetShift moves the cursor by n rows: forward (skipping n rows) for n > 0,
// back (reading n rows again) for n < 0.
func ResetShift(n int64) ResetTo { return ResetTo{kind: resetShift, shift: n} }

// ResetOptions configure ResetCursors.
type ResetOptions struct {
	To ResetTo
	// Partitions to reset; none means every partition.
	Partitions []int
	// DryRun computes and returns the changes without making them.
	DryRun bool
}

// CursorChange is one planned or made cursor move.
type CursorChange struct {
	Partition int
	// From and To are the last ids passed before and after the reset.
	From, To int64
}

// maxShift bounds ResetShift, so that one reset reads a bounded number of
// rows.
const maxShift = 1_000_000

// ResetCursors moves the group's cursors, like kafka-consumer-groups
// --reset-offsets, and returns the changes (only planned with DryRun). It is
// safe while members run: the move waits for claims in flight, and members'
// next claims read from the new position. A reset never loses a leased,
// delayed or dead delivery: those keep their state and their holders settle
// them as usual, and rows the group still has an exception for are passed
// over when the cursor comes back to them. Moving back delivers resolved rows
// again (at attempt 1); moving forward skips what the cursor passes.
func (g *GroupAdmin) ResetCursors(ctx context.Context, o ResetOptions) ([]CursorChange, error) {
	switch {
	case o.To.kind == resetNone:
		return nil, fmt.Errorf("%w: ResetOptions.To is empty; use ResetToEarliest, ResetToLatest, ResetToID, ResetToTime or ResetShift", ErrInvalidOption)
	case o.To.kind == resetShift && (o.To.shift == 0 || o.To.shift > maxShift || o.To.shift < -maxShift):
		return nil, fmt.Errorf("%w: ResetShift(%d); shift by 1 to %d rows either way", ErrInvalidOption, o.To.shift, maxShift)
	case o.To.kind == resetID && o.To.id < 1:
		return nil, fmt.Errorf("%w: ResetToID(%d); ids start at 1", ErrInvalidOption, o.To.id)
	}
	d, err := g.Describe(ctx)
	if err != nil {
		return nil, err
	}
	cfg, err := g.resolve(ctx)
	if err != nil {
		return nil, err
	}
	parts := o.Partitions
	if parts == nil {
		for _, p := range d.Partitions {
			parts = append(parts, p.Partition)
		}
	}
	var changes []CursorChange
	positions := map[int]int64{}
	for _, p := range parts {
		if p < 0 || p >= len(d.Partitions) {
			return nil, fmt.Errorf("%w: stream %q has partitions 0 to %d; got partition %d", ErrInvalidOption, g.stream, len(d.Partitions)-1, p)
		}
		cur := d.Partitions[p]
		to, err := g.target(ctx, cfg, cur, o.To)
		if err != nil {
			return nil, g.wrap("reset cursors", err)
		}
		changes = append(changes, CursorChange{Partition: p, From: cur.Cursor, To: to})
		positions[p] = to
	}
	if o.DryRun {
		return changes, nil
	}
	if err := g.client.drv.SetCursors(ctx, driver.SetCursorsParams{StreamID: cfg.ID, Group: g.name, Positions: positions}); err != nil {
		return nil, g.wrap("reset cursors", err)
	}
	return changes, nil
}

// target resolves where a partition's cursor goes.
func (g *GroupAdmin) target(ctx context.Context, cfg driver.StreamConfig, cur GroupPartition, to ResetTo) (int64, error) {
	read := func(p driver.ReadRowsParams) (driver.ReadRowsResult, error) {
		p.StreamID, p.Partition = cfg.ID, cur.Partition
		return g.client.drv.ReadRows(ctx, p)
	}
	switch to.kind {
	case resetLatest:
		return cur.HighWater, nil
	case resetEarliest:
		r, err := read(driver.ReadRowsParams{Limit: 1})
		if err != nil || len(r.Rows) == 0 {
			return cur.HighWater, err
		}
		return r.Rows[0].ID - 1, nil
	case resetID:
		return min(to.id-1, cur.HighWater), nil
	case resetTime:
		return seekTime(cur.HighWater, to.at, func(after int64) (*driver.Row, error) {
			r, err := read(driver.ReadRowsParams{AfterID: after, Limit: 1})
			if err != nil || len(r.Rows) == 0 {
				return nil, err
			}
			return &r.Rows[0], nil
		})
	}
	// Shift: walk |n| rows from the cursor, in pages.
	pos, left := cur.Cursor, to.shift
	for left != 0 {
		n := min(abs(left), 10000)
		p := driver.ReadRowsParams{AfterID: pos, Limit: int(n)}
		if left < 0 {
			p = driver.ReadRowsParams{BeforeID: pos + 1, Descending: true, Limit: int(n)}
		}
		r, err := read(p)
		if err != nil {
			return 0, err
		}
		if len(r.Rows) == 0 {
			if left > 0 {
				return cur.HighWater, nil
			}
			return 0, nil
		}
		last := r.Rows[len(r.Rows)-1].ID
		if left > 0 {
			pos, left = last, left-int64(len(r.Rows))
		} else {
			pos, left = last-1, left+int64(len(r.Rows))
		}
		if int64(len(r.Rows)) < n {
			if left > 0 {
				return cur.HighWater, nil
			}
			if left < 0 {
				return 0, nil
			}
		}
	}
	return pos, nil
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// seekTime finds, by bisection over ids, the cursor before the first row
// produced at or after t: about log2(highWater) reads of one row, whatever
// the log's size. first(after) returns the first row with an id above after.
func seekTime(highWater int64, t time.Time, first func(after int64) (*driver.Row, error)) (int64, error) {
	lo, hi := int64(0), highWater // every row up to lo is older than t; the answer is in [lo, hi]
	for lo < hi {
		mid := lo + (hi-lo)/2
		r, err := first(mid)
		switch {
		case err != nil:
			return 0, err
		case r == nil || r.ID > hi:
			hi = mid
		case r.ProducedAt.Before(t):
			lo = r.ID
		default:
			hi = mid
		}
	}
	return lo, nil
}

// BrowseOptions select the rows Stream.Browse reads.
type BrowseOptions struct {
	// Partition reads one partition; nil reads every partition.
	Partition *int
	// AfterID reads rows with ids above it.
	AfterID int64
	// From, when set, starts at the first row produced at or after it (as
	// far as produce times follow ids) instead of at AfterID.
	From time.Time
	// Last reads the newest Limit rows instead of the oldest after AfterID.
	Last bool
	// Versions keeps rows at these versions; none keeps all.
	Versions []int
	// Key keeps rows with this key.
	Key *string
	// Limit is how many rows a page holds: default 100, at most 1000.
	Limit int
}

// BrowsePage is one page of Browse.
type BrowsePage struct {
	Records []Record
	// Next is the AfterID of the next page. A page with fewer records than
	// asked for is not the end: filters may have passed over many rows
	// (each call examines a bounded number); Done says when it is.
	Next int64
	// Done reports that no row after Next exists now.
	Done bool
}

// Record is a stored row, with all its metadata and its raw payload.
type Record struct {
	ID             int64
	Partition      int
	SchemaVersion  int
	Key            string
	HasKey         bool
	RoutingKey     string
	CompactionRank int64
	Headers        map[string]string
	ProducedAt     time.Time
	Payload        json.RawMessage
}

// MaxBrowseLimit bounds BrowseOptions.Limit.
const MaxBrowseLimit = 1000

// Browse reads the log without claiming: no cursor moves, nothing is leased.
// Each call examines a bounded number of rows, so filters that match little
// return short pages on a large log; follow Next until Done.
func (s *Stream[T]) Browse(ctx context.Context, o BrowseOptions) (BrowsePage, error) {
	cfg, err := s.lookup(ctx, false)
	if err != nil {
		return BrowsePage{}, err
	}
	switch {
	case o.Limit == 0:
		o.Limit = 100
	case o.Limit < 0 || o.Limit > MaxBrowseLimit:
		return BrowsePage{}, fmt.Errorf("%w: Browse limit %d; use 1 to %d", ErrInvalidOption, o.Limit, MaxBrowseLimit)
	}
	part := -1
	if o.Partition != nil {
		if *o.Partition < 0 || *o.Partition >= cfg.Partitions {
			return BrowsePage{}, fmt.Errorf("%w: stream %q has partitions 0 to %d; got %d", ErrInvalidOption, s.name, cfg.Partitions-1, *o.Partition)
		}
		part = *o.Partition
	}
	p := driver.ReadRowsParams{StreamID: cfg.ID, Partition: part, AfterID: o.AfterID, Versions: o.Versions, Limit: o.Limit,
		MaxScan: min(max(10*o.Limit, 1000), 10000), Descending: o.Last}
	if o.Key != nil {
		p.Key, p.HasKey = *o.Key, true
	}
	wrap := func(err error) error { return fmt.Errorf("sqlstreams: browse %q: %w", s.name, classify(err)) }
	if !o.From.IsZero() {
		st, err := s.client.drv.Health(ctx, driver.HealthParams{StreamID: cfg.ID, Now: time.Now().UTC()})
		if err != nil {
			return BrowsePage{}, wrap(err)
		}
		hw := int64(0)
		for i, h := range st.HighWater {
			if part < 0 || i == part {
				hw = max(hw, h)
			}
		}
		if p.AfterID, err = seekTime(hw, o.From, func(after int64) (*driver.Row, error) {
			r, err := s.client.drv.ReadRows(ctx, driver.ReadRowsParams{StreamID: cfg.ID, Partition: part, AfterID: after, Limit: 1})
			if err != nil || len(r.Rows) == 0 {
				return nil, err
			}
			return &r.Rows[0], nil
		}); err != nil {
			return BrowsePage{}, wrap(err)
		}
	}
	r, err := s.client.drv.ReadRows(ctx, p)
	if err != nil {
		return BrowsePage{}, wrap(err)
	}
	page := BrowsePage{Next: max(r.Last, p.AfterID), Done: r.Done}
	if o.Last {
		slices.Reverse(r.Rows)
		page = BrowsePage{Done: true}
		if len(r.Rows) > 0 {
			page.Next = r.Rows[len(r.Rows)-1].ID
		}
	}
	for _, row := range r.Rows {
		page.Records = append(page.Records, Record{ID: row.ID, Partition: row.Partition, SchemaVersion: row.SchemaVersion, Key: row.Key,
			HasKey: row.HasKey, RoutingKey: row.RoutingKey, CompactionRank: row.CompactionRank, Headers: row.Headers,
			ProducedAt: row.ProducedAt, Payload: json.RawMessage(row.Payload)})
	}
	return page, nil
}
