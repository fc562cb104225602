package sqlstreams

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
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
	client  *Client
	formats map[schema.Type]schema.Format // the client's, or WithFormats'
}

// Registry returns the client's schema registry.
func (c *Client) Registry() *Registry { return &Registry{client: c, formats: c.formats} }

// WithFormats returns a view of the registry that also accepts documents of
// these formats, for a component that serves documents on a client it was
// handed (contrib/ccompat enables AVRO this way). A type the client already
// enables keeps the client's format. The formats are checked as the client
// option's are.
func (r *Registry) WithFormats(formats ...schema.Format) (*Registry, error) {
	c := &Client{formatList: formats}
	if err := c.checkFormats(); err != nil {
		return nil, err
	}
	out := &Registry{client: r.client, formats: maps.Clone(r.formats)}
	if out.formats == nil {
		out.formats = map[schema.Type]schema.Format{}
	}
	for t, f := range c.formats {
		if _, ok := out.formats[t]; !ok {
			out.formats[t] = f
		}
	}
	return out, nil
}

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
	// Scope is "version" (a stream version's own), "stream", "subject" (a
	// free subject's own), "registry" (registry-wide) or "default".
	Scope string
}

// Level returns the compatibility level in force for a stream (or, for
// RegistryWide, the registry-wide one), and where it is set. It is what
// judges the revisions of every version of the stream that has no level
// of its own (VersionLevel).
func (r *Registry) Level(ctx context.Context, stream string) (Setting[schema.Level], error) {
	return r.VersionLevel(ctx, stream, 0)
}

// Mode returns the registry mode in force for a stream (or RegistryWide),
// the fallback of every version of the stream (VersionMode).
func (r *Registry) Mode(ctx context.Context, stream string) (Setting[Mode], error) {
	return r.VersionMode(ctx, stream, 0)
}

// settings reads the scopes that decide a stream version's revisions
// (version 0: the whole stream's; RegistryWide: the registry-wide one).
func (r *Registry) settings(ctx context.Context, stream string, version int) (driver.RevisionSettings, error) {
	store, err := r.store()
	if err != nil {
		return driver.RevisionSettings{}, err
	}
	id, err := r.scope(ctx, stream)
	if err != nil {
		return driver.RevisionSettings{}, err
	}
	set, err := revisionSettings(ctx, store, id, version)
	if err != nil {
		return set, fmt.Errorf("sqlstreams: registry settings of %q: %w", stream, classify(err))
	}
	return set, nil
}

// revisionSettings reads the scopes that decide the revisions of a stream
// version, nearest first: the version's own (when version is not 0), the
// stream's (when streamID is not 0) and the registry-wide settings.
func revisionSettings(ctx context.Context, store driver.Registry, streamID int64, version int) (driver.RevisionSettings, error) {
	var set driver.RevisionSettings
	var err error
	if set.Global, err = store.RegistrySettings(ctx, driver.RegistrySettingsParams{}); err != nil || streamID == 0 {
		return set, err
	}
	if set.Stream, err = store.RegistrySettings(ctx, driver.RegistrySettingsParams{StreamID: streamID}); err != nil || version == 0 {
		return set, err
	}
	set.Version, err = store.RegistrySettings(ctx, driver.RegistrySettingsParams{StreamID: streamID, Version: version})
	return set, err
}

// effective picks the nearest scope that sets a value (value reads it from
// a scope's settings) and names it; none set is def, from "default".
func effective[V any](set driver.RevisionSettings, value func(driver.RegistrySettings) string, parse func(string) (V, error), def V) (V, string) {
	for _, s := range []struct {
		set   driver.RegistrySettings
		scope string
	}{{set.Version, "version"}, {set.Stream, "stream"}, {set.Global, "registry"}} {
		if v := value(s.set); v != "" {
			if parsed, err := parse(v); err == nil {
				return parsed, s.scope
			}
		}
	}
	return def, "default"
}

