package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

func init() { register("R6_DryRun", testDryRun) }

// R6: a dry run (Stream[T].CheckSchema for a Go type, Registry.Check for a
// JSON Schema document) answers what a registration of the type would meet,
// with the same problem list (gate and deployed pairs alike), and records
// nothing. A malformed document is an error with its position, never a
// panic.
func testDryRun(t *testing.T, h *harness) {
	c := h.client(t)

	// sameRefusal runs the dry runs, checks they recorded nothing, then
	// registers and compares the problem lists.
	sameRefusal := func(t *testing.T, stream string, dry func(context.Context) error, doc []byte, register func() error) {
		t.Helper()
		before := len(revisions(t, c, stream, 0))
		dryErr := dry(ctx(t))
		docErr := c.Registry().Check(ctx(t), stream, 3, doc)
		if n := len(revisions(t, c, stream, 0)); n != before {
			t.Fatalf("%s: a dry run recorded a revision (%d -> %d)", stream, before, n)
		}
		regErr := register()
		if !errors.Is(regErr, sqlstreams.ErrIncompatibleSchema) {
			t.Fatalf("%s: registration err %v, want ErrIncompatibleSchema", stream, regErr)
		}
		want := problemKeys(regErr)
		for _, d := range []struct {
			what string
			err  error
		}{{"CheckSchema", dryErr}, {"Registry.Check", docErr}} {
			if !errors.Is(d.err, sqlstreams.ErrIncompatibleSchema) {
				t.Errorf("%s: %s err %v, want ErrIncompatibleSchema like the registration", stream, d.what, d.err)
				continue
			}
			if got := problemKeys(d.err); !slices.Equal(got, want) {
				t.Errorf("%s: %s lists\n  %s\nregistration lists\n  %s", stream, d.what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
		}
		var ie *sqlstreams.IncompatibleSchemaError
		if errors.As(docErr, &ie) && ie.Type != "schema document" {
			t.Errorf("%s: Registry.Check names the candidate %q, want \"schema document\"", stream, ie.Type)
		}
		if n := len(revisions(t, c, stream, 0)); n != before {
			t.Errorf("%s: the refused registration recorded a revision (%d -> %d)", stream, before, n)
		}
	}

	t.Run("Gate", func(t *testing.T) {
		const stream = "r6-gate"
		producer[Order3](t, c, stream)
		sameRefusal(t, stream, c.Stream[Order3Broken](stream).CheckSchema, docOf[Order3Broken](t),
			func() error { return regProducer[Order3Broken](t, c, stream) })
	})
	t.Run("Reader", func(t *testing.T) {
		// A reader against a writer revision still in the log (as in R5).
		const stream = "r6-reader"
		p := producer[Order3](t, c, stream)
		if _, err := p.Produce(ctx(t), Order3{ID: "o", Total: 5}); err != nil {
			t.Fatal(err)
		}
		producer[Order3NoTotal](t, c, stream)
		sameRefusal(t, stream, c.Stream[Order3AmountOpt](stream).CheckSchema, docOf[Order3AmountOpt](t),
			func() error { return regConsumer[Order3AmountOpt](t, c, stream, "amount") })
	})
	t.Run("Writer", func(t *testing.T) {
		// A writer against a registered reader.
		const stream = "r6-writer"
		producer[Order3](t, c, stream)
		consumer[Order3](t, c, stream, "needs-sku", nil)
		sameRefusal(t, stream, c.Stream[Order3NoSKU](stream).CheckSchema, docOf[Order3NoSKU](t),
			func() error { return regProducer[Order3NoSKU](t, c, stream) })
	})
	t.Run("BothRoles", func(t *testing.T) {
		// A type that neither the registered reader can read nor can itself
		// read the rows in the log: the dry run lists both sides at once.
		const stream = "r6-roles"
		p := producer[Order3](t, c, stream)
		if _, err := p.Produce(ctx(t), Order3{ID: "o", Total: 5}); err != nil {
			t.Fatal(err)
		}
		consumer[Order3](t, c, stream, "needs-total", nil)
		incompatible(t, "dry run of Order3Broken", c.Stream[Order3Broken](stream).CheckSchema(ctx(t)), schema.Backward, 3,
			wantProblem{"revision 1", schema.RequiredAttributeAdded, "#/required/email"},
			wantProblem{"the reader of group needs-total (revision 1)", schema.TypeChanged, "#/properties/total/type"},
			wantProblem{"writer revision 1 still in the log", schema.TypeChanged, "#/properties/total/type"})
	})
	t.Run("GateAndPairs", func(t *testing.T) {
		// Breaks the latest revision and a registered reader: every problem
		// of both checks is listed, in the same order either way.
		const stream = "r6-both"
		producer[Order3](t, c, stream)
		consumer[Order3](t, c, stream, "needs-total", nil)
		sameRefusal(t, stream, c.Stream[Order3Broken](stream).CheckSchema, docOf[Order3Broken](t),
			func() error { return regProducer[Order3Broken](t, c, stream) })
		incompatible(t, "Order3Broken against revision 1 and reader needs-total", regProducer[Order3Broken](t, c, stream), schema.Backward, 3,
			wantProblem{"revision 1", schema.RequiredAttributeAdded, "#/required/email"},
			wantProblem{"the reader of group needs-total (revision 1)", schema.TypeChanged, "#/properties/total/type"})
	})
	t.Run("Accepted", func(t *testing.T) {
		const stream = "r6-ok"
		producer[Order3](t, c, stream)
		for _, check := range []struct {
			what string
			err  error
		}{
			{"CheckSchema of a compatible edit", c.Stream[Order3Note](stream).CheckSchema(ctx(t))},
			{"CheckSchema of the recorded shape", c.Stream[Order3Same](stream).CheckSchema(ctx(t))},
			{"CheckSchema of a new version", c.Stream[Order4](stream).CheckSchema(ctx(t))},
			{"Registry.Check of a compatible document", c.Registry().Check(ctx(t), stream, 3, docOf[Order3Channel](t))},
			{"CheckSchema on a missing stream", c.Stream[Order3Broken]("r6-missing").CheckSchema(ctx(t))},
			{"Registry.Check on a missing stream", c.Registry().Check(ctx(t), "r6-missing", 3, docOf[Order3Broken](t))},
		} {
			if check.err != nil {
				t.Errorf("%s: %v", check.what, check.err)
			}
		}
		if revs := revisions(t, c, stream, 0); len(revs) != 1 {
			t.Errorf("accepted dry runs recorded revisions: %+v", revs)
		}
		if _, err := c.Stream[sqlstreams.RawPayload]("r6-missing").Get(ctx(t)); !errors.Is(err, sqlstreams.ErrStreamNotFound) {
			t.Errorf("a dry run on a missing stream created it: Get err %v", err)
		}
		// Under READONLY the dry run says what a registration would: a new
		// schema is refused, a recorded one is fine.
		setMode(t, c, stream, sqlstreams.ModeReadOnly)
		if err := c.Stream[Order3Note](stream).CheckSchema(ctx(t)); !errors.Is(err, sqlstreams.ErrReadOnly) {
			t.Errorf("CheckSchema of a new schema under READONLY: err %v, want ErrReadOnly", err)
		}
		if err := c.Stream[Order3](stream).CheckSchema(ctx(t)); err != nil {
			t.Errorf("CheckSchema of the recorded schema under READONLY: %v", err)
		}
		if err := c.Stream[sqlstreams.RawPayload](stream).CheckSchema(ctx(t)); !errors.Is(err, sqlstreams.ErrInvalidOption) {
			t.Errorf("CheckSchema of RawPayload: err %v, want ErrInvalidOption", err)
		}
	})
	t.Run("MissingStreamUnderReadOnly", func(t *testing.T) {
		// A registry-wide READONLY refuses to create a stream through a
		// registration, so the dry run on a missing stream refuses too.
		c := h.client(t)
		setMode(t, c, sqlstreams.RegistryWide, sqlstreams.ModeReadOnly)
		if err := c.Stream[Order3]("r6-missing-ro").CheckSchema(ctx(t)); !errors.Is(err, sqlstreams.ErrReadOnly) {
			t.Errorf("CheckSchema on a missing stream under registry-wide READONLY: err %v, want ErrReadOnly", err)
		}
		if _, err := c.Stream[Order3]("r6-missing-ro").Producer().Register(ctx(t), nil); !errors.Is(err, sqlstreams.ErrReadOnly) {
			t.Errorf("Register on a missing stream under registry-wide READONLY: err %v, want ErrReadOnly", err)
		}
		setMode(t, c, sqlstreams.RegistryWide, sqlstreams.ModeReadWrite)
	})
	t.Run("Malformed", func(t *testing.T) {
		const stream = "r6-malformed"
		producer[Order3](t, c, stream)
		for _, doc := range []string{
			"{\"type\": \"object\",\n  \"properties\": {\"id\": {\"type\": \"string\"},}}",
			"",
			"{",
			"{\"type\": 5}",
			"{\"type\": \"object\"} trailing",
			"{\"a\": 1, \"a\": 2}",
			"{\"$ref\": \"#/$defs/Nope\"}",
			"\xff\xfe",
			"[[[[[[[[[[[[[[[[[[[[",
		} {
			err := func() (err error) {
				defer func() {
					if r := recover(); r != nil {
						err = fmt.Errorf("panic: %v", r)
					}
				}()
				return c.Registry().Check(ctx(t), stream, 3, []byte(doc))
			}()
			if err == nil || !errors.Is(err, sqlstreams.ErrInvalidOption) || !strings.Contains(err.Error(), "line ") || !strings.Contains(err.Error(), "column ") {
				t.Errorf("Check(%q): err %v, want ErrInvalidOption with a line and column", doc, err)
			}
		}
		err := c.Registry().Check(ctx(t), stream, 3, []byte("{\"type\": \"object\",\n  \"properties\": {\"id\": {\"type\": \"string\"},}}"))
		if err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("a syntax error on line 2 is reported as %v", err)
		}
		if err := c.Registry().Check(ctx(t), stream, 0, docOf[Order3](t)); !errors.Is(err, sqlstreams.ErrInvalidOption) {
			t.Errorf("Check at version 0: err %v, want ErrInvalidOption", err)
		}
		if n := len(revisions(t, c, stream, 0)); n != 1 {
			t.Errorf("malformed checks recorded revisions: %d", n)
		}
	})
}

// docOf is T's JSON Schema document, as a CI job would hand it to Check.
func docOf[T any](t testing.TB) []byte {
	t.Helper()
	s, err := schema.For[T]()
	if err != nil {
		t.Fatalf("schema.For[%T]: %v", *new(T), err)
	}
	b, err := s.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
