package sqlstreams

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// The schema registry lives in the same database as the streams. The schema
// version number is the compatibility boundary: across versions, groups are
// separate (or use a converter). Within one version the registry keeps the
// shape honest: every producer and consumer registration records the JSON
// Schema of its Go type as a revision, and a new revision at an existing
// version must pass the stream's compatibility level, so a struct edited
// without bumping SchemaVersion() is refused before it writes a row.
//
// Registrations also pair the schemas that actually meet: a reader (a
// group's consumer type) is checked against every writer revision still in
// the retained log at its version, and a new writer against every
// registered reader at its version. Rows carry the revision that wrote
// them, which is how the log knows the revisions it still holds.

var (
	// ErrIncompatibleSchema: a registration's schema breaks the stream's
	// compatibility level or a deployed reader/writer pair. Nothing was
	// written. Use errors.As with *IncompatibleSchemaError for the problems.
	ErrIncompatibleSchema = errors.New("incompatible schema")
	// ErrReadOnly: the registry mode is READONLY where the change applies.
	ErrReadOnly = errors.New("schema registry is read-only")
	// ErrNoRegistry: the driver does not store a schema registry.
	ErrNoRegistry = errors.New("driver has no schema registry")
)

// RegistryWide names the registry-wide scope in level and mode calls; any
// other value names a stream.
const RegistryWide = ""

// Mode says which registrations the registry accepts.
type Mode string

const (
	// ModeReadWrite accepts new revisions that pass the level (the default).
	ModeReadWrite Mode = "READWRITE"
	// ModeReadOnly accepts no new revision, version or setting change;
	// registrations whose schema is already recorded still succeed.
	ModeReadOnly Mode = "READONLY"
	// ModeImport records revisions without checking compatibility, for
	// restoring a registry's history.
	ModeImport Mode = "IMPORT"
)

// ParseMode accepts a mode name in any case.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToUpper(strings.TrimSpace(s))); m {
	case ModeReadWrite, ModeReadOnly, ModeImport:
		return m, nil
	}
	return "", fmt.Errorf("%w: unknown registry mode %q; use READWRITE, READONLY or IMPORT", ErrInvalidOption, s)
}

// Registry is the schema registry of a client's database.
type Registry struct {
	client *Client
}

// Registry returns the client's schema registry.
func (c *Client) Registry() *Registry { return &Registry{client: c} }

func (r *Registry) store() (driver.Registry, error) {
	if err := r.client.checkOpen(); err != nil {
		return nil, err
	}
	store, ok := r.client.drv.(driver.Registry)
	if !ok {
		return nil, fmt.Errorf("sqlstreams: %s: %w", r.client.drv.Name(), ErrNoRegistry)
	}
	return store, nil
}

// scope resolves a stream name to its id; RegistryWide is 0.
func (r *Registry) scope(ctx context.Context, stream string) (int64, error) {
	if stream == RegistryWide {
		return 0, nil
	}
	cfg, err := r.client.Stream[RawPayload](stream).lookup(ctx, false)
	return cfg.ID, err
}

// Setting is an effective level or mode and where it comes from.
type Setting[V any] struct {
	Value V
	// Scope is "stream", "registry" (registry-wide) or "default".
	Scope string
}

// Level returns the compatibility level in force for a stream (or, for
// RegistryWide, the registry-wide one), and where it is set.
func (r *Registry) Level(ctx context.Context, stream string) (Setting[schema.Level], error) {
	streamSet, global, err := r.settings(ctx, stream)
	if err != nil {
		return Setting[schema.Level]{}, err
	}
	level, scope := effectiveLevel(streamSet, global)
	return Setting[schema.Level]{Value: level, Scope: scope}, nil
}

// Mode returns the registry mode in force for a stream (or RegistryWide).
func (r *Registry) Mode(ctx context.Context, stream string) (Setting[Mode], error) {
	streamSet, global, err := r.settings(ctx, stream)
	if err != nil {
		return Setting[Mode]{}, err
	}
	mode, scope := effectiveMode(streamSet, global)
	return Setting[Mode]{Value: mode, Scope: scope}, nil
}

