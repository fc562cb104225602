package sqlstreams

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

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
	// Type is the document's language; empty is JSON. Types other than
	// JSON need their format enabled with WithFormats.
	Type   schema.Type
	Schema []byte // the document
	// References bind a JSON Schema document's "$ref" names to shared
	// schemas. Documents of other types take none yet.
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
	reg, err := r.document(ctx, store, p)
	if err != nil {
		return Revision{}, err
	}
	s := r.client.Stream[RawPayload](p.Stream)
	cfg, created, err := s.ensure(ctx)
	if err != nil {
		return Revision{}, err
	}
	reg.stream, reg.id, reg.rev = cfg, p.ID, p.Revision
	rev, err := r.recordRevision(ctx, reg)
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
	return r.CheckDocumentAgainst(ctx, SchemaRegistration{Stream: stream, Version: version, Schema: doc, References: refs}, revision)
}

// CheckDocumentAgainst is CheckAgainst for a document of any type
// (p.Type); p.ID and p.Revision are ignored.
func (r *Registry) CheckDocumentAgainst(ctx context.Context, p SchemaRegistration, revision int) error {
	store, err := r.store()
	if err != nil {
		return err
	}
	reg, err := r.document(ctx, store, p)
	if err != nil {
		return err
	}
	stream, version := p.Stream, p.Version
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
	reg.stream, reg.dryRun, reg.against = cfg, true, against
	return r.precheck(ctx, store, reg)
}

// CheckWithReferences is Check for a document that refers to shared
// schemas.
func (r *Registry) CheckWithReferences(ctx context.Context, stream string, version int, doc []byte, refs []Reference) error {
	return r.CheckDocument(ctx, SchemaRegistration{Stream: stream, Version: version, Schema: doc, References: refs})
}

// CheckDocument is the dry run of RegisterSchema for a document of any type
// (p.Type): the level against the revisions at the version and the
// deployed readers, as Check does for a JSON Schema; it records nothing.
// p.ID and p.Revision are ignored.
func (r *Registry) CheckDocument(ctx context.Context, p SchemaRegistration) error {
	store, err := r.store()
	if err != nil {
		return err
	}
	if p.Version < 1 {
		return fmt.Errorf("%w: version %d; versions start at 1", ErrInvalidOption, p.Version)
	}
	reg, err := r.document(ctx, store, p)
	if err != nil {
		return err
	}
	return r.dryRun(ctx, p.Stream, reg)
}

// document parses a hand-written document by its type and resolves its
// references: a registration of it, without its stream.
func (r *Registry) document(ctx context.Context, store driver.Registry, p SchemaRegistration) (registration, error) {
	reg := registration{typ: "schema document", version: p.Version, policy: r.client.docPolicy}
	t, err := schema.ParseType(string(p.Type))
	if err != nil {
		return reg, fmt.Errorf("%w: %v", ErrInvalidOption, err)
	}
	if t == schema.TypeJSON {
		if reg.schema, err = schema.Parse(p.Schema); err != nil {
			return reg, fmt.Errorf("%w: schema document: %v", ErrInvalidOption, err)
		}
		reg.text = slices.Clone(p.Schema)
		reg.refs, err = r.driverRefs(ctx, store, p.References)
		return reg, err
	}
	f, ok := r.formats[t]
	if !ok {
		return reg, fmt.Errorf("%w: schema type %s is not enabled; enable it with sqlstreams.WithFormats (%s)", ErrInvalidOption, t, r.typeList())
	}
	if len(p.References) > 0 {
		return reg, fmt.Errorf("%w: a %s document with references is registered under a free subject (such as {topic}-value, RegisterSubject); under a stream version, inline the types it uses", ErrInvalidOption, t)
	}
	if reg.doc, err = f.Parse(p.Schema); err != nil {
		return reg, fmt.Errorf("%w: %s schema document: %v", ErrInvalidOption, t, err)
	}
	if reg.doc.Type() != t {
		return reg, fmt.Errorf("%w: the %s format parsed a document of type %s", ErrInvalidOption, t, reg.doc.Type())
	}
	reg.typ, reg.text = strings.ToLower(string(t))+" schema document", slices.Clone(p.Schema)
	return reg, nil
}

// Types lists the document types the registry accepts: JSON, then those
// enabled with WithFormats, by name.
func (r *Registry) Types() []schema.Type {
	out := []schema.Type{schema.TypeJSON}
	for t := range r.formats {
		out = append(out, t)
	}
	slices.Sort(out[1:])
	return out
}

func (r *Registry) typeList() string {
	names := make([]string, 0, len(r.formats)+1)
	for _, t := range r.Types() {
		names = append(names, string(t))
	}
	return "enabled: " + strings.Join(names, ", ")
}

