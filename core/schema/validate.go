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

// Compiler makes a Validator of a JSON Schema document. JSON Schema is
// built in for registering and judging, but checking instances takes a full
// validator, which core (standard library only) does not carry: a program
// enables one with
// sqlstreams.WithJSONValidation. Implementations must be safe for
// concurrent use.
type Compiler interface {
	Compile(doc []byte) (Validator, error)
}