func (r *Registry) settings(ctx context.Context, stream string) (streamSet, global driver.RegistrySettings, err error) {
	store, err := r.store()
	if err != nil {
		return streamSet, global, err
	}
	id, err := r.scope(ctx, stream)
	if err != nil {
		return streamSet, global, err
	}
	if global, err = store.RegistrySettings(ctx, 0); err != nil {
		return streamSet, global, fmt.Errorf("sqlstreams: registry settings: %w", err)
	}
	if id != 0 {
		if streamSet, err = store.RegistrySettings(ctx, id); err != nil {
			return streamSet, global, fmt.Errorf("sqlstreams: registry settings of %q: %w", stream, err)
		}
	}
	return streamSet, global, nil
}

func effectiveLevel(streamSet, global driver.RegistrySettings) (schema.Level, string) {
	for _, s := range []struct{ value, scope string }{{streamSet.Level, "stream"}, {global.Level, "registry"}} {
		if l, err := schema.ParseLevel(s.value); s.value != "" && err == nil {
			return l, s.scope
		}
	}
	return schema.Backward, "default"
}

func effectiveMode(streamSet, global driver.RegistrySettings) (Mode, string) {
	for _, s := range []struct{ value, scope string }{{streamSet.Mode, "stream"}, {global.Mode, "registry"}} {
		if m, err := ParseMode(s.value); s.value != "" && err == nil {
			return m, s.scope
		}
	}
	return ModeReadWrite, "default"
}

// SetLevel sets the compatibility level of a stream, or registry-wide for
// RegistryWide. A stream's own level wins over the registry-wide one.
func (r *Registry) SetLevel(ctx context.Context, stream string, level schema.Level) error {
	if _, err := schema.ParseLevel(level.String()); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidOption, err)
	}
	return r.update(ctx, stream, false, func(s *driver.RegistrySettings) { s.Level = level.String() })
}

// ClearLevel removes a stream's own level (or the registry-wide one), so the
// next scope's level applies again.
func (r *Registry) ClearLevel(ctx context.Context, stream string) error {
	return r.update(ctx, stream, false, func(s *driver.RegistrySettings) { s.Level = "" })
}

// SetMode sets the registry mode of a stream, or registry-wide for
// RegistryWide. A stream's own mode wins over the registry-wide one.
func (r *Registry) SetMode(ctx context.Context, stream string, mode Mode) error {
	m, err := ParseMode(string(mode))
	if err != nil {
		return err
	}
	return r.update(ctx, stream, true, func(s *driver.RegistrySettings) { s.Mode = string(m) })
}

// ClearMode removes a stream's own mode (or the registry-wide one).
func (r *Registry) ClearMode(ctx context.Context, stream string) error {
	return r.update(ctx, stream, true, func(s *driver.RegistrySettings) { s.Mode = "" })
}

// update changes a scope's settings. READONLY refuses level changes; mode
// changes are always allowed, or a read-only registry could never reopen.
func (r *Registry) update(ctx context.Context, stream string, modeChange bool, change func(*driver.RegistrySettings)) error {
	store, err := r.store()
	if err != nil {
		return err
	}
	id, err := r.scope(ctx, stream)
	if err != nil {
		return err
	}
	var global driver.RegistrySettings
	if id != 0 {
		if global, err = store.RegistrySettings(ctx, 0); err != nil {
			return err
		}
	}
	return store.UpdateRegistrySettings(ctx, id, func(s *driver.RegistrySettings) error {
		if !modeChange {
			streamSet := *s
			if id == 0 {
				global, streamSet = *s, driver.RegistrySettings{}
			}
			if mode, scope := effectiveMode(streamSet, global); mode == ModeReadOnly {
				return readOnlyError(stream, scope, "change the compatibility level")
			}
		}
		change(s)
		return nil
	})
}

