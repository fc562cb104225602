package view

import (
	"encoding/json"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// Setting is a registry setting in force and where it is set: "stream",
// "registry" (registry-wide) or "default".
type Setting struct {
	Value string `json:"value"`
	Scope string `json:"scope"`
}

// LevelOf and ModeOf are the views of the registry's settings.
func LevelOf(s sqlstreams.Setting[schema.Level]) Setting {
	return Setting{Value: s.Value.String(), Scope: s.Scope}
}

// ModeOf is the view of a mode setting.
func ModeOf(s sqlstreams.Setting[sqlstreams.Mode]) Setting {
	return Setting{Value: string(s.Value), Scope: s.Scope}
}

// Reader is a reader schema a group registered.
type Reader struct {
	Group        string  `json:"group"`
	Version      int     `json:"version"`
	Revision     int     `json:"revision"`
	RegisteredAt *string `json:"registered_at"`
}

// Revision is one schema revision with the groups that read it.
type Revision struct {
	Revision    int      `json:"revision"`
	Fingerprint string   `json:"fingerprint"`
	CreatedAt   *string  `json:"created_at"`
	Readers     []string `json:"readers"`
}

// SchemaVersion is the revisions recorded at one version, with its subject
// in the Confluent REST naming.
type SchemaVersion struct {
	Version   int        `json:"version"`
	Subject   string     `json:"subject"`
	Revisions []Revision `json:"revisions"`
}

// Schemas is a stream's registry: the settings in force, the revisions per
// version and the readers. NoRegistry is set, and the rest empty, when the
// driver keeps no registry.
type Schemas struct {
	Stream     string          `json:"stream"`
	NoRegistry bool            `json:"no_registry"`
	Level      *Setting        `json:"level"`
	Mode       *Setting        `json:"mode"`
	Versions   []SchemaVersion `json:"versions"`
	Readers    []Reader        `json:"readers"`
}

// Difference is one change between two schemas, with whether it is
// backward compatible on its own.
type Difference struct {
	Kind       string `json:"kind"`
	Path       string `json:"path"`
	Message    string `json:"message"`
	Compatible bool   `json:"compatible"`
}

// Problem is an incompatible difference found in one direction.
type Problem struct {
	Direction string `json:"direction"`
	Kind      string `json:"kind"`
	Path      string `json:"path"`
	Message   string `json:"message"`
}

// SchemaDiff is two revisions of a version compared: every difference from
// a to b, and the problems registering b after a would meet at level.
type SchemaDiff struct {
	Stream      string          `json:"stream"`
	Version     int             `json:"version"`
	Revisions   []int           `json:"revisions"`
	A           int             `json:"a"`
	B           int             `json:"b"`
	ASchema     json.RawMessage `json:"a_schema"`
	BSchema     json.RawMessage `json:"b_schema"`
	Level       string          `json:"level"`
	LevelSource string          `json:"level_source"`
	Compatible  bool            `json:"compatible"`
	Differences []Difference    `json:"differences"`
	Problems    []Problem       `json:"problems"`
}

// DifferencesOf and ProblemsOf are the views of the diff engine's answers.
func DifferencesOf(ds []schema.Difference) []Difference {
	out := []Difference{}
	for _, d := range ds {
		out = append(out, Difference{Kind: string(d.Kind), Path: d.Path, Message: d.Message, Compatible: d.Compatible})
	}
	return out
}

// ProblemsOf is the view of a check's problems.
func ProblemsOf(ps []schema.Problem) []Problem {
	out := []Problem{}
	for _, p := range ps {
		out = append(out, Problem{Direction: p.Direction.String(), Kind: string(p.Kind), Path: p.Path, Message: p.Message})
	}
	return out
}

// Subject is one stream version in the Confluent REST naming.
type Subject struct {
	Subject        string  `json:"subject"`
	Stream         string  `json:"stream"`
	Version        int     `json:"version"`
	Revisions      int     `json:"revisions"`
	LatestRevision int     `json:"latest_revision"`
	Level          Setting `json:"level"`
	Mode           Setting `json:"mode"`
}

// Registry is the registry-wide settings and every subject.
type Registry struct {
	NoRegistry bool      `json:"no_registry"`
	Level      *Setting  `json:"level"`
	Mode       *Setting  `json:"mode"`
	Subjects   []Subject `json:"subjects"`
}

// Features is what the console and its driver can do.
type Features struct {
	Driver string `json:"driver"`
	// Notify: the driver wakes consumers across processes.
	Notify bool `json:"notify"`
	// ReadOnly: the console's actions are off.
	ReadOnly bool `json:"read_only"`
	// Registry: the driver keeps a schema registry.
	Registry bool   `json:"registry"`
	Identity string `json:"identity"`
	// FormToken is what a scripted client sends as the X-CSRF-Token header
	// (or the csrf form field) with a POST.
	FormToken string `json:"form_token"`
}

// StreamSummary is one stream of the console's overview: its configuration
// with its versions, group names and backlog summed over every group, its
// health, and the retirement verdict of each version that has a newer one.
type StreamSummary struct {
	Stream
	HighWater  int64            `json:"high_water"`
	Versions   []int            `json:"versions"`
	Groups     []string         `json:"groups"`
	Unread     int64            `json:"unread"`
	Dead       int64            `json:"dead"`
	Status     Status           `json:"status"`
	Retirement []VersionVerdict `json:"retirement"`
}

// Overview is the console's list of streams with their summaries.
type Overview struct {
	Streams []StreamSummary `json:"streams"`
}
