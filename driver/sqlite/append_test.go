package sqlite

import (
	"context"
	"maps"
	"path/filepath"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/drivertest"
)

// TestAppendSharedValues: a chunk whose rows share their schema version and
// revision, routing key, rank, headers and production time binds those once
// (appendStatement's numbered parameters); a chunk where any one of them
// differs binds every value of every row. Either way each row reads back
// exactly as it was given, with consecutive ids in input order, in chunks
// of one statement and of several.
func TestAppendSharedValues(t *testing.T) {
	ctx := context.Background()
	d := Open(filepath.Join(t.TempDir(), "append.db"))
	t.Cleanup(func() { _ = d.Close() })
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	cfg, err := d.CreateStream(ctx, driver.CreateStreamParams{Config: driver.StreamConfig{Name: "shapes", Partitions: 3}})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 2, 10, 0, 0, 123456000, time.UTC)
	for _, tc := range drivertest.AppendShapes(at) {
		t.Run(tc.Name, func(t *testing.T) {
			rows := drivertest.AppendShapeRows(tc.N, false, at)
			if tc.Change != nil {
				tc.Change(rows)
			}
			for start := 0; start < len(rows); start += 100 {
				part := rows[start:min(start+100, len(rows))]
				_, args, err := appendStatement(logTable(cfg.ID), part)
				if err != nil {
					t.Fatal(err)
				}
				want := 9 * len(part)
				if tc.Shared && len(part) > 1 { // one row binds its own 9
					want = 6 + 3*len(part)
				}
				if len(args) != want {
					t.Fatalf("chunk at %d of %d rows binds %d values, want %d", start, len(part), len(args), want)
				}
			}
			ids, err := d.Append(ctx, driver.AppendParams{Stream: cfg, Rows: rows})
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) != len(rows) {
				t.Fatalf("%d ids for %d rows", len(ids), len(rows))
			}
			q, err := d.read.QueryContext(ctx, `SELECT `+rowColumns+`, m.schema_revision FROM `+logTable(cfg.ID)+` m WHERE m.id BETWEEN ? AND ? ORDER BY m.id`,
				ids[0], ids[len(ids)-1])
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			i := 0
			var revision int
			reader := claims.Readers.Rows(&revision) // one reader for every row: what one row leaves must not reach the next
			for ; q.Next(); i++ {
				got, err := reader.Read(q)
				if err != nil {
					t.Fatal(err)
				}
				if i >= len(rows) {
					t.Fatalf("more rows than appended: id %d", got.ID)
				}
				r := rows[i]
				if got.ID != ids[i] || (i > 0 && ids[i] != ids[i-1]+1) {
					t.Errorf("row %d: id %d, ids %v", i, got.ID, ids[max(0, i-1):i+1])
				}
				if got.Partition != r.Partition || got.SchemaVersion != r.SchemaVersion || revision != r.SchemaRevision ||
					got.HasKey != r.HasKey || (r.HasKey && got.Key != r.Key) || got.RoutingKey != r.RoutingKey ||
					got.CompactionRank != r.CompactionRank || string(got.Payload) != string(r.Payload) ||
					!maps.Equal(got.Headers, r.Headers) || !got.ProducedAt.Equal(r.ProducedAt.Truncate(time.Microsecond)) { // stored to the microsecond
					t.Errorf("row %d read back as %+v (revision %d), appended %+v", i, got, revision, r)
				}
			}
			if err := q.Err(); err != nil {
				t.Fatal(err)
			}
			if i != len(rows) {
				t.Fatalf("read back %d rows of %d", i, len(rows))
			}
		})
	}
}
