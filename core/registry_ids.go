package sqlstreams

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// Global schema ids, documents registered by hand, and references between
// schemas: what a schema-registry REST layer (contrib/ccompat) and the
// console need on top of the registrations producers and consumers make.

var (
	// ErrSchemaNotFound: no schema has the requested global id.
	ErrSchemaNotFound = driver.ErrSchemaNotFound
	// ErrRevisionNotFound: the stream has no such revision at the version.
	ErrRevisionNotFound = errors.New("schema revision not found")
	// ErrReferenceNotFound: a reference names a revision that is not
	// recorded.
	ErrReferenceNotFound = errors.New("referenced schema not found")
	// ErrSchemaIDTaken: an explicit id (IMPORT mode) belongs to another
	// schema, or the schema already has another id. It comes wrapped with
	// ErrInvalidOption.
	ErrSchemaIDTaken = driver.ErrSchemaIDTaken
	// ErrNoSchemaIDs: the driver keeps no global schema ids.
	ErrNoSchemaIDs = errors.New("driver keeps no global schema ids")
)

// Reference binds a name that a schema document uses as a "$ref" to a
// recorded revision of another stream: the shared schema it stands for.
type Reference struct {
	Name     string
	Stream   string
	Version  int
	Revision int // 0 on input: the latest revision at Version
}

// SchemaRegistration is a schema document to record by hand (Register).
type SchemaRegistration struct {
	Stream  string
	Version int
	Schema  []byte // a JSON Schema document
	// References bind the document's "$ref" names to shared schemas.
	References []Reference
	// ID and Revision ask for an explicit global id and revision number,
	// for restoring a registry's history; both need IMPORT mode.
	ID       int64
	Revision int
}

// Register records a JSON Schema document as a revision of a stream at a
// version: the writing twin of Check, through the same gate as a
// producer's registration (the level against the revisions at the
// version, the readers registered at it, and the schemas that reference
// this one). The stream is created with defaults when it is missing, as a
// producer registration creates it. A document already recorded there
// returns its revision and nothing is written.
func (r *Registry) Register(ctx context.Context, stream string, version int, doc []byte) (Revision, error) {
	return r.RegisterSchema(ctx, SchemaRegistration{Stream: stream, Version: version, Schema: doc})
}

// RegisterSchema is Register with references, and with an explicit id and
// revision in IMPORT mode.
func (r *Registry) RegisterSchema(ctx context.Context, p SchemaRegistration) (Revision, error) {
	store, err := r.store()
	if err != nil {
		return Revision{}, err
	}
	if p.Version < 1 || p.Version > MaxSchemaVersion {
		return Revision{}, fmt.Errorf("%w: version %d; versions run from 1 to %d", ErrInvalidOption, p.Version, MaxSchemaVersion)
	}
	if p.ID < 0 || p.Revision < 0 {
		return Revision{}, fmt.Errorf("%w: id %d, revision %d; explicit ones must be positive", ErrInvalidOption, p.ID, p.Revision)
	}
	sch, err := schema.Parse(p.Schema)
	if err != nil {
		return Revision{}, fmt.Errorf("%w: schema document: %v", ErrInvalidOption, err)
	}
	refs, err := r.driverRefs(ctx, store, p.References)
	if err != nil {
		return Revision{}, err
	}
	s := r.client.Stream[RawPayload](p.Stream)
	cfg, created, err := s.ensure(ctx)
	if err != nil {
		return Revision{}, err
	}
	rev, err := r.recordRevision(ctx, registration{stream: cfg, typ: "schema document", version: p.Version, schema: sch, refs: refs, id: p.ID, rev: p.Revision, policy: r.client.docPolicy})
	if err != nil {
		s.undoCreate(ctx, cfg, created)
		return Revision{}, err
	}
	return r.publicRevision(ctx, rev)
}