// levelOf is the level in force for a revision of a stream version.
func levelOf(set driver.RevisionSettings) (schema.Level, string) {
	return effective(set, func(s driver.RegistrySettings) string { return s.Level }, schema.ParseLevel, schema.Backward)
}

// modeOf is the mode in force for a revision of a stream version.
func modeOf(set driver.RevisionSettings) (Mode, string) {
	return effective(set, func(s driver.RegistrySettings) string { return s.Mode }, ParseMode, ModeReadWrite)
}

// effectiveLevel is the level of a scope with settings of its own (a
// stream, a free subject) over the registry-wide ones.
func effectiveLevel(own, global driver.RegistrySettings) (schema.Level, string) {
	return levelOf(driver.RevisionSettings{Stream: own, Global: global})
}

// effectiveMode is effectiveLevel's mode.
func effectiveMode(own, global driver.RegistrySettings) (Mode, string) {
	return modeOf(driver.RevisionSettings{Stream: own, Global: global})
}

// SetLevel sets the compatibility level of a stream, or registry-wide for
// RegistryWide. A stream's own level wins over the registry-wide one, and
// a version's own (SetVersionLevel) over the stream's.
func (r *Registry) SetLevel(ctx context.Context, stream string, level schema.Level) error {
	return r.setLevel(ctx, stream, 0, level)
}

func (r *Registry) setLevel(ctx context.Context, stream string, version int, level schema.Level) error {
	if _, err := schema.ParseLevel(level.String()); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidOption, err)
	}
	return r.update(ctx, stream, version, false, func(s *driver.RegistrySettings) { s.Level = level.String() })
}

// ClearLevel removes a stream's own level (or the registry-wide one), so the
// next scope's level applies again.
func (r *Registry) ClearLevel(ctx context.Context, stream string) error {
	return r.update(ctx, stream, 0, false, func(s *driver.RegistrySettings) { s.Level = "" })
}

// SetMode sets the registry mode of a stream, or registry-wide for
// RegistryWide. A stream's own mode wins over the registry-wide one, and
// a version's own (SetVersionMode) over the stream's.
func (r *Registry) SetMode(ctx context.Context, stream string, mode Mode) error {
	return r.setMode(ctx, stream, 0, mode)
}

func (r *Registry) setMode(ctx context.Context, stream string, version int, mode Mode) error {
	m, err := ParseMode(string(mode))
	if err != nil {
		return err
	}
	return r.update(ctx, stream, version, true, func(s *driver.RegistrySettings) { s.Mode = string(m) })
}

// ClearMode removes a stream's own mode (or the registry-wide one).
func (r *Registry) ClearMode(ctx context.Context, stream string) error {
	return r.update(ctx, stream, 0, true, func(s *driver.RegistrySettings) { s.Mode = "" })
}

// update changes a scope's settings: a stream version's, a whole stream's
// (version 0) or the registry-wide ones. READONLY refuses level changes;
// mode changes are always allowed, or a read-only registry could never
// reopen.
func (r *Registry) update(ctx context.Context, stream string, version int, modeChange bool, change func(*driver.RegistrySettings)) error {
	store, err := r.store()
	if err != nil {
		return err
	}
	id, err := r.scope(ctx, stream)
	if err != nil {
		return err
	}
	around, err := revisionSettings(ctx, store, id, version)
	if err != nil {
		return fmt.Errorf("sqlstreams: registry settings of %q: %w", stream, classify(err))
	}
	err = store.UpdateRegistrySettings(ctx, driver.UpdateRegistrySettingsParams{StreamID: id, Version: version, Update: func(s *driver.RegistrySettings) error {
		if !modeChange {
			set := around
			switch {
			case id == 0:
				set.Global = *s
			case version == 0:
				set.Stream = *s
			default:
				set.Version = *s
			}
			if mode, scope := modeOf(set); mode == ModeReadOnly {
				return readOnlyError(stream, version, scope, "change the compatibility level")
			}
		}
		change(s)
		return nil
	}})
	return classify(err)
}

