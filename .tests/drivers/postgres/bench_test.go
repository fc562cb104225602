package postgres_test

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sqlstreams/sqlstreams/conformance"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/driver/postgres"
)

// BenchmarkPostgres runs the shared benchmarks with the strongest bare
// baselines PostgreSQL has on the same database (make bench):
//
//	GOTOOLCHAIN=go1.27.3 go test -run '^$' -bench 'BenchmarkPostgres$' -benchtime 200x ./.tests/drivers/postgres
func BenchmarkPostgres(b *testing.B) {
	conformance.Benchmark(b, conformance.BenchTarget{Target: target, NewRaw: newRaw, Copy: true})
}

// BenchmarkScalePostgres measures the costs that must stay flat as the log,
// its keys, partitions and retry backlog grow, each at two sizes (make
// bench-scale):
//
//	GOTOOLCHAIN=go1.27.3 go test -run '^$' -bench 'BenchmarkScalePostgres$' -benchtime 20x ./.tests/drivers/postgres
func BenchmarkScalePostgres(b *testing.B) {
	conformance.BenchmarkScale(b, conformance.BenchTarget{Target: target, NewRaw: newRaw, Copy: true})
}

type raw struct {
	pool        *pgxpool.Pool
	ready       bool
	cursorReady bool
}

func newRaw(tb testing.TB, ns string) conformance.Raw {
	pool, err := pgxpool.New(context.Background(), ns)
	if err != nil {
		tb.Fatal(err)
	}
	return &raw{pool: pool}
}

func (r *raw) Close() error { r.pool.Close(); return nil }

// rawColumns are a stream log's columns but the id.
var rawColumns = []string{"partition", "schema_version", "schema_revision", "msg_key", "routing_key", "compaction_rank", "payload", "headers", "produced_at"}

// table creates raw_log with the columns, types and indexes of a stream log.
func (r *raw) table(ctx context.Context) error {
	if r.ready {
		return nil
	}
	if _, err := r.pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS raw_log (
			id bigserial PRIMARY KEY, partition integer NOT NULL, schema_version integer NOT NULL, schema_revision integer NOT NULL DEFAULT 0,
			msg_key text, routing_key text NOT NULL, compaction_rank bigint NOT NULL, payload bytea NOT NULL,
			headers jsonb, produced_at timestamptz NOT NULL);
			CREATE INDEX IF NOT EXISTS raw_log_partition ON raw_log (partition, id)`); err != nil {
		return err
	}
	r.ready = true
	return nil
}

// Insert is one INSERT ... SELECT FROM unnest of one array per column: one
// statement whose text does not depend on the batch size, one round trip.
func (r *raw) Insert(ctx context.Context, rows []driver.AppendRow) error {
	if err := r.table(ctx); err != nil || len(rows) == 0 {
		return err
	}
	n := len(rows)
	parts, vers, revs := make([]int32, n), make([]int32, n), make([]int32, n)
	keys, rks, payloads := make([]*string, n), make([]string, n), make([][]byte, n)
	ranks, headers, produced := make([]int64, n), make([]*string, n), make([]time.Time, n)
	for i, row := range rows {
		parts[i], vers[i], revs[i] = int32(row.Partition), int32(row.SchemaVersion), int32(row.SchemaRevision)
		if row.HasKey {
			keys[i] = &row.Key
		}
		rks[i], ranks[i], payloads[i], produced[i] = row.RoutingKey, row.CompactionRank, row.Payload, row.ProducedAt
	}
	_, err := r.pool.Exec(ctx, `INSERT INTO raw_log (partition, schema_version, schema_revision, msg_key, routing_key, compaction_rank, payload, headers, produced_at)
		SELECT * FROM unnest($1::integer[], $2::integer[], $3::integer[], $4::text[], $5::text[], $6::bigint[], $7::bytea[], $8::jsonb[], $9::timestamptz[])`,
		parts, vers, revs, keys, rks, ranks, payloads, headers, produced)
	return err
}

// Copy bulk-loads the rows with COPY FROM STDIN in binary format.
func (r *raw) Copy(ctx context.Context, rows []driver.AppendRow) error {
	if err := r.table(ctx); err != nil {
		return err
	}
	_, err := r.pool.CopyFrom(ctx, pgx.Identifier{"raw_log"}, rawColumns, pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
		row := rows[i]
		var key *string
		if row.HasKey {
			key = &row.Key
		}
		return []any{int32(row.Partition), int32(row.SchemaVersion), int32(row.SchemaRevision), key, row.RoutingKey, row.CompactionRank, row.Payload, nil, row.ProducedAt}, nil
	}))
	return err
}

// Raw consumers' cursors, rows of raw_cursor: Consume's and ConsumeLimit's.
const (
	consumeCursor = 1
	limitCursor   = 2
)

// consume is one statement, so one round trip and one transaction: lock
// cursor's row, read the next rows after it, move it past them, return them,
// each to each. It returns how many rows it read.
func (r *raw) consume(ctx context.Context, streamID int64, cursor, limit int, each func(pgx.Rows) error) (int, error) {
	if !r.cursorReady {
		if _, err := r.pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS raw_cursor (id integer PRIMARY KEY, position bigint NOT NULL);
			INSERT INTO raw_cursor VALUES (1, 0), (2, 0) ON CONFLICT DO NOTHING`); err != nil {
			return 0, err
		}
		r.cursorReady = true
	}
	rows, err := r.pool.Query(ctx, `WITH c AS (SELECT position FROM raw_cursor WHERE id = $2::integer FOR UPDATE),
		r AS (SELECT m.id, m.partition, m.schema_version, m.msg_key, m.routing_key, m.compaction_rank, m.payload, m.headers, m.produced_at
			FROM message_log_`+strconv.FormatInt(streamID, 10)+` m WHERE m.id > (SELECT position FROM c) ORDER BY m.id LIMIT $1::integer),
		u AS (UPDATE raw_cursor SET position = (SELECT max(id) FROM r) WHERE id = $2::integer AND EXISTS (SELECT 1 FROM r))
		SELECT * FROM r ORDER BY id`, int32(limit), int32(cursor))
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		if err := each(rows); err != nil {
			return n, err
		}
		n++
	}
	return n, rows.Err()
}