func readOnlyError(stream, scope, what string) error {
	where := "registry-wide"
	if scope == "stream" {
		where = fmt.Sprintf("on stream %q", stream)
	}
	return fmt.Errorf("sqlstreams: cannot %s: %w (mode READONLY set %s); set the mode to READWRITE first", what, ErrReadOnly, where)
}

// Revision is one recorded schema of a stream at a version.
type Revision struct {
	Version     int
	Revision    int
	Fingerprint string
	Schema      *schema.Schema
	CreatedAt   time.Time
}

// Revisions lists a stream's recorded schemas at version, or at every
// version when version is 0.
func (r *Registry) Revisions(ctx context.Context, stream string, version int) ([]Revision, error) {
	store, err := r.store()
	if err != nil {
		return nil, err
	}
	id, err := r.scope(ctx, stream)
	if err != nil {
		return nil, err
	}
	revs, err := store.SchemaRevisions(ctx, id, version)
	if err != nil {
		return nil, fmt.Errorf("sqlstreams: revisions of %q: %w", stream, err)
	}
	out := make([]Revision, len(revs))
	for i, rv := range revs {
		s, err := schema.Parse(rv.Schema)
		if err != nil {
			return nil, fmt.Errorf("sqlstreams: stored schema %q v%d r%d: %w", stream, rv.Version, rv.Revision, err)
		}
		out[i] = Revision{Version: rv.Version, Revision: rv.Revision, Fingerprint: rv.Fingerprint, Schema: s, CreatedAt: rv.CreatedAt}
	}
	return out, nil
}

// Reader is a group's registered reader schema.
type Reader struct {
	Group        string
	Version      int
	Revision     int
	RegisteredAt time.Time
}

// Readers lists the reader schemas registered by a stream's groups.
func (r *Registry) Readers(ctx context.Context, stream string) ([]Reader, error) {
	store, err := r.store()
	if err != nil {
		return nil, err
	}
	id, err := r.scope(ctx, stream)
	if err != nil {
		return nil, err
	}
	rs, err := store.Readers(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("sqlstreams: readers of %q: %w", stream, err)
	}
	out := make([]Reader, len(rs))
	for i, rd := range rs {
		out[i] = Reader{Group: rd.Group, Version: rd.Version, Revision: rd.Revision, RegisteredAt: rd.RegisteredAt}
	}
	return out, nil
}

// IncompatibleSchemaError lists why a registration was refused. It matches
// ErrIncompatibleSchema with errors.Is.
type IncompatibleSchemaError struct {
	Stream  string
	Type    string // the Go type, or "schema document" for a dry run of one
	Version int
	Level   schema.Level
	// Against names what the candidate was compared with, one per problem
	// group: "revision 2" or "reader group fraud-scoring (revision 1)".
	Problems []SchemaProblem
}

// SchemaProblem is one incompatible difference.
type SchemaProblem struct {
	Against string
	schema.Problem
}

func (e *IncompatibleSchemaError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sqlstreams: %s on stream %q is not compatible with schema version %d at level %s: %d problem(s)",
		e.Type, e.Stream, e.Version, e.Level, len(e.Problems))
	for _, p := range e.Problems {
		fmt.Fprintf(&b, "\n  - against %s (%s): %s at %s: %s", p.Against, p.Direction, p.Kind, p.Path, p.Message)
	}
	fmt.Fprintf(&b, "\nNothing was written. If the change is intended, give the type a new SchemaVersion() (%d) and run a group per version; otherwise restore the fields readers depend on.", e.Version+1)
	return b.String()
}

// Is makes errors.Is(err, ErrIncompatibleSchema) true.
func (e *IncompatibleSchemaError) Is(target error) bool { return target == ErrIncompatibleSchema }

// registration is what a producer or consumer registration records.
type registration struct {
	stream  driver.StreamConfig
	typ     string
	version int
	schema  *schema.Schema
	group   string // set for a consumer: it registers as a reader
}