// readOnlyError says which scope's READONLY refused what.
func readOnlyError(stream string, version int, scope, what string) error {
	where := "registry-wide"
	switch scope {
	case "stream":
		where = fmt.Sprintf("on stream %q", stream)
	case "version":
		where = fmt.Sprintf("on stream %q version %d", stream, version)
	}
	return fmt.Errorf("sqlstreams: cannot %s: %w (mode READONLY set %s); set the mode to READWRITE first", what, ErrReadOnly, where)
}

// Revision is one recorded schema of a stream at a version.
type Revision struct {
	Version     int
	Revision    int
	Fingerprint string
	// Type is the document's language: JSON for every schema of a Go type.
	Type schema.Type
	// Text is the document as stored: the text as registered for a
	// document, the canonical form for the schema of a Go type.
	Text []byte
	// Schema is the parsed JSON Schema of a JSON revision, nil for others.
	Schema    *schema.Schema
	CreatedAt time.Time
	// ID is the global schema id of the revision's fingerprint: one id per
	// distinct schema across every stream, stable for the database's life
	// (0 from a driver without global ids).
	ID int64
	// References are the shared schemas the document refers to by name.
	References []Reference
	// Deleted marks a soft-deleted revision (DeleteRevision); only
	// RevisionsWithDeleted lists them.
	Deleted bool
}

// Revisions lists a stream's recorded schemas at version, or at every
// version when version is 0; soft-deleted ones are left out.
func (r *Registry) Revisions(ctx context.Context, stream string, version int) ([]Revision, error) {
	return r.revisions(ctx, stream, version, false)
}

// RevisionsWithDeleted lists a stream's recorded schemas at version (every
// version for 0) as Revisions does, the soft-deleted ones too, so that a
// deletion can be looked at and made permanent.
func (r *Registry) RevisionsWithDeleted(ctx context.Context, stream string, version int) ([]Revision, error) {
	return r.revisions(ctx, stream, version, true)
}

func (r *Registry) revisions(ctx context.Context, stream string, version int, deleted bool) ([]Revision, error) {
	revs, err := r.storedRevisions(ctx, stream, version, deleted)
	if err != nil {
		return nil, err
	}
	out := make([]Revision, len(revs))
	for i, rv := range revs {
		if out[i], err = r.publicRevision(ctx, rv); err != nil {
			return nil, fmt.Errorf("sqlstreams: stored schema %q v%d r%d: %w", stream, rv.Version, rv.Revision, err)
		}
	}
	return out, nil
}

// storedRevisions is the driver's list of a stream's revisions at version
// (every version for 0; soft-deleted ones too with deleted), oldest first.
func (r *Registry) storedRevisions(ctx context.Context, stream string, version int, deleted bool) ([]driver.SchemaRevision, error) {
	store, err := r.store()
	if err != nil {
		return nil, err
	}
	id, err := r.scope(ctx, stream)
	if err != nil {
		return nil, err
	}
	revs, err := store.SchemaRevisions(ctx, driver.SchemaRevisionsParams{StreamID: id, Version: version, Deleted: deleted})
	if err != nil {
		return nil, fmt.Errorf("sqlstreams: revisions of %q: %w", stream, err)
	}
	return revs, nil
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
	rs, err := store.Readers(ctx, driver.ReadersParams{StreamID: id})
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
	// Subject is set instead of Stream and Version for a free subject.
	Subject  string
	Stream   string
	Type     string // the Go type, or "schema document" for a dry run of one
	Version  int
	Level    schema.Level
	Problems []SchemaProblem
}

// SchemaProblem is one incompatible difference.
type SchemaProblem struct {
	// Against names what the candidate was compared with: "revision 2",
	// "the reader of group fraud-scoring (revision 1)" or "writer revision 1
	// still in the log".
	Against string
	schema.Problem
}