// CheckAgainst is the dry run against chosen revisions: it checks doc as a
// new revision of the stream at version against revision (every revision
// at the version when revision is 0) in the directions of the stream's
// level, and records nothing. Deployed readers are not consulted; Check
// does that. A missing revision fails with ErrRevisionNotFound.
func (r *Registry) CheckAgainst(ctx context.Context, stream string, version, revision int, doc []byte, refs ...Reference) error {
	store, err := r.store()
	if err != nil {
		return err
	}
	sch, err := schema.Parse(doc)
	if err != nil {
		return fmt.Errorf("%w: schema document: %v", ErrInvalidOption, err)
	}
	drefs, err := r.driverRefs(ctx, store, refs)
	if err != nil {
		return err
	}
	cfg, err := r.client.Stream[RawPayload](stream).lookup(ctx, false)
	if err != nil {
		return err
	}
	against := []int{}
	if revision != 0 {
		revs, err := store.SchemaRevisions(ctx, driver.SchemaRevisionsParams{StreamID: cfg.ID, Version: version})
		if err != nil {
			return classify(err)
		}
		if !slices.ContainsFunc(revs, func(rv driver.SchemaRevision) bool { return rv.Revision == revision }) {
			return fmt.Errorf("sqlstreams: stream %q version %d: %w: revision %d; list them with Revisions", stream, version, ErrRevisionNotFound, revision)
		}
		against = []int{revision}
	}
	return r.precheck(ctx, store, registration{stream: cfg, typ: "schema document", version: version, schema: sch, refs: drefs, dryRun: true, against: against, policy: r.client.docPolicy})
}

// CheckWithReferences is Check for a document that refers to shared
// schemas.
func (r *Registry) CheckWithReferences(ctx context.Context, stream string, version int, doc []byte, refs []Reference) error {
	store, err := r.store()
	if err != nil {
		return err
	}
	if version < 1 {
		return fmt.Errorf("%w: version %d; versions start at 1", ErrInvalidOption, version)
	}
	sch, err := schema.Parse(doc)
	if err != nil {
		return fmt.Errorf("%w: schema document: %v", ErrInvalidOption, err)
	}
	drefs, err := r.driverRefs(ctx, store, refs)
	if err != nil {
		return err
	}
	return r.dryRun(ctx, stream, registration{typ: "schema document", version: version, schema: sch, refs: drefs, policy: r.client.docPolicy})
}

// Subject is a (stream, version) pair with at least one recorded revision.
type Subject struct {
	Stream  string
	Version int
}

// Subjects lists every (stream, version) with recorded revisions, ordered
// by stream name, then version.
func (r *Registry) Subjects(ctx context.Context) ([]Subject, error) {
	store, err := r.store()
	if err != nil {
		return nil, err
	}
	streams, err := r.client.Streams(ctx)
	if err != nil {
		return nil, err
	}
	var out []Subject
	for _, st := range streams {
		revs, err := store.SchemaRevisions(ctx, driver.SchemaRevisionsParams{StreamID: st.ID})
		if err != nil {
			return nil, fmt.Errorf("sqlstreams: revisions of %q: %w", st.Name, classify(err))
		}
		for i, rv := range revs {
			if i == 0 || revs[i-1].Version != rv.Version {
				out = append(out, Subject{Stream: st.Name, Version: rv.Version})
			}
		}
	}
	return out, nil
}

// SchemaDocument is the schema of a global id.
type SchemaDocument struct {
	ID          int64
	Fingerprint string
	Schema      *schema.Schema
}

// SchemaUsage is a revision recorded with a global id's schema.
type SchemaUsage struct {
	Stream   string
	Version  int
	Revision int
}

func (r *Registry) ids() (driver.Registry, driver.SchemaIDs, error) {
	store, err := r.store()
	if err != nil {
		return nil, nil, err
	}
	ids, ok := store.(driver.SchemaIDs)
	if !ok {
		return nil, nil, fmt.Errorf("sqlstreams: %s: %w", r.client.drv.Name(), ErrNoSchemaIDs)
	}
	return store, ids, nil
}

// SchemaByID returns the schema of a global id, or ErrSchemaNotFound.
func (r *Registry) SchemaByID(ctx context.Context, id int64) (SchemaDocument, error) {
	_, ids, err := r.ids()
	if err != nil {
		return SchemaDocument{}, err
	}
	doc, err := ids.SchemaByID(ctx, driver.SchemaByIDParams{ID: id})
	if errors.Is(err, driver.ErrSchemaNotFound) {
		return SchemaDocument{}, fmt.Errorf("sqlstreams: schema id %d: %w; ids come from Revisions or a registration", id, ErrSchemaNotFound)
	}
	if err != nil {
		return SchemaDocument{}, fmt.Errorf("sqlstreams: schema id %d: %w", id, classify(err))
	}
	sch, err := schema.Parse(doc.Schema)
	if err != nil {
		return SchemaDocument{}, fmt.Errorf("sqlstreams: stored schema id %d: %w", id, err)
	}
	return SchemaDocument{ID: doc.ID, Fingerprint: doc.Fingerprint, Schema: sch}, nil
}

