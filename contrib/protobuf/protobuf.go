package protobuf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/reporter"
	"github.com/sqlstreams/sqlstreams/core/schema"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// Format is the PROTOBUF format, for sqlstreams.WithFormats.
func Format() schema.Format { return protobufFormat{} }

type protobufFormat struct{}

func (protobufFormat) Type() schema.Type { return schema.TypeProtobuf }

func (protobufFormat) Parse(text []byte) (schema.Document, error) { return Parse(text) }

func (protobufFormat) ParseReferences(text []byte, refs []schema.Referenced) (schema.Document, error) {
	return ParseReferences(text, refs)
}

// FileName is the name the registered document is compiled under: a
// registered schema is one .proto file whose own name the registry never
// sees, so every document gets the same one and it stays out of the
// fingerprint's way.
const FileName = "schema.proto"

// ErrImportNotAvailable is the cause of a Parse error for an import that
// is neither a well-known type nor one of the document's references.
var ErrImportNotAvailable = errors.New("protobuf: the import is neither a well-known type (google/protobuf/*.proto) nor a reference of this schema; register the imported file under a subject of its own and refer to it by its import path")

// Document is a parsed .proto file.
type Document struct {
	fd        protoreflect.FileDescriptor
	canonical []byte
}

// Parse compiles .proto text (proto2, proto3 or editions) as protoc would,
// with the well-known types (google/protobuf/*.proto) importable without
// registering them. Any other import is refused with ErrImportNotAvailable.
// Parse never panics.
func Parse(text []byte) (*Document, error) { return ParseReferences(text, nil) }

// ParseReferences is Parse for a file that imports other registered files
// (Confluent's schema references, each named by its import path such as
// "shop/customer.proto"): refs are every file text reaches, and only they
// and the well-known types can be imported.
func ParseReferences(text []byte, refs []schema.Referenced) (doc *Document, err error) {
	defer func() {
		if p := recover(); p != nil {
			doc, err = nil, fmt.Errorf("protobuf: cannot parse the schema: %v", p)
		}
	}()
	if len(bytes.TrimSpace(text)) == 0 {
		return nil, errors.New("protobuf: empty schema; send .proto text such as `syntax = \"proto3\"; message M { string id = 1; }`")
	}
	sources := map[string]string{FileName: string(text)}
	for _, ref := range refs {
		if ref.Name == FileName || strings.HasPrefix(ref.Name, "google/protobuf/") {
			return nil, fmt.Errorf("protobuf: reference %q: %s and google/protobuf/ are reserved names; name a reference by the import path its importers use", ref.Name, FileName)
		}
		sources[ref.Name] = string(ref.Text)
	}
	fd, err := compile(sources)
	if err != nil {
		return nil, err
	}
	return &Document{fd: fd, canonical: canonical(fd)}, nil
}

// compile compiles sources[FileName], resolving its imports among sources
// and the well-known types.
func compile(sources map[string]string) (protoreflect.FileDescriptor, error) {
	resolver := protocompile.WithStandardImports(protocompile.ResolverFunc(func(name string) (protocompile.SearchResult, error) {
		if src, ok := sources[name]; ok {
			return protocompile.SearchResult{Source: strings.NewReader(src)}, nil
		}
		if strings.HasPrefix(name, "google/protobuf/") {
			return protocompile.SearchResult{}, fmt.Errorf("%q is not a well-known type of google/protobuf", name)
		}
		return protocompile.SearchResult{}, fmt.Errorf("import %q: %w", name, ErrImportNotAvailable)
	}))
	var first error
	c := protocompile.Compiler{
		Resolver:       resolver,
		MaxParallelism: 1,
		Reporter: reporter.NewReporter(func(e reporter.ErrorWithPos) error {
			if first == nil {
				first = e
			}
			return e
		}, nil),
	}
	files, err := c.Compile(context.Background(), FileName)
	if err != nil {
		return nil, parseError(cmpErr(first, err))
	}
	fd := files.FindFileByPath(FileName)
	if fd == nil {
		return nil, errors.New("protobuf: the compiler returned no file")
	}
	return fd, nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// parseError says where the text is wrong; an import that is not a
// well-known type stays matchable with errors.Is(err, ErrImportNotAvailable).
func parseError(err error) error {
	if errors.Is(err, ErrImportNotAvailable) {
		return err
	}
	if _, ok := errors.AsType[protocompile.PanicError](err); ok {
		return fmt.Errorf("protobuf: cannot parse the schema: %v", err)
	}
	return fmt.Errorf("protobuf: %w", err)
}

// canonical is the normalized FileDescriptorProto in deterministic wire
// form: no source positions or comments, fields in number order; see the
// package documentation.
func canonical(fd protoreflect.FileDescriptor) []byte {
	fdp := protodesc.ToFileDescriptorProto(fd)
	fdp.SourceCodeInfo = nil
	for _, m := range fdp.MessageType {
		sortFields(m)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(fdp)
	if err != nil {
		// A descriptor the compiler built always marshals; a fingerprint
		// of its text form is the fallback that keeps equal files equal.
		return []byte(fmt.Sprint(fdp))
	}
	return b
}

func sortFields(m *descriptorpb.DescriptorProto) {
	slices.SortStableFunc(m.Field, func(a, b *descriptorpb.FieldDescriptorProto) int {
		return int(a.GetNumber()) - int(b.GetNumber())
	})
	for _, n := range m.NestedType {
		sortFields(n)
	}
}

// Type is schema.TypeProtobuf.
func (d *Document) Type() schema.Type { return schema.TypeProtobuf }

// Canonical is the normalized file descriptor the fingerprint is taken of
// (binary protobuf, not text); see the package documentation.
func (d *Document) Canonical() []byte { return bytes.Clone(d.canonical) }

// Descriptor is the compiled file, for encoding and decoding with
// google.golang.org/protobuf's dynamicpb.
func (d *Document) Descriptor() protoreflect.FileDescriptor { return d.fd }

// Package is the file's package, such as "shop.orders"; empty when it
// declares none.
func (d *Document) Package() string { return string(d.fd.Package()) }

// MessageNames are the full names of the file's top-level messages in
// declaration order; Confluent's serializers frame a record with the first
// one unless told otherwise.
func (d *Document) MessageNames() []string {
	ms := d.fd.Messages()
	out := make([]string, ms.Len())
	for i := range ms.Len() {
		out[i] = string(ms.Get(i).FullName())
	}
	return out
}

// ReadsFrom lists what a reader with this file meets reading data written
// with writer, a PROTOBUF document, by Confluent's Protobuf rules.
func (d *Document) ReadsFrom(writer schema.Document) []schema.Difference {
	w, ok := writer.(*Document)
	if !ok {
		return []schema.Difference{{Kind: schema.SchemaTypeChanged, Path: "#/",
			Message: fmt.Sprintf("a PROTOBUF reader cannot read data written with a %s schema", writer.Type())}}
	}
	c := &differ{}
	c.file(w.fd, d.fd)
	return c.out
}
