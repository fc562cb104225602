package postgres

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// rowColumns are a log row's columns as scanRow reads them.
const rowColumns = `m.id, m.partition, m.schema_version, m.msg_key, m.routing_key, m.compaction_rank, m.payload, m.headers, m.produced_at`

// scanRow reads rowColumns (payload possibly NULL), plus extra destinations.
func scanRow(r pgx.Row, extra ...any) (driver.Row, error) {
	var row driver.Row
	var part, version int32
	var key *string
	var headers []byte
	dest := append([]any{&row.ID, &part, &version, &key, &row.RoutingKey, &row.CompactionRank, &row.Payload, &headers, &row.ProducedAt}, extra...)
	if err := r.Scan(dest...); err != nil {
		return row, err
	}
	row.Partition, row.SchemaVersion = int(part), int(version)
	if key != nil {
		row.Key, row.HasKey = *key, true
	}
	row.ProducedAt = row.ProducedAt.UTC()
	return row, decodeHeaders(row.ID, headers, &row.Headers)
}

// decodeHeaders reads a row's stored headers (jsonb, NULL for none).
func decodeHeaders(id int64, stored []byte, headers *map[string]string) error {
	if len(stored) == 0 {
		return nil
	}
	if err := json.Unmarshal(stored, headers); err != nil {
		return fmt.Errorf("row %d: stored headers: %w", id, err)
	}
	return nil
}

// optionalRow is rowColumns read from an outer join: all NULL where the
// row is missing.
type optionalRow struct {
	id, rank         *int64
	part, version    *int32
	key, rk          *string
	payload, headers []byte
	produced         *time.Time
}

// dest is where Scan reads rowColumns to.
func (o *optionalRow) dest() []any {
	return []any{&o.id, &o.part, &o.version, &o.key, &o.rk, &o.rank, &o.payload, &o.headers, &o.produced}
}

// row is the row read; it must not be missing (id is not nil).
func (o *optionalRow) row() (driver.Row, error) {
	r := driver.Row{ID: *o.id, Partition: int(*o.part), SchemaVersion: int(*o.version), RoutingKey: *o.rk, CompactionRank: *o.rank,
		Payload: o.payload, ProducedAt: o.produced.UTC()}
	if o.key != nil {
		r.Key, r.HasKey = *o.key, true
	}
	return r, decodeHeaders(r.ID, o.headers, &r.Headers)
}
