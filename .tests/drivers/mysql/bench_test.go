package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/conformance"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
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
	// procs are the streams whose raw_consume_<id> procedure exists.
	procs map[int64]bool
}

func newRaw(tb testing.TB, ns string) conformance.Raw {
	d := mysql.Open(ns)
	if err := d.Migrate(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return &raw{drv: d, procs: map[int64]bool{}}
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
	if err := r.cursors(ctx); err != nil {
		return 0, err
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

// Raw consumers' cursors, rows of raw_cursor: Consume's and ConsumeLimit's.
const (
	consumeCursor = 1
	limitCursor   = 2
)

// cursors creates raw_cursor with both cursors at 0.
func (r *raw) cursors(ctx context.Context) error {
	if r.cursorReady {
		return nil
	}
	db := r.drv.DB()
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS raw_cursor (id INT PRIMARY KEY, position BIGINT NOT NULL) ENGINE=InnoDB`); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, `INSERT IGNORE INTO raw_cursor VALUES (?, 0), (?, 0)`, consumeCursor, limitCursor); err != nil {
		return err
	}
	r.cursorReady = true
	return nil
}

// ConsumeLimit is Consume's transaction as one statement and one round
// trip: a CALL of a stored procedure (one per stream, created on first use)
// that begins, locks the cursor, returns the next rows, moves the cursor and
// commits; the rows are counted, not scanned. MariaDB has no data-modifying
// CTE and no UPDATE ... RETURNING, so reading and moving are separate
// statements, and a stored procedure is the one way to send them as one. It
// ran 1.13-1.31x as fast as the same statements in one multi-statement
// packet, the other way to one round trip (docs/decisions.md, "Benchmarks
// against the database's limit").
func (r *raw) ConsumeLimit(ctx context.Context, streamID int64, limit int) (int, error) {
	if err := r.cursors(ctx); err != nil {
		return 0, err
	}
	proc := "raw_consume_" + strconv.FormatInt(streamID, 10)
	if !r.procs[streamID] {
		next := fmt.Sprintf("FROM message_log_%d WHERE id > p ORDER BY id LIMIT lim", streamID)
		if _, err := r.drv.DB().ExecContext(ctx, "CREATE PROCEDURE IF NOT EXISTS "+proc+"(IN cur INT, IN lim INT) BEGIN"+
			" DECLARE p BIGINT; START TRANSACTION;"+
			" SELECT position INTO p FROM raw_cursor WHERE id = cur FOR UPDATE;"+
			" SELECT id, `partition`, schema_version, msg_key, routing_key, compaction_rank, payload, headers, produced_at "+next+";"+
			" UPDATE raw_cursor SET position = COALESCE((SELECT max(id) FROM (SELECT id "+next+") AS batch), position) WHERE id = cur;"+
			" COMMIT; END"); err != nil {
			return 0, err
		}
		r.procs[streamID] = true
	}
	if limit == 0 {
		return 0, nil
	}
	rows, err := r.drv.DB().QueryContext(ctx, "CALL "+proc+"(?, ?)", limitCursor, limit)
	if err != nil {
		return 0, err
	}
	n := 0
	for more := true; more; more = rows.NextResultSet() {
		for rows.Next() {
			n++
		}
	}
	return n, errors.Join(rows.Err(), rows.Close())
}

func (r *raw) Close() error { return r.drv.Close() }

// BenchmarkWakeLatency measures produce-to-handler latency when producer and
// consumer are different clients (as in different processes): MariaDB has
// no notifications, so the consumer's poll brings each message in. It runs
// at two poll intervals, each message produced at a random point of the
// poll, and reports what the idle polls cost beside the latency (claims/s,
// claim-ms/s): a shorter interval buys latency with queries.
//
//	GOTOOLCHAIN=go1.27.3 go test -run '^$' -bench 'BenchmarkWakeLatency$' -benchtime 100x ./.tests/drivers/mysql
func BenchmarkWakeLatency(b *testing.B) {
	for _, poll := range []time.Duration{10 * time.Millisecond, 50 * time.Millisecond} {
		b.Run("poll-"+poll.String(), func(b *testing.B) {
			ns := target.NewNamespace(b)
			conformance.WakeLatency(b, poll, func(tb testing.TB) *sqlstreams.Client {
				c, err := sqlstreams.Open(context.Background(), mysql.Open(ns), sqlstreams.WithMaintenanceInterval(0),
					sqlstreams.WithLogger(slog.New(slog.DiscardHandler)))
				if err != nil {
					tb.Fatal(err)
				}
				tb.Cleanup(func() { _ = c.Close() })
				return c
			})
		})
	}
}
