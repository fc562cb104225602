package postgres_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
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
	base := func(n int, compacted bool) []driver.AppendRow {
		rows := make([]driver.AppendRow, n)
		for i := range rows {
			rows[i] = driver.AppendRow{Partition: i % 3, SchemaVersion: 2, SchemaRevision: 3, Key: fmt.Sprintf("k%d", i%7), HasKey: compacted || i%4 != 1,
				RoutingKey: "eu.web", CompactionRank: -7, Payload: fmt.Appendf(nil, `{"n":%d}`, i),
				Headers: map[string]string{"trace": "t1", "b": "2"}, ProducedAt: at}
		}
		rows[n/2].Payload = nil // stored as empty
		return rows
	}
	cases := []struct {
		name   string
		n      int
		change func(rows []driver.AppendRow)
		shared bool
	}{
		{"all shared", 10, nil, true},
		{"all shared, no headers", 10, func(rows []driver.AppendRow) {
			for i := range rows {
				rows[i].Headers = nil
			}
		}, true},
		{"all shared, empty routing key, zero values", 10, func(rows []driver.AppendRow) {
			for i := range rows {
				rows[i].SchemaVersion, rows[i].SchemaRevision, rows[i].RoutingKey, rows[i].CompactionRank = 0, 0, "", 0
			}
		}, true},
		{"all shared, times equal to the microsecond", 10, func(rows []driver.AppendRow) {
			rows[3].ProducedAt = at.Add(100 * time.Nanosecond).In(time.FixedZone("x", 3600))
		}, true},
		{"one row", 1, nil, true},
		{"all shared, 250 rows", 250, nil, true},
		{"schema version", 10, func(rows []driver.AppendRow) { rows[3].SchemaVersion = 4 }, false},
		{"schema revision", 10, func(rows []driver.AppendRow) { rows[3].SchemaRevision = 0 }, false},
		{"routing key", 10, func(rows []driver.AppendRow) { rows[3].RoutingKey = "us.app" }, false},
		{"rank", 10, func(rows []driver.AppendRow) { rows[3].CompactionRank = 9 }, false},
		{"headers", 10, func(rows []driver.AppendRow) { rows[3].Headers = map[string]string{"trace": "t2", "b": "2"} }, false},
		{"no headers", 10, func(rows []driver.AppendRow) { rows[3].Headers = nil }, false},
		{"headers on one", 10, func(rows []driver.AppendRow) {
			for i := range rows {
				if i != 3 {
					rows[i].Headers = nil
				}
			}
		}, false},
		{"produced at", 10, func(rows []driver.AppendRow) { rows[3].ProducedAt = at.Add(time.Microsecond) }, false},
		{"first row differs", 10, func(rows []driver.AppendRow) { rows[0].CompactionRank = 1 }, false},
		{"mixed", 10, func(rows []driver.AppendRow) {
			for i := range rows {
				rows[i].SchemaVersion, rows[i].SchemaRevision, rows[i].RoutingKey = 1+i%2, i%3, fmt.Sprintf("r%d", i%2)
				rows[i].CompactionRank, rows[i].ProducedAt = int64(i%4), at.Add(time.Duration(i)*time.Second)
				if i%2 == 0 {
					rows[i].Headers = map[string]string{"i": fmt.Sprint(i)}
				}
			}
		}, false},
	}
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
					name := fmt.Sprintf("%s/compacted=%v", tc.name, compacted)
					cfg, err := d.CreateStream(tctx(t), driver.CreateStreamParams{Config: driver.StreamConfig{
						Name: fmt.Sprintf("s%d-%v", ci, compacted), Partitions: 3, Compacted: compacted, CreatedAt: at}})
					if err != nil {
						t.Fatal(err)
					}
					rows := base(tc.n, compacted)
					if tc.change != nil {
						tc.change(rows)
					}
					checkAppend(t, d, cfg, name, rows, tc.shared)
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
