package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// Append implements driver.Driver. Without tx, the partition locks, the
// insert, the head moves and the notification go to the server as one
// pipelined batch that runs as one implicit transaction: one round trip.
func (d *Driver) Append(ctx context.Context, tx driver.Tx, stream driver.StreamConfig, rows []driver.AppendRow) ([]int64, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, nil
	}
	// A caller's transaction always carries its NOTIFY, delivered when it
	// commits; the driver's own appends are debounced per stream.
	notify := tx != nil || d.notifyNow(stream.ID)
	batch, err := d.appendBatch(stream, rows, notify)
	if err != nil {
		return nil, err
	}
	if tx != nil {
		a, ok := tx.(txAdapter)
		if !ok {
			return nil, fmt.Errorf("postgres: %w: got a %s transaction; wrap a pgx.Tx with postgres.Tx", driver.ErrForeignTx, tx.DriverName())
		}
		ids, err := runAppend(ctx, a.tx, batch, len(rows))
		if err != nil {
			return nil, fmt.Errorf("append to stream %d: %w", stream.ID, err)
		}
		return ids, nil
	}
	var ids []int64
	err = d.retry(ctx, func() error {
		var err error
		ids, err = runAppend(ctx, d.pool, batch, len(rows))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("append to stream %d: %w", stream.ID, err)
	}
	return ids, nil
}

type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// runAppend sends the batch built by appendBatch and returns the ids.
func runAppend(ctx context.Context, s batchSender, batch *pgx.Batch, n int) ([]int64, error) {
	br := s.SendBatch(ctx, batch)
	if _, err := br.Exec(); err != nil { // partition locks
		br.Close()
		return nil, err
	}
	rs, err := br.Query()
	if err != nil {
		br.Close()
		return nil, err
	}
	ids, err := pgx.CollectRows(rs, pgx.RowTo[int64])
	if err != nil {
		br.Close()
		return nil, err
	}
	if err := br.Close(); err != nil {
		return nil, err
	}
	if len(ids) != n {
		return nil, fmt.Errorf("%d ids for %d rows", len(ids), n)
	}
	return ids, nil
}

// appendBatch builds the statements of an append: lock the partitions in
// partition order, insert the rows (ids are taken in input order, so the
// sorted ids map to the rows in order), move compaction heads, notify.
func (d *Driver) appendBatch(stream driver.StreamConfig, rows []driver.AppendRow, notify bool) (*pgx.Batch, error) {
	n := len(rows)
	partitions := make([]int32, n)
	versions := make([]int32, n)
	revisions := make([]int32, n)
	keys := make([]*string, n)
	routing := make([]string, n)
	ranks := make([]int32, n)
	payloads := make([]string, n)
	headers := make([]string, n)
	produced := make([]time.Time, n)
	for i, r := range rows {
		if r.Partition < 0 || r.Partition >= stream.Partitions {
			return nil, fmt.Errorf("append to stream %d: partition %d out of range 0..%d", stream.ID, r.Partition, stream.Partitions-1)
		}
		partitions[i] = int32(r.Partition)
		versions[i] = int32(r.SchemaVersion)
		revisions[i] = int32(r.SchemaRevision)
		if r.HasKey {
			keys[i] = &rows[i].Key
		}
		routing[i] = r.RoutingKey
		ranks[i] = int32(r.CompactionRank)
		payloads[i] = string(r.Payload)
		if len(r.Headers) > 0 {
			h, err := json.Marshal(r.Headers)
			if err != nil {
				return nil, err
			}
			headers[i] = string(h)
		}
		produced[i] = ts(r.ProducedAt)
	}
	locks := slices.Clone(partitions)
	slices.Sort(locks)
	locks = slices.Compact(locks)

	table := logTable(stream.ID)
	b := &pgx.Batch{}
	b.Queue(`SELECT partition FROM stream_partition WHERE stream_id = $1::bigint AND partition = ANY($2::integer[])
		ORDER BY partition FOR NO KEY UPDATE`, stream.ID, locks)
	insert := `INSERT INTO ` + table + ` (partition, schema_version, schema_revision, msg_key, routing_key, compaction_rank, payload, headers, produced_at)
		SELECT u.p, u.v, u.sr, u.k, u.rk, u.r, u.pl, NULLIF(u.h, '')::jsonb, u.at
		FROM unnest($1::integer[], $2::integer[], $3::integer[], $4::text[], $5::text[], $6::integer[], $7::jsonb[], $8::text[], $9::timestamptz[])
			WITH ORDINALITY AS u(p, v, sr, k, rk, r, pl, h, at, ord)
		ORDER BY u.ord`
	args := []any{partitions, versions, revisions, keys, routing, ranks, payloads, headers, produced}
	if !stream.Compacted {
		b.Queue(insert+` RETURNING id`, args...)
	} else {
		for _, k := range keys {
			if k == nil {
				return nil, errors.New("a compacted stream needs a key on every row")
			}
		}
		// The best row of each key in the batch replaces the head when it
		// beats it by (schema_version, compaction_rank, id) (C11). Keys map
		// to partitions, so the partition locks serialize head moves of a key.
		b.Queue(`WITH ins AS (`+insert+` RETURNING id, msg_key, schema_version, compaction_rank),
			best AS (SELECT DISTINCT ON (msg_key) msg_key, id, schema_version, compaction_rank FROM ins
				ORDER BY msg_key, schema_version DESC, compaction_rank DESC, id DESC),
			heads AS (INSERT INTO compaction_head (stream_id, msg_key, head_id, schema_version, compaction_rank)
				SELECT `+strconv.FormatInt(stream.ID, 10)+`, msg_key, id, schema_version, compaction_rank FROM best
				ON CONFLICT (stream_id, msg_key) DO UPDATE SET head_id = excluded.head_id,
					schema_version = excluded.schema_version, compaction_rank = excluded.compaction_rank
				WHERE (excluded.schema_version, excluded.compaction_rank, excluded.head_id) >
					(compaction_head.schema_version, compaction_head.compaction_rank, compaction_head.head_id))
			SELECT id FROM ins ORDER BY id`, args...)
	}
	if ch := d.channel(stream.ID); ch != "" && notify {
		b.Queue(`SELECT pg_notify($1::text, '')`, ch)
	}
	return b, nil
}

const rowColumns = `m.id, m.partition, m.schema_version, m.msg_key, m.routing_key, m.compaction_rank, m.payload, m.headers, m.produced_at`

// scanRow reads rowColumns (payload possibly NULL), plus extra destinations.
func scanRow(r pgx.Row, extra ...any) (driver.Row, error) {
	var row driver.Row
	var part, version, rank int32
	var key *string
	var headers []byte
	dest := append([]any{&row.ID, &part, &version, &key, &row.RoutingKey, &rank, &row.Payload, &headers, &row.ProducedAt}, extra...)
	if err := r.Scan(dest...); err != nil {
		return row, err
	}
	row.Partition, row.SchemaVersion, row.CompactionRank = int(part), int(version), int(rank)
	if key != nil {
		row.Key, row.HasKey = *key, true
	}
	row.ProducedAt = row.ProducedAt.UTC()
	if len(headers) > 0 {
		if err := json.Unmarshal(headers, &row.Headers); err != nil {
			return row, fmt.Errorf("row %d: stored headers: %w", row.ID, err)
		}
	}
	return row, nil
}
