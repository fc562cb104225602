package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// scanStream reads sqldb.StreamColumns as MySQL stores them.
func scanStream(r driver.RowScanner) (driver.StreamConfig, error) { return sqldb.ScanStream(r, utc) }

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
	cfg := p.Config
	cfg.CreatedAt = cfg.CreatedAt.UTC().Truncate(time.Microsecond)
	err := d.inTx(ctx, nil, func(tx querier) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO stream_config (name, partitions, compacted, retention_max_age_us, retention_max_rows, retention_hard, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, cfg.Name, cfg.Partitions, cfg.Compacted, cfg.Retention.MaxAge.Microseconds(),
			cfg.Retention.MaxRows, cfg.Retention.Hard, ts(cfg.CreatedAt))
		if cfg.ID, err = sqldb.NewStreamID(res, err, isUnique(err)); err != nil {
			return err
		}
		return insertPartitions(ctx, tx, cfg, 0)
	})
	if err != nil {
		return cfg, err
	}
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
	c, err := queryStream(ctx, d.db, "name = ?", p.Name)
	return c, d.wrap(ctx, err, opRead)
}

// queryStream reads the config of the stream that where (with arg) names,
// or fails with ErrStreamNotFound.
func queryStream(ctx context.Context, q querier, where string, arg any) (driver.StreamConfig, error) {
	c, err := scanStream(q.QueryRowContext(ctx, `SELECT `+sqldb.StreamColumns+` FROM stream_config WHERE `+where, arg))
	if errors.Is(err, sql.ErrNoRows) {
		return c, driver.ErrStreamNotFound
	}
	return c, err
}

func lookupStreamByID(ctx context.Context, q querier, id int64) (driver.StreamConfig, error) {
	return queryStream(ctx, q, "id = ?", id)
}

// ListStreams implements driver.Driver.
func (d *Driver) ListStreams(ctx context.Context, _ driver.ListStreamsParams) ([]driver.StreamConfig, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	out, err := sqldb.Collect(ctx, d.db, `SELECT `+sqldb.StreamColumns+` FROM stream_config ORDER BY name`, nil, scanStream)
	return out, d.wrap(ctx, err, opRead)
}

// RenameStream implements driver.Driver.
func (d *Driver) RenameStream(ctx context.Context, p driver.RenameStreamParams) error {
	res, err := d.exec(ctx, `UPDATE stream_config SET name = ? WHERE id = ?`, p.NewName, p.StreamID)
	return sqldb.Renamed(res, err, isUnique(err))
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
		res, err := tx.ExecContext(ctx, `DELETE FROM stream_config WHERE id = ?`, streamID)
		if err := sqldb.Changed(res, err, driver.ErrStreamNotFound); err != nil {
			return err
		}
		if _, err := d.lockPartitions(ctx, tx, streamID, nil, false, false); err != nil {
			return err
		}
		return sqldb.ExecEach(ctx, tx, []string{"stream_partition", "consumer_group", "group_cursor", "delivery_exception", "delivery_batch", "compaction_head",
			"schema_revision", "schema_reader", "registry_setting", "row_count", "row_count_mark"}, deleteByStream, streamID)
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
	g, _, err := scanGroup(q.QueryRowContext(ctx, `SELECT `+sqldb.GroupColumns+` FROM consumer_group WHERE stream_id = ? AND name = ?`+lock, streamID, name))
	if errors.Is(err, sql.ErrNoRows) {
		return g, driver.GroupNotFound(name)
	}
	return g, err
}

