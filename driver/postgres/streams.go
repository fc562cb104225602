package postgres

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// store is the bookkeeping and the reads around it that PostgreSQL does as
// MySQL and SQLite do (sqldb.Store), on pgx through runner: the statements
// whose text differs.
var store = sqldb.Store[time.Time]{
	Time: func(t time.Time) any { return ts(t) },
	At:   time.Time.UTC,
	Head: headExpr,
	// One index probe per partition rather than a scan of the log; the
	// mark covers newest rows that compaction or retention removed.
	HighWaters: func(stream driver.StreamConfig) (string, []any) {
		return `SELECT sp.partition, GREATEST(sp.high_water, (SELECT max(m.id) FROM ` + logTable(stream.ID) + ` m WHERE m.partition = sp.partition))
			FROM stream_partition sp WHERE sp.stream_id = ?`, []any{stream.ID}
	},
	ExceptionCounts: func(streamID int64) string {
		return `SELECT x.group_name, x.schema_version, x.state, sum(x.n)::bigint FROM (
			SELECT group_name, schema_version, state, count(*) AS n FROM delivery_exception WHERE stream_id = ?
			GROUP BY group_name, schema_version, state
			UNION ALL
			SELECT b.group_name, m.schema_version, 'leased', count(*) FROM delivery_batch b CROSS JOIN LATERAL unnest(b.ids) AS u(id)
			JOIN ` + logTable(streamID) + ` m ON m.id = u.id WHERE b.stream_id = ? GROUP BY 1, 2) x
		GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`
	},
	// Through the groups, so that each is a range of the index of pending
	// exceptions (delivery_exception_due), not a scan of the stream's dead
	// letters.
	HolderCounts: func(int64) string {
		return `SELECT h.group_name, h.holder, sum(h.n)::bigint, max(h.until) FROM (
			SELECT e.group_name, COALESCE(e.holder, '') AS holder, count(*) AS n, max(e.due_at) AS until FROM consumer_group g
			JOIN delivery_exception e ON e.stream_id = g.stream_id AND e.group_name = g.name AND e.state = 'leased'
			WHERE g.stream_id = ? GROUP BY 1, 2
			UNION ALL
			SELECT b.group_name, COALESCE(b.holder, ''), sum(cardinality(b.ids)), max(b.lease_until) FROM delivery_batch b
			WHERE b.stream_id = ? GROUP BY 1, 2) h
		GROUP BY 1, 2 ORDER BY 1, 2`
	},
	Unread:       unreadCounts,
	AddRowCounts: `ON CONFLICT (stream_id, partition, schema_version) DO UPDATE SET row_count = row_count.row_count + excluded.row_count`,
	MoveMarks:    `ON CONFLICT (stream_id, partition) DO UPDATE SET counted_to = GREATEST(row_count_mark.counted_to, excluded.counted_to)`,
	// One upsert of a row only this client writes: nothing else locks it.
	UpsertClient: `ON CONFLICT (instance) DO UPDATE SET identity = excluded.identity, host = excluded.host, pid = excluded.pid,
		library_version = excluded.library_version, group_list = excluded.group_list, started_at = excluded.started_at,
		last_seen = excluded.last_seen, heartbeat_every_us = excluded.heartbeat_every_us, closed_at = excluded.closed_at`,
	// ON CONFLICT DO NOTHING turns a second client's sample of the bucket
	// into no row, without an error that would abort the transaction.
	InsertSample: `INSERT INTO stream_sample (` + sqldb.SampleColumns + `) VALUES (?, ?, ?) ON CONFLICT (stream_id, sampled_at) DO NOTHING`,
}

// CreateStream implements driver.Driver: the configuration (store), the
// log table and a row per partition, in one transaction.
func (d *Driver) CreateStream(ctx context.Context, p driver.CreateStreamParams) (driver.StreamConfig, error) {
	return sqldb.Within(ctx, d.writing, func(tx sqldb.Runner) (driver.StreamConfig, error) {
		cfg, err := store.CreateStream(ctx, tx, p.Config, isUnique)
		if err != nil {
			return cfg, err
		}
		table := logTable(cfg.ID)
		if _, err := tx.Exec(ctx, `CREATE TABLE `+table+` (
			id              bigserial   PRIMARY KEY,
			partition       integer     NOT NULL,
			schema_version  integer     NOT NULL,
			schema_revision integer     NOT NULL DEFAULT 0,
			msg_key         text,
			routing_key     text        NOT NULL,
			compaction_rank bigint      NOT NULL,
			payload         bytea       NOT NULL,
			headers         jsonb,
			produced_at     timestamptz NOT NULL
		)`); err != nil {
			return cfg, err
		}
		if _, err := tx.Exec(ctx, `CREATE INDEX `+table+`_partition ON `+table+` (partition, id)`); err != nil {
			return cfg, err
		}
		_, err = tx.Exec(ctx, `INSERT INTO stream_partition (stream_id, partition) SELECT ?, p FROM generate_series(0, ? - 1) p`, cfg.ID, cfg.Partitions)
		return cfg, err
	})
}

