package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/conformance"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/sqlite"
)

// BenchmarkSQLite runs the shared benchmarks with the strongest bare
// baselines SQLite has, on the same file (make bench):
//
//	GOTOOLCHAIN=go1.27.3 go test -run '^$' -bench 'BenchmarkSQLite$' -benchtime 200x ./.tests/drivers/sqlite
func BenchmarkSQLite(b *testing.B) {
	conformance.Benchmark(b, conformance.BenchTarget{Target: target, NewRaw: newRaw})
}

// BenchmarkScaleSQLite measures the costs that must stay flat as the log,
// its keys, partitions and retry backlog grow, each at two sizes (make
// bench-scale):
//
//	GOTOOLCHAIN=go1.27.3 go test -run '^$' -bench 'BenchmarkScaleSQLite$' -benchtime 20x ./.tests/drivers/sqlite
func BenchmarkScaleSQLite(b *testing.B) {
	conformance.BenchmarkScale(b, conformance.BenchTarget{Target: target, NewRaw: newRaw})
}

// raw is the baseline: bare statements, prepared once and kept, through the
// driver's own writer connection (same pragmas).
type raw struct {
	drv     *sqlite.Driver
	ready   bool
	inserts map[int]*sql.Stmt // by row count
	read    *sql.Stmt
	advance *sql.Stmt
}

// Raw consumers' cursors, rows of raw_cursor: Consume's and ConsumeLimit's.
const (
	consumeCursor = 1
	limitCursor   = 2
)

func newRaw(tb testing.TB, ns string) conformance.Raw {
	d := sqlite.Open(ns)
	if err := d.Migrate(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return &raw{drv: d, inserts: map[int]*sql.Stmt{}}
}

// Insert is one prepared multi-row INSERT in one transaction.
func (r *raw) Insert(ctx context.Context, rows []driver.AppendRow) error {
	db := r.drv.DB()
	if !r.ready {
		if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS raw_log (
			id INTEGER PRIMARY KEY AUTOINCREMENT, partition INTEGER NOT NULL, schema_version INTEGER NOT NULL, schema_revision INTEGER NOT NULL DEFAULT 0,
			msg_key TEXT, routing_key TEXT NOT NULL, compaction_rank INTEGER NOT NULL, payload BLOB NOT NULL,
			headers TEXT, produced_at INTEGER NOT NULL);
			CREATE INDEX IF NOT EXISTS raw_log_partition ON raw_log (partition, id)`); err != nil {
			return err
		}
		r.ready = true
	}
	if len(rows) == 0 {
		return nil
	}
	stmt := r.inserts[len(rows)]
	if stmt == nil {
		q := `INSERT INTO raw_log (partition, schema_version, schema_revision, msg_key, routing_key, compaction_rank, payload, headers, produced_at) VALUES ` +
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?), ", len(rows)), ", ")
		var err error
		if stmt, err = db.PrepareContext(ctx, q); err != nil {
			return err
		}
		r.inserts[len(rows)] = stmt
	}
	args := make([]any, 0, len(rows)*9)
	for _, row := range rows {
		args = append(args, row.Partition, row.SchemaVersion, row.SchemaRevision, row.Key, row.RoutingKey, row.CompactionRank, row.Payload, nil, row.ProducedAt.UnixMicro())
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if _, err := tx.StmtContext(ctx, stmt).ExecContext(ctx, args...); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// consume reads the next rows after cursor and moves it past them, with
// prepared statements, in one transaction; each row goes to scan, which
// returns its id.
func (r *raw) consume(ctx context.Context, streamID int64, cursor, limit int, scan func(*sql.Rows) (int64, error)) (int, error) {
	db := r.drv.DB()
	if r.read == nil {
		if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS raw_cursor (id INTEGER PRIMARY KEY, position INTEGER NOT NULL);
			INSERT INTO raw_cursor VALUES (1, 0), (2, 0) ON CONFLICT DO NOTHING`); err != nil {
			return 0, err
		}
		var err error
		if r.read, err = db.PrepareContext(ctx, fmt.Sprintf(`SELECT id, partition, schema_version, msg_key, routing_key, compaction_rank, payload, headers, produced_at
			FROM message_log_%d WHERE id > (SELECT position FROM raw_cursor WHERE id = ?) ORDER BY id LIMIT ?`, streamID)); err != nil {
			return 0, err
		}
		if r.advance, err = db.PrepareContext(ctx, `UPDATE raw_cursor SET position = ? WHERE id = ?`); err != nil {
			return 0, err
		}
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	rows, err := tx.StmtContext(ctx, r.read).QueryContext(ctx, cursor, limit)
	if err != nil {
		return 0, err
	}
	n, last := 0, int64(0)
	for rows.Next() {
		id, err := scan(rows)
		if err != nil {
			rows.Close()
			return n, err
		}
		n, last = n+1, id
	}
	if err := rows.Close(); err != nil {
		return n, err
	}
	if n > 0 {
		if _, err := tx.StmtContext(ctx, r.advance).ExecContext(ctx, last, cursor); err != nil {
			return n, err
		}
	}
	return n, tx.Commit()
}

// ConsumeLimit is consume converting each row's id alone, decoding nothing
// else (the other columns are left as the driver's bytes): the id is what
// moves the cursor.
func (r *raw) ConsumeLimit(ctx context.Context, streamID int64, limit int) (int, error) {
	var skip sql.RawBytes
	return r.consume(ctx, streamID, limitCursor, limit, func(rows *sql.Rows) (id int64, err error) {
		err = rows.Scan(&id, &skip, &skip, &skip, &skip, &skip, &skip, &skip, &skip)
		return id, err
	})
}

// Consume is consume scanning every column and decoding the payload.
func (r *raw) Consume(ctx context.Context, streamID int64, limit int, decode func([]byte) error) (int, error) {
	return r.consume(ctx, streamID, consumeCursor, limit, func(rows *sql.Rows) (int64, error) {
		var (
			id, produced    int64
			part, ver, rank int
			key, headers    sql.NullString
			rk              string
			payload         []byte
		)
		if err := rows.Scan(&id, &part, &ver, &key, &rk, &rank, &payload, &headers, &produced); err != nil {
			return 0, err
		}
		return id, decode(payload)
	})
}

func (r *raw) Close() error {
	for _, s := range r.inserts {
		s.Close()
	}
	if r.read != nil {
		r.read.Close()
		r.advance.Close()
	}
	return r.drv.Close()
}

// BenchmarkWakeLatency measures produce-to-handler latency when producer and
// consumer are different clients on the file (as in different processes),
// so that only the write-ahead log watch, or else polling every 50ms, can
// wake the consumer:
//
//	GOTOOLCHAIN=go1.27.3 go test -run '^$' -bench 'BenchmarkWakeLatency$' -benchtime 300x ./.tests/drivers/sqlite
func BenchmarkWakeLatency(b *testing.B) {
	for _, mode := range []struct {
		name string
		opts []sqlite.Option
	}{{"wal-watch", nil}, {"poll-only", []sqlite.Option{sqlite.WithoutNotify()}}} {
		b.Run(mode.name, func(b *testing.B) {
			ns := target.NewNamespace(b)
			conformance.WakeLatency(b, 50*time.Millisecond, func(tb testing.TB) *sqlstreams.Client {
				c, err := sqlstreams.Open(context.Background(), sqlite.Open(ns, mode.opts...), sqlstreams.WithMaintenanceInterval(0))
				if err != nil {
					tb.Fatal(err)
				}
				tb.Cleanup(func() { _ = c.Close() })
				return c
			})
		})
	}
}
