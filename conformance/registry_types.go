package conformance

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

// The Order3 family is one struct edited in place without bumping
// SchemaVersion(): every type here is version 3, so the registry (R1–R6)
// compares them as revisions of one version. Order3 is the deployed shape.
type Order3 struct {
	ID    string `json:"id"`
	Total int64  `json:"total"`
	SKU   string `json:"sku"`
}

func (Order3) SchemaVersion() int { return 3 }

// Order3Same is Order3 under another Go name with its fields in another
// order: the same JSON, so the same normalized fingerprint.
type Order3Same struct {
	SKU   string `json:"sku"`
	ID    string `json:"id"`
	Total int64  `json:"total"`
}

func (Order3Same) SchemaVersion() int { return 3 }

// Order3Note adds an optional field (compatible both ways).
type Order3Note struct {
	ID    string `json:"id"`
	Total int64  `json:"total"`
	SKU   string `json:"sku"`
	Note  string `json:"note,omitempty"`
}

func (Order3Note) SchemaVersion() int { return 3 }

// Order3Email adds a required field without a default: a v3 reader of
// Order3Email would read every Order3 row with an empty email.
type Order3Email struct {
	ID    string `json:"id"`
	Total int64  `json:"total"`
	SKU   string `json:"sku"`
	Email string `json:"email"`
}

func (Order3Email) SchemaVersion() int { return 3 }

// Order3Channel adds a required field with a default, which readers assume
// for rows written without it.
type Order3Channel struct {
	ID      string `json:"id"`
	Total   int64  `json:"total"`
	SKU     string `json:"sku"`
	Channel string `json:"channel" sqlstreams:"default=\"web\""`
}

func (Order3Channel) SchemaVersion() int { return 3 }

// Order3NoSKU removes a required field: new readers ignore it in old rows
// (backward compatible), old readers miss it in new rows (not forward).
type Order3NoSKU struct {
	ID    string `json:"id"`
	Total int64  `json:"total"`
}

func (Order3NoSKU) SchemaVersion() int { return 3 }

// Order3NoTotal removes Total.
type Order3NoTotal struct {
	ID  string `json:"id"`
	SKU string `json:"sku"`
}

func (Order3NoTotal) SchemaVersion() int { return 3 }

// Amount is a nested type: schemas hold it under $defs.
type Amount struct {
	Cents    int64  `json:"cents"`
	Currency string `json:"currency"`
}

// Order3Amount changes Total from an integer to an object.
type Order3Amount struct {
	ID    string `json:"id"`
	Total Amount `json:"total"`
	SKU   string `json:"sku"`
}

func (Order3Amount) SchemaVersion() int { return 3 }

// Order3AmountOpt brings Total back as an optional object: compatible with
// Order3NoTotal, incompatible with Order3 (whose Total is an integer).
type Order3AmountOpt struct {
	ID    string  `json:"id"`
	SKU   string  `json:"sku"`
	Total *Amount `json:"total,omitempty"`
}

func (Order3AmountOpt) SchemaVersion() int { return 3 }

// Order3Broken makes two breaking edits at once.
type Order3Broken struct {
	ID    string `json:"id"`
	Total Amount `json:"total"`
	SKU   string `json:"sku"`
	Email string `json:"email"`
}

func (Order3Broken) SchemaVersion() int { return 3 }

// Order4 is the Order3Amount edit done right: a new version, which is a new
// compatibility boundary.
type Order4 struct {
	ID    string `json:"id"`
	Total Amount `json:"total"`
	SKU   string `json:"sku"`
}

func (Order4) SchemaVersion() int { return 4 }

// regProducer registers a producer of T and returns the error.
func regProducer[T sqlstreams.Versioned](t testing.TB, c *sqlstreams.Client, stream string) error {
	t.Helper()
	_, err := c.Stream[T](stream).Producer().Register(ctx(t), nil)
	return err
}

// regConsumer registers a consumer of T in group and returns the error.
func regConsumer[T sqlstreams.Versioned](t testing.TB, c *sqlstreams.Client, stream, group string) error {
	t.Helper()
	_, err := c.Stream[T](stream).Consumer(group).Register(ctx(t), nil)
	return err
}

// revisions lists a stream's recorded revisions at version (0: all).
func revisions(t testing.TB, c *sqlstreams.Client, stream string, version int) []sqlstreams.Revision {
	t.Helper()
	revs, err := c.Registry().Revisions(ctx(t), stream, version)
	if err != nil {
		t.Fatalf("Revisions(%q, %d): %v", stream, version, err)
	}
	return revs
}

