package schema

import (
	"fmt"
	"strings"
)

// Level is a compatibility level with Confluent's meaning. Levels are named
// for what the candidate (new) schema promises: BACKWARD means a reader
// using the candidate reads data written with earlier schemas, FORWARD
// means readers using earlier schemas read data written with the
// candidate, FULL means both. Plain levels compare with the latest
// existing schema only; the _TRANSITIVE ones with every existing schema.
//
// The zero Level is "unset", so configuration can tell "not configured"
// from an explicit level; Check treats it as Backward, the registry-wide
// default.
type Level int

// The compatibility levels.
const (
	None Level = iota + 1
	Backward
	BackwardTransitive
	Forward
	ForwardTransitive
	Full
	FullTransitive
)

var levelNames = map[Level]string{
	None:               "NONE",
	Backward:           "BACKWARD",
	BackwardTransitive: "BACKWARD_TRANSITIVE",
	Forward:            "FORWARD",
	ForwardTransitive:  "FORWARD_TRANSITIVE",
	Full:               "FULL",
	FullTransitive:     "FULL_TRANSITIVE",
}

// Levels lists the valid levels in a stable order.
func Levels() []Level {
	return []Level{None, Backward, BackwardTransitive, Forward, ForwardTransitive, Full, FullTransitive}
}

func (l Level) String() string {
	if name, ok := levelNames[l]; ok {
		return name
	}
	if l == 0 {
		return "UNSET"
	}
	return fmt.Sprintf("Level(%d)", int(l))
}

// ParseLevel reads a level name such as "BACKWARD" or "full_transitive"
// (case and surrounding space are ignored). Unknown names are refused with
// the list of valid ones.
func ParseLevel(s string) (Level, error) {
	want := strings.ToUpper(strings.TrimSpace(s))
	for _, l := range Levels() {
		if levelNames[l] == want {
			return l, nil
		}
	}
	names := make([]string, 0, len(levelNames))
	for _, l := range Levels() {
		names = append(names, levelNames[l])
	}
	return 0, fmt.Errorf("schema: unknown compatibility level %q; use one of %s", s, strings.Join(names, ", "))
}

// MarshalText writes the level's name, so a Level reads naturally in JSON
// or YAML configuration.
func (l Level) MarshalText() ([]byte, error) {
	if _, ok := levelNames[l]; !ok {
		return nil, fmt.Errorf("schema: cannot marshal invalid compatibility level %d", int(l))
	}
	return []byte(levelNames[l]), nil
}

// UnmarshalText parses a level name with ParseLevel.
func (l *Level) UnmarshalText(b []byte) error {
	v, err := ParseLevel(string(b))
	if err != nil {
		return err
	}
	*l = v
	return nil
}

func (l Level) effective() Level {
	if _, ok := levelNames[l]; ok {
		return l
	}
	return Backward
}

func (l Level) backward() bool {
	switch l {
	case Backward, BackwardTransitive, Full, FullTransitive:
		return true
	}
	return false
}

func (l Level) forward() bool {
	switch l {
	case Forward, ForwardTransitive, Full, FullTransitive:
		return true
	}
	return false
}

func (l Level) transitive() bool {
	switch l {
	case BackwardTransitive, ForwardTransitive, FullTransitive:
		return true
	}
	return false
}

// Direction says which side of a comparison reads and which wrote.
type Direction int

const (
	// NewReadsOld is the backward check: a reader using the candidate
	// schema reads data written with an existing one.
	NewReadsOld Direction = iota + 1
	// OldReadsNew is the forward check: a reader using an existing schema
	// reads data written with the candidate.
	OldReadsNew
)

func (d Direction) String() string {
	switch d {
	case NewReadsOld:
		return "new reader, old data"
	case OldReadsNew:
		return "old reader, new data"
	}
	return fmt.Sprintf("Direction(%d)", int(d))
}

// Problem is one incompatible difference found by Check.
type Problem struct {
	Difference
	// Against is the index, in the existing slice passed to Check, of the
	// revision the candidate was compared with.
	Against   int
	Direction Direction
}

func (p Problem) String() string {
	return fmt.Sprintf("revision %d (%s): %s at %s: %s", p.Against, p.Direction, p.Kind, p.Path, p.Message)
}

// Report is the outcome of Check. Problems lists every incompatible
// difference against every compared revision, not just the first.
type Report struct {
	Level    Level  // the level applied (an unset level reads as Backward)
	Policy   Policy // the rules applied
	Compared []int  // indexes into existing that were compared, oldest first
	Problems []Problem
}

// Compatible reports whether the candidate satisfies the level.
func (r *Report) Compatible() bool { return len(r.Problems) == 0 }

// String summarizes the report, one problem per line.
func (r *Report) String() string {
	var b strings.Builder
	if r.Compatible() {
		fmt.Fprintf(&b, "compatible at level %s (%s policy; compared revisions %v)", r.Level, r.Policy, r.Compared)
		return b.String()
	}
	fmt.Fprintf(&b, "incompatible at level %s (%s policy): %d problem(s)", r.Level, r.Policy, len(r.Problems))
	for _, p := range r.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// Check reports whether candidate may follow existing (oldest first) at the
// given level under policy. With NONE nothing is compared. A plain level
// compares the candidate with the last existing schema only; a transitive
// level with each of them. Backward directions diff existing→candidate,
// forward directions diff candidate→existing; FULL does both. It is Judge
// with JSON documents.
func Check(level Level, existing []*Schema, candidate *Schema, policy Policy) *Report {
	docs := make([]Document, len(existing))
	for i, s := range existing {
		docs[i] = JSONDocument(s, policy)
	}
	r := Judge(level, docs, JSONDocument(candidate, policy))
	r.Policy = policy
	return r
}

func (r *Report) add(ds []Difference, against int, dir Direction) {
	for _, d := range ds {
		if !d.Compatible {
			r.Problems = append(r.Problems, Problem{Difference: d, Against: against, Direction: dir})
		}
	}
}
