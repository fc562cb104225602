package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// Append implements driver.Driver.
func (d *Driver) Append(ctx context.Context, p driver.AppendParams) ([]int64, error) {
	tx, stream, rows := p.Tx, p.Stream, p.Rows
	ids := make([]int64, 0, len(rows))
	table := logTable(stream.ID)
	err := d.inTxQ(ctx, tx, func(t cachedTx) error {
		ids = ids[:0]
		if err := checkGeneration(ctx, t, stream); err != nil {
			return err
		}
		// One multi-row INSERT per chunk. One statement under the single
		// writer takes consecutive ids (AUTOINCREMENT, no triggers): the
		// last one names them all, and no rows need to come back.
		const chunk = 100
		for start := 0; start < len(rows); start += chunk {
			part := rows[start:min(start+chunk, len(rows))]
			query, args, err := appendStatement(table, part)
			if err != nil {
				return err
			}
			res, err := t.ExecContext(ctx, query, args...)
			if err != nil {
				return fmt.Errorf("append to stream %d: %w", stream.ID, err)
			}
			last, err := sqldb.Inserted(res, stream.ID, len(part))
			if err != nil {
				return err
			}
			for i := range part {
				ids = append(ids, last-int64(len(part)-1-i))
			}
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

// appendStatement returns the multi-row INSERT of part and its arguments.
// When every row of part has the same schema version and revision, routing
// key, rank, headers and production time (one ProduceBatch of one producer
// usually does), those are bound once and each row names them by number
// (?1 to ?6), so that a row binds 3 values instead of 9. Otherwise each row
// binds all 9. Integers are passed as int64, which database/sql hands on
// as they are (an int it converts through reflection).
func appendStatement(table string, part []driver.AppendRow) (string, []any, error) {
	headers := make([]any, len(part))
	shared := len(part) > 1 && driver.SharesValues(part)
	for i, r := range part {
		if len(r.Headers) > 0 && (i == 0 || !shared) { // shared: the first row's stand for all
			h, err := json.Marshal(r.Headers)
			if err != nil {
				return "", nil, err
			}
			headers[i] = string(h)
		}
	}
	var sb strings.Builder
	const head = `INSERT INTO `
	const columns = ` (partition, schema_version, schema_revision, msg_key, routing_key, compaction_rank, payload, headers, produced_at) VALUES `
	if !shared {
		const row = "(?, ?, ?, ?, ?, ?, ?, ?, ?)"
		sb.Grow(len(head) + len(table) + len(columns) + len(part)*(len(row)+2))
		sb.WriteString(head + table + columns)
		args := make([]any, 0, len(part)*9)
		for i, r := range part {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(row)
			args = append(args, int64(r.Partition), int64(r.SchemaVersion), int64(r.SchemaRevision), key(r), r.RoutingKey, r.CompactionRank, r.Payload, headers[i], micros(r.ProducedAt))
		}
		return sb.String(), args, nil
	}
	f := part[0]
	args := make([]any, 0, 6+len(part)*3)
	args = append(args, int64(f.SchemaVersion), int64(f.SchemaRevision), f.RoutingKey, f.CompactionRank, headers[0], micros(f.ProducedAt))
	// The first row's ?7 makes the later anonymous parameters 8, 9, ...: an
	// anonymous parameter is numbered one past the greatest so far. Only
	// ?1 to ?7 have names, so that the engine's lookup of parameter names,
	// a scan of the named ones for each bound value, stays short.
	const first, row = "(?7, ?1, ?2, ?, ?3, ?4, ?, ?5, ?6)", ", (?, ?1, ?2, ?, ?3, ?4, ?, ?5, ?6)"
	sb.Grow(len(head) + len(table) + len(columns) + len(first) + (len(part)-1)*len(row))
	sb.WriteString(head + table + columns + first)
	for i, r := range part {
		if i > 0 {
			sb.WriteString(row)
		}
		args = append(args, int64(r.Partition), key(r), r.Payload)
	}
	return sb.String(), args, nil
}

// key is the msg_key of r: NULL without a key.
func key(r driver.AppendRow) any {
	if r.HasKey {
		return r.Key
	}
	return nil
}

const rowColumns = sqldb.RowColumns