// Fingerprint is the fingerprint a document of type t without references
// is recorded under, for finding its revision: the registry deduplicates
// documents by it. A malformed document fails as RegisterSchema would.
func (r *Registry) Fingerprint(ctx context.Context, t schema.Type, text []byte) (string, error) {
	store, err := r.store()
	if err != nil {
		return "", err
	}
	reg, err := r.document(ctx, store, SchemaRegistration{Type: t, Schema: text})
	if err != nil {
		return "", err
	}
	return reg.fingerprint(), nil
}

// Subject is a (stream, version) pair with at least one recorded revision.
type Subject struct {
	Stream  string
	Version int
}

// Subjects lists every (stream, version) with recorded revisions not
// soft-deleted, ordered by stream name, then version.
func (r *Registry) Subjects(ctx context.Context) ([]Subject, error) {
	return r.streamSubjects(ctx, false)
}

// SubjectsWithDeleted lists every (stream, version) with recorded
// revisions as Subjects does, also those whose revisions are all
// soft-deleted.
func (r *Registry) SubjectsWithDeleted(ctx context.Context) ([]Subject, error) {
	return r.streamSubjects(ctx, true)
}

func (r *Registry) streamSubjects(ctx context.Context, deleted bool) ([]Subject, error) {
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
		revs, err := store.SchemaRevisions(ctx, driver.SchemaRevisionsParams{StreamID: st.ID, Deleted: deleted})
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
	Type        schema.Type    // as Revision.Type
	Text        []byte         // as Revision.Text
	Schema      *schema.Schema // the parsed JSON Schema, nil for other types
}

// SchemaUsage is a revision recorded with a global id's schema.
type SchemaUsage struct {
	Stream   string
	Version  int
	Revision int
	// Deleted marks a soft-deleted revision (SchemaUsagesWithDeleted).
	Deleted bool
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
	out := SchemaDocument{ID: doc.ID, Fingerprint: doc.Fingerprint, Type: docType(doc.Type), Text: doc.Schema}
	if out.Type == schema.TypeJSON {
		if out.Schema, err = schema.Parse(doc.Schema); err != nil {
			return SchemaDocument{}, fmt.Errorf("sqlstreams: stored schema id %d: %w", id, err)
		}
	}
	return out, nil
}

// SchemaUsages lists the revisions, in any stream, recorded with a global
// id's schema, ordered by stream name, version and revision. An id no
// stream uses any more (its streams were deleted) lists none.
func (r *Registry) SchemaUsages(ctx context.Context, id int64) ([]SchemaUsage, error) {
	return r.schemaUsages(ctx, id, false)
}

// SchemaUsagesWithDeleted is SchemaUsages with the soft-deleted revisions
// too, marked Deleted: a soft-deleted revision's id is still served (R9),
// and Confluent's deleted=true lists where it was used.
func (r *Registry) SchemaUsagesWithDeleted(ctx context.Context, id int64) ([]SchemaUsage, error) {
	return r.schemaUsages(ctx, id, true)
}

func (r *Registry) schemaUsages(ctx context.Context, id int64, deleted bool) ([]SchemaUsage, error) {
	_, ids, err := r.ids()
	if err != nil {
		return nil, err
	}
	revs, err := ids.SchemaUsages(ctx, driver.SchemaUsagesParams{ID: id, Deleted: deleted})
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
			out = append(out, SchemaUsage{Stream: name, Version: rv.Version, Revision: rv.Revision, Deleted: rv.Deleted})
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
	out := Revision{Version: rv.Version, Revision: rv.Revision, Fingerprint: rv.Fingerprint, Type: docType(rv.Type), Text: rv.Schema,
		CreatedAt: rv.CreatedAt, ID: rv.ID, Deleted: rv.Deleted}
	var err error
	if out.Type == schema.TypeJSON {
		if out.Schema, err = schema.Parse(rv.Schema); err != nil {
			return Revision{}, err
		}
	}
	if out.References, err = r.publicRefs(ctx, rv.References); err != nil {
		return Revision{}, err
	}
	return out, nil
}

// docType is a stored type; empty (a driver that predates types) is JSON.
func docType(t string) schema.Type {
	if t == "" {
		return schema.TypeJSON
	}
	return schema.Type(t)
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
		if t := docType(found.Type); t != schema.TypeJSON {
			return nil, fmt.Errorf("%w: reference %q names stream %q version %d revision %d, a %s document; a JSON Schema refers to JSON Schemas only",
				ErrInvalidOption, ref.Name, ref.Stream, found.Version, found.Revision, t)
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
		if rv.Type == schema.TypeJSON && len(rv.References) == 0 && string(rv.Schema.Canonical()) == string(want) {
			return driver.SchemaReference{Name: sh.Name.Ref(), StreamID: cfg.ID, Version: rv.Version, Revision: rv.Revision, Fingerprint: rv.Fingerprint}, true, nil
		}
	}
	return driver.SchemaReference{}, false, nil
}