// SchemaUsages lists the revisions, in any stream, recorded with a global
// id's schema, ordered by stream name, version and revision. An id no
// stream uses any more (its streams were deleted) lists none.
func (r *Registry) SchemaUsages(ctx context.Context, id int64) ([]SchemaUsage, error) {
	_, ids, err := r.ids()
	if err != nil {
		return nil, err
	}
	revs, err := ids.SchemaUsages(ctx, driver.SchemaUsagesParams{ID: id})
	if err != nil {
		return nil, fmt.Errorf("sqlstreams: usages of schema id %d: %w", id, classify(err))
	}
	return r.usages(ctx, revs)
}

// ReferencedBy lists the revisions whose references name the given
// revision, ordered by stream name, version and revision.
func (r *Registry) ReferencedBy(ctx context.Context, stream string, version, revision int) ([]SchemaUsage, error) {
	_, ids, err := r.ids()
	if err != nil {
		return nil, err
	}
	id, err := r.scope(ctx, stream)
	if err != nil {
		return nil, err
	}
	revs, err := ids.ReferencedBy(ctx, driver.ReferencedByParams{StreamID: id, Version: version, Revision: revision})
	if err != nil {
		return nil, fmt.Errorf("sqlstreams: references to %q v%d r%d: %w", stream, version, revision, classify(err))
	}
	return r.usages(ctx, revs)
}

func (r *Registry) usages(ctx context.Context, revs []driver.SchemaRevision) ([]SchemaUsage, error) {
	names, err := r.streamNames(ctx)
	if err != nil {
		return nil, err
	}
	out := []SchemaUsage{}
	for _, rv := range revs {
		if name, ok := names[rv.StreamID]; ok {
			out = append(out, SchemaUsage{Stream: name, Version: rv.Version, Revision: rv.Revision})
		}
	}
	slices.SortFunc(out, func(a, b SchemaUsage) int {
		if a.Stream != b.Stream {
			if a.Stream < b.Stream {
				return -1
			}
			return 1
		}
		if a.Version != b.Version {
			return a.Version - b.Version
		}
		return a.Revision - b.Revision
	})
	return out, nil
}

func (r *Registry) streamNames(ctx context.Context) (map[int64]string, error) {
	streams, err := r.client.Streams(ctx)
	if err != nil {
		return nil, err
	}
	names := make(map[int64]string, len(streams))
	for _, st := range streams {
		names[st.ID] = st.Name
	}
	return names, nil
}

func (r *Registry) publicRevision(ctx context.Context, rv driver.SchemaRevision) (Revision, error) {
	s, err := schema.Parse(rv.Schema)
	if err != nil {
		return Revision{}, err
	}
	refs, err := r.publicRefs(ctx, rv.References)
	if err != nil {
		return Revision{}, err
	}
	return Revision{Version: rv.Version, Revision: rv.Revision, Fingerprint: rv.Fingerprint, Schema: s, CreatedAt: rv.CreatedAt, ID: rv.ID, References: refs}, nil
}

func (r *Registry) publicRefs(ctx context.Context, refs []driver.SchemaReference) ([]Reference, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	names, err := r.streamNames(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Reference, len(refs))
	for i, ref := range refs {
		out[i] = Reference{Name: ref.Name, Stream: names[ref.StreamID], Version: ref.Version, Revision: ref.Revision}
	}
	return out, nil
}

