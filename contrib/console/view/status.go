package view

import (
	"fmt"
	"slices"
	"time"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// The states of a group's or a stream's health, worst last. Health says
// whether work is getting done now; it is separate from retirement (can an
// old version go?), which only a version with a newer one beside it has.
const (
	StateOK             = "ok"               // nothing waits, or live consumers work on it
	StateLagging        = "lagging"          // rows wait to be read
	StatePaused         = "paused"           // an operator paused it: no member claims until resumed
	StateNoLiveConsumer = "no_live_consumer" // no client running the group beats
	StateDeadLetters    = "dead_letters"     // deliveries died and wait for replay or discard
)

var severity = []string{StateOK, StateLagging, StatePaused, StateNoLiveConsumer, StateDeadLetters}

// Status is a group's or a stream's health: the worst state and every
// reason found, in words.
type Status struct {
	State   string   `json:"state"`
	Reasons []string `json:"reasons"`
}

func (s *Status) add(state, reason string) {
	if slices.Index(severity, state) > slices.Index(severity, s.State) {
		s.State = state
	}
	s.Reasons = append(s.Reasons, reason)
}

// groupStatus judges a group from its backlog, its live members (nil:
// unknown, so never "no live consumer") and when it was paused (nil: it
// runs).
func groupStatus(unread, dead int64, live *int, pausedAt *string) Status {
	s := Status{State: StateOK, Reasons: []string{}}
	if pausedAt != nil {
		since := *pausedAt
		if t, err := time.Parse(time.RFC3339Nano, since); err == nil {
			since = t.UTC().Format(time.RFC3339)
		}
		s.add(StatePaused, "paused since "+since+"; no member claims until it is resumed")
	}
	if dead > 0 {
		s.add(StateDeadLetters, fmt.Sprintf("%d dead letter(s) to replay or discard", dead))
	}
	if live != nil && *live == 0 {
		s.add(StateNoLiveConsumer, "no live consumer")
	}
	if unread > 0 {
		s.add(StateLagging, fmt.Sprintf("%d unread", unread))
	}
	return s
}

// StreamStatus is the worst of its groups' health, each reason naming its
// group. A stream no group reads is ok: no consumer is owed anything.
func StreamStatus(groups []Group) Status {
	s := Status{State: StateOK, Reasons: []string{}}
	for _, g := range groups {
		for _, r := range g.Status.Reasons {
			s.Reasons = append(s.Reasons, g.Name+": "+r)
		}
		if slices.Index(severity, g.Status.State) > slices.Index(severity, s.State) {
			s.State = g.Status.State
		}
	}
	return s
}

// NewestVersion is the greatest version in the log or read by a group:
// the one every older version retires in favour of.
func NewestVersion(h sqlstreams.Health, groups []sqlstreams.GroupInfo) int {
	n := 0
	for _, vh := range h.Versions {
		n = max(n, vh.Version)
	}
	for _, g := range groups {
		if !g.AllVersions {
			n = max(n, g.SchemaVersion)
		}
	}
	return n
}

// VersionVerdict is an older version's retirement verdict.
type VersionVerdict struct {
	Version   int    `json:"version"`
	Retirable bool   `json:"retirable"`
	Verdict   string `json:"verdict"`
}

// Retiring lists the verdicts of the versions older than the newest: only
// a version with a newer one can be retired.
func Retiring(h sqlstreams.Health, groups []sqlstreams.GroupInfo) []VersionVerdict {
	newest, out := NewestVersion(h, groups), []VersionVerdict{}
	for _, vh := range h.Versions {
		if vh.Version < newest {
			out = append(out, VersionVerdict{Version: vh.Version, Retirable: vh.Retirable, Verdict: vh.Verdict()})
		}
	}
	return out
}