// ConsumeLimit is consume's one statement, its rows counted, not scanned.
func (r *raw) ConsumeLimit(ctx context.Context, streamID int64, limit int) (int, error) {
	return r.consume(ctx, streamID, limitCursor, limit, func(pgx.Rows) error { return nil })
}

// Consume is consume's one statement, each row scanned and its payload
// decoded.
func (r *raw) Consume(ctx context.Context, streamID int64, limit int, decode func([]byte) error) (int, error) {
	return r.consume(ctx, streamID, consumeCursor, limit, func(rows pgx.Rows) error {
		var (
			id               int64
			part, ver        int32
			rank             int64
			key              *string
			rk               string
			payload, headers []byte
			produced         time.Time
		)
		if err := rows.Scan(&id, &part, &ver, &key, &rk, &rank, &payload, &headers, &produced); err != nil {
			return err
		}
		return decode(payload)
	})
}

// BenchmarkC5Mechanism compares the two known cures for commit order (C5)
// on the producer side: 8 concurrent single-row transactions on one
// partition, (a) taking the partition row lock before the insert, as the
// driver does, and (b) inserting with pg_current_xact_id() in each row and no
// lock, as an xid8 snapshot fence would. Both are one pipelined round trip.
func BenchmarkC5Mechanism(b *testing.B) {
	ns := newSchema(b, nil)
	pool, err := pgxpool.New(context.Background(), ns)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(context.Background(), `
		CREATE TABLE part (stream_id bigint, partition integer, PRIMARY KEY (stream_id, partition));
		INSERT INTO part VALUES (1, 0);
		CREATE TABLE log_lock (id bigserial PRIMARY KEY, partition integer NOT NULL, payload bytea NOT NULL, produced_at timestamptz NOT NULL);
		CREATE INDEX ON log_lock (partition, id);
		CREATE TABLE log_xid (id bigserial PRIMARY KEY, xid xid8 NOT NULL DEFAULT pg_current_xact_id(), partition integer NOT NULL, payload bytea NOT NULL, produced_at timestamptz NOT NULL);
		CREATE INDEX ON log_xid (partition, id);`); err != nil {
		b.Fatal(err)
	}
	payload := []byte(`{"order_id":"order-00000001","customer":"cust-00001","cents":7,"currency":"EUR","items":[1,2,3]}`)
	for _, mode := range []string{"row-lock", "xid-fence"} {
		b.Run(mode, func(b *testing.B) {
			b.SetParallelism(4) // 8 producers on 2 cores
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					batch := &pgx.Batch{}
					if mode == "row-lock" {
						batch.Queue(`SELECT partition FROM part WHERE stream_id = 1 AND partition = 0 FOR NO KEY UPDATE`)
						batch.Queue(`INSERT INTO log_lock (partition, payload, produced_at) VALUES (0, $1::bytea, $2::timestamptz)`, payload, time.Now())
					} else {
						batch.Queue(`INSERT INTO log_xid (partition, payload, produced_at) VALUES (0, $1::bytea, $2::timestamptz)`, payload, time.Now())
					}
					if err := pool.SendBatch(context.Background(), batch).Close(); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// BenchmarkProcesses measures consuming a 4-partition stream with four
// consumer processes against one (conformance.Processes):
//
//	GOTOOLCHAIN=go1.27.3 go test -run '^$' -bench 'BenchmarkProcesses$' -benchtime 200x ./.tests/drivers/postgres
func BenchmarkProcesses(b *testing.B) { conformance.Processes(b, target) }

// BenchmarkWakeLatency measures produce-to-handler latency when producer and
// consumer are different clients (as in different processes), so that only
// NOTIFY, or else polling every 50ms, can wake the consumer.
func BenchmarkWakeLatency(b *testing.B) {
	for _, mode := range []struct {
		name string
		opts []postgres.Option
	}{{"notify", nil}, {"poll-only", []postgres.Option{postgres.WithoutNotify()}}} {
		b.Run(mode.name, func(b *testing.B) {
			ns := newSchema(b, nil)
			conformance.WakeLatency(b, 50*time.Millisecond, func(tb testing.TB) *sqlstreams.Client { return open(tb, ns, mode.opts...) })
		})
	}
}

// BenchmarkProduceSingleNotify shows what the per-transaction NOTIFY costs a
// single-message produce.
func BenchmarkProduceSingleNotify(b *testing.B) {
	for _, mode := range []struct {
		name string
		opts []postgres.Option
	}{{"notify", nil}, {"no-notify", []postgres.Option{postgres.WithoutNotify()}}} {
		b.Run(mode.name, func(b *testing.B) {
			c := open(b, newSchema(b, nil), mode.opts...)
			p, err := c.Stream[event]("single").Producer().Register(context.Background(), nil)
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; b.Loop(); i++ {
				if _, err := p.Produce(context.Background(), event{N: i}, sqlstreams.Key(strconv.Itoa(i))); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// BenchmarkProduceTxConcurrent is 8 committers, each in a loop of its own
// transactions of one ProduceTx on a partition of its own (8 partitions),
// with wake-ups on and with WithoutNotify, alternating in rounds of 50
// commits per committer so that both see the same load. x-no-notify is the
// committed rate with wake-ups over the rate without: the price of
// NOTIFY for committers that commit at once.
func BenchmarkProduceTxConcurrent(b *testing.B) {
	const committers, round = 8, 50
	ns := newSchema(b, nil)
	type side struct {
		drv *postgres.Driver
		p   *sqlstreams.Producer[event]
	}
	var sides []side
	for _, opts := range [][]postgres.Option{nil, {postgres.WithoutNotify()}} {
		drv := postgres.Open(ns, opts...)
		c, err := sqlstreams.Open(context.Background(), drv, sqlstreams.WithMaintenanceInterval(0))
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Stream[event]("txs").Create(context.Background(), &sqlstreams.StreamOptions{Partitions: committers}); err != nil && !errors.Is(err, sqlstreams.ErrStreamExists) {
			b.Fatal(err)
		}
		p, err := c.Stream[event]("txs").Producer().Register(context.Background(), nil)
		if err != nil {
			b.Fatal(err)
		}
		sides = append(sides, side{drv, p})
	}
	// A key per partition, so that committer i writes partition i only.
	keys := make([]string, committers)
	for i, found := 0, 0; found < committers; i++ {
		k := "k" + strconv.Itoa(i)
		if part := sqlstreams.PartitionForKey(k, committers); keys[part] == "" {
			keys[part] = k
			found++
		}
	}
	spent := make([]time.Duration, len(sides))
	commits := make([]int, len(sides))
	for b.Loop() {
		for s, sd := range sides {
			start := time.Now()
			var wg sync.WaitGroup
			for i := range committers {
				wg.Go(func() {
					for n := range round {
						tx, err := sd.drv.Pool().Begin(context.Background())
						if err != nil {
							b.Error(err)
							return
						}
						if _, err := sd.p.ProduceTx(context.Background(), postgres.Tx(tx), event{N: n}, sqlstreams.Key(keys[i])); err != nil {
							_ = tx.Rollback(context.Background())
							b.Error(err)
							return
						}
						if err := tx.Commit(context.Background()); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			spent[s] += time.Since(start)
			commits[s] += committers * round
		}
	}
	notify, quiet := float64(commits[0])/spent[0].Seconds(), float64(commits[1])/spent[1].Seconds()
	b.ReportMetric(notify, "notify-commits/s")
	b.ReportMetric(quiet, "no-notify-commits/s")
	b.ReportMetric(notify/quiet, "x-no-notify")
}

// open is a client on ns with no maintenance loop and no logs, closed when
// the benchmark ends.
func open(tb testing.TB, ns string, opts ...postgres.Option) *sqlstreams.Client {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := sqlstreams.Open(ctx, postgres.Open(ns, opts...), sqlstreams.WithMaintenanceInterval(0),
		sqlstreams.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// event is the message the benchmarks produce.
type event struct {
	N int `json:"n"`
}

func (event) SchemaVersion() int { return 1 }