func fingerprintOf[T any](t testing.TB) string {
	t.Helper()
	s, err := schema.For[T]()
	if err != nil {
		t.Fatalf("schema.For[%T]: %v", *new(T), err)
	}
	return s.Fingerprint()
}

// setLevel sets a stream's (or the registry-wide) level.
func setLevel(t testing.TB, c *sqlstreams.Client, stream string, l schema.Level) {
	t.Helper()
	if err := c.Registry().SetLevel(ctx(t), stream, l); err != nil {
		t.Fatalf("SetLevel(%q, %s): %v", stream, l, err)
	}
}

func setMode(t testing.TB, c *sqlstreams.Client, stream string, m sqlstreams.Mode) {
	t.Helper()
	if err := c.Registry().SetMode(ctx(t), stream, m); err != nil {
		t.Fatalf("SetMode(%q, %s): %v", stream, m, err)
	}
}

func createStream(t testing.TB, c *sqlstreams.Client, stream string, opts *sqlstreams.StreamOptions) {
	t.Helper()
	if _, err := c.Stream[sqlstreams.RawPayload](stream).Create(ctx(t), opts); err != nil {
		t.Fatalf("create stream %q: %v", stream, err)
	}
}

// wantProblem describes one problem an IncompatibleSchemaError must list.
type wantProblem struct {
	against string // "revision 1", "writer revision 1 still in the log", ...
	kind    schema.DiffKind
	path    string
}

// incompatible asserts that err is an ErrIncompatibleSchema refusal at
// level and version whose problems include every one of want, and whose
// message names the level, each wanted problem (what it was compared with,
// kind, path) and the advice to bump SchemaVersion().
func incompatible(t testing.TB, what string, err error, level schema.Level, version int, want ...wantProblem) *sqlstreams.IncompatibleSchemaError {
	t.Helper()
	if !errors.Is(err, sqlstreams.ErrIncompatibleSchema) {
		t.Fatalf("%s: err %v, want ErrIncompatibleSchema", what, err)
	}
	var ie *sqlstreams.IncompatibleSchemaError
	if !errors.As(err, &ie) {
		t.Fatalf("%s: errors.As(*IncompatibleSchemaError) fails on %v", what, err)
	}
	if ie.Level != level {
		t.Errorf("%s: error says level %s, want %s", what, ie.Level, level)
	}
	if ie.Version != version {
		t.Errorf("%s: error says version %d, want %d", what, ie.Version, version)
	}
	msg := err.Error()
	for _, s := range []string{level.String(), "SchemaVersion()", "Nothing was written"} {
		if !strings.Contains(msg, s) {
			t.Errorf("%s: message does not mention %q:\n%s", what, s, msg)
		}
	}
	for _, w := range want {
		found := slices.ContainsFunc(ie.Problems, func(p sqlstreams.SchemaProblem) bool {
			return p.Against == w.against && p.Kind == w.kind && p.Path == w.path && p.Message != ""
		})
		if !found {
			t.Errorf("%s: problems do not include %s at %s against %s: %+v", what, w.kind, w.path, w.against, ie.Problems)
		}
		for _, s := range []string{w.against, string(w.kind), w.path} {
			if !strings.Contains(msg, s) {
				t.Errorf("%s: message does not mention %q:\n%s", what, s, msg)
			}
		}
	}
	return ie
}

// problemKeys lists an error's problems as comparable strings, in order.
func problemKeys(err error) []string {
	var ie *sqlstreams.IncompatibleSchemaError
	if !errors.As(err, &ie) {
		return nil
	}
	out := make([]string, len(ie.Problems))
	for i, p := range ie.Problems {
		out[i] = p.Against + " | " + p.Direction.String() + " | " + string(p.Kind) + " | " + p.Path + " | " + p.Message
	}
	return out
}

// groupExists reports whether health lists group under any version.
func groupExists(t testing.TB, c *sqlstreams.Client, stream, group string) bool {
	t.Helper()
	for _, vh := range health(t, c, stream).Versions {
		for _, g := range vh.Groups {
			if g.Group == group {
				return true
			}
		}
	}
	return false
}

// schemaJSON decodes a recorded schema into generic JSON.
func schemaJSON(t testing.TB, s *schema.Schema) map[string]any {
	t.Helper()
	b, err := s.MarshalJSON()
	if err != nil {
		t.Fatalf("marshal schema: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("schema is not a JSON object: %v\n%s", err, b)
	}
	return m
}
