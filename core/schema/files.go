package schema

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"reflect"
)

// Schema files let a project's own CI guard its message types without a
// database: commit the schema of each type at each version, and a test
// compares the type as it is now with the committed file under the level the
// stream uses. The same engine decides at Register time, so a change that
// passes here passes there (unless deployed readers or writers disagree).

// CheckFile compares T's schema, as Reflect derives it now, with the
// schema file at path (written earlier by WriteFile, or any JSON Schema
// document), under level with the GoAware policy: the file is the existing
// revision and T the candidate.
func CheckFile[T any](path string, level Level) (*Report, error) {
	return CheckFileOf(reflect.TypeFor[T](), path, level)
}

// CheckFileOf is CheckFile for a reflect.Type.
func CheckFileOf(t reflect.Type, path string, level Level) (*Report, error) {
	candidate, err := Reflect(t)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("schema: %s does not exist; write it once with schema.WriteFile for %v and commit it: %w", path, t, err)
	}
	if err != nil {
		return nil, err
	}
	committed, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("schema: %s: %w", path, err)
	}
	return Check(level, []*Schema{committed}, candidate, GoAware), nil
}

// WriteFile writes T's schema to path as indented JSON, for committing next
// to the type.
func WriteFile[T any](path string) error {
	s, err := For[T]()
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(s.String()+"\n"), 0o644)
}
