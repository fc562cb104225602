package postgres

import (
	"testing"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// BenchmarkAppendBatch: building an append's statements, one row and 100
// rows over 4 partitions (allocations per append).
func BenchmarkAppendBatch(b *testing.B) {
	d := &Driver{}
	stream := driver.StreamConfig{ID: 1, Partitions: 8}
	for _, n := range []int{1, 100} {
		rows := make([]driver.AppendRow, n)
		for i := range rows {
			rows[i] = driver.AppendRow{Partition: i % 4, Payload: []byte("x")}
		}
		b.Run(map[int]string{1: "1row", 100: "100rows"}[n], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := d.appendBatch(stream, rows, false, false, true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
