package sqlstreams

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// DefaultSampleInterval is how often maintenance samples each stream's
// figures unless WithSampleInterval says otherwise.
const DefaultSampleInterval = time.Minute

// DefaultSampleRetention is how long samples are kept unless
// WithSampleRetention says otherwise: a day of charts.
const DefaultSampleRetention = 24 * time.Hour

// MaxHistoryPoints bounds what Stream.History returns: a day at the default
// interval fits; with a shorter interval the newest points are returned.
const MaxHistoryPoints = 1500

// WithSampleInterval sets the width of the time buckets in which
// maintenance (Client.Maintain, the background loop) stores one sample of
// each stream's figures for Stream.History. Several clients maintaining one
// database store one sample per stream per bucket between them. A sample is
// taken only by a maintenance pass, so an interval shorter than the
// maintenance interval gains nothing. The default is DefaultSampleInterval;
// zero samples nothing. Drivers that keep no samples (driver.SampleStore)
// ignore it.
func WithSampleInterval(d time.Duration) ClientOption {
	return func(c *Client) { c.samples.every = d }
}

// WithSampleRetention sets how long samples are kept; maintenance removes
// older ones. The default is DefaultSampleRetention.
func WithSampleRetention(d time.Duration) ClientOption {
	return func(c *Client) { c.samples.keep = d }
}

// sampling is the client's sampling configuration and what it stored.
type sampling struct {
	every, keep time.Duration

	mu   sync.Mutex
	last map[int64]time.Time // per stream id: the bucket this client last stored or found stored
}

func (s *sampling) validate() error {
	if s.every < 0 {
		return fmt.Errorf("%w: sample interval %v is negative; use 0 to take no samples", ErrInvalidOption, s.every)
	}
	if s.keep <= 0 {
		return fmt.Errorf("%w: sample retention %v; use a positive duration", ErrInvalidOption, s.keep)
	}
	return nil
}

// sampleFigures is the document stored with each sample. Its fields are
// snake_case and stable: samples outlive the binary that wrote them.
type sampleFigures struct {
	HighWater int64           `json:"high_water"`
	Versions  []sampleVersion `json:"versions"`
	Groups    []sampleGroup   `json:"groups,omitempty"`
}

type sampleVersion struct {
	Version int   `json:"version"`
	Rows    int64 `json:"rows"`
}

// sampleGroup is one group at one version. Backlog is the group's rows
// still to settle there: unread, leased and delayed.
type sampleGroup struct {
	Group    string `json:"group"`
	Version  int    `json:"version"`
	Unread   int64  `json:"unread"`
	Backlog  int64  `json:"backlog"`
	Dead     int64  `json:"dead"`
	Distance int64  `json:"distance"`
	// Cursors is the sum of the group's cursors: ids, not rows, so only a
	// bound on how far the group moved.
	Cursors int64 `json:"cursors"`
}

// figuresOf reads what a sample keeps from a stream's health. A document
// over driver.MaxSampleFigures is stored without its groups.
func figuresOf(h Health) string {
	f := sampleFigures{HighWater: h.HighWater, Versions: []sampleVersion{}}
	for _, v := range h.Versions {
		f.Versions = append(f.Versions, sampleVersion{Version: v.Version, Rows: v.Rows})
		for _, g := range v.Groups {
			var cursors int64
			for _, p := range g.Partitions {
				cursors += p.Cursor
			}
			f.Groups = append(f.Groups, sampleGroup{Group: g.Group, Version: v.Version, Unread: g.Unread,
				Backlog: g.Unread + g.Leased + g.Delayed, Dead: g.Dead, Distance: g.CursorDistance, Cursors: cursors})
		}
	}
	b, _ := json.Marshal(f) // plain structs always encode
	if len(b) > driver.MaxSampleFigures {
		f.Groups = nil
		b, _ = json.Marshal(f)
	}
	return string(b)
}

