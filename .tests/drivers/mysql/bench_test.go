package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/mysql"
)

// BenchmarkMySQL runs the shared benchmarks with the strongest bare
// baselines MariaDB has, on the same server (make bench):
//
//	GOTOOLCHAIN=go1.27.3 go test -run '^$' -bench 'BenchmarkMySQL$' -benchtime 200x ./.tests/drivers/mysql
func BenchmarkMySQL(b *testing.B) {
	conformance.Benchmark(b, conformance.BenchTarget{Target: target, NewRaw: newRaw})
}

// BenchmarkScaleMySQL measures the costs that must stay flat as the log,
// its keys, partitions and retry backlog grow, each at two sizes (make
// bench-scale):
//
//	GOTOOLCHAIN=go1.27.3 go test -run '^$' -bench 'BenchmarkScaleMySQL$' -benchtime 20x ./.tests/drivers/mysql
func BenchmarkScaleMySQL(b *testing.B) {
	conformance.BenchmarkScale(b, conformance.BenchTarget{Target: target, NewRaw: newRaw})
}

// raw is the baseline: bare statements through the driver's own pool (same
// connection settings, interpolated parameters), into a table created with
// the same DDL as a log.
type raw struct {
	drv         *mysql.Driver
	ready       bool
	cursorReady bool
}

func newRaw(tb testing.TB, ns string) conformance.Raw {
	d := mysql.Open(ns)
	if err := d.Migrate(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return &raw{drv: d}
}

// Insert is one multi-row INSERT in autocommit: one round trip.
func (r *raw) Insert(ctx context.Context, rows []driver.AppendRow) error {
	db := r.drv.DB()
	if !r.ready {
		// The raw log has the driver's own shape: a stream's log, copied.
		cfg, err := r.drv.CreateStream(ctx, driver.CreateStreamParams{Config: driver.StreamConfig{
			Name: "raw-shape", Partitions: 1, CreatedAt: time.Now()}})
		if err != nil {
			return err
		}
		if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS raw_log LIKE message_log_"+strconv.FormatInt(cfg.ID, 10)); err != nil {
			return err
		}
		r.ready = true
	}
	if len(rows) == 0 {
		return nil
	}
	var sb strings.Builder
	sb.WriteString("INSERT INTO raw_log (`partition`, schema_version, schema_revision, msg_key, routing_key, compaction_rank, payload, headers, produced_at) VALUES ")
	args := make([]any, 0, len(rows)*9)
	for i, row := range rows {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?)")
		args = append(args, row.Partition, row.SchemaVersion, row.SchemaRevision, row.Key, row.RoutingKey, row.CompactionRank, string(row.Payload), nil, row.ProducedAt.UTC().Format("2006-01-02 15:04:05.000000"))
	}
	_, err := db.ExecContext(ctx, sb.String(), args...)
	return err
}

// Consume reads the next rows after the cursor and moves it in one
// transaction: BEGIN, the read, the update, COMMIT.
func (r *raw) Consume(ctx context.Context, streamID int64, limit int, decode func([]byte) error) (int, error) {
	db := r.drv.DB()
	if !r.cursorReady {
		if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS raw_cursor (id INT PRIMARY KEY, position BIGINT NOT NULL) ENGINE=InnoDB`); err != nil {
			return 0, err
		}
		if _, err := db.ExecContext(ctx, `INSERT IGNORE INTO raw_cursor VALUES (1, 0)`); err != nil {
			return 0, err
		}
		r.cursorReady = true
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, fmt.Sprintf("SELECT id, `partition`, schema_version, msg_key, routing_key, compaction_rank, payload, headers, produced_at"+
		" FROM message_log_%d WHERE id > (SELECT position FROM raw_cursor WHERE id = 1) ORDER BY id LIMIT ?", streamID), limit)
	if err != nil {
		return 0, err
	}
	n, last := 0, int64(0)
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
			rows.Close()
			return n, err
		}
		if err := decode(payload); err != nil {
			rows.Close()
			return n, err
		}
		n, last = n+1, id
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return n, err
	}
	if n > 0 {
		if _, err := tx.ExecContext(ctx, `UPDATE raw_cursor SET position = ? WHERE id = 1`, last); err != nil {
			return n, err
		}
	}
	return n, tx.Commit()
}

func (r *raw) Close() error { return r.drv.Close() }
