package sqlstreams

import (
	"context"
	"fmt"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// RevisionDocument is a stream's stored revision parsed as the registry's
// own checks read it: a JSON Schema with its references resolved, an Avro
// or Protobuf document through the format the client enabled with
// WithFormats. A tool that shows or compares stored schemas (the console's
// diff view) judges them with schema.Judge on these documents, so it never
// disagrees with a registration. A document whose format the client lacks
// comes back as schema.Opaque, whose ReadsFrom says it cannot be judged.
// A soft-deleted revision is found too; one that does not exist is
// ErrSchemaNotFound.
func (r *Registry) RevisionDocument(ctx context.Context, stream string, version, revision int) (schema.Document, error) {
	store, err := r.store()
	if err != nil {
		return nil, err
	}
	revs, err := r.storedRevisions(ctx, stream, version, true) // soft-deleted ones too, as SubjectDocument
	if err != nil {
		return nil, err
	}
	for _, rv := range revs {
		if rv.Revision == revision {
			return r.newResolver(store).document(ctx, rv, nil, r.client.docPolicy)
		}
	}
	return nil, fmt.Errorf("sqlstreams: stream %q version %d revision %d: %w", stream, version, revision, ErrSchemaNotFound)
}

// SubjectDocument is a free subject's version (soft-deleted ones too)
// parsed as RevisionDocument parses a revision, its references resolved:
// ErrSubjectNotFound when the subject has no version,
// ErrSubjectVersionNotFound when it lacks this one.
func (r *Registry) SubjectDocument(ctx context.Context, subject string, version int) (schema.Document, error) {
	store, err := r.subjects()
	if err != nil {
		return nil, err
	}
	vs, err := store.SubjectVersions(ctx, driver.SubjectVersionsParams{Subject: subject, Deleted: true})
	if err != nil {
		return nil, fmt.Errorf("sqlstreams: versions of subject %q: %w", subject, classify(err))
	}
	if len(vs) == 0 {
		return nil, fmt.Errorf("sqlstreams: subject %q: %w", subject, ErrSubjectNotFound)
	}
	for _, v := range vs {
		if v.Version == version {
			return r.subjectDoc(ctx, store, v, r.client.docPolicy)
		}
	}
	return nil, fmt.Errorf("sqlstreams: subject %q version %d: %w", subject, version, ErrSubjectVersionNotFound)
}
