package sqldb

import (
	"fmt"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// columns is a row as the engine returns it: Scan stores its values in
// order, and fails unless there is a destination for each.
type columns []any

func (c columns) Scan(dest ...any) error {
	if len(dest) != len(c) {
		return fmt.Errorf("%d destinations for %d columns", len(dest), len(c))
	}
	for i, v := range c {
		switch d := dest[i].(type) {
		case *int64:
			*d = v.(int64)
		case *int:
			*d = int(v.(int64))
		case *string:
			*d = v.(string)
		case *[]byte:
			*d = v.([]byte)
		case *bool:
			*d = v.(bool)
		default:
			if err := d.(interface{ Scan(any) error }).Scan(v); err != nil {
				return err
			}
		}
	}
	return nil
}

// The window reader reads RowColumns but the partition, which it is given,
// and the other reader reads the partition: both come back on the row.
func TestRowReaders(t *testing.T) {
	t.Parallel()
	readers := ReadersOf(func(us int64) time.Time { return time.UnixMicro(us).UTC() })
	at := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	var head bool
	window := readers.Window(3, &head)
	row, err := window.Read(columns{int64(7), int64(2), "k", "eu.web", int64(5), []byte(`{}`), `{"h":"v"}`, at.UnixMicro(), true})
	want := driver.Row{ID: 7, Partition: 3, SchemaVersion: 2, Key: "k", HasKey: true, RoutingKey: "eu.web", CompactionRank: 5, Payload: []byte(`{}`), Headers: map[string]string{"h": "v"}, ProducedAt: at}
	if err != nil || fmt.Sprint(row) != fmt.Sprint(want) || !head {
		t.Errorf("window row %+v (head %v), %v; want %+v", row, head, err, want)
	}
	row, err = readers.Rows().Read(columns{int64(8), int64(1), int64(2), nil, "eu.web", int64(0), []byte(`{}`), nil, at.UnixMicro()})
	want = driver.Row{ID: 8, Partition: 1, SchemaVersion: 2, RoutingKey: "eu.web", Payload: []byte(`{}`), ProducedAt: at}
	if err != nil || fmt.Sprint(row) != fmt.Sprint(want) {
		t.Errorf("row %+v, %v; want %+v", row, err, want)
	}
}
