package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// store is the bookkeeping and reads SQLite does as MySQL does: the
// statements whose text differs.
var store = sqldb.Store[int64]{
	Time: func(t time.Time) any { return micros(t) },
	At:   fromMicros,
	Head: headExpr,
	// One index dive per partition: a GROUP BY partition, and even a
	// correlated MAX(id), would read the whole (partition, id) index.
	HighWaters: func(stream driver.StreamConfig) (string, []any) {
		return partitionsCTE + `SELECT p.n, (SELECT m.id FROM ` + logTable(stream.ID) + ` m WHERE m.partition = p.n ORDER BY m.id DESC LIMIT 1) FROM p
			UNION ALL SELECT partition, high_water FROM partition_mark WHERE stream_id = ?`, []any{stream.Partitions, stream.ID}
	},
	// A batch keeps its members' versions.
	ExceptionCounts: func(int64) string {
		return `SELECT group_name, schema_version, state, SUM(n) FROM (
			SELECT group_name, schema_version, state, COUNT(*) AS n FROM delivery_exception WHERE stream_id = ? GROUP BY group_name, schema_version, state
			UNION ALL SELECT b.group_name, v.value, 'leased', COUNT(*) FROM delivery_batch b, json_each(b.versions) v WHERE b.stream_id = ? GROUP BY b.group_name, v.value)
			GROUP BY group_name, schema_version, state ORDER BY group_name, schema_version, state`
	},
	// The leased rows are read through the groups, so that each is a range
	// of the (stream, group, state) index holding its leases only, not a
	// scan of the stream's dead letters (CROSS JOIN: SQLite keeps the
	// groups as the outer loop).
	HolderCounts: func(int64) string {
		return `SELECT group_name, holder, SUM(n), MAX(until) FROM (
			SELECT e.group_name, COALESCE(e.holder, '') AS holder, COUNT(*) AS n, MAX(e.due_at) AS until FROM consumer_group g
				CROSS JOIN delivery_exception e
				WHERE g.stream_id = ? AND e.stream_id = g.stream_id AND e.group_name = g.name AND e.state = 'leased'
				GROUP BY e.group_name, COALESCE(e.holder, '')
			UNION ALL SELECT group_name, COALESCE(holder, ''), json_array_length(ids), lease_until FROM delivery_batch WHERE stream_id = ?)
			GROUP BY group_name, holder ORDER BY group_name, holder`
	},
	AddRowCounts: `ON CONFLICT (stream_id, partition, schema_version) DO UPDATE SET row_count = row_count + excluded.row_count`,
	MoveMarks:    `ON CONFLICT (stream_id, partition) DO UPDATE SET counted_to = MAX(counted_to, excluded.counted_to)`,
	UpsertClient: `ON CONFLICT (instance) DO UPDATE SET identity = excluded.identity, host = excluded.host, pid = excluded.pid,
		library_version = excluded.library_version, group_list = excluded.group_list, started_at = excluded.started_at,
		last_seen = excluded.last_seen, heartbeat_every_us = excluded.heartbeat_every_us, closed_at = excluded.closed_at`,
	// SQLite chooses the log's index itself; msg_key is TEXT.
	Index: func(bool) string { return "" },
	KeyIs: func(key string) (string, any) { return "IS ?", key },
	// In the one writer's transaction: ON CONFLICT DO NOTHING turns
	// another process's sample of the bucket into no row.
	InsertSample: `INSERT INTO stream_sample (` + sqldb.SampleColumns + `) VALUES (?, ?, ?) ON CONFLICT (stream_id, sampled_at) DO NOTHING`,
	LastID:       `SELECT last_insert_rowid()`,
}

// writing runs fn in a write transaction (inTx), reading in a read
// transaction (readTx): the scopes (sqldb.Scope) sqldb.In takes.
func (d *Driver) writing(ctx context.Context, fn func(querier) error) error {
	return d.inTx(ctx, nil, func(tx *sql.Tx) error { return fn(tx) })
}

func (d *Driver) reading(ctx context.Context, fn func(querier) error) error {
	return d.readTx(ctx, func(tx *sql.Tx) error { return fn(tx) })
}