// record records the registration's schema, checking the level and the
// deployed pairs first, and returns its revision (0 without a registry).
func (r *Registry) record(ctx context.Context, reg registration) (int, error) {
	store, ok := r.client.drv.(driver.Registry)
	if !ok {
		return 0, nil
	}
	streamSet, err := store.RegistrySettings(ctx, reg.stream.ID)
	if err != nil {
		return 0, err
	}
	global, err := store.RegistrySettings(ctx, 0)
	if err != nil {
		return 0, err
	}
	level, _ := effectiveLevel(streamSet, global)
	mode, _ := effectiveMode(streamSet, global)
	if mode != ModeImport && level != schema.None {
		if err := r.checkPairs(ctx, store, reg, level); err != nil {
			return 0, err
		}
	}
	canonical := reg.schema.Canonical()
	rev, _, err := store.RecordSchema(ctx, driver.SchemaRevision{StreamID: reg.stream.ID, Version: reg.version,
		Fingerprint: reg.schema.Fingerprint(), Schema: canonical, CreatedAt: time.Now().UTC()},
		func(existing []driver.SchemaRevision, streamSet, global driver.RegistrySettings) error {
			mode, scope := effectiveMode(streamSet, global)
			switch {
			case mode == ModeReadOnly:
				return readOnlyError(reg.stream.Name, scope, fmt.Sprintf("record a new schema for %s at version %d", reg.typ, reg.version))
			case mode == ModeImport || len(existing) == 0:
				return nil
			}
			level, _ := effectiveLevel(streamSet, global)
			return r.gate(reg, level, existing)
		})
	if err != nil {
		if errors.Is(err, ErrIncompatibleSchema) || errors.Is(err, ErrReadOnly) {
			return 0, err
		}
		return 0, fmt.Errorf("sqlstreams: record schema of %s on %q: %w", reg.typ, reg.stream.Name, err)
	}
	if reg.group != "" {
		if err := store.RecordReader(ctx, driver.Reader{StreamID: reg.stream.ID, Group: reg.group, Version: reg.version,
			Revision: rev.Revision, RegisteredAt: time.Now().UTC()}); err != nil {
			return 0, fmt.Errorf("sqlstreams: record reader %q on %q: %w", reg.group, reg.stream.Name, err)
		}
	}
	return rev.Revision, nil
}

// gate checks a candidate against the existing revisions at its version.
func (r *Registry) gate(reg registration, level schema.Level, existing []driver.SchemaRevision) error {
	schemas := make([]*schema.Schema, len(existing))
	for i, e := range existing {
		s, err := schema.Parse(e.Schema)
		if err != nil {
			return fmt.Errorf("stored schema revision %d: %w", e.Revision, err)
		}
		schemas[i] = s
	}
	report := schema.Check(level, schemas, reg.schema, schema.GoAware)
	if report.Compatible() {
		return nil
	}
	e := &IncompatibleSchemaError{Stream: reg.stream.Name, Type: reg.typ, Version: reg.version, Level: report.Level}
	for _, p := range report.Problems {
		e.Problems = append(e.Problems, SchemaProblem{Against: fmt.Sprintf("revision %d", existing[p.Against].Revision), Problem: p})
	}
	return e
}

