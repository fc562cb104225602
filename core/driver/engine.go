package driver

import (
	"fmt"
	"strings"
)

// Engine is an engine that speaks a driver's wire protocol, as the driver
// tells it from the server's version text: PostgreSQL's driver meets
// CockroachDB and YugabyteDB, MySQL's meets TiDB and Vitess. Missing lists
// the capabilities the driver needs that the engine lacks; a driver refuses
// an engine that lacks any at Migrate (Refused), with Advice on what to use
// instead.
type Engine struct {
	Name string
	// Marker is the lower-case text that tells the engine in the version
	// text (EngineOf).
	Marker  string
	Missing []string
	Advice  string
}

// EngineOf tells from the server's version text which engine answers: the
// first of refused whose Marker the text holds (in any case), else the
// engine named fallback, which lacks nothing. It is a pure function of the
// text, so each driver tests it against captured version strings.
func EngineOf(version, fallback string, refused ...Engine) Engine {
	v := strings.ToLower(version)
	for _, e := range refused {
		if strings.Contains(v, e.Marker) {
			return e
		}
	}
	return Engine{Name: fallback}
}

// Refused is Migrate's error for the engine, or nil when it lacks nothing:
// an ErrDatabase with the engine's advice, whose text begins with prefix
// and names the engine and each capability it lacks. unsupported is the
// driver's sentinel (its ErrUnsupportedServer), which errors.Is finds.
func (e Engine) Refused(prefix string, unsupported error) error {
	if len(e.Missing) == 0 {
		return nil
	}
	return &Error{Kind: ErrDatabase, Advice: e.Advice,
		Err: fmt.Errorf("%s%w: %s lacks %s", prefix, unsupported, e.Name, strings.Join(e.Missing, "; "))}
}