// referencerProblems checks a new revision of a shared schema against the
// schemas that reference its version (the latest revision of each
// referencing stream version): each one, with the reference replaced by
// the candidate, must pass its own version's level against itself as it is,
// and be readable by its stream's readers at that version.
func (r *Registry) referencerProblems(ctx context.Context, store driver.Registry, res *resolver, reg registration, existing []driver.SchemaRevision) ([]SchemaProblem, error) {
	ids, ok := store.(driver.SchemaIDs)
	if !ok || len(existing) == 0 || reg.doc != nil { // only JSON Schemas are referenced
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
		set, err := revisionSettings(ctx, store, user.StreamID, user.Version)
		if err != nil {
			return nil, classify(err)
		}
		level, _ := levelOf(set)
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
	store   driver.Registry
	formats map[schema.Type]schema.Format
	revs    map[int64][]driver.SchemaRevision
}

func (r *Registry) newResolver(store driver.Registry) *resolver {
	return &resolver{store: store, formats: r.formats, revs: map[int64][]driver.SchemaRevision{}}
}

// document is a stored revision as the judge reads it: a JSON Schema with
// its references resolved (override as in bundled) under policy; a
// document of an enabled format parsed; one of a format this client lacks
// opaque, which is enough to tell it from a candidate of another type.
func (res *resolver) document(ctx context.Context, rv driver.SchemaRevision, override map[refTarget]*schema.Schema, policy schema.Policy) (schema.Document, error) {
	t := docType(rv.Type)
	if t == schema.TypeJSON {
		s, err := res.bundled(ctx, rv, override)
		if err != nil {
			return nil, err
		}
		return schema.JSONDocument(s, policy), nil
	}
	f, ok := res.formats[t]
	if !ok {
		return schema.Opaque(t, rv.Schema), nil
	}
	d, err := f.Parse(rv.Schema)
	if err != nil {
		return nil, fmt.Errorf("sqlstreams: stored %s schema version %d revision %d: %w", t, rv.Version, rv.Revision, err)
	}
	return d, nil
}

// candidateDoc is the registration's document as the judge reads it.
func (res *resolver) candidateDoc(ctx context.Context, reg registration) (schema.Document, error) {
	if reg.doc != nil {
		return reg.doc, nil
	}
	s, err := res.candidate(ctx, reg)
	if err != nil {
		return nil, err
	}
	return schema.JSONDocument(s, reg.policy), nil
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
	return bundleRefs(s, refs, flat, func(ref driver.SchemaReference) string { return ref.Name },
		func(ref driver.SchemaReference) (*schema.Schema, []driver.SchemaReference, error) {
			if o, ok := override[refTarget{ref.StreamID, ref.Version}]; ok {
				return o, nil, nil
			}
			rv, err := res.revision(ctx, ref)
			if err != nil {
				return nil, nil, err
			}
			sub, err := schema.Parse(rv.Schema)
			return sub, rv.References, err
		})
}

// bundleRefs inlines the documents refs name into s, transitively, for
// the diff engine to follow like local definitions: load returns what a
// reference names and that document's own references; flat holds the
// names bound already.
func bundleRefs[R any](s *schema.Schema, refs []R, flat map[string]*schema.Schema, name func(R) string, load func(R) (*schema.Schema, []R, error)) (*schema.Schema, error) {
	if err := walkRefs(refs, flat, name, load); err != nil {
		return nil, err
	}
	b, err := schema.Bundle(s, flat)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidOption, err)
	}
	return b, nil
}

// walkRefs binds in flat every name refs reach, transitively: load returns
// what a reference names and that document's own references. A name bound
// already keeps its first binding, so a name that two documents bind to
// different revisions resolves as the first one met (depth first, in the
// order the references were given).
func walkRefs[R, V any](refs []R, flat map[string]V, name func(R) string, load func(R) (V, []R, error)) error {
	var walk func(refs []R, depth int) error
	walk = func(refs []R, depth int) error {
		if depth > 32 {
			return fmt.Errorf("%w: references nest deeper than 32 (a cycle?)", ErrInvalidOption)
		}
		for _, ref := range refs {
			if _, done := flat[name(ref)]; done {
				continue
			}
			sub, more, err := load(ref)
			if err != nil {
				return err
			}
			flat[name(ref)] = sub
			if err := walk(more, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(refs, 0)
}