// checkPairs checks the pairs that exist: a reader against the writer
// revisions still in the log at its version, a writer against the
// registered readers at its version.
func (r *Registry) checkPairs(ctx context.Context, store driver.Registry, reg registration, level schema.Level) error {
	revs, err := store.SchemaRevisions(ctx, reg.stream.ID, reg.version)
	if err != nil {
		return err
	}
	byRevision := map[int]driver.SchemaRevision{}
	for _, rv := range revs {
		byRevision[rv.Revision] = rv
	}
	e := &IncompatibleSchemaError{Stream: reg.stream.Name, Type: reg.typ, Version: reg.version, Level: level}
	compare := func(against string, stored driver.SchemaRevision, readerIsCandidate bool) error {
		if stored.Fingerprint == reg.schema.Fingerprint() {
			return nil
		}
		other, err := schema.Parse(stored.Schema)
		if err != nil {
			return err
		}
		// The candidate reads the other's data, or the other reads the candidate's.
		direction := schema.Backward
		if !readerIsCandidate {
			direction = schema.Forward
		}
		for _, p := range schema.Check(direction, []*schema.Schema{other}, reg.schema, schema.GoAware).Problems {
			e.Problems = append(e.Problems, SchemaProblem{Against: against, Problem: p})
		}
		return nil
	}
	if reg.group != "" {
		live, err := store.LiveRevisions(ctx, reg.stream.ID, reg.version)
		if err != nil {
			return err
		}
		for _, w := range live {
			if stored, ok := byRevision[w]; ok {
				if err := compare(fmt.Sprintf("writer revision %d still in the log", w), stored, true); err != nil {
					return err
				}
			}
		}
	} else {
		readers, err := store.Readers(ctx, reg.stream.ID)
		if err != nil {
			return err
		}
		for _, rd := range readers {
			if stored, ok := byRevision[rd.Revision]; ok && rd.Version == reg.version {
				if err := compare(fmt.Sprintf("reader group %s (revision %d)", rd.Group, rd.Revision), stored, false); err != nil {
					return err
				}
			}
		}
	}
	if len(e.Problems) > 0 {
		return e
	}
	return nil
}

// CheckSchema is the dry run (R6): it checks T's schema against the stream's
// level and the deployed pairs as a registration would, and records nothing.
// The report is compatible when a registration would be accepted; an
// incompatible one comes with an *IncompatibleSchemaError listing every
// problem.
func (s *Stream[T]) CheckSchema(ctx context.Context) error {
	version, raw, err := typeVersion[T]()
	if err != nil {
		return err
	}
	if raw {
		return fmt.Errorf("%w: RawPayload has no schema to check; use Registry.Check with a schema document", ErrInvalidOption)
	}
	sch, err := schema.For[T]()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidMessage, err)
	}
	return s.client.Registry().dryRun(ctx, s.name, registration{typ: typeName[T](), version: version, schema: sch})
}

// Check is the dry run for a JSON Schema document: it checks doc as a new
// revision of the stream at version and records nothing. A malformed
// document fails with the parse error and its position.
func (r *Registry) Check(ctx context.Context, stream string, version int, doc []byte) error {
	if version < 1 {
		return fmt.Errorf("%w: version %d; versions start at 1", ErrInvalidOption, version)
	}
	sch, err := schema.Parse(doc)
	if err != nil {
		return fmt.Errorf("%w: schema document: %v", ErrInvalidOption, err)
	}
	return r.dryRun(ctx, stream, registration{typ: "schema document", version: version, schema: sch})
}

func (r *Registry) dryRun(ctx context.Context, stream string, reg registration) error {
	store, err := r.store()
	if err != nil {
		return err
	}
	cfg, err := r.client.Stream[RawPayload](stream).lookup(ctx, false)
	if errors.Is(err, ErrStreamNotFound) {
		return nil // a new stream accepts any first schema
	}
	if err != nil {
		return err
	}
	reg.stream = cfg
	streamSet, err := store.RegistrySettings(ctx, cfg.ID)
	if err != nil {
		return err
	}
	global, err := store.RegistrySettings(ctx, 0)
	if err != nil {
		return err
	}
	level, _ := effectiveLevel(streamSet, global)
	if level == schema.None {
		return nil
	}
	existing, err := store.SchemaRevisions(ctx, cfg.ID, reg.version)
	if err != nil {
		return err
	}
	for _, e := range existing {
		if e.Fingerprint == reg.schema.Fingerprint() {
			return nil // already recorded
		}
	}
	if len(existing) > 0 {
		if err := r.gate(reg, level, existing); err != nil {
			return err
		}
	}
	return r.checkPairs(ctx, store, reg, level)
}

func typeName[T any]() string {
	t := reflect.TypeFor[T]()
	if t.PkgPath() == "" {
		return t.String()
	}
	return t.PkgPath() + "." + t.Name()
}
