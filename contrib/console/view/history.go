package view

import (
	"slices"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// History is a stream's activity over a window: the points Stream.History
// derives from the samples maintenance takes, with the names of every group
// and version that appears in them so that a chart knows its series before
// it reads the points.
type History struct {
	Stream string `json:"stream"`
	// Window names the span shown ("1h", "24h"); Since is where it starts.
	Window   string         `json:"window"`
	Since    *string        `json:"since"`
	Groups   []string       `json:"groups"`
	Versions []int          `json:"versions"`
	Points   []HistoryPoint `json:"points"`
}

// HistoryPoint is one sample with the rates since the one before it.
// Rates are per second over span_seconds.
type HistoryPoint struct {
	At          *string          `json:"at"`
	SpanSeconds float64          `json:"span_seconds"`
	HighWater   int64            `json:"high_water"`
	ProduceRate float64          `json:"produce_rate"`
	Versions    []HistoryVersion `json:"versions"`
	Groups      []HistoryGroup   `json:"groups"`
}

// HistoryVersion is one version's rows and their net change per second
// (negative when retention removed more than was produced).
type HistoryVersion struct {
	Version  int     `json:"version"`
	Rows     int64   `json:"rows"`
	RowsRate float64 `json:"rows_rate"`
}

// HistoryGroup is one group's lag (unread), dead deliveries, consume rate
// and dead-letter arrivals, with lag and dead per version it reads.
type HistoryGroup struct {
	Group        string                `json:"group"`
	Unread       int64                 `json:"unread"`
	Dead         int64                 `json:"dead"`
	ConsumeRate  float64               `json:"consume_rate"`
	DeadArrivals int64                 `json:"dead_arrivals"`
	Versions     []HistoryGroupVersion `json:"versions"`
}

// HistoryGroupVersion is a group's lag and dead deliveries at one version.
type HistoryGroupVersion struct {
	Version int   `json:"version"`
	Unread  int64 `json:"unread"`
	Dead    int64 `json:"dead"`
}

// Samples reports whether client's driver keeps samples of stream figures
// (driver.SampleStore); without them there is no activity to chart.
func Samples(client *sqlstreams.Client) bool {
	_, ok := client.Driver().(driver.SampleStore)
	return ok
}

// HistoryOf builds the History document of points read since the given
// time.
func HistoryOf(stream, window string, since time.Time, points []sqlstreams.HistoryPoint) History {
	h := History{Stream: stream, Window: window, Since: Time(since), Groups: []string{}, Versions: []int{}, Points: []HistoryPoint{}}
	for _, p := range points {
		hp := HistoryPoint{At: Time(p.At), SpanSeconds: Seconds(p.Span), HighWater: p.HighWater, ProduceRate: p.ProduceRate,
			Versions: []HistoryVersion{}, Groups: []HistoryGroup{}}
		for _, v := range p.Versions {
			hp.Versions = append(hp.Versions, HistoryVersion{Version: v.Version, Rows: v.Rows, RowsRate: v.RowsRate})
			if !slices.Contains(h.Versions, v.Version) {
				h.Versions = append(h.Versions, v.Version)
			}
		}
		for _, g := range p.Groups {
			hg := HistoryGroup{Group: g.Group, Unread: g.Unread, Dead: g.Dead, ConsumeRate: g.ConsumeRate, DeadArrivals: g.DeadArrivals,
				Versions: []HistoryGroupVersion{}}
			for _, v := range g.Versions {
				hg.Versions = append(hg.Versions, HistoryGroupVersion{Version: v.Version, Unread: v.Unread, Dead: v.Dead})
			}
			hp.Groups = append(hp.Groups, hg)
			if !slices.Contains(h.Groups, g.Group) {
				h.Groups = append(h.Groups, g.Group)
			}
		}
		h.Points = append(h.Points, hp)
	}
	slices.Sort(h.Groups)
	slices.Sort(h.Versions)
	return h
}