// RegisterGroup implements driver.Driver. An existing group's row is locked
// FOR UPDATE while p.Update decides; a change then locks every cursor of the
// group (waiting for claims in flight, which hold cursor locks) before it is
// written, so that claims after it read the new configuration (C19).
func (d *Driver) RegisterGroup(ctx context.Context, p driver.RegisterGroupParams) (driver.GroupConfig, error) {
	cfg := p.Group
	cfg.CreatedAt = cfg.CreatedAt.UTC().Truncate(time.Microsecond)
	var out driver.GroupConfig
	register := func(tx querier) error {
		// Shared with other registrations; AlterStream locks the row
		// exclusively, so a group is registered either before an alter
		// (which then gives it cursors in the new partitions) or after it,
		// with the new partition count.
		stream, err := queryStream(ctx, tx, "id = ? LOCK IN SHARE MODE"+d.waitClause(), cfg.StreamID)
		if err != nil {
			return err
		}
		existing, err := loadGroup(ctx, tx, cfg.StreamID, cfg.Name, " FOR UPDATE"+d.waitClause())
		switch {
		case err == nil:
			out, err = d.updateGroup(ctx, tx, existing, p.Update)
		case errors.Is(err, driver.ErrGroupNotFound):
			out, err = d.createGroup(ctx, tx, stream, cfg)
		}
		return err
	}
	for attempt := 0; ; attempt++ {
		err := d.withLog(ctx, cfg.StreamID, func() error { return d.inTx(ctx, nil, register) })
		// Two processes registering the group at once: the loser finds the
		// winner's row on the next attempt.
		if isUnique(err) && attempt < 3 {
			continue
		}
		return out, err
	}
}

// updateGroup stores what update makes of an existing group's bindings and
// converter versions, locking every cursor of the group first when they
// change.
func (d *Driver) updateGroup(ctx context.Context, tx querier, existing driver.GroupConfig,
	update func(driver.GroupConfig) (driver.GroupConfig, error)) (driver.GroupConfig, error) {
	if update == nil {
		return existing, nil
	}
	next, err := update(existing)
	if err != nil {
		return existing, driver.CallerError{Err: err}
	}
	out := existing
	out.Bindings, out.ConvertsFrom = sqldb.NilIfEmpty(slices.Clone(next.Bindings)), sqldb.NilIfEmpty(slices.Clone(next.ConvertsFrom))
	if slices.Equal(out.Bindings, existing.Bindings) && slices.Equal(out.ConvertsFrom, existing.ConvertsFrom) {
		return existing, nil
	}
	if err := sqldb.EachRow(ctx, tx, "SELECT `partition` FROM group_cursor WHERE stream_id = ? AND group_name = ? ORDER BY `partition` FOR UPDATE"+d.waitClause(),
		[]any{out.StreamID, out.Name}, func(*sql.Rows) error { return nil }); err != nil {
		return existing, err
	}
	b, c, err := sqldb.EncodeGroupLists(out)
	if err != nil {
		return out, err
	}
	_, err = tx.ExecContext(ctx, `UPDATE consumer_group SET bindings = ?, converts_from = ? WHERE stream_id = ? AND name = ?`, b, c, out.StreamID, out.Name)
	return out, err
}

