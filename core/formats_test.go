package sqlstreams_test

import (
	"context"
	"errors"
	"testing"

	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/memdriver"
	"github.com/sqlstreams/sqlstreams/core/schema"
)

type namedFormat schema.Type

func (f namedFormat) Type() schema.Type { return schema.Type(f) }
func (f namedFormat) Parse([]byte) (schema.Document, error) {
	return nil, errors.New("not used")
}

// TestWithFormatsRefusesBadFormats: Open refuses what WithFormats cannot
// index (nil, JSON, a name that is not a type name, a type given twice)
// with ErrInvalidOption, and lists the rest after JSON.
func TestWithFormatsRefusesBadFormats(t *testing.T) {
	for _, tc := range []struct {
		name    string
		formats []schema.Format
		want    []schema.Type // nil: refused
	}{
		{"none", nil, []schema.Type{schema.TypeJSON}},
		{"two", []schema.Format{namedFormat("PROTOBUF"), namedFormat("AVRO")}, []schema.Type{schema.TypeJSON, schema.TypeAvro, schema.TypeProtobuf}},
		{"nil", []schema.Format{nil}, nil},
		{"json", []schema.Format{namedFormat("JSON")}, nil},
		{"lower case", []schema.Format{namedFormat("avro")}, nil},
		{"twice", []schema.Format{namedFormat("AVRO"), namedFormat("AVRO")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := sqlstreams.Open(context.Background(), memdriver.Open(), sqlstreams.WithFormats(tc.formats...), sqlstreams.WithMaintenanceInterval(0))
			if tc.want == nil {
				if !errors.Is(err, sqlstreams.ErrInvalidOption) {
					t.Fatalf("Open: %v, want ErrInvalidOption", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			got := c.Registry().Types()
			if len(got) != len(tc.want) {
				t.Fatalf("Types() = %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("Types() = %v, want %v", got, tc.want)
				}
			}
		})
	}
}

// TestRegistryWithFormats: a view of a client's registry accepts the
// formats it adds, keeps the client's own for a type both name, and
// refuses what the option refuses; the client's registry is unchanged.
func TestRegistryWithFormats(t *testing.T) {
	c, err := sqlstreams.Open(context.Background(), memdriver.Open(), sqlstreams.WithFormats(namedFormat("PROTOBUF")), sqlstreams.WithMaintenanceInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	view, err := c.Registry().WithFormats(namedFormat("AVRO"), namedFormat("PROTOBUF"))
	if err != nil {
		t.Fatal(err)
	}
	if got := view.Types(); len(got) != 3 || got[1] != schema.TypeAvro || got[2] != schema.TypeProtobuf {
		t.Errorf("view types %v, want [JSON AVRO PROTOBUF]", got)
	}
	if got := c.Registry().Types(); len(got) != 2 {
		t.Errorf("the client's registry changed: %v", got)
	}
	if _, err := c.Registry().WithFormats(namedFormat("JSON")); !errors.Is(err, sqlstreams.ErrInvalidOption) {
		t.Errorf("WithFormats(JSON): %v, want ErrInvalidOption", err)
	}
}
