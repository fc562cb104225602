package postgres

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// rowColumns are a log row's columns as rowScanner reads them.
const rowColumns = `m.id, m.partition, m.schema_version, m.msg_key, m.routing_key, m.compaction_rank, m.payload, m.headers, m.produced_at`

// rowScanner reads rowColumns, plus extra destinations, from each row of a
// result through one set of destinations, so that a row costs only what it
// keeps: its payload, key, routing key and headers. A window of a claim is
// read row by row this way (scanning each row into fresh destinations made
// the claim's largest allocation per row).
type rowScanner struct {
	row           driver.Row
	part, version int32
	key           pgtype.Text
	headers       []byte
	dest          []any
}

func newRowScanner(extra ...any) *rowScanner {
	s := &rowScanner{}
	s.dest = append([]any{&s.row.ID, &s.part, &s.version, &s.key, &s.row.RoutingKey, &s.row.CompactionRank, &s.row.Payload,
		&s.headers, &s.row.ProducedAt}, extra...)
	return s
}

// scan reads the current row of rows (payload possibly NULL).
func (s *rowScanner) scan(rows pgx.Rows) (driver.Row, error) {
	s.row, s.headers = driver.Row{}, nil
	if err := rows.Scan(s.dest...); err != nil {
		return driver.Row{}, err
	}
	row := s.row
	row.Partition, row.SchemaVersion = int(s.part), int(s.version)
	row.Key, row.HasKey = s.key.String, s.key.Valid
	row.ProducedAt = row.ProducedAt.UTC()
	var err error
	row.Headers, err = decodeHeaders(row.ID, s.headers)
	return row, err
}

// decodeHeaders reads a row's stored headers (jsonb, NULL for none).
func decodeHeaders(id int64, stored []byte) (map[string]string, error) {
	if len(stored) == 0 {
		return nil, nil
	}
	var headers map[string]string
	if err := json.Unmarshal(stored, &headers); err != nil {
		return nil, fmt.Errorf("row %d: stored headers: %w", id, err)
	}
	return headers, nil
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
	var err error
	r.Headers, err = decodeHeaders(r.ID, o.headers)
	return r, err
}