// sampleStreams stores one sample per stream for the current bucket, unless
// this client stored (or found) it already, and prunes old samples. It
// returns how many samples it stored and removed.
func (c *Client) sampleStreams(ctx context.Context, streams []driver.StreamConfig, now time.Time) (stored, removed int64, err error) {
	store, ok := c.drv.(driver.SampleStore)
	if !ok || c.samples.every <= 0 {
		return 0, 0, nil
	}
	bucket := now.UTC().Truncate(c.samples.every)
	var errs []error
	for _, s := range streams {
		if c.sampledAt(s.ID).Equal(bucket) {
			continue
		}
		st, err := c.drv.Health(ctx, driver.HealthParams{StreamID: s.ID, Now: now})
		if errors.Is(err, ErrStreamNotFound) {
			continue
		}
		if err == nil {
			var ok bool
			sample := driver.Sample{StreamID: s.ID, At: bucket, Figures: figuresOf(buildHealth(s, st, now))}
			if ok, err = store.RecordSample(ctx, driver.RecordSampleParams{Sample: sample}); ok {
				stored++
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("sample %q: %w", s.Name, classify(err)))
			continue
		}
		c.samples.mu.Lock()
		c.samples.last[s.ID] = bucket
		c.samples.mu.Unlock()
	}
	c.forgetSampled(streams)
	removed, err = store.PruneSamples(ctx, driver.PruneSamplesParams{Before: now.Add(-c.samples.keep)})
	if err != nil {
		errs = append(errs, fmt.Errorf("prune samples: %w", classify(err)))
	}
	return stored, removed, errors.Join(errs...)
}

// forgetSampled drops what the client remembers of streams that are gone.
func (c *Client) forgetSampled(streams []driver.StreamConfig) {
	live := make(map[int64]bool, len(streams))
	for _, s := range streams {
		live[s.ID] = true
	}
	c.samples.mu.Lock()
	defer c.samples.mu.Unlock()
	maps.DeleteFunc(c.samples.last, func(id int64, _ time.Time) bool { return !live[id] })
}

func (c *Client) sampledAt(streamID int64) time.Time {
	c.samples.mu.Lock()
	defer c.samples.mu.Unlock()
	return c.samples.last[streamID]
}

// HistoryPoint is a stream's figures at one sample, with the rates over the
// span since the sample before it. A rate is a difference of two samples'
// figures divided by the span: where maintenance missed buckets, it is the
// average over the longer span. Produce and consume rates count ids, which
// are rows where the database assigns consecutive ids; under stepped ids
// (MySQL's auto_increment_increment, as Galera sets it) they overstate.
type HistoryPoint struct {
	// At is the start of the sample's time bucket; Span the time since the
	// previous sample.
	At   time.Time
	Span time.Duration
	// HighWater is the greatest id assigned by At; ProduceRate the ids
	// assigned per second over the span (rows appended, and ids a rolled
	// back append used up).
	HighWater   int64
	ProduceRate float64
	Versions    []VersionPoint
	Groups      []GroupPoint
}

// VersionPoint is one schema version at one sample.
type VersionPoint struct {
	Version int
	// Rows counts the version's rows in the log; RowsRate is its change
	// per second over the span: net of what retention and compaction
	// removed, so it can be negative.
	Rows     int64
	RowsRate float64
}

// GroupPoint is one group at one sample, summed over the versions it reads.
type GroupPoint struct {
	Group string
	// Unread is the group's lag: rows past its cursors it will read. Dead
	// counts its dead deliveries.
	Unread int64
	Dead   int64
	// ConsumeRate is the rows the group settled (or passed over: other
	// versions, keys its bindings skip) per second over the span: the ids
	// appended less the growth of what it still has to settle (unread,
	// leased, delayed), never more than its cursors moved.
	ConsumeRate float64
	// DeadArrivals counts deliveries that went dead over the span, net of
	// dead letters replayed or discarded in it.
	DeadArrivals int64
	// Versions are the same figures per version the group reads.
	Versions []GroupVersionPoint
}

// GroupVersionPoint is a group's lag and dead deliveries at one version.
type GroupVersionPoint struct {
	Version int
	Unread  int64
	Dead    int64
}