// driverRefs resolves references to recorded revisions.
func (r *Registry) driverRefs(ctx context.Context, store driver.Registry, refs []Reference) ([]driver.SchemaReference, error) {
	var out []driver.SchemaReference
	seen := map[string]bool{}
	for _, ref := range refs {
		if ref.Name == "" || seen[ref.Name] {
			return nil, fmt.Errorf("%w: reference name %q is empty or given twice", ErrInvalidOption, ref.Name)
		}
		seen[ref.Name] = true
		cfg, err := r.client.Stream[RawPayload](ref.Stream).lookup(ctx, false)
		if errors.Is(err, ErrStreamNotFound) {
			return nil, fmt.Errorf("sqlstreams: reference %q: %w: stream %q has no schemas; register the shared schema first", ref.Name, ErrReferenceNotFound, ref.Stream)
		}
		if err != nil {
			return nil, err
		}
		revs, err := store.SchemaRevisions(ctx, driver.SchemaRevisionsParams{StreamID: cfg.ID, Version: ref.Version})
		if err != nil {
			return nil, classify(err)
		}
		var found *driver.SchemaRevision
		for i := range revs {
			if ref.Revision == 0 || revs[i].Revision == ref.Revision {
				found = &revs[i]
			}
		}
		if found == nil {
			return nil, fmt.Errorf("sqlstreams: reference %q: %w: stream %q version %d revision %d; register the shared schema first",
				ref.Name, ErrReferenceNotFound, ref.Stream, ref.Version, ref.Revision)
		}
		out = append(out, driver.SchemaReference{Name: ref.Name, StreamID: cfg.ID, Version: found.Version, Revision: found.Revision, Fingerprint: found.Fingerprint})
	}
	return out, nil
}

// recordShared records the shared types a reflected schema refers to (each
// through the full gate, on its own stream) and binds the registration's
// references to the revisions recorded.
func (r *Registry) recordShared(ctx context.Context, reg *registration) error {
	if reg.schema == nil {
		return nil
	}
	for _, sh := range reg.schema.Shared() {
		s := r.client.Stream[RawPayload](sh.Name.Stream)
		cfg, created, err := s.ensure(ctx)
		if err != nil {
			return fmt.Errorf("sqlstreams: shared schema %s of %s: %w", sh.Name.Ref(), reg.typ, err)
		}
		rev, err := r.recordRevision(ctx, registration{stream: cfg, typ: fmt.Sprintf("shared schema %s of %s", sh.Name.Ref(), reg.typ),
			version: sh.Name.Version, schema: sh.Schema})
		if err != nil {
			s.undoCreate(ctx, cfg, created)
			return err
		}
		reg.refs = append(reg.refs, driver.SchemaReference{Name: sh.Name.Ref(), StreamID: cfg.ID, Version: rev.Version, Revision: rev.Revision, Fingerprint: rev.Fingerprint})
	}
	return nil
}

