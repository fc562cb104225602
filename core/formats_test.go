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