// createGroup writes a new group and its cursors: at 0, or at the newest
// row of each partition for StartLatest.
func (d *Driver) createGroup(ctx context.Context, tx querier, stream driver.StreamConfig, cfg driver.GroupConfig) (driver.GroupConfig, error) {
	bindings, convertsFrom, err := sqldb.EncodeGroupLists(cfg)
	if err != nil {
		return cfg, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO consumer_group (stream_id, name, schema_version, all_versions, bindings, converts_from, start_position, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, cfg.StreamID, cfg.Name, cfg.SchemaVersion, cfg.AllVersions, bindings, convertsFrom, int(cfg.Start), ts(cfg.CreatedAt)); err != nil {
		return cfg, err
	}
	start := make([]int64, stream.Partitions)
	if cfg.Start == driver.StartLatest {
		// Wait for appends in flight (they hold their partitions), so
		// that "the last row present" is exact per partition.
		if _, err := d.lockPartitions(ctx, tx, cfg.StreamID, nil, true, false); err != nil {
			return cfg, err
		}
		tops, err := readTops(ctx, tx, cfg.StreamID, nil)
		if err != nil {
			return cfg, err
		}
		for p := range start {
			start[p] = tops[p].newest
		}
	}
	args := make([]any, 0, 4*len(start))
	for p, pos := range start {
		args = append(args, cfg.StreamID, cfg.Name, p, pos)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO group_cursor (stream_id, group_name, `partition`, position) VALUES "+sqldb.Repeated(len(start), "(?, ?, ?, ?)", ", "), args...); err != nil {
		return cfg, err
	}
	cfg.Bindings, cfg.ConvertsFrom = sqldb.NilIfEmpty(slices.Clone(cfg.Bindings)), sqldb.NilIfEmpty(slices.Clone(cfg.ConvertsFrom))
	return cfg, nil
}

// ListGroups implements driver.Driver.
func (d *Driver) ListGroups(ctx context.Context, p driver.ListGroupsParams) ([]driver.GroupConfig, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	out, err := sqldb.Collect(ctx, d.db, `SELECT `+sqldb.GroupColumns+` FROM consumer_group WHERE stream_id = ? ORDER BY name`, []any{p.StreamID},
		func(r driver.RowScanner) (driver.GroupConfig, error) { g, _, err := scanGroup(r); return g, err })
	return out, d.wrap(ctx, err, opRead)
}

// DeleteGroup implements driver.Driver.
func (d *Driver) DeleteGroup(ctx context.Context, p driver.DeleteGroupParams) error {
	streamID, group := p.StreamID, p.Group
	return d.inTx(ctx, nil, func(tx querier) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM consumer_group WHERE stream_id = ? AND name = ?`, streamID, group)
		if err := sqldb.Changed(res, err, driver.ErrGroupNotFound); err != nil {
			return err
		}
		return sqldb.ExecEach(ctx, tx, []string{"group_cursor", "delivery_exception", "delivery_batch", "schema_reader"}, deleteByGroup, streamID, group)
	})
}

// loadGroups reads a stream's groups with their cursors; lock locks the
// group rows and then the cursors FOR UPDATE, in the order RegisterGroup
// takes them.
func (d *Driver) loadGroups(ctx context.Context, q querier, stream driver.StreamConfig, lock bool) ([]driver.GroupStats, error) {
	var groups []driver.GroupStats
	index := map[string]int{}
	query := `SELECT ` + sqldb.GroupColumns + ` FROM consumer_group WHERE stream_id = ? ORDER BY name`
	if lock {
		query += ` FOR UPDATE` + d.waitClause()
	}
	if err := sqldb.EachRow(ctx, q, query, []any{stream.ID}, func(r *sql.Rows) error {
		g, removed, err := scanGroup(r)
		if err != nil {
			return err
		}
		index[g.Name] = len(groups)
		groups = append(groups, driver.GroupStats{GroupConfig: g, RemovedUnread: removed, Cursors: make([]int64, stream.Partitions)})
		return nil
	}); err != nil {
		return nil, err
	}
	query = "SELECT group_name, `partition`, position FROM group_cursor WHERE stream_id = ? ORDER BY group_name, `partition`"
	if lock {
		query += " FOR UPDATE" + d.waitClause()
	}
	err := sqldb.EachRow(ctx, q, query, []any{stream.ID}, func(r *sql.Rows) error {
		var name string
		var p int
		var pos int64
		if err := r.Scan(&name, &p, &pos); err != nil {
			return err
		}
		if i, ok := index[name]; ok && p >= 0 && p < stream.Partitions {
			groups[i].Cursors[p] = pos
		}
		return nil
	})
	return groups, err
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

// deleteByStream and deleteByGroup delete a stream's or a group's rows from
// a table (sqldb.ExecEach).
func deleteByStream(table string) string { return `DELETE FROM ` + table + ` WHERE stream_id = ?` }

func deleteByGroup(table string) string {
	return `DELETE FROM ` + table + ` WHERE stream_id = ? AND group_name = ?`
}
