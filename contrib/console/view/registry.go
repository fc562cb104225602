package view

import (
	"encoding/json"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// Setting is a registry setting in force and where it is set: "version"
// (a stream version's own), "stream", "subject" (a free subject's own),
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

// Revision is one schema revision with the groups that read it; Deleted
// marks a soft-deleted one (listed only when asked for).
type Revision struct {
	Revision    int      `json:"revision"`
	Fingerprint string   `json:"fingerprint"`
	CreatedAt   *string  `json:"created_at"`
	Readers     []string `json:"readers"`
	Deleted     bool     `json:"deleted"`
}

// SchemaVersion is the revisions recorded at one version, with its subject
// in the Confluent REST naming and the level and mode that judge them.
type SchemaVersion struct {
	Version   int        `json:"version"`
	Subject   string     `json:"subject"`
	Level     Setting    `json:"level"`
	Mode      Setting    `json:"mode"`
	Revisions []Revision `json:"revisions"`
}

// Schemas is a stream's registry: the settings in force, the revisions per
// version and the readers. NoRegistry is set, and the rest empty, when the
// driver keeps no registry.
type Schemas struct {
	Stream     string `json:"stream"`
	NoRegistry bool   `json:"no_registry"`
	// Deleted is set when the soft-deleted revisions are listed too.
	Deleted  bool            `json:"deleted"`
	Level    *Setting        `json:"level"`
	Mode     *Setting        `json:"mode"`
	Versions []SchemaVersion `json:"versions"`
	Readers  []Reader        `json:"readers"`
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

// Comparison is two stored documents of one subject or version judged
// against each other with the client's formats: A is the existing one, B
// the later one. ASchema and BSchema are the documents as the registry
// shows them: a JSON Schema's canonical form or an Avro schema as
// registered (JSON), a Protobuf schema's .proto text (a JSON string).
// Differences are what a reader of B meets on data written with A;
// Problems are the ones that break reading in the directions Level checks.
type Comparison struct {
	Type        string          `json:"type"`
	ASchema     json.RawMessage `json:"a_schema"`
	BSchema     json.RawMessage `json:"b_schema"`
	Level       string          `json:"level"`
	LevelSource string          `json:"level_source"`
	Compatible  bool            `json:"compatible"`
	Differences []Difference    `json:"differences"`
	Problems    []Problem       `json:"problems"`
}

// SchemaDiff is two revisions of a stream version compared.
type SchemaDiff struct {
	Stream    string `json:"stream"`
	Version   int    `json:"version"`
	Revisions []int  `json:"revisions"`
	A         int    `json:"a"`
	B         int    `json:"b"`
	Comparison
}

// SubjectDiff is two versions of a free subject compared.
type SubjectDiff struct {
	Subject  string `json:"subject"`
	Versions []int  `json:"versions"`
	A        int    `json:"a"`
	B        int    `json:"b"`
	Comparison
}

// SchemaText is a document for a JSON field: itself when it is JSON, else
// (a .proto text) a JSON string holding it.
func SchemaText(text string) json.RawMessage {
	if json.Valid([]byte(text)) {
		return json.RawMessage(text)
	}
	quoted, _ := json.Marshal(text)
	return quoted
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

// Subject is one stream version in the Confluent REST naming, with the
// type of its latest revision.
type Subject struct {
	Subject        string  `json:"subject"`
	Stream         string  `json:"stream"`
	Version        int     `json:"version"`
	Type           string  `json:"type"`
	Revisions      int     `json:"revisions"`
	LatestRevision int     `json:"latest_revision"`
	Level          Setting `json:"level"`
	Mode           Setting `json:"mode"`
}

// FreeSubject is a subject that is a registry subject of its own (such as
// "orders-value"), bound to no stream: its live versions and its latest.
type FreeSubject struct {
	Subject  string  `json:"subject"`
	Versions int     `json:"versions"`
	Latest   int     `json:"latest_version"`
	ID       int64   `json:"latest_id"`
	Type     string  `json:"type"`
	Level    Setting `json:"level"`
	Mode     Setting `json:"mode"`
}

// Registry is the registry-wide settings, every stream version's subject
// and every free subject.
type Registry struct {
	NoRegistry   bool          `json:"no_registry"`
	Level        *Setting      `json:"level"`
	Mode         *Setting      `json:"mode"`
	Subjects     []Subject     `json:"subjects"`
	FreeSubjects []FreeSubject `json:"free_subjects"`
}

// SubjectReference binds a name a document uses to another subject's
// version.
type SubjectReference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// SubjectVersion is one version of a free subject with its document
// (shown as Comparison shows one) and references.
type SubjectVersion struct {
	Version     int                `json:"version"`
	ID          int64              `json:"id"`
	Type        string             `json:"type"`
	Fingerprint string             `json:"fingerprint"`
	CreatedAt   *string            `json:"created_at"`
	Deleted     bool               `json:"deleted"`
	References  []SubjectReference `json:"references"`
	Schema      json.RawMessage    `json:"schema"`
}

// SubjectPage is a free subject: its settings and every version, the
// soft-deleted ones marked.
type SubjectPage struct {
	Subject  string           `json:"subject"`
	Level    Setting          `json:"level"`
	Mode     Setting          `json:"mode"`
	Versions []SubjectVersion `json:"versions"`
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