// LookupStream implements driver.Driver.
func (d *Driver) LookupStream(ctx context.Context, p driver.LookupStreamParams) (driver.StreamConfig, error) {
	return sqldb.Within(ctx, d.pooled, func(q sqldb.Runner) (driver.StreamConfig, error) { return store.Stream(ctx, q, "name = ?", p.Name) })
}

func lookupStreamByID(ctx context.Context, q querier, id int64) (driver.StreamConfig, error) {
	return store.Stream(ctx, runner{q}, "id = ?", id)
}

// ListStreams implements driver.Driver.
func (d *Driver) ListStreams(ctx context.Context, p driver.ListStreamsParams) ([]driver.StreamConfig, error) {
	return sqldb.In(ctx, d.pooled, store.ListStreams, p)
}

// RenameStream implements driver.Driver.
func (d *Driver) RenameStream(ctx context.Context, p driver.RenameStreamParams) error {
	return d.autocommit(ctx, func(q sqldb.Runner) error { return sqldb.RenameStream(ctx, q, p, isUnique) })
}

// DestroyStream implements driver.Driver: the stream's rows (with its
// partitions'), then its log table, in one transaction.
func (d *Driver) DestroyStream(ctx context.Context, p driver.DestroyStreamParams) error {
	return d.writing(ctx, func(tx sqldb.Runner) error {
		if err := sqldb.DeleteStream(ctx, tx, p.StreamID, nil, "stream_partition"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DROP TABLE IF EXISTS `+logTable(p.StreamID))
		return err
	})
}

// groupColumnsOf is sqldb.GroupColumns qualified by a table alias.
func groupColumnsOf(alias string) string {
	cols := strings.Split(sqldb.GroupColumns, ", ")
	for i, c := range cols {
		cols[i] = alias + "." + c
	}
	return strings.Join(cols, ", ")
}

// groupQuery reads a group (alias g, $1 its stream, $2 its name) with
// more columns after its own; lock is "" or a locking clause.
func groupQuery(more, lock string) string {
	return `SELECT ` + groupColumnsOf("g") + more + ` FROM consumer_group g WHERE g.stream_id = $1::bigint AND g.name = $2::text` + lock
}

// loadGroupAnd reads a group with more columns (with parameters from $3 on
// in args) into extra destinations.
func loadGroupAnd(ctx context.Context, q querier, streamID int64, name, more string, args []any, extra ...any) (driver.GroupConfig, error) {
	return scanLoadedGroup(q.QueryRow(ctx, groupQuery(more, ""), append([]any{streamID, name}, args...)...), name, extra...)
}

// scanLoadedGroup reads a group's columns, then extra, or fails with
// ErrGroupNotFound.
func scanLoadedGroup(r pgx.Row, name string, extra ...any) (driver.GroupConfig, error) {
	g, _, err := sqldb.ScanGroup(r, store.At, extra...)
	if errors.Is(err, pgx.ErrNoRows) {
		return g, driver.GroupNotFound(name)
	}
	return g, err
}

// RegisterGroup implements driver.Driver (store.RegisterGroupIn). The
// stream's row is read FOR KEY SHARE, which serializes a registration with
// AlterStream (FOR UPDATE) and nothing else: a new group gets a cursor in
// every partition the stream has when it commits, and an alter in flight
// extends the cursors of a group registered before it. An existing group's
// row is locked while Update runs; a change to it then locks every cursor
// of the group, waiting for the claims in flight (which hold cursor locks
// and read the group after taking one), so that no claim commits with the
// old configuration after the change and every later claim sees it (C19).
func (d *Driver) RegisterGroup(ctx context.Context, p driver.RegisterGroupParams) (driver.GroupConfig, error) {
	locks := sqldb.GroupLocks{Stream: ` FOR KEY SHARE`, Group: ` FOR UPDATE`}
	latest := func(tx sqldb.Runner, stream driver.StreamConfig) ([]int64, error) {
		return latestCommitted(ctx, tx, stream)
	}
	return store.RegisterGroupIn(ctx, d.writing, p, locks, latest, isUnique)
}

// latestCommitted is the last committed row of each partition, where a
// group that starts at the latest row puts its cursors: an append still in
// flight in a partition holds ids above it (C5), so it is not passed.
func latestCommitted(ctx context.Context, tx sqldb.Runner, stream driver.StreamConfig) ([]int64, error) {
	return sqldb.Value[[]int64](ctx, tx, `SELECT array_agg(COALESCE((SELECT max(m.id) FROM `+logTable(stream.ID)+` m WHERE m.partition = p), 0) ORDER BY p)
		FROM generate_series(0, ? - 1) p`, stream.Partitions)
}

// ListGroups implements driver.Driver.
func (d *Driver) ListGroups(ctx context.Context, p driver.ListGroupsParams) ([]driver.GroupConfig, error) {
	return sqldb.In(ctx, d.pooled, store.ListGroups, p)
}

// DeleteGroup implements driver.Driver.
func (d *Driver) DeleteGroup(ctx context.Context, p driver.DeleteGroupParams) error {
	return d.writing(ctx, func(tx sqldb.Runner) error { return sqldb.DeleteGroup(ctx, tx, p) })
}
