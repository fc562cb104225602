package schema

import "fmt"

// Violation is one way a message breaks a document: where, as a JSON
// Pointer into the message ("" for the whole message), and why.
type Violation struct {
	Path    string
	Message string
}

func (v Violation) String() string {
	path := v.Path
	if path == "" {
		path = "/"
	}
	return fmt.Sprintf("%s: %s", path, v.Message)
}

// Validator is what a Document implements when its format can tell whether
// a message follows it. It is optional, so a format added before message
// validation existed keeps working: the registry reports a document without
// it as unable to validate instead of calling every message valid.
type Validator interface {
	// Validate lists what makes payload (the message as it is stored, JSON)
	// break the document; none means it follows it. Validate never panics.
	Validate(payload []byte) []Violation
}

// JSONSource is a stored JSON Schema document as a Compiler receives it:
// the document and every document it refers to by name (R10's
// references), so that a validator resolves a "$ref" the way the registry
// judged it, without loading anything from outside.
type JSONSource struct {
	// Schema is the document as stored (JSON).
	Schema []byte
	// References maps each reference name, the "$ref" a document uses for
	// a shared schema, to that schema's stored text. It holds the
	// references of the referenced documents too, transitively; where two
	// documents bind one name, the first binding met wins, as when the
	// registry compares them. Nil when the document refers to nothing.
	References map[string][]byte
}

// Compiler makes a Validator of a JSON Schema document. JSON Schema is
// built in for registering and judging, but checking instances takes a full
// validator, which core (standard library only) does not carry: a program
// enables one with sqlstreams.WithJSONValidation (contrib/jsonschema has
// one). Implementations must be safe for concurrent use, and must resolve
// names only from src.References: a stored schema must not make the
// process read files or the network.
type Compiler interface {
	Compile(src JSONSource) (Validator, error)
}
