package mysql_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/mysql"
)

// BenchmarkMySQL runs the shared benchmarks with a bare baseline on the same
// server (see docs/benchmarks/mysql.md):
//
//	GOTOOLCHAIN=go1.27.3 go test -run '^$' -bench . -benchtime 3s ./driver/mysql
func BenchmarkMySQL(b *testing.B) {
	conformance.Benchmark(b, conformance.BenchTarget{Target: target, NewRaw: newRaw})
}

// raw is the baseline: bare statements through the driver's own pool (same
// connection settings), into a table created with the same DDL as a log.
type raw struct {
	drv   *mysql.Driver
	ready bool
}

func newRaw(tb testing.TB, ns string) conformance.Raw {
	d := mysql.Open(ns)
	if err := d.Migrate(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return &raw{drv: d}
}

func (r *raw) InsertRows(ctx context.Context, rows []driver.AppendRow) error {
	db := r.drv.DB()
	if !r.ready {
		if _, err := db.ExecContext(ctx, mysql.LogDDL("raw_baseline")); err != nil {
			return err
		}
		r.ready = true
	}
	var sb strings.Builder
	sb.WriteString("INSERT INTO raw_baseline (`partition`, schema_version, msg_key, routing_key, compaction_rank, payload, headers, produced_at) VALUES ")
	args := make([]any, 0, len(rows)*8)
	for i, row := range rows {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString("(?, ?, ?, ?, ?, ?, ?, ?)")
		args = append(args, row.Partition, row.SchemaVersion, row.Key, row.RoutingKey, row.CompactionRank, string(row.Payload), nil, mysql.TimeString(row.ProducedAt))
	}
	_, err := db.ExecContext(ctx, sb.String(), args...)
	return err
}

func (r *raw) ReadRows(ctx context.Context, streamID, afterID int64, limit int) (int, int64, error) {
	rows, err := r.drv.DB().QueryContext(ctx, fmt.Sprintf("SELECT id, `partition`, schema_version, msg_key, routing_key, compaction_rank, payload, headers, produced_at"+
		" FROM message_log_%d WHERE id > ? ORDER BY id LIMIT ?", streamID), afterID, limit)
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()
	n, last := 0, afterID
	for rows.Next() {
		var (
			id           int64
			part, ver    int
			rank         int64
			key, headers sql.NullString
			rk           string
			payload      []byte
			produced     sql.NullTime
		)
		if err := rows.Scan(&id, &part, &ver, &key, &rk, &rank, &payload, &headers, &produced); err != nil {
			return n, last, err
		}
		var v map[string]any
		if err := json.Unmarshal(payload, &v); err != nil { // a consumer decodes what it reads
			return n, last, err
		}
		n, last = n+1, id
	}
	return n, last, rows.Err()
}

func (r *raw) Close() error { return r.drv.Close() }