// History returns the stream's samples taken since the given time, each
// with the rates since the sample before it, oldest first; at most
// MaxHistoryPoints, the newest. Samples are taken by maintenance
// (WithSampleInterval); the first sample in the window only serves as the
// base of the second's rates. It fails with ErrUnsupported when the driver
// keeps no samples.
func (s *Stream[T]) History(ctx context.Context, since time.Time) ([]HistoryPoint, error) {
	store, ok := s.client.drv.(driver.SampleStore)
	if !ok {
		return nil, fmt.Errorf("sqlstreams: history of %q: %w: the %s driver keeps no samples", s.name, ErrUnsupported, s.client.drv.Name())
	}
	cfg, err := s.lookup(ctx, false)
	if err != nil {
		return nil, err
	}
	samples, err := store.ListSamples(ctx, driver.ListSamplesParams{StreamID: cfg.ID, Since: since, Limit: MaxHistoryPoints + 1})
	if err != nil {
		return nil, fmt.Errorf("sqlstreams: history of %q: %w", s.name, classify(err))
	}
	figures := make([]sampleFigures, len(samples))
	for i, sm := range samples {
		if err := json.Unmarshal([]byte(sm.Figures), &figures[i]); err != nil {
			return nil, fmt.Errorf("sqlstreams: history of %q: %w: the sample at %v does not decode: %v", s.name, ErrDatabase, sm.At, err)
		}
	}
	out := make([]HistoryPoint, 0, max(len(samples)-1, 0))
	for i := 1; i < len(samples); i++ {
		out = append(out, historyPoint(samples[i-1].At, samples[i].At, figures[i-1], figures[i]))
	}
	return out, nil
}

// historyPoint derives the point at the later of two consecutive samples.
func historyPoint(prevAt, at time.Time, prev, cur sampleFigures) HistoryPoint {
	span := at.Sub(prevAt)
	perSecond := func(delta int64) float64 {
		if span <= 0 {
			return 0
		}
		return float64(delta) / span.Seconds()
	}
	produced := cur.HighWater - prev.HighWater
	p := HistoryPoint{At: at, Span: span, HighWater: cur.HighWater, ProduceRate: perSecond(produced)}
	rowsBefore := map[int]int64{}
	for _, v := range prev.Versions {
		rowsBefore[v.Version] = v.Rows
	}
	for _, v := range cur.Versions {
		p.Versions = append(p.Versions, VersionPoint{Version: v.Version, Rows: v.Rows, RowsRate: perSecond(v.Rows - rowsBefore[v.Version])})
	}
	before, now := groupTotals(prev.Groups), groupTotals(cur.Groups)
	for _, g := range cur.Groups {
		t := now[g.Group]
		t.point.Versions = append(t.point.Versions, GroupVersionPoint{Version: g.Version, Unread: g.Unread, Dead: g.Dead})
	}
	for _, name := range slices.Sorted(maps.Keys(now)) {
		t, b := now[name], before[name]
		gp := *t.point
		gp.DeadArrivals = max(t.dead-b.dead, 0)
		if b.point != nil { // a group new since the previous sample has no rate yet
			settled := min(produced-(t.backlog-b.backlog), t.cursors-b.cursors)
			gp.ConsumeRate = perSecond(max(settled, 0))
		}
		p.Groups = append(p.Groups, gp)
	}
	return p
}

// groupTotal is one group's figures in one sample, summed over versions.
type groupTotal struct {
	point                  *GroupPoint
	dead, backlog, cursors int64
}

func groupTotals(rows []sampleGroup) map[string]groupTotal {
	out := map[string]groupTotal{}
	for _, r := range rows {
		t, ok := out[r.Group]
		if !ok {
			t.point = &GroupPoint{Group: r.Group}
			t.cursors = r.Cursors // the same at every version
		}
		t.point.Unread += r.Unread
		t.point.Dead += r.Dead
		t.dead += r.Dead
		t.backlog += r.Backlog
		out[r.Group] = t
	}
	return out
}
