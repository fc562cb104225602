package sqlstreams

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// ErrNoValidator: the schema a message would be checked against is of a
// type no enabled format can validate (enable a format whose documents
// implement schema.Validator, contrib/avro or contrib/protobuf, or a JSON
// Schema compiler with WithJSONValidation, contrib/jsonschema), or the
// enabled JSON Schema validator cannot compile it.
var ErrNoValidator = errors.New("no validator for the schema type")

// ValidationError lists why a message breaks the latest schema revision of
// its stream and version. It matches ErrInvalidMessage with errors.Is.
type ValidationError struct {
	Stream     string
	Version    int
	Revision   int
	Type       schema.Type
	Violations []schema.Violation
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		parts[i] = v.String()
	}
	return fmt.Sprintf("%v: the message breaks %s schema %q v%d r%d: %s",
		ErrInvalidMessage, e.Type, e.Stream, e.Version, e.Revision, strings.Join(parts, "; "))
}

// Unwrap makes a ValidationError match ErrInvalidMessage: the message cannot
// be produced as given.
func (e *ValidationError) Unwrap() error { return ErrInvalidMessage }

// Validate checks payload, a message as stored (JSON), against the latest
// revision registered at the stream's version: nil when it follows it, a
// *ValidationError (ErrInvalidMessage) naming each problem's path when it
// does not, ErrRevisionNotFound when nothing is registered at the version
// and ErrNoValidator when the revision's type cannot be validated here.
func (r *Registry) Validate(ctx context.Context, stream string, version int, payload []byte) error {
	v, err := r.validator(ctx, stream, version)
	if err != nil {
		return err
	}
	return v.check(payload)
}

// messageValidator is the latest revision of one (stream, version) ready
// to check messages with.
type messageValidator struct {
	err ValidationError // the fields every failure names
	doc schema.Validator
}

func (v *messageValidator) check(payload []byte) error {
	problems := v.doc.Validate(payload)
	if len(problems) == 0 {
		return nil
	}
	out := v.err
	out.Violations = problems
	return &out
}

func (r *Registry) validator(ctx context.Context, stream string, version int) (*messageValidator, error) {
	if version < 1 || version > MaxSchemaVersion {
		return nil, fmt.Errorf("%w: schema version %d; versions are 1 to %d", ErrInvalidOption, version, MaxSchemaVersion)
	}
	revs, err := r.storedRevisions(ctx, stream, version, false)
	if err != nil {
		return nil, err
	}
	if len(revs) == 0 {
		return nil, fmt.Errorf("%w: %q has no schema at version %d; register one before validating against it", ErrRevisionNotFound, stream, version)
	}
	latest := revs[len(revs)-1]
	t := docType(latest.Type)
	check, err := r.compile(ctx, latest)
	if err != nil {
		return nil, fmt.Errorf("sqlstreams: schema %q v%d r%d: %w", stream, latest.Version, latest.Revision, err)
	}
	return &messageValidator{doc: check, err: ValidationError{Stream: stream, Version: latest.Version, Revision: latest.Revision, Type: t}}, nil
}

// compile makes a Validator of a stored revision: JSON with the client's
// WithJSONValidation compiler, given the documents its references name,
// other types with their format when its documents implement
// schema.Validator.
func (r *Registry) compile(ctx context.Context, rv driver.SchemaRevision) (schema.Validator, error) {
	t := docType(rv.Type)
	if t == schema.TypeJSON {
		if r.client.jsonCheck == nil {
			return nil, fmt.Errorf("%w: JSON Schema messages are validated by a compiler the client enables; pass sqlstreams.WithJSONValidation with a JSON Schema validator (contrib/jsonschema)", ErrNoValidator)
		}
		src, err := r.jsonSource(ctx, rv)
		if err != nil {
			return nil, err
		}
		check, err := r.client.jsonCheck.Compile(src)
		if err != nil {
			return nil, fmt.Errorf("%w: the JSON Schema validator cannot compile it: %w", ErrNoValidator, err)
		}
		return check, nil
	}
	f, ok := r.formats[t]
	if !ok {
		return nil, fmt.Errorf("%w: no format for %s is enabled (%s)", ErrNoValidator, t, r.typeList())
	}
	doc, err := f.Parse(rv.Schema)
	if err != nil {
		return nil, err
	}
	check, ok := doc.(schema.Validator)
	if !ok {
		return nil, fmt.Errorf("%w: the %s format enabled here does not validate messages; use one whose documents implement schema.Validator", ErrNoValidator, t)
	}
	return check, nil
}

// jsonSource is a stored JSON revision with the text of every document its
// references reach, bound by name as the registry binds them to judge it.
func (r *Registry) jsonSource(ctx context.Context, rv driver.SchemaRevision) (schema.JSONSource, error) {
	src := schema.JSONSource{Schema: rv.Schema}
	if len(rv.References) == 0 {
		return src, nil
	}
	store, err := r.store()
	if err != nil {
		return src, err
	}
	res := r.newResolver(store)
	src.References = map[string][]byte{}
	err = walkRefs(rv.References, src.References, func(ref driver.SchemaReference) string { return ref.Name },
		func(ref driver.SchemaReference) ([]byte, []driver.SchemaReference, error) {
			sub, err := res.revision(ctx, ref)
			return sub.Schema, sub.References, err
		})
	return src, err
}
