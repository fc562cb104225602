package postgres_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/drivertest"
	"github.com/sqlstreams/sqlstreams/driver/postgres"
)

// TestAppendSharedValues: an append whose rows share their schema version
// and revision, routing key, rank, headers and production time sends those
// once (the shared statement); one where any of them differs sends an array
// of each. Either way every column of every row reads back as it was given,
// with consecutive ids in input order, on compacted streams (whose heads
// move by version and rank) and others, with the extended protocol and the
// simple one.
func TestAppendSharedValues(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 0, 0, 123456789, time.UTC) // stored to the microsecond
	cases := drivertest.AppendShapes(at)
	for _, mode := range []struct {
		name string
		opts []postgres.Option
	}{{"extended", nil}, {"simple", []postgres.Option{postgres.WithSimpleProtocol()}}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			ns := newSchema(t, nil)
			d := postgres.Open(ns, mode.opts...)
			t.Cleanup(func() { _ = d.Close() })
			if err := d.Migrate(tctx(t)); err != nil {
				t.Fatal(err)
			}
			for _, compacted := range []bool{false, true} {
				for ci, tc := range cases {
					name := fmt.Sprintf("%s/compacted=%v", tc.Name, compacted)
					cfg, err := d.CreateStream(tctx(t), driver.CreateStreamParams{Config: driver.StreamConfig{
						Name: fmt.Sprintf("s%d-%v", ci, compacted), Partitions: 3, Compacted: compacted, CreatedAt: at}})
					if err != nil {
						t.Fatal(err)
					}
					rows := drivertest.AppendShapeRows(tc.N, compacted, at)
					rows[tc.N/2].Payload = nil // stored as empty
					if tc.Change != nil {
						tc.Change(rows)
					}
					checkAppend(t, d, cfg, name, rows, tc.Shared)
				}
			}
		})
	}
}

// checkAppend appends rows to a new stream and reads every column back,
// and the compaction heads of a compacted stream.
func checkAppend(t *testing.T, d *postgres.Driver, cfg driver.StreamConfig, name string, rows []driver.AppendRow, wantShared bool) {
	t.Helper()
	shared, err := postgres.AppendSharesValues(d, cfg, rows)
	if err != nil {
		t.Fatal(err)
	}
	if shared != wantShared {
		t.Errorf("%s: shared statement %v, want %v", name, shared, wantShared)
	}
	ids, err := d.Append(tctx(t), driver.AppendParams{Stream: cfg, Rows: rows})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(ids) != len(rows) {
		t.Fatalf("%s: %d ids for %d rows", name, len(ids), len(rows))
	}
	q, err := d.Pool().Query(tctx(t), fmt.Sprintf(`SELECT id, partition, schema_version, schema_revision, msg_key, routing_key, compaction_rank,
		payload, headers, produced_at, pg_typeof(headers)::text, headers IS NULL FROM message_log_%d ORDER BY id`, cfg.ID))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	i := 0
	for ; q.Next(); i++ {
		var (
			id, rank       int64
			part, ver, rev int32
			key            *string
			routing, htype string
			payload        []byte
			headers        map[string]string
			produced       time.Time
			headersNull    bool
		)
		if err := q.Scan(&id, &part, &ver, &rev, &key, &routing, &rank, &payload, &headers, &produced, &htype, &headersNull); err != nil {
			t.Fatal(err)
		}
		if i >= len(rows) {
			t.Fatalf("%s: more rows than appended: id %d", name, id)
		}
		r := rows[i]
		if id != ids[i] || (i > 0 && ids[i] != ids[i-1]+1) {
			t.Errorf("%s: row %d: id %d, ids %v", name, i, id, ids)
		}
		wantPayload := r.Payload
		if wantPayload == nil {
			wantPayload = []byte{}
		}
		if int(part) != r.Partition || int(ver) != r.SchemaVersion || int(rev) != r.SchemaRevision ||
			(key != nil) != r.HasKey || (r.HasKey && *key != r.Key) || routing != r.RoutingKey || rank != r.CompactionRank ||
			payload == nil || string(payload) != string(wantPayload) || htype != "jsonb" || headersNull != (len(r.Headers) == 0) ||
			!maps.Equal(headers, r.Headers) || !produced.Equal(r.ProducedAt.Truncate(time.Microsecond)) {
			t.Errorf("%s: row %d read back as id %d partition %d version %d revision %d key %v routing %q rank %d payload %q headers %v (%s, null %v) produced %v; appended %+v",
				name, i, id, part, ver, rev, key, routing, rank, payload, headers, htype, headersNull, produced, r)
		}
	}
	if err := q.Err(); err != nil {
		t.Fatal(err)
	}
	if i != len(rows) {
		t.Fatalf("%s: read back %d rows of %d", name, i, len(rows))
	}
	if !cfg.Compacted {
		return
	}
	type head struct {
		id      int64
		version int
		rank    int64
	}
	want := map[string]head{}
	for i, r := range rows {
		h, ok := want[r.Key]
		if !ok || r.SchemaVersion > h.version || (r.SchemaVersion == h.version && r.CompactionRank >= h.rank) {
			want[r.Key] = head{ids[i], r.SchemaVersion, r.CompactionRank}
		}
	}
	hq, err := d.Pool().Query(tctx(t), `SELECT msg_key, head_id, schema_version, compaction_rank FROM compaction_head WHERE stream_id = $1`, cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer hq.Close()
	got := map[string]head{}
	for hq.Next() {
		var k string
		var h head
		var v int32
		if err := hq.Scan(&k, &h.id, &v, &h.rank); err != nil {
			t.Fatal(err)
		}
		h.version = int(v)
		got[k] = h
	}
	if err := hq.Err(); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, want) {
		t.Errorf("%s: compaction heads %v, want %v", name, got, want)
	}
}