func (e *IncompatibleSchemaError) Error() string {
	var b strings.Builder
	if e.Subject != "" {
		fmt.Fprintf(&b, "sqlstreams: %s is not compatible with the subject's versions at level %s: %d problem(s)", e.Type, e.Level, len(e.Problems))
		e.writeProblems(&b)
		b.WriteString("\nNothing was written. If the change is intended, register it under another subject or lower the subject's level; otherwise restore the fields readers depend on.")
		return b.String()
	}
	fmt.Fprintf(&b, "sqlstreams: %s on stream %q is not compatible with schema version %d at level %s: %d problem(s)",
		e.Type, e.Stream, e.Version, e.Level, len(e.Problems))
	e.writeProblems(&b)
	if strings.HasPrefix(e.Type, "shared schema ") {
		fmt.Fprintf(&b, "\nNothing was written. If the change is intended, give the shared type a new SharedSchema() version (%d) and the messages that contain it new SchemaVersion()s; otherwise restore the fields readers depend on.", e.Version+1)
		return b.String()
	}
	fmt.Fprintf(&b, "\nNothing was written. If the change is intended, give the type a new SchemaVersion() (%d) and run a group per version; otherwise restore the fields readers depend on.", e.Version+1)
	return b.String()
}

func (e *IncompatibleSchemaError) writeProblems(b *strings.Builder) {
	for _, p := range e.Problems {
		fmt.Fprintf(b, "\n  - against %s (%s): %s at %s: %s", p.Against, p.Direction, p.Kind, p.Path, p.Message)
	}
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
	dryRun  bool   // check as a writer and as a reader, record nothing
	refs    []driver.SchemaReference
	// inline holds shared schemas not recorded yet, by reference name, for
	// checks before they are (a dry run, or the check before recording).
	inline map[string]*schema.Schema
	id     int64 // explicit global id (IMPORT)
	rev    int   // explicit revision (IMPORT)
	// against, when set, limits the level check to these revision numbers
	// (CheckAgainst); a zero-length non-nil slice means every revision.
	against []int
	// policy judges the candidate: GoAware for a schema reflected from a Go
	// type, the client's WithDocumentPolicy for a document.
	policy schema.Policy
	// doc is a document of another type than JSON (schema is then nil);
	// text is a document's registered text, of any type, which is what is
	// stored (nil for a schema reflected from a Go type).
	doc  schema.Document
	text []byte
	// subject is the free subject a document is registered under, with
	// the subject versions its references name and their fingerprints.
	subject     string
	subjectRefs []driver.SubjectReference
	refPins     []string
}

// docType is the type of the registration's document.
func (reg registration) docType() schema.Type {
	if reg.doc != nil {
		return reg.doc.Type()
	}
	return schema.TypeJSON
}

// stored is the text RecordSchema stores: a document as it was
// registered, a schema reflected from a Go type in its canonical form.
func (reg registration) stored() []byte {
	if reg.text != nil {
		return reg.text
	}
	return reg.schema.Canonical()
}

// fingerprint is the schema's own, or, with references, one that also
// covers the names and the content they are bound to.
func (reg registration) fingerprint() string {
	var fp string
	if reg.doc != nil {
		fp = schema.Fingerprint(reg.doc)
	} else {
		fp = reg.schema.Fingerprint()
	}
	var names, pins []string
	for _, ref := range reg.refs {
		names, pins = append(names, ref.Name), append(pins, ref.Fingerprint)
	}
	for i, ref := range reg.subjectRefs {
		names, pins = append(names, ref.Name), append(pins, reg.refPins[i])
	}
	return pinnedFingerprint(fp, names, pins)
}

