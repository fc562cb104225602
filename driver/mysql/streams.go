package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

const streamColumns = `id, name, partitions, compacted, retention_max_age_us, retention_max_rows, retention_hard, created_at`

type scanner interface{ Scan(...any) error }

func scanStream(r scanner) (driver.StreamConfig, error) {
	var c driver.StreamConfig
	var maxAge int64
	var created time.Time
	err := r.Scan(&c.ID, &c.Name, &c.Partitions, &c.Compacted, &maxAge, &c.Retention.MaxRows, &c.Retention.Hard, &created)
	c.Retention.MaxAge = time.Duration(maxAge) * time.Microsecond
	c.CreatedAt = utc(created)
	return c, err
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
		payload         LONGTEXT       NOT NULL CHECK (JSON_VALID(payload)),
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
func (d *Driver) CreateStream(ctx context.Context, cfg driver.StreamConfig) (driver.StreamConfig, error) {
	cfg.CreatedAt = cfg.CreatedAt.UTC().Truncate(time.Microsecond)
	err := d.inTx(ctx, nil, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO stream_config (name, partitions, compacted, retention_max_age_us, retention_max_rows, retention_hard, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, cfg.Name, cfg.Partitions, cfg.Compacted, cfg.Retention.MaxAge.Microseconds(),
			cfg.Retention.MaxRows, cfg.Retention.Hard, ts(cfg.CreatedAt))
		if isUnique(err) {
			return driver.ErrStreamExists
		}
		if err != nil {
			return err
		}
		if cfg.ID, err = res.LastInsertId(); err != nil {
			return err
		}
		const chunk = 256
		for start := 0; start < cfg.Partitions; start += chunk {
			end := min(start+chunk, cfg.Partitions)
			var sb strings.Builder
			sb.WriteString("INSERT INTO stream_partition (stream_id, `partition`) VALUES ")
			args := make([]any, 0, 2*(end-start))
			for p := start; p < end; p++ {
				if p > start {
					sb.WriteString(", ")
				}
				sb.WriteString("(?, ?)")
				args = append(args, cfg.ID, p)
			}
			if _, err := tx.ExecContext(ctx, sb.String(), args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return cfg, err
	}
	if err := d.createLog(ctx, cfg.ID); err != nil {
		// Leave nothing half-made when possible; a config row left behind
		// gets its table on first use (healLog).
		_ = d.DestroyStream(context.WithoutCancel(ctx), cfg.ID)
		return cfg, fmt.Errorf("create log table for stream %d: %w", cfg.ID, err)
	}
	return cfg, nil
}

// LookupStream implements driver.Driver.
func (d *Driver) LookupStream(ctx context.Context, name string) (driver.StreamConfig, error) {
	if err := d.check(); err != nil {
		return driver.StreamConfig{}, err
	}
	c, err := scanStream(d.db.QueryRowContext(ctx, `SELECT `+streamColumns+` FROM stream_config WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return c, driver.ErrStreamNotFound
	}
	return c, err
}

func lookupStreamByID(ctx context.Context, q querier, id int64) (driver.StreamConfig, error) {
	c, err := scanStream(q.QueryRowContext(ctx, `SELECT `+streamColumns+` FROM stream_config WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return c, driver.ErrStreamNotFound
	}
	return c, err
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// ListStreams implements driver.Driver.
func (d *Driver) ListStreams(ctx context.Context) ([]driver.StreamConfig, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	var out []driver.StreamConfig
	err := eachRow(ctx, d.db, `SELECT `+streamColumns+` FROM stream_config ORDER BY name`, nil, func(r *sql.Rows) error {
		c, err := scanStream(r)
		out = append(out, c)
		return err
	})
	return out, err
}

// RenameStream implements driver.Driver.
func (d *Driver) RenameStream(ctx context.Context, streamID int64, newName string) error {
	res, err := d.exec(ctx, `UPDATE stream_config SET name = ? WHERE id = ?`, newName, streamID)
	if isUnique(err) {
		return driver.ErrStreamExists
	}
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return driver.ErrStreamNotFound
	}
	return nil
}

// DestroyStream implements driver.Driver. The config, partitions, groups,
// cursors, exceptions and heads go in one transaction (deleting the
// partition rows waits for appends in flight, and later appends find no
// stream); the log table is dropped after it, because DROP TABLE commits on
// its own.
func (d *Driver) DestroyStream(ctx context.Context, streamID int64) error {
	err := d.inTx(ctx, nil, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM stream_partition WHERE stream_id = ?`, streamID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM stream_config WHERE id = ?`, streamID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return driver.ErrStreamNotFound
		}
		for _, table := range []string{"consumer_group", "group_cursor", "delivery_exception", "compaction_head",
			"schema_revision", "schema_reader", "registry_setting"} {
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE stream_id = ?`, streamID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	_, err = d.db.ExecContext(ctx, `DROP TABLE IF EXISTS `+logTable(streamID))
	return err
}

const groupColumns = `stream_id, name, schema_version, all_versions, bindings, converts_from, start_position, created_at, removed_unread`

func scanGroup(r scanner) (driver.GroupConfig, int64, error) {
	var g driver.GroupConfig
	var bindings, convertsFrom string
	var created time.Time
	var removed int64
	err := r.Scan(&g.StreamID, &g.Name, &g.SchemaVersion, &g.AllVersions, &bindings, &convertsFrom, &g.Start, &created, &removed)
	if err != nil {
		return g, 0, err
	}
	g.CreatedAt = utc(created)
	if err := json.Unmarshal([]byte(bindings), &g.Bindings); err != nil {
		return g, 0, fmt.Errorf("group %q: stored bindings: %w", g.Name, err)
	}
	if err := json.Unmarshal([]byte(convertsFrom), &g.ConvertsFrom); err != nil {
		return g, 0, fmt.Errorf("group %q: stored converter versions: %w", g.Name, err)
	}
	return g, removed, nil
}

// RegisterGroup implements driver.Driver.
func (d *Driver) RegisterGroup(ctx context.Context, cfg driver.GroupConfig) (driver.GroupConfig, error) {
	bindings, err := json.Marshal(nonNil(cfg.Bindings))
	if err != nil {
		return cfg, err
	}
	convertsFrom, err := json.Marshal(nonNil(cfg.ConvertsFrom))
	if err != nil {
		return cfg, err
	}
	cfg.CreatedAt = cfg.CreatedAt.UTC().Truncate(time.Microsecond)
	var out driver.GroupConfig
	register := func(tx *sql.Tx) error {
		stream, err := lookupStreamByID(ctx, tx, cfg.StreamID)
		if err != nil {
			return err
		}
		existing, _, err := scanGroup(tx.QueryRowContext(ctx, `SELECT `+groupColumns+` FROM consumer_group WHERE stream_id = ? AND name = ? FOR UPDATE`, cfg.StreamID, cfg.Name))
		if err == nil {
			out = existing
			if existing.SchemaVersion != cfg.SchemaVersion || existing.AllVersions != cfg.AllVersions {
				return nil // the caller refuses the registration; change nothing
			}
			out.Bindings, out.ConvertsFrom = cfg.Bindings, cfg.ConvertsFrom
			_, err = tx.ExecContext(ctx, `UPDATE consumer_group SET bindings = ?, converts_from = ? WHERE stream_id = ? AND name = ?`,
				string(bindings), string(convertsFrom), cfg.StreamID, cfg.Name)
			return err
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO consumer_group (stream_id, name, schema_version, all_versions, bindings, converts_from, start_position, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, cfg.StreamID, cfg.Name, cfg.SchemaVersion, cfg.AllVersions, string(bindings), string(convertsFrom), int(cfg.Start), ts(cfg.CreatedAt)); err != nil {
			return err
		}
		start := make([]int64, stream.Partitions)
		if cfg.Start == driver.StartLatest {
			// Wait for appends in flight (they hold their partitions), so
			// that "the last row present" is exact per partition.
			if err := eachRow(ctx, tx, "SELECT `partition` FROM stream_partition WHERE stream_id = ? ORDER BY `partition` LOCK IN SHARE MODE",
				[]any{cfg.StreamID}, func(*sql.Rows) error { return nil }); err != nil {
				return err
			}
			if err := eachRow(ctx, tx, "SELECT `partition`, MAX(id) FROM "+logTable(cfg.StreamID)+" GROUP BY `partition`", nil, func(r *sql.Rows) error {
				var p int
				var id int64
				if err := r.Scan(&p, &id); err != nil {
					return err
				}
				if p >= 0 && p < len(start) {
					start[p] = id
				}
				return nil
			}); err != nil {
				return err
			}
		}
		var sb strings.Builder
		sb.WriteString("INSERT INTO group_cursor (stream_id, group_name, `partition`, position) VALUES ")
		args := make([]any, 0, 4*len(start))
		for p, pos := range start {
			if p > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString("(?, ?, ?, ?)")
			args = append(args, cfg.StreamID, cfg.Name, p, pos)
		}
		if _, err := tx.ExecContext(ctx, sb.String(), args...); err != nil {
			return err
		}
		out = cfg
		return nil
	}
	for attempt := 0; ; attempt++ {
		err = d.withLog(ctx, cfg.StreamID, func() error { return d.inTx(ctx, nil, register) })
		// Two processes registering the group at once: the loser finds the
		// winner's row on the next attempt.
		if isUnique(err) && attempt < 3 {
			continue
		}
		return out, err
	}
}

// ListGroups implements driver.Driver.
func (d *Driver) ListGroups(ctx context.Context, streamID int64) ([]driver.GroupConfig, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	var out []driver.GroupConfig
	err := eachRow(ctx, d.db, `SELECT `+groupColumns+` FROM consumer_group WHERE stream_id = ? ORDER BY name`, []any{streamID}, func(r *sql.Rows) error {
		g, _, err := scanGroup(r)
		out = append(out, g)
		return err
	})
	return out, err
}

func eachRow(ctx context.Context, q querier, query string, args []any, fn func(*sql.Rows) error) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// nonNil makes a nil slice encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// DeleteGroup implements driver.Driver.
func (d *Driver) DeleteGroup(ctx context.Context, streamID int64, group string) error {
	return d.inTx(ctx, nil, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM consumer_group WHERE stream_id = ? AND name = ?`, streamID, group)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return driver.ErrGroupNotFound
		}
		for _, table := range []string{"group_cursor", "delivery_exception", "schema_reader"} {
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE stream_id = ? AND group_name = ?`, streamID, group); err != nil {
				return err
			}
		}
		return nil
	})
}
