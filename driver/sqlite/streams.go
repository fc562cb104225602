package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// scanStream reads sqldb.StreamColumns as SQLite stores them.
func scanStream(r driver.RowScanner) (driver.StreamConfig, error) {
	return sqldb.ScanStream(r, fromMicros)
}

// scanGroup reads sqldb.GroupColumns as SQLite stores them.
func scanGroup(r driver.RowScanner) (driver.GroupConfig, error) {
	g, _, err := sqldb.ScanGroup(r, fromMicros)
	return g, err
}

// CreateStream implements driver.Driver.
func (d *Driver) CreateStream(ctx context.Context, p driver.CreateStreamParams) (driver.StreamConfig, error) {
	cfg := p.Config
	err := d.inTx(ctx, nil, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO stream_config (name, partitions, compacted, retention_max_age_us, retention_max_rows, retention_hard, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, cfg.Name, cfg.Partitions, cfg.Compacted, cfg.Retention.MaxAge.Microseconds(),
			cfg.Retention.MaxRows, cfg.Retention.Hard, micros(cfg.CreatedAt))
		if cfg.ID, err = sqldb.NewStreamID(res, err, isUnique(err)); err != nil {
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
	cfg.CreatedAt = fromMicros(micros(cfg.CreatedAt))
	return cfg, err
}

// LookupStream implements driver.Driver.
func (d *Driver) LookupStream(ctx context.Context, p driver.LookupStreamParams) (driver.StreamConfig, error) {
	if err := d.check(); err != nil {
		return driver.StreamConfig{}, err
	}
	c, err := sqldb.ScanStream(d.read.QueryRowContext(ctx, `SELECT `+sqldb.StreamColumns+` FROM stream_config WHERE name = ?`, p.Name), fromMicros)
	if errors.Is(err, sql.ErrNoRows) {
		return c, driver.ErrStreamNotFound
	}
	return c, d.wrap(err)
}

// lookupStreamByID reads a stream's configuration, or fails with
// ErrStreamNotFound.
func lookupStreamByID(ctx context.Context, tx querier, id int64) (driver.StreamConfig, error) {
	c, err := sqldb.ScanStream(tx.QueryRowContext(ctx, `SELECT `+sqldb.StreamColumns+` FROM stream_config WHERE id = ?`, id), fromMicros)
	if errors.Is(err, sql.ErrNoRows) {
		return c, driver.ErrStreamNotFound
	}
	return c, err
}

// ListStreams implements driver.Driver.
func (d *Driver) ListStreams(ctx context.Context, _ driver.ListStreamsParams) ([]driver.StreamConfig, error) {
	var out []driver.StreamConfig
	err := d.readTx(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = sqldb.Collect(ctx, tx, `SELECT `+sqldb.StreamColumns+` FROM stream_config ORDER BY name`, nil, scanStream)
		return err
	})
	return out, err
}

// RenameStream implements driver.Driver.
func (d *Driver) RenameStream(ctx context.Context, p driver.RenameStreamParams) error {
	return d.inTx(ctx, nil, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE stream_config SET name = ? WHERE id = ?`, p.NewName, p.StreamID)
		return sqldb.Renamed(res, err, isUnique(err))
	})
}

// DestroyStream implements driver.Driver.
func (d *Driver) DestroyStream(ctx context.Context, p driver.DestroyStreamParams) error {
	streamID := p.StreamID
	return d.inTx(ctx, nil, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM stream_config WHERE id = ?`, streamID)
		if err := sqldb.Changed(res, err, driver.ErrStreamNotFound); err != nil {
			return err
		}
		if err := sqldb.ExecEach(ctx, tx, []string{"consumer_group", "group_cursor", "delivery_exception", "delivery_batch", "compaction_head",
			"schema_revision", "schema_reader", "registry_setting", "partition_mark", "row_count", "row_count_mark"}, deleteByStream, streamID); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DROP TABLE IF EXISTS `+logTable(streamID))
		return err
	})
}

// loadGroup reads a group's stored configuration, or fails with
// ErrGroupNotFound.
func loadGroup(ctx context.Context, q querier, streamID int64, name string) (driver.GroupConfig, error) {
	g, _, err := sqldb.ScanGroup(q.QueryRowContext(ctx, `SELECT `+sqldb.GroupColumns+` FROM consumer_group WHERE stream_id = ? AND name = ?`, streamID, name), fromMicros)
	if errors.Is(err, sql.ErrNoRows) {
		return g, driver.GroupNotFound(name)
	}
	return g, err
}

// RegisterGroup implements driver.Driver. SQLite's single writer orders it
// against claims.
func (d *Driver) RegisterGroup(ctx context.Context, p driver.RegisterGroupParams) (driver.GroupConfig, error) {
	cfg := p.Group
	var out driver.GroupConfig
	err := d.inTx(ctx, nil, func(tx *sql.Tx) error {
		stream, err := lookupStreamByID(ctx, tx, cfg.StreamID)
		if err != nil {
			return err
		}
		existing, err := loadGroup(ctx, tx, cfg.StreamID, cfg.Name)
		if err == nil {
			out = existing
			if p.Update == nil {
				return nil
			}
			next, err := p.Update(existing)
			if err != nil {
				return driver.CallerError{Err: err}
			}
			out.Bindings, out.ConvertsFrom = sqldb.NilIfEmpty(next.Bindings), sqldb.NilIfEmpty(next.ConvertsFrom)
			bindings, convertsFrom, err := sqldb.EncodeGroupLists(out)
			if err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `UPDATE consumer_group SET bindings = ?, converts_from = ? WHERE stream_id = ? AND name = ?`,
				bindings, convertsFrom, cfg.StreamID, cfg.Name)
			return err
		}
		if !errors.Is(err, driver.ErrGroupNotFound) {
			return err
		}
		bindings, convertsFrom, err := sqldb.EncodeGroupLists(cfg)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO consumer_group (stream_id, name, schema_version, all_versions, bindings, converts_from, start_position, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, cfg.StreamID, cfg.Name, cfg.SchemaVersion, cfg.AllVersions, bindings, convertsFrom, cfg.Start, micros(cfg.CreatedAt)); err != nil {
			return err
		}
		var start int64
		if cfg.Start == driver.StartLatest {
			if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0) FROM `+logTable(cfg.StreamID)).Scan(&start); err != nil {
				return err
			}
		}
		for part := range stream.Partitions {
			if _, err := tx.ExecContext(ctx, `INSERT INTO group_cursor (stream_id, group_name, partition, position) VALUES (?, ?, ?, ?)`,
				cfg.StreamID, cfg.Name, part, start); err != nil {
				return err
			}
		}
		out = cfg
		out.Bindings, out.ConvertsFrom = sqldb.NilIfEmpty(cfg.Bindings), sqldb.NilIfEmpty(cfg.ConvertsFrom)
		out.CreatedAt = fromMicros(micros(cfg.CreatedAt))
		return nil
	})
	return out, err
}

