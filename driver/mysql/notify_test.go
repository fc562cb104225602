package mysql_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/mysql"
)

// BenchmarkMarks is the cost of one read of a stream's marks, which a
// stream's watch makes four times per PollInterval of its consumers
// (docs/benchmarks.md, "MariaDB wake-ups"), on a log of 10,000 rows over
// 1 and 16 partitions:
//
//	GOTOOLCHAIN=go1.27.3 go test -run '^$' -bench 'BenchmarkMarks' ./driver/mysql
func BenchmarkMarks(b *testing.B) {
	for _, parts := range []int{1, 16} {
		b.Run(fmt.Sprintf("partitions-%d", parts), func(b *testing.B) {
			ctx := context.Background()
			d := mysql.Open(newDatabase(b))
			b.Cleanup(func() { _ = d.Close() })
			if err := d.Migrate(ctx); err != nil {
				b.Fatal(err)
			}
			st, err := d.CreateStream(ctx, driver.CreateStreamParams{Config: driver.StreamConfig{Name: "marks", Partitions: parts, CreatedAt: time.Now()}})
			if err != nil {
				b.Fatal(err)
			}
			for i := range 100 {
				rows := make([]driver.AppendRow, 100)
				for j := range rows {
					rows[j] = driver.AppendRow{Partition: (i*100 + j) % parts, SchemaVersion: 1, RoutingKey: "r", Payload: []byte(`{}`), ProducedAt: time.Now()}
				}
				if _, err := d.Append(ctx, driver.AppendParams{Stream: st, Rows: rows}); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				if _, err := mysql.Marks(ctx, d, st.ID); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
