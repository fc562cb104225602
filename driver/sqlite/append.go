package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Append implements driver.Driver.
func (d *Driver) Append(ctx context.Context, p driver.AppendParams) ([]int64, error) {
	tx, stream, rows := p.Tx, p.Stream, p.Rows
	ids := make([]int64, 0, len(rows))
	table := logTable(stream.ID)
	err := d.inTxQ(ctx, tx, func(t cachedTx) error {
		ids = ids[:0]
		// One multi-row INSERT per chunk: SQLite assigns consecutive ids to
		// the rows of one statement under its single writer.
		const chunk = 100
		for start := 0; start < len(rows); start += chunk {
			part := rows[start:min(start+chunk, len(rows))]
			var sb strings.Builder
			sb.WriteString(`INSERT INTO ` + table + ` (partition, schema_version, schema_revision, msg_key, routing_key, compaction_rank, payload, headers, produced_at) VALUES `)
			args := make([]any, 0, len(part)*9)
			for i, r := range part {
				if i > 0 {
					sb.WriteString(", ")
				}
				sb.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?)")
				var key, headers any
				if r.HasKey {
					key = r.Key
				}
				if len(r.Headers) > 0 {
					h, err := json.Marshal(r.Headers)
					if err != nil {
						return err
					}
					headers = string(h)
				}
				args = append(args, r.Partition, r.SchemaVersion, r.SchemaRevision, key, r.RoutingKey, r.CompactionRank, r.Payload, headers, micros(r.ProducedAt))
			}
			// One statement under the single writer takes consecutive ids
			// (AUTOINCREMENT, no triggers): the last one names them all, and
			// no rows need to come back.
			res, err := t.ExecContext(ctx, sb.String(), args...)
			if err != nil {
				return fmt.Errorf("append to stream %d: %w", stream.ID, err)
			}
			last, err := res.LastInsertId()
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n != int64(len(part)) {
				return fmt.Errorf("append to stream %d: inserted %d rows of %d (%v)", stream.ID, n, len(part), err)
			}
			for i := range part {
				ids = append(ids, last-int64(len(part)-1-i))
			}
		}
		if len(ids) != len(rows) {
			return fmt.Errorf("append to stream %d: %d ids for %d rows", stream.ID, len(ids), len(rows))
		}
		if !stream.Compacted {
			return nil
		}
		for i, r := range rows {
			if _, err := t.ExecContext(ctx, `INSERT INTO compaction_head (stream_id, msg_key, head_id, schema_version, compaction_rank)
				VALUES (?, ?, ?, ?, ?)
				ON CONFLICT (stream_id, msg_key) DO UPDATE SET head_id = excluded.head_id,
					schema_version = excluded.schema_version, compaction_rank = excluded.compaction_rank
				WHERE (excluded.schema_version, excluded.compaction_rank, excluded.head_id) >
					(compaction_head.schema_version, compaction_head.compaction_rank, compaction_head.head_id)`,
				stream.ID, r.Key, ids[i], r.SchemaVersion, r.CompactionRank); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

const rowColumns = `m.id, m.partition, m.schema_version, m.msg_key, m.routing_key, m.compaction_rank, m.payload, m.headers, m.produced_at`

// scanRow reads rowColumns, plus extra destinations after them.
func scanRow(r scanner, extra ...any) (driver.Row, error) {
	var row driver.Row
	var key, headers sql.NullString
	var payload []byte
	var produced int64
	dest := append([]any{&row.ID, &row.Partition, &row.SchemaVersion, &key, &row.RoutingKey, &row.CompactionRank, &payload, &headers, &produced}, extra...)
	if err := r.Scan(dest...); err != nil {
		return row, err
	}
	row.Key, row.HasKey = key.String, key.Valid
	row.Payload = payload
	row.ProducedAt = fromMicros(produced)
	if headers.Valid && headers.String != "" {
		if err := json.Unmarshal([]byte(headers.String), &row.Headers); err != nil {
			return row, fmt.Errorf("row %d: stored headers: %w", row.ID, err)
		}
	}
	return row, nil
}
