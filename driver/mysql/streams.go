package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// store is the bookkeeping and reads MySQL does as SQLite does: the
// statements whose text differs.
var store = sqldb.Store[time.Time]{
	Time: func(t time.Time) any { return ts(t) },
	At:   utc,
	Head: headExpr,
	HighWaters: func(stream driver.StreamConfig) (string, []any) {
		return "SELECT p.`partition`, GREATEST(COALESCE((SELECT m.id FROM " + logTable(stream.ID) + " m WHERE m.`partition` = p.`partition` ORDER BY m.id DESC LIMIT 1), 0), p.high_water)" +
			" FROM stream_partition p WHERE p.stream_id = ?", []any{stream.ID}
	},
	ExceptionCounts: func(streamID int64) string {
		return `SELECT group_name, schema_version, state, SUM(n) FROM (
			SELECT group_name, schema_version, state, COUNT(*) n FROM delivery_exception WHERE stream_id = ? GROUP BY group_name, schema_version, state
			UNION ALL SELECT b.group_name, m.schema_version, 'leased', COUNT(*) FROM delivery_batch b JOIN ` + jsonIDs + ` JOIN ` + logTable(streamID) + ` m ON m.id = j.id
				WHERE b.stream_id = ? GROUP BY b.group_name, m.schema_version) x
			GROUP BY group_name, schema_version, state ORDER BY group_name, schema_version, state`
	},
	// Through the groups, so that each is a range of the (stream, group,
	// state) index holding its leases only, not a scan of the stream's
	// dead letters.
	HolderCounts: func(int64) string {
		return `SELECT group_name, holder, SUM(n), MAX(until) FROM (
			SELECT e.group_name, COALESCE(e.holder, '') holder, COUNT(*) n, MAX(e.due_at) until FROM consumer_group g
				JOIN delivery_exception e ON e.stream_id = g.stream_id AND e.group_name = g.name AND e.state = 'leased'
				WHERE g.stream_id = ? GROUP BY e.group_name, COALESCE(e.holder, '')
			UNION ALL SELECT b.group_name, COALESCE(b.holder, ''), JSON_LENGTH(b.ids), b.lease_until FROM delivery_batch b WHERE b.stream_id = ?) x
			GROUP BY group_name, holder ORDER BY group_name, holder`
	},
	// VALUES() is the spelling both MySQL and MariaDB accept.
	AddRowCounts: `ON DUPLICATE KEY UPDATE row_count = row_count + VALUES(row_count)`,
	MoveMarks:    `ON DUPLICATE KEY UPDATE counted_to = GREATEST(counted_to, VALUES(counted_to))`,
	// One upsert of a row only this client writes: nothing else locks it.
	UpsertClient: `ON DUPLICATE KEY UPDATE identity = VALUES(identity), host = VALUES(host), pid = VALUES(pid), library_version = VALUES(library_version),
		group_list = VALUES(group_list), started_at = VALUES(started_at), last_seen = VALUES(last_seen),
		heartbeat_every_us = VALUES(heartbeat_every_us), closed_at = VALUES(closed_at)`,
	// A read of the log goes along the (partition, id) index for one
	// partition, the primary key for all, named. msg_key is VARBINARY.
	Index: func(partition bool) string {
		if partition {
			return " FORCE INDEX (by_partition)"
		}
		return " FORCE INDEX (PRIMARY)"
	},
	KeyIs: func(key string) (string, any) { return "<=> ?", []byte(key) },
	// IGNORE turns a second sample of the bucket into nothing (0 rows
	// affected, where the no-op update of ON DUPLICATE KEY counts the row
	// the driver's clientFoundRows finds); the values it could otherwise
	// let through adjusted are ours: an id, a time written by ts and a JSON
	// document.
	InsertSample: `INSERT IGNORE INTO stream_sample (` + sqldb.SampleColumns + `) VALUES (?, ?, ?)`,
	LastID:       `SELECT LAST_INSERT_ID()`,
}

// logDDL is the CREATE TABLE statement of a stream log named table.
func logDDL(table string) string {
	return `CREATE TABLE IF NOT EXISTS ` + table + ` (
		id              BIGINT         NOT NULL AUTO_INCREMENT,
		` + "`partition`" + `     INT            NOT NULL,
		schema_version  INT            NOT NULL,
		schema_revision INT            NOT NULL DEFAULT 0,
		msg_key         VARBINARY(255) NULL,
		routing_key     VARCHAR(255)   NOT NULL,
		compaction_rank BIGINT         NOT NULL,
		payload         LONGTEXT       NOT NULL,
		headers         LONGTEXT       NULL CHECK (headers IS NULL OR JSON_VALID(headers)),
		produced_at     DATETIME(6)    NOT NULL,
		PRIMARY KEY (id),
		KEY by_partition (` + "`partition`" + `, id),
		KEY by_version (schema_version, schema_revision)
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`
}

// createLog creates a stream's log table. CREATE TABLE commits on its own,
// so it runs outside any transaction; IF NOT EXISTS makes it safe to repeat.
func (d *Driver) createLog(ctx context.Context, streamID int64) error {
	_, err := d.db.ExecContext(ctx, logDDL(logTable(streamID)))
	return err
}