// ListGroups implements driver.Driver.
func (d *Driver) ListGroups(ctx context.Context, p driver.ListGroupsParams) ([]driver.GroupConfig, error) {
	var out []driver.GroupConfig
	err := d.readTx(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = sqldb.Collect(ctx, tx, `SELECT `+sqldb.GroupColumns+` FROM consumer_group WHERE stream_id = ? ORDER BY name`, []any{p.StreamID}, scanGroup)
		return err
	})
	return out, err
}

// DeleteGroup implements driver.Driver.
func (d *Driver) DeleteGroup(ctx context.Context, p driver.DeleteGroupParams) error {
	streamID, group := p.StreamID, p.Group
	return d.inTx(ctx, nil, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM consumer_group WHERE stream_id = ? AND name = ?`, streamID, group)
		if err := sqldb.Changed(res, err, driver.ErrGroupNotFound); err != nil {
			return err
		}
		return sqldb.ExecEach(ctx, tx, []string{"group_cursor", "delivery_exception", "delivery_batch", "schema_reader"}, deleteByGroup, streamID, group)
	})
}

// SetCursors implements driver.Driver. SQLite's single writer orders it
// against claims.
func (d *Driver) SetCursors(ctx context.Context, p driver.SetCursorsParams) error {
	return d.inTx(ctx, nil, func(tx *sql.Tx) error {
		if _, err := loadGroup(ctx, tx, p.StreamID, p.Group); err != nil {
			return err
		}
		for part, pos := range p.Positions {
			// Batch members must stay at or below the cursor: the leases of
			// a partition whose cursor moves become exception rows, which
			// the main claim passes over.
			if err := materializeAll(ctx, tx, p.StreamID, `SELECT `+batchColumns+` FROM delivery_batch WHERE stream_id = ? AND group_name = ? AND partition = ?`,
				p.StreamID, p.Group, part); err != nil {
				return err
			}
			res, err := tx.ExecContext(ctx, `UPDATE group_cursor SET position = ? WHERE stream_id = ? AND group_name = ? AND partition = ?`,
				pos, p.StreamID, p.Group, part)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n != 1 {
				return fmt.Errorf("group %q has no partition %d: %w", p.Group, part, driver.ErrGroupNotFound)
			}
		}
		return nil
	})
}

// ReadRows implements driver.Driver.
func (d *Driver) ReadRows(ctx context.Context, p driver.ReadRowsParams) (driver.ReadRowsResult, error) {
	var res driver.ReadRowsResult
	maxScan := p.MaxScan
	if maxScan <= 0 {
		maxScan = p.Limit
	}
	err := d.readTx(ctx, func(tx *sql.Tx) error {
		res = driver.ReadRowsResult{}
		where, args := []string{"1"}, []any{}
		if p.Partition >= 0 {
			where, args = append(where, "m.partition = ?"), append(args, p.Partition)
		}
		if p.AfterID > 0 {
			where, args = append(where, "m.id > ?"), append(args, p.AfterID)
		}
		if p.BeforeID > 0 {
			where, args = append(where, "m.id < ?"), append(args, p.BeforeID)
		}
		order := "ASC"
		if p.Descending {
			order = "DESC"
		}
		// The scan reads maxScan rows at most, then filters by version and
		// key, so that a filter matching little stays bounded.
		inner := `SELECT ` + rowColumns + ` FROM ` + logTable(p.StreamID) + ` m WHERE ` + strings.Join(where, " AND ") +
			` ORDER BY m.id ` + order + ` LIMIT ?`
		scanned := 0
		err := sqldb.EachRow(ctx, tx, inner, append(args, maxScan), func(r *sql.Rows) error {
			row, err := scanRow(r)
			if err != nil {
				return err
			}
			scanned++
			res.Last = row.ID
			if len(res.Rows) >= p.Limit {
				return errStopScan
			}
			if (p.Versions == nil || slices.Contains(p.Versions, row.SchemaVersion)) && (!p.HasKey || (row.HasKey && row.Key == p.Key)) {
				res.Rows = append(res.Rows, row)
			}
			return nil
		})
		if errors.Is(err, errStopScan) {
			res.Last = res.Rows[len(res.Rows)-1].ID
			return nil
		}
		res.Done = err == nil && scanned < maxScan
		return err
	})
	return res, err
}

var errStopScan = errors.New("enough rows")

// deleteByStream and deleteByGroup delete a stream's or a group's rows from
// a table (sqldb.ExecEach).
func deleteByStream(table string) string { return `DELETE FROM ` + table + ` WHERE stream_id = ?` }

func deleteByGroup(table string) string {
	return `DELETE FROM ` + table + ` WHERE stream_id = ? AND group_name = ?`
}