// CreateStream implements driver.Driver. SQLite's DDL is transactional:
// the log table is made in the transaction that writes the configuration.
func (d *Driver) CreateStream(ctx context.Context, p driver.CreateStreamParams) (driver.StreamConfig, error) {
	cfg := p.Config
	err := d.inTx(ctx, nil, func(tx *sql.Tx) error {
		var err error
		if cfg, err = store.CreateStream(ctx, sqldb.On(tx), p.Config, isUnique); err != nil {
			return err
		}
		table := logTable(cfg.ID)
		_, err = tx.ExecContext(ctx, `CREATE TABLE `+table+` (
			id              INTEGER PRIMARY KEY AUTOINCREMENT,
			partition       INTEGER NOT NULL,
			schema_version  INTEGER NOT NULL,
			schema_revision INTEGER NOT NULL DEFAULT 0,
			msg_key         TEXT,
			routing_key     TEXT    NOT NULL,
			compaction_rank INTEGER NOT NULL,
			payload         BLOB    NOT NULL,
			headers         TEXT,
			produced_at     INTEGER NOT NULL
		);
		CREATE INDEX `+table+`_partition ON `+table+` (partition, id);`)
		return err
	})
	return cfg, err
}

// LookupStream implements driver.Driver.
func (d *Driver) LookupStream(ctx context.Context, p driver.LookupStreamParams) (driver.StreamConfig, error) {
	if err := d.check(); err != nil {
		return driver.StreamConfig{}, err
	}
	c, err := store.Stream(ctx, sqldb.On(d.read), "name = ?", p.Name)
	return c, d.wrap(err)
}

// lookupStreamByID reads a stream's configuration, or fails with
// ErrStreamNotFound.
func lookupStreamByID(ctx context.Context, tx querier, id int64) (driver.StreamConfig, error) {
	return store.Stream(ctx, sqldb.On(tx), "id = ?", id)
}

// ListStreams implements driver.Driver.
func (d *Driver) ListStreams(ctx context.Context, p driver.ListStreamsParams) ([]driver.StreamConfig, error) {
	return sqldb.In(ctx, sqldb.Over(d.reading), store.ListStreams, p)
}

// RenameStream implements driver.Driver.
func (d *Driver) RenameStream(ctx context.Context, p driver.RenameStreamParams) error {
	return d.writing(ctx, func(tx querier) error { return sqldb.RenameStream(ctx, sqldb.On(tx), p, isUnique) })
}

// DestroyStream implements driver.Driver: the log table is dropped in the
// transaction that deletes the stream's rows.
func (d *Driver) DestroyStream(ctx context.Context, p driver.DestroyStreamParams) error {
	return d.writing(ctx, func(tx querier) error {
		if err := sqldb.DeleteStream(ctx, sqldb.On(tx), p.StreamID, nil, "partition_mark"); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DROP TABLE IF EXISTS `+logTable(p.StreamID))
		return err
	})
}

// loadGroup reads a group's stored configuration, or fails with
// ErrGroupNotFound.
func loadGroup(ctx context.Context, q querier, streamID int64, name string) (driver.GroupConfig, error) {
	return store.LoadGroup(ctx, sqldb.On(q), streamID, name, "")
}

// loadGroups reads the stream's groups, each with its cursors.
func loadGroups(ctx context.Context, tx querier, stream driver.StreamConfig) ([]driver.GroupStats, error) {
	return store.LoadGroups(ctx, sqldb.On(tx), stream, "")
}

// RegisterGroup implements driver.Driver. SQLite's single writer orders it
// against claims and alters: its reads take no locks. A group that starts
// at the latest row puts every cursor at the newest id of the stream.
func (d *Driver) RegisterGroup(ctx context.Context, p driver.RegisterGroupParams) (driver.GroupConfig, error) {
	return sqldb.Within(ctx, sqldb.Over(d.writing), func(tx sqldb.Runner) (driver.GroupConfig, error) {
		return store.RegisterGroup(ctx, tx, p, sqldb.GroupLocks{}, func(stream driver.StreamConfig) ([]int64, error) {
			newest, err := sqldb.Value[int64](ctx, tx, `SELECT COALESCE(MAX(id), 0) FROM `+logTable(stream.ID))
			start := make([]int64, stream.Partitions)
			for p := range start {
				start[p] = newest
			}
			return start, err
		})
	})
}

// ListGroups implements driver.Driver.
func (d *Driver) ListGroups(ctx context.Context, p driver.ListGroupsParams) ([]driver.GroupConfig, error) {
	return sqldb.In(ctx, sqldb.Over(d.reading), store.ListGroups, p)
}

// DeleteGroup implements driver.Driver.
func (d *Driver) DeleteGroup(ctx context.Context, p driver.DeleteGroupParams) error {
	return d.writing(ctx, func(tx querier) error { return sqldb.DeleteGroup(ctx, sqldb.On(tx), p) })
}