// checkShared dry-runs each shared type a reflected schema refers to on
// its own stream (its level, its readers, the schemas that reference it)
// and binds the registration to the revisions already recorded with the
// same text; the others are inlined for the checks that follow.
func (r *Registry) checkShared(ctx context.Context, reg *registration) error {
	var walk func(shared []schema.SharedRef, depth int) error
	walk = func(shared []schema.SharedRef, depth int) error {
		if depth > 32 {
			return fmt.Errorf("%w: shared types nest deeper than 32", ErrInvalidMessage)
		}
		for _, sh := range shared {
			name := sh.Name.Ref()
			if _, done := reg.inline[name]; done || slices.ContainsFunc(reg.refs, func(f driver.SchemaReference) bool { return f.Name == name }) {
				continue
			}
			if err := r.dryRun(ctx, sh.Name.Stream, registration{typ: fmt.Sprintf("shared schema %s of %s", name, reg.typ),
				version: sh.Name.Version, schema: sh.Schema}); err != nil {
				return err
			}
			if rev, ok, err := r.recordedAs(ctx, sh); err != nil {
				return err
			} else if ok && depth == 0 {
				reg.refs = append(reg.refs, rev)
				continue
			}
			if reg.inline == nil {
				reg.inline = map[string]*schema.Schema{}
			}
			reg.inline[name] = sh.Schema
			if err := walk(sh.Schema.Shared(), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(reg.schema.Shared(), 0)
}

// recordedAs finds the revision of a shared type's stream version that
// holds exactly its schema.
func (r *Registry) recordedAs(ctx context.Context, sh schema.SharedRef) (driver.SchemaReference, bool, error) {
	revs, err := r.Revisions(ctx, sh.Name.Stream, sh.Name.Version)
	if errors.Is(err, ErrStreamNotFound) {
		return driver.SchemaReference{}, false, nil
	}
	if err != nil {
		return driver.SchemaReference{}, false, err
	}
	cfg, err := r.client.Stream[RawPayload](sh.Name.Stream).lookup(ctx, false)
	if err != nil {
		return driver.SchemaReference{}, false, err
	}
	want := sh.Schema.Canonical()
	for _, rv := range revs {
		if len(rv.References) == 0 && string(rv.Schema.Canonical()) == string(want) {
			return driver.SchemaReference{Name: sh.Name.Ref(), StreamID: cfg.ID, Version: rv.Version, Revision: rv.Revision, Fingerprint: rv.Fingerprint}, true, nil
		}
	}
	return driver.SchemaReference{}, false, nil
}

// referencerProblems checks a new revision of a shared schema against the
// schemas that reference its version (the latest revision of each
// referencing stream version): each one, with the reference replaced by
// the candidate, must pass its own stream's level against itself as it is,
// and be readable by its stream's readers at that version.
func (r *Registry) referencerProblems(ctx context.Context, store driver.Registry, res *resolver, reg registration, existing []driver.SchemaRevision, global driver.RegistrySettings) ([]SchemaProblem, error) {
	ids, ok := store.(driver.SchemaIDs)
	if !ok || len(existing) == 0 {
		return nil, nil
	}
	type key struct {
		stream  int64
		version int
	}
	latest := map[key]driver.SchemaRevision{}
	var order []key
	for _, e := range existing {
		users, err := ids.ReferencedBy(ctx, driver.ReferencedByParams{StreamID: e.StreamID, Version: e.Version, Revision: e.Revision})
		if err != nil {
			return nil, classify(err)
		}
		for _, u := range users {
			// ReferencedBy names revisions; their references come with
			// the stream's revisions.
			if u, err = res.full(ctx, u); err != nil {
				return nil, err
			}
			k := key{u.StreamID, u.Version}
			if _, seen := latest[k]; !seen {
				order = append(order, k)
			}
			if u.Revision >= latest[k].Revision {
				latest[k] = u
			}
		}
	}
	if len(order) == 0 {
		return nil, nil
	}
	candidate, err := res.candidate(ctx, reg)
	if err != nil {
		return nil, err
	}
	names, err := r.streamNames(ctx)
	if err != nil {
		return nil, err
	}
	var out []SchemaProblem
	override := map[refTarget]*schema.Schema{{reg.stream.ID, reg.version}: candidate}
	for _, k := range order {
		user := latest[k]
		// The latest revision of that stream version may have moved on to
		// another version of this schema; only a reference to this version counts.
		if !slices.ContainsFunc(user.References, func(f driver.SchemaReference) bool { return f.StreamID == reg.stream.ID && f.Version == reg.version }) {
			continue
		}
		before, err := res.bundled(ctx, user, nil)
		if err != nil {
			return nil, err
		}
		after, err := res.bundled(ctx, user, override)
		if err != nil {
			return nil, err
		}
		streamSet, err := store.RegistrySettings(ctx, driver.RegistrySettingsParams{StreamID: user.StreamID})
		if err != nil {
			return nil, classify(err)
		}
		level, _ := effectiveLevel(streamSet, global)
		name := names[user.StreamID]
		for _, p := range schema.Check(level, []*schema.Schema{before}, after, reg.policy).Problems {
			out = append(out, SchemaProblem{Against: fmt.Sprintf("stream %s version %d revision %d, which references it", name, user.Version, user.Revision), Problem: p})
		}
		readers, err := store.Readers(ctx, driver.ReadersParams{StreamID: user.StreamID})
		if err != nil {
			return nil, classify(err)
		}
		revs, err := store.SchemaRevisions(ctx, driver.SchemaRevisionsParams{StreamID: user.StreamID, Version: user.Version})
		if err != nil {
			return nil, classify(err)
		}
		for _, rd := range readers {
			if rd.Version != user.Version {
				continue
			}
			i := slices.IndexFunc(revs, func(rv driver.SchemaRevision) bool { return rv.Revision == rd.Revision })
			if i < 0 {
				continue
			}
			reader, err := res.bundled(ctx, revs[i], nil)
			if err != nil {
				return nil, err
			}
			for _, p := range schema.Check(schema.Forward, []*schema.Schema{reader}, after, reg.policy).Problems {
				out = append(out, SchemaProblem{Against: fmt.Sprintf("the reader of group %s on stream %s (revision %d), which references it", rd.Group, name, rd.Revision), Problem: p})
			}
		}
	}
	return out, nil
}

type refTarget struct {
	stream  int64
	version int
}

// resolver bundles stored revisions with the shared schemas they refer
// to, reading each referenced stream's revisions once.
type resolver struct {
	store driver.Registry
	revs  map[int64][]driver.SchemaRevision
}

func newResolver(store driver.Registry) *resolver {
	return &resolver{store: store, revs: map[int64][]driver.SchemaRevision{}}
}

func (res *resolver) revision(ctx context.Context, ref driver.SchemaReference) (driver.SchemaRevision, error) {
	revs, ok := res.revs[ref.StreamID]
	if !ok {
		var err error
		if revs, err = res.store.SchemaRevisions(ctx, driver.SchemaRevisionsParams{StreamID: ref.StreamID}); err != nil {
			return driver.SchemaRevision{}, classify(err)
		}
		res.revs[ref.StreamID] = revs
	}
	for _, rv := range revs {
		if rv.Version == ref.Version && rv.Revision == ref.Revision && rv.Fingerprint == ref.Fingerprint {
			return rv, nil
		}
	}
	return driver.SchemaRevision{}, fmt.Errorf("sqlstreams: reference %q: %w (version %d revision %d is gone)", ref.Name, ErrReferenceNotFound, ref.Version, ref.Revision)
}

// full is a revision as SchemaRevisions lists it, references included.
func (res *resolver) full(ctx context.Context, rv driver.SchemaRevision) (driver.SchemaRevision, error) {
	return res.revision(ctx, driver.SchemaReference{Name: fmt.Sprintf("revision %d", rv.Revision), StreamID: rv.StreamID,
		Version: rv.Version, Revision: rv.Revision, Fingerprint: rv.Fingerprint})
}

// candidate is the registration's schema with its references resolved,
// and its shared schemas not recorded yet inlined.
func (res *resolver) candidate(ctx context.Context, reg registration) (*schema.Schema, error) {
	return res.bundleWith(ctx, reg.schema, reg.refs, nil, reg.inline)
}

// bundled is a stored revision with its references resolved; override
// replaces the referenced schema of a (stream, version).
func (res *resolver) bundled(ctx context.Context, rv driver.SchemaRevision, override map[refTarget]*schema.Schema) (*schema.Schema, error) {
	s, err := schema.Parse(rv.Schema)
	if err != nil {
		return nil, fmt.Errorf("sqlstreams: stored schema revision %d: %w", rv.Revision, err)
	}
	return res.bundle(ctx, s, rv.References, override)
}

func (res *resolver) bundle(ctx context.Context, s *schema.Schema, refs []driver.SchemaReference, override map[refTarget]*schema.Schema) (*schema.Schema, error) {
	return res.bundleWith(ctx, s, refs, override, nil)
}

func (res *resolver) bundleWith(ctx context.Context, s *schema.Schema, refs []driver.SchemaReference, override map[refTarget]*schema.Schema, inline map[string]*schema.Schema) (*schema.Schema, error) {
	if len(refs) == 0 && len(inline) == 0 {
		return s, nil
	}
	flat := map[string]*schema.Schema{}
	for name, sub := range inline {
		flat[name] = sub
	}
	var walk func(refs []driver.SchemaReference, depth int) error
	walk = func(refs []driver.SchemaReference, depth int) error {
		if depth > 32 {
			return fmt.Errorf("%w: references nest deeper than 32 (a cycle?)", ErrInvalidOption)
		}
		for _, ref := range refs {
			if _, done := flat[ref.Name]; done {
				continue
			}
			if o, ok := override[refTarget{ref.StreamID, ref.Version}]; ok {
				flat[ref.Name] = o
				continue
			}
			rv, err := res.revision(ctx, ref)
			if err != nil {
				return err
			}
			sub, err := schema.Parse(rv.Schema)
			if err != nil {
				return err
			}
			flat[ref.Name] = sub
			if err := walk(rv.References, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(refs, 0); err != nil {
		return nil, err
	}
	b, err := schema.Bundle(s, flat)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidOption, err)
	}
	return b, nil
}