// pinnedFingerprint covers a document's fingerprint and, with references,
// the names and the content (fingerprint) each is bound to.
func pinnedFingerprint(fp string, names, pins []string) string {
	if len(names) == 0 {
		return fp
	}
	h := sha256.New()
	h.Write([]byte(fp))
	for i, name := range names {
		fmt.Fprintf(h, "\n%q=%s", name, pins[i])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// record records the registration's schema, checking the level and the
// deployed pairs first, and returns its revision (0 without a registry).
func (r *Registry) record(ctx context.Context, reg registration) (int, error) {
	rev, err := r.recordRevision(ctx, reg)
	return rev.Revision, err
}

func (r *Registry) recordRevision(ctx context.Context, reg registration) (driver.SchemaRevision, error) {
	store, ok := r.client.drv.(driver.Registry)
	if !ok {
		return driver.SchemaRevision{}, nil
	}
	if len(reg.schema.Shared()) > 0 && reg.refs == nil {
		// Check the shared types and the message with them inlined
		// before recording anything, so that a refusal writes nothing.
		dry := reg
		if err := r.checkShared(ctx, &dry); err != nil {
			return driver.SchemaRevision{}, err
		}
		if err := r.precheck(ctx, store, dry); err != nil {
			return driver.SchemaRevision{}, err
		}
		if err := r.recordShared(ctx, &reg); err != nil {
			return driver.SchemaRevision{}, err
		}
	}
	if err := r.precheck(ctx, store, reg); err != nil {
		return driver.SchemaRevision{}, err
	}
	res := r.newResolver(store)
	rev, _, err := store.RecordSchema(ctx, driver.RecordSchemaParams{Revision: driver.SchemaRevision{StreamID: reg.stream.ID, Version: reg.version,
		Fingerprint: reg.fingerprint(), Type: string(reg.docType()), Schema: reg.stored(), CreatedAt: time.Now().UTC(), ID: reg.id, Revision: reg.rev, References: reg.refs},
		Decide: func(existing []driver.SchemaRevision, set driver.RevisionSettings) error {
			// Checked again inside the driver's transaction, against what a
			// concurrent registration may have recorded since the precheck.
			mode, scope := modeOf(set)
			switch {
			case mode == ModeReadOnly:
				return readOnlyError(reg.stream.Name, reg.version, scope, fmt.Sprintf("record a new schema for %s at version %d", reg.typ, reg.version))
			case mode != ModeImport && (reg.id != 0 || reg.rev != 0):
				return fmt.Errorf("%w: an explicit schema id or revision needs IMPORT mode (the mode is %s, set %s)", ErrInvalidOption, mode, scope)
			case mode == ModeImport || len(existing) == 0:
				return nil
			}
			level, _ := levelOf(set)
			problems, err := gateProblems(ctx, res, reg, level, existing)
			if err != nil {
				return err
			}
			return incompatible(reg, level, problems)
		}})
	if err != nil {
		if errors.Is(err, ErrIncompatibleSchema) || errors.Is(err, ErrReadOnly) || errors.Is(err, ErrInvalidOption) {
			return rev, err
		}
		if errors.Is(err, driver.ErrSchemaIDTaken) || errors.Is(err, driver.ErrRevisionTaken) {
			return rev, fmt.Errorf("sqlstreams: record schema of %s on %q: %w: %w", reg.typ, reg.stream.Name, ErrInvalidOption, unwrapDriver(err))
		}
		return rev, fmt.Errorf("sqlstreams: record schema of %s on %q: %w", reg.typ, reg.stream.Name, classify(err))
	}
	if reg.group != "" {
		if err := store.RecordReader(ctx, driver.RecordReaderParams{Reader: driver.Reader{StreamID: reg.stream.ID, Group: reg.group,
			Version: reg.version, Revision: rev.Revision, RegisteredAt: time.Now().UTC()}}); err != nil {
			return rev, fmt.Errorf("sqlstreams: record reader %q on %q: %w", reg.group, reg.stream.Name, classify(err))
		}
	}
	return rev, nil
}

// unwrapDriver drops a driver.Error's kind from a sentinel the driver
// returned through its transaction, keeping the message.
func unwrapDriver(err error) error {
	for _, s := range []error{driver.ErrSchemaIDTaken, driver.ErrRevisionTaken} {
		if errors.Is(err, s) {
			var de *driver.Error
			if errors.As(err, &de) && de.Err != nil {
				return de.Err
			}
		}
	}
	return err
}

// precheck finds every problem a registration would meet, in order: the
// level against the revisions at its version, then the deployed pairs,
// then, for a shared schema, the schemas that reference it. It writes
// nothing; Check (the dry run) is exactly this.
func (r *Registry) precheck(ctx context.Context, store driver.Registry, reg registration) error {
	set, err := revisionSettings(ctx, store, reg.stream.ID, reg.version)
	if err != nil {
		return classify(err)
	}
	level, _ := levelOf(set)
	mode, scope := modeOf(set)
	if mode == ModeImport {
		return nil
	}
	if !reg.dryRun && (reg.id != 0 || reg.rev != 0) {
		return fmt.Errorf("%w: an explicit schema id or revision needs IMPORT mode (the mode is %s, set %s)", ErrInvalidOption, mode, scope)
	}
	existing, err := store.SchemaRevisions(ctx, driver.SchemaRevisionsParams{StreamID: reg.stream.ID, Version: reg.version})
	if err != nil {
		return classify(err)
	}
	recorded := false
	for _, e := range existing {
		recorded = recorded || e.Fingerprint == reg.fingerprint()
	}
	if mode == ModeReadOnly && !recorded {
		// As RecordSchema's decide would; said here too so the dry run does.
		return readOnlyError(reg.stream.Name, reg.version, scope, fmt.Sprintf("record a new schema for %s at version %d", reg.typ, reg.version))
	}
	if level == schema.None && reg.against == nil {
		return nil
	}
	res := r.newResolver(store)
	var problems []SchemaProblem
	if !recorded || reg.against != nil {
		if problems, err = gateProblems(ctx, res, reg, level, existing); err != nil {
			return err
		}
	}
	if reg.against != nil { // CheckAgainst: the level against those revisions only
		return incompatible(reg, level, problems)
	}
	// A producer meets the registered readers, a consumer the writers still
	// in the log; a dry run checks the type in both roles.
	for _, asReader := range []bool{false, true} {
		if asReader == (reg.group != "") || reg.dryRun {
			pairs, err := pairProblems(ctx, store, res, reg, existing, asReader)
			if err != nil {
				return err
			}
			problems = append(problems, pairs...)
		}
	}
	if !recorded && reg.group == "" {
		refs, err := r.referencerProblems(ctx, store, res, reg, existing)
		if err != nil {
			return err
		}
		problems = append(problems, refs...)
	}
	return incompatible(reg, level, problems)
}

func incompatible(reg registration, level schema.Level, problems []SchemaProblem) error {
	if len(problems) == 0 {
		return nil
	}
	return &IncompatibleSchemaError{Stream: reg.stream.Name, Type: reg.typ, Version: reg.version, Level: level, Problems: problems}
}

// gateProblems checks a candidate against the existing revisions at its
// version under the level (R2), or, for CheckAgainst, against the chosen
// revisions in the level's directions.
func gateProblems(ctx context.Context, res *resolver, reg registration, level schema.Level, existing []driver.SchemaRevision) ([]SchemaProblem, error) {
	candidate, err := res.candidateDoc(ctx, reg)
	if err != nil {
		return nil, err
	}
	var compared []driver.SchemaRevision
	for _, e := range existing {
		if len(reg.against) == 0 || slices.Contains(reg.against, e.Revision) {
			compared = append(compared, e)
		}
	}
	docs := make([]schema.Document, len(compared))
	for i, e := range compared {
		if docs[i], err = res.document(ctx, e, nil, reg.policy); err != nil {
			return nil, err
		}
	}
	if reg.against != nil {
		level = transitive(level)
	}
	var out []SchemaProblem
	for _, p := range schema.Judge(level, docs, candidate).Problems {
		out = append(out, SchemaProblem{Against: fmt.Sprintf("revision %d", compared[p.Against].Revision), Problem: p})
	}
	return out, nil
}

// transitive is the level's transitive form, for comparisons with an
// explicit set of revisions (every one of them is compared).
func transitive(l schema.Level) schema.Level {
	switch l {
	case schema.Backward:
		return schema.BackwardTransitive
	case schema.Forward:
		return schema.ForwardTransitive
	case schema.Full:
		return schema.FullTransitive
	case 0:
		return schema.BackwardTransitive
	}
	return l
}

// pairProblems checks the pairs that exist (R5): a reader against the
// writer revisions still in the log at its version, a writer against the
// registered readers at its version.
func pairProblems(ctx context.Context, store driver.Registry, res *resolver, reg registration, revs []driver.SchemaRevision, asReader bool) ([]SchemaProblem, error) {
	byRevision := map[int]driver.SchemaRevision{}
	for _, rv := range revs {
		byRevision[rv.Revision] = rv
	}
	candidate, err := res.candidateDoc(ctx, reg)
	if err != nil {
		return nil, err
	}
	var out []SchemaProblem
	compare := func(against string, stored driver.SchemaRevision, candidateReads bool) error {
		if stored.Fingerprint == reg.fingerprint() {
			return nil
		}
		other, err := res.document(ctx, stored, nil, reg.policy)
		if err != nil {
			return err
		}
		direction := schema.Backward // the candidate reads the other's data
		if !candidateReads {
			direction = schema.Forward // the other reads the candidate's data
		}
		for _, p := range schema.Judge(direction, []schema.Document{other}, candidate).Problems {
			out = append(out, SchemaProblem{Against: against, Problem: p})
		}
		return nil
	}
	if asReader {
		live, err := store.LiveRevisions(ctx, driver.LiveRevisionsParams{StreamID: reg.stream.ID, Version: reg.version})
		if err != nil {
			return nil, classify(err)
		}
		for _, w := range live {
			if stored, ok := byRevision[w]; ok {
				if err := compare(fmt.Sprintf("writer revision %d still in the log", w), stored, true); err != nil {
					return nil, err
				}
			}
		}
		return out, nil
	}
	readers, err := store.Readers(ctx, driver.ReadersParams{StreamID: reg.stream.ID})
	if err != nil {
		return nil, classify(err)
	}
	for _, rd := range readers {
		if stored, ok := byRevision[rd.Revision]; ok && rd.Version == reg.version {
			if err := compare(fmt.Sprintf("the reader of group %s (revision %d)", rd.Group, rd.Revision), stored, false); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
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
	return r.CheckDocument(ctx, SchemaRegistration{Stream: stream, Version: version, Schema: doc})
}

func (r *Registry) dryRun(ctx context.Context, stream string, reg registration) error {
	store, err := r.store()
	if err != nil {
		return err
	}
	// Shared types are checked on their own streams first, whether or not
	// this stream exists yet.
	if len(reg.schema.Shared()) > 0 && reg.refs == nil {
		if err := r.checkShared(ctx, &reg); err != nil {
			return err
		}
	}
	cfg, err := r.client.Stream[RawPayload](stream).lookup(ctx, false)
	if errors.Is(err, ErrStreamNotFound) {
		// A new stream accepts any first schema, unless the registry is
		// read-only, where registering would refuse to create it.
		global, err := store.RegistrySettings(ctx, driver.RegistrySettingsParams{})
		if err != nil {
			return err
		}
		if mode, scope := effectiveMode(driver.RegistrySettings{}, global); mode == ModeReadOnly {
			return readOnlyError(stream, 0, scope, fmt.Sprintf("record a first schema for %s on a new stream", reg.typ))
		}
		return nil
	}
	if err != nil {
		return err
	}
	reg.stream, reg.dryRun = cfg, true
	return r.precheck(ctx, store, reg)
}

func typeName[T any]() string {
	t := reflect.TypeFor[T]()
	if t.PkgPath() == "" {
		return t.String()
	}
	return t.PkgPath() + "." + t.Name()
}