// healLog re-creates the log table of a stream whose config exists but
// whose table does not (a process died between the two steps of
// CreateStream). It reports whether the caller should try again.
func (d *Driver) healLog(ctx context.Context, streamID int64, err error) bool {
	if mysqlErrno(err) != errNoSuchTable {
		return false
	}
	var n int
	if d.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM stream_config WHERE id = ?`, streamID).Scan(&n) != nil || n == 0 {
		return false
	}
	return d.createLog(ctx, streamID) == nil
}

// withLog runs op and, if it failed because the stream's log table is
// missing, re-creates the table and runs op once more.
func (d *Driver) withLog(ctx context.Context, streamID int64, op func() error) error {
	err := op()
	if err != nil && d.healLog(ctx, streamID, err) {
		err = op()
	}
	return err
}

// CreateStream implements driver.Driver.
func (d *Driver) CreateStream(ctx context.Context, p driver.CreateStreamParams) (driver.StreamConfig, error) {
	var cfg driver.StreamConfig
	err := d.inTx(ctx, nil, func(tx querier) error {
		var err error
		if cfg, err = store.CreateStream(ctx, sqldb.On(tx), p.Config, isUnique); err != nil {
			return err
		}
		return insertPartitions(ctx, tx, cfg, 0)
	})
	if err != nil {
		return cfg, err
	}
	// The log table is made after the transaction: DDL commits on its own.
	if err := d.createLog(ctx, cfg.ID); err != nil {
		// Leave nothing half-made when possible; a config row left behind
		// gets its table on first use (healLog).
		_ = d.DestroyStream(context.WithoutCancel(ctx), driver.DestroyStreamParams{StreamID: cfg.ID})
		return cfg, d.wrap(ctx, fmt.Errorf("create log table for stream %d: %w", cfg.ID, err), opRead)
	}
	return cfg, nil
}

// partitionChunk is how many partitions one statement adds.
const partitionChunk = 256

// insertPartitions writes the append lock rows of stream's partitions from
// from on, at its configuration generation.
func insertPartitions(ctx context.Context, tx querier, stream driver.StreamConfig, from int) error {
	for start := from; start < stream.Partitions; start += partitionChunk {
		end := min(start+partitionChunk, stream.Partitions)
		args := make([]any, 0, 3*(end-start))
		for p := start; p < end; p++ {
			args = append(args, stream.ID, p, stream.Generation)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO stream_partition (stream_id, `partition`, generation) VALUES "+sqldb.Repeated(end-start, "(?, ?, ?)", ", "), args...); err != nil {
			return err
		}
	}
	return nil
}

// LookupStream implements driver.Driver.
func (d *Driver) LookupStream(ctx context.Context, p driver.LookupStreamParams) (driver.StreamConfig, error) {
	if err := d.check(); err != nil {
		return driver.StreamConfig{}, err
	}
	c, err := store.Stream(ctx, sqldb.On(d.db), "name = ?", p.Name)
	return c, d.wrap(ctx, err, opRead)
}

// queryStream reads the config of the stream that where (with arg) names,
// or fails with ErrStreamNotFound.
func queryStream(ctx context.Context, q querier, where string, arg any) (driver.StreamConfig, error) {
	return store.Stream(ctx, sqldb.On(q), where, arg)
}

func lookupStreamByID(ctx context.Context, q querier, id int64) (driver.StreamConfig, error) {
	return store.Stream(ctx, sqldb.On(q), "id = ?", id)
}

// ListStreams implements driver.Driver.
func (d *Driver) ListStreams(ctx context.Context, p driver.ListStreamsParams) ([]driver.StreamConfig, error) {
	return sqldb.In(ctx, sqldb.Over(d.read), store.ListStreams, p)
}

// read runs fn, reads that need no transaction, on the pool.
func (d *Driver) read(ctx context.Context, fn func(querier) error) error {
	if err := d.check(); err != nil {
		return err
	}
	return d.wrap(ctx, fn(d.db), opRead)
}

// RenameStream implements driver.Driver.
func (d *Driver) RenameStream(ctx context.Context, p driver.RenameStreamParams) error {
	return d.autocommit(ctx, func(q querier) error { return sqldb.RenameStream(ctx, sqldb.On(q), p, isUnique) })
}

// DestroyStream implements driver.Driver. The config, partitions, groups,
// cursors, exceptions, batches and heads go in one transaction; the log table is
// dropped after it, because DROP TABLE commits on its own. Deleting the
// config row first takes the locks in the order maintenance takes them
// (config, then partitions); deleting the partition rows waits for appends
// in flight (bounded like an append's wait), and later appends find no
// stream.
func (d *Driver) DestroyStream(ctx context.Context, p driver.DestroyStreamParams) error {
	streamID := p.StreamID
	err := d.inTx(ctx, nil, func(tx querier) error {
		return sqldb.DeleteStream(ctx, sqldb.On(tx), streamID, func() error {
			_, err := d.lockPartitions(ctx, tx, streamID, nil, false, false)
			return err
		}, "stream_partition")
	})
	if err != nil {
		return err
	}
	_, err = d.db.ExecContext(ctx, `DROP TABLE IF EXISTS `+logTable(streamID))
	return d.wrap(ctx, err, opWrite)
}

// scanGroup reads sqldb.GroupColumns as MySQL stores them, plus extra
// destinations after them.
func scanGroup(r driver.RowScanner, extra ...any) (driver.GroupConfig, int64, error) {
	return sqldb.ScanGroup(r, utc, extra...)
}

// loadGroup reads a group's stored configuration with the locking clause
// lock ("" for a plain read, which at READ COMMITTED sees the latest
// commit), or fails with ErrGroupNotFound.
func loadGroup(ctx context.Context, q querier, streamID int64, name, lock string) (driver.GroupConfig, error) {
	return store.LoadGroup(ctx, sqldb.On(q), streamID, name, lock)
}

// RegisterGroup implements driver.Driver. The stream's row is read LOCK IN
// SHARE MODE: shared with other registrations; AlterStream locks the row
// exclusively, so a group is registered either before an alter (which then
// gives it cursors in the new partitions) or after it, with the new
// partition count. An existing group's row is locked FOR UPDATE while
// p.Update decides; a change then locks every cursor of the group (waiting
// for claims in flight, which hold cursor locks) before it is written, so
// that claims after it read the new configuration (C19).
func (d *Driver) RegisterGroup(ctx context.Context, p driver.RegisterGroupParams) (driver.GroupConfig, error) {
	locks := sqldb.GroupLocks{Stream: " LOCK IN SHARE MODE" + d.waitClause(), Group: " FOR UPDATE" + d.waitClause()}
	var current querier // the transaction of the attempt in flight, for latest
	run := func(ctx context.Context, fn func(sqldb.Runner) error) error {
		return d.withLog(ctx, p.Group.StreamID, func() error {
			return d.inTx(ctx, nil, func(tx querier) error { current = tx; return fn(sqldb.On(tx)) })
		})
	}
	latest := func(_ sqldb.Runner, stream driver.StreamConfig) ([]int64, error) {
		return d.latest(ctx, current, stream)
	}
	return store.RegisterGroupIn(ctx, run, p, locks, latest, isUnique)
}

// latest is the newest row of each partition, where a group that starts
// at the latest row puts its cursors. It waits for appends in flight (they
// hold their partitions), so that "the last row present" is exact per
// partition.
func (d *Driver) latest(ctx context.Context, tx querier, stream driver.StreamConfig) ([]int64, error) {
	if _, err := d.lockPartitions(ctx, tx, stream.ID, nil, true, false); err != nil {
		return nil, err
	}
	tops, err := readTops(ctx, tx, stream.ID, nil)
	start := make([]int64, stream.Partitions)
	for p := range start {
		start[p] = tops[p].newest
	}
	return start, err
}

// ListGroups implements driver.Driver.
func (d *Driver) ListGroups(ctx context.Context, p driver.ListGroupsParams) ([]driver.GroupConfig, error) {
	return sqldb.In(ctx, sqldb.Over(d.read), store.ListGroups, p)
}

// DeleteGroup implements driver.Driver.
func (d *Driver) DeleteGroup(ctx context.Context, p driver.DeleteGroupParams) error {
	return d.inTx(ctx, nil, func(tx querier) error { return sqldb.DeleteGroup(ctx, sqldb.On(tx), p) })
}

// loadGroups reads a stream's groups with their cursors; lock locks the
// group rows and then the cursors FOR UPDATE, in the order RegisterGroup
// takes them.
func (d *Driver) loadGroups(ctx context.Context, q querier, stream driver.StreamConfig, lock bool) ([]driver.GroupStats, error) {
	clause := ""
	if lock {
		clause = " FOR UPDATE" + d.waitClause()
	}
	return store.LoadGroups(ctx, sqldb.On(q), stream, clause)
}

// partitionTop is a partition's newest id (0 when it has no row) and its
// high-water mark.
type partitionTop struct{ newest, highWater int64 }

// readTops reads the tops of a stream's partitions parts (all when nil),
// one index dive per partition.
func readTops(ctx context.Context, q querier, streamID int64, parts []int) (map[int]partitionTop, error) {
	cond, args := "", []any{streamID}
	if parts != nil {
		cond, args = " AND p.`partition` IN ("+sqldb.Placeholders(len(parts))+")", append(args, sqldb.Args(parts)...)
	}
	out := map[int]partitionTop{}
	err := sqldb.EachRow(ctx, q, "SELECT p.`partition`, (SELECT m.id FROM "+logTable(streamID)+" m WHERE m.`partition` = p.`partition` ORDER BY m.id DESC LIMIT 1), p.high_water"+
		" FROM stream_partition p WHERE p.stream_id = ?"+cond+" ORDER BY p.`partition`", args, func(r *sql.Rows) error {
		var p int
		var newest sql.NullInt64
		var hw int64
		err := r.Scan(&p, &newest, &hw)
		out[p] = partitionTop{newest: newest.Int64, highWater: hw}
		return err
	})
	return out, err
}
