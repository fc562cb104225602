package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

const streamColumns = `id, name, partitions, compacted, retention_max_age_us, retention_max_rows, retention_hard, created_at, generation`

func scanStream(r pgx.Row) (driver.StreamConfig, error) {
	var c driver.StreamConfig
	var maxAge int64
	var partitions int32
	err := r.Scan(&c.ID, &c.Name, &partitions, &c.Compacted, &maxAge, &c.Retention.MaxRows, &c.Retention.Hard, &c.CreatedAt, &c.Generation)
	c.Partitions = int(partitions)
	c.Retention.MaxAge = time.Duration(maxAge) * time.Microsecond
	c.CreatedAt = c.CreatedAt.UTC()
	return c, err
}

// CreateStream implements driver.Driver.
func (d *Driver) CreateStream(ctx context.Context, p driver.CreateStreamParams) (driver.StreamConfig, error) {
	cfg := p.Config
	cfg.CreatedAt = ts(cfg.CreatedAt)
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `INSERT INTO stream_config (name, partitions, compacted, retention_max_age_us, retention_max_rows, retention_hard, created_at)
			VALUES ($1::text, $2::integer, $3::boolean, $4::bigint, $5::bigint, $6::boolean, $7::timestamptz) RETURNING id`,
			cfg.Name, int32(cfg.Partitions), cfg.Compacted, cfg.Retention.MaxAge.Microseconds(), cfg.Retention.MaxRows, cfg.Retention.Hard, cfg.CreatedAt).Scan(&cfg.ID)
		if isUnique(err) {
			return driver.ErrStreamExists
		}
		if err != nil {
			return err
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
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE INDEX `+table+`_partition ON `+table+` (partition, id)`); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO stream_partition (stream_id, partition) SELECT $1::bigint, p FROM generate_series(0, $2::integer - 1) p`,
			cfg.ID, int32(cfg.Partitions))
		return err
	})
	return cfg, err
}

// LookupStream implements driver.Driver.
func (d *Driver) LookupStream(ctx context.Context, p driver.LookupStreamParams) (driver.StreamConfig, error) {
	var c driver.StreamConfig
	err := d.read(ctx, func() error {
		var err error
		c, err = scanStream(d.pool.QueryRow(ctx, `SELECT `+streamColumns+` FROM stream_config WHERE name = $1::text`, p.Name))
		if errors.Is(err, pgx.ErrNoRows) {
			return driver.ErrStreamNotFound
		}
		return err
	})
	return c, err
}

func lookupStreamByID(ctx context.Context, tx querier, id int64) (driver.StreamConfig, error) {
	c, err := scanStream(tx.QueryRow(ctx, `SELECT `+streamColumns+` FROM stream_config WHERE id = $1::bigint`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return c, driver.ErrStreamNotFound
	}
	return c, err
}

// ListStreams implements driver.Driver.
func (d *Driver) ListStreams(ctx context.Context, _ driver.ListStreamsParams) ([]driver.StreamConfig, error) {
	var out []driver.StreamConfig
	err := d.read(ctx, func() error {
		rows, err := d.pool.Query(ctx, `SELECT `+streamColumns+` FROM stream_config ORDER BY name`)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.StreamConfig, error) { return scanStream(r) })
		return err
	})
	return out, err
}

// RenameStream implements driver.Driver.
func (d *Driver) RenameStream(ctx context.Context, p driver.RenameStreamParams) error {
	return d.write(ctx, func(c *pgxpool.Conn) error {
		tag, err := c.Exec(ctx, `UPDATE stream_config SET name = $1::text WHERE id = $2::bigint`, p.NewName, p.StreamID)
		if isUnique(err) {
			return driver.ErrStreamExists
		}
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return driver.ErrStreamNotFound
		}
		return nil
	})
}

// DestroyStream implements driver.Driver.
func (d *Driver) DestroyStream(ctx context.Context, p driver.DestroyStreamParams) error {
	streamID := p.StreamID
	return d.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM stream_config WHERE id = $1::bigint`, streamID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return driver.ErrStreamNotFound
		}
		for _, table := range []string{"stream_partition", "consumer_group", "group_cursor", "delivery_exception", "delivery_batch", "compaction_head",
			"schema_revision", "schema_reader", "registry_setting", "row_count", "row_count_mark"} {
			if _, err := tx.Exec(ctx, `DELETE FROM `+table+` WHERE stream_id = $1::bigint`, streamID); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `DROP TABLE IF EXISTS `+logTable(streamID))
		return err
	})
}

const groupColumns = `stream_id, name, schema_version, all_versions, bindings, converts_from, start_position, created_at, removed_unread, paused_at`

// groupColumnsOf is groupColumns qualified by a table alias.
func groupColumnsOf(alias string) string {
	cols := strings.Split(groupColumns, ", ")
	for i, c := range cols {
		cols[i] = alias + "." + c
	}
	return strings.Join(cols, ", ")
}

// scanGroup reads groupColumns, plus extra destinations.
func scanGroup(r pgx.Row, extra ...any) (driver.GroupConfig, int64, error) {
	var g driver.GroupConfig
	var bindings, convertsFrom []byte
	var version, start int32
	var removed int64
	var paused *time.Time // NULL while the group runs
	err := r.Scan(append([]any{&g.StreamID, &g.Name, &version, &g.AllVersions, &bindings, &convertsFrom, &start, &g.CreatedAt, &removed, &paused}, extra...)...)
	if err != nil {
		return g, 0, err
	}
	if paused != nil {
		g.PausedAt = paused.UTC()
	}
	g.SchemaVersion, g.Start, g.CreatedAt = int(version), driver.StartPosition(start), g.CreatedAt.UTC()
	if err := json.Unmarshal(bindings, &g.Bindings); err != nil {
		return g, 0, fmt.Errorf("group %q: stored bindings: %w", g.Name, err)
	}
	if len(g.Bindings) == 0 {
		g.Bindings = nil
	}
	if err := json.Unmarshal(convertsFrom, &g.ConvertsFrom); err != nil {
		return g, 0, fmt.Errorf("group %q: stored converter versions: %w", g.Name, err)
	}
	if len(g.ConvertsFrom) == 0 {
		g.ConvertsFrom = nil
	}
	return g, removed, nil
}

// encodeList stores a list of bindings or versions as a JSON array, []
// when empty. Strings and integers always encode.
func encodeList[T ~string | ~int](list []T) string {
	if len(list) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(list)
	return string(b)
}

// groupQuery reads a group (alias g, $1 its stream, $2 its name) with
// more columns after its own; lock is "" or a locking clause.
func groupQuery(more, lock string) string {
	return `SELECT ` + groupColumnsOf("g") + more + ` FROM consumer_group g WHERE g.stream_id = $1::bigint AND g.name = $2::text` + lock
}

// loadGroup reads a group's stored configuration, or fails with
// ErrGroupNotFound. lock is "" or a locking clause.
func loadGroup(ctx context.Context, q querier, streamID int64, name, lock string) (driver.GroupConfig, error) {
	return scanLoadedGroup(q.QueryRow(ctx, groupQuery("", lock), streamID, name), name)
}

// loadGroupAnd reads a group with more columns (with parameters from $3 on
// in args) into extra destinations.
func loadGroupAnd(ctx context.Context, q querier, streamID int64, name, more string, args []any, extra ...any) (driver.GroupConfig, error) {
	return scanLoadedGroup(q.QueryRow(ctx, groupQuery(more, ""), append([]any{streamID, name}, args...)...), name, extra...)
}

// scanLoadedGroup reads a group's columns, then extra, or fails with
// ErrGroupNotFound.
func scanLoadedGroup(r pgx.Row, name string, extra ...any) (driver.GroupConfig, error) {
	g, _, err := scanGroup(r, extra...)
	if errors.Is(err, pgx.ErrNoRows) {
		return g, driver.GroupNotFound(name)
	}
	return g, err
}

// RegisterGroup implements driver.Driver. An existing group's row is locked
// while Update runs; a change to it then locks every cursor of the group,
// waiting for the claims in flight (which hold cursor locks and read the
// group after taking one), so that no claim commits with the old
// configuration after the change and every later claim sees it (C19).
func (d *Driver) RegisterGroup(ctx context.Context, p driver.RegisterGroupParams) (driver.GroupConfig, error) {
	cfg := p.Group
	cfg.CreatedAt = ts(cfg.CreatedAt)
	cfg.Bindings, cfg.ConvertsFrom = nilIfEmpty(cfg.Bindings), nilIfEmpty(cfg.ConvertsFrom)
	bindings, convertsFrom := encodeList(cfg.Bindings), encodeList(cfg.ConvertsFrom)
	var out driver.GroupConfig
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		// KEY SHARE serializes a registration with AlterStream (FOR UPDATE)
		// and nothing else: a new group gets a cursor in every partition
		// the stream has when it commits, and an alter in flight extends
		// the cursors of a group registered before it.
		stream, err := scanStream(tx.QueryRow(ctx, `SELECT `+streamColumns+` FROM stream_config WHERE id = $1::bigint FOR KEY SHARE`, cfg.StreamID))
		if errors.Is(err, pgx.ErrNoRows) {
			return driver.ErrStreamNotFound
		}
		if err != nil {
			return err
		}
		// Concurrent registrations of one group: the loser of the insert
		// waits for the winner and then finds its row.
		tag, err := tx.Exec(ctx, `INSERT INTO consumer_group (stream_id, name, schema_version, all_versions, bindings, converts_from, start_position, created_at)
			VALUES ($1::bigint, $2::text, $3::integer, $4::boolean, $5::jsonb, $6::jsonb, $7::integer, $8::timestamptz) ON CONFLICT (stream_id, name) DO NOTHING`,
			cfg.StreamID, cfg.Name, int32(cfg.SchemaVersion), cfg.AllVersions, bindings, convertsFrom, int32(cfg.Start), cfg.CreatedAt)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			stored, err := loadGroup(ctx, tx, cfg.StreamID, cfg.Name, ` FOR UPDATE`)
			if err != nil {
				return err
			}
			out = stored
			if p.Update == nil {
				return nil
			}
			// Update gets its own copy of the lists, so that it cannot change
			// the stored ones it is compared with.
			copied := stored
			copied.Bindings, copied.ConvertsFrom = slices.Clone(stored.Bindings), slices.Clone(stored.ConvertsFrom)
			next, err := p.Update(copied)
			if err != nil {
				return driver.CallerError{Err: err}
			}
			out.Bindings, out.ConvertsFrom = nilIfEmpty(next.Bindings), nilIfEmpty(next.ConvertsFrom)
			if slices.Equal(out.Bindings, stored.Bindings) && slices.Equal(out.ConvertsFrom, stored.ConvertsFrom) {
				return nil
			}
			b := &pgx.Batch{}
			b.Queue(`UPDATE consumer_group SET bindings = $1::jsonb, converts_from = $2::jsonb WHERE stream_id = $3::bigint AND name = $4::text`,
				encodeList(out.Bindings), encodeList(out.ConvertsFrom), cfg.StreamID, cfg.Name)
			b.Queue(`SELECT partition FROM group_cursor WHERE stream_id = $1::bigint AND group_name = $2::text ORDER BY partition FOR UPDATE`,
				cfg.StreamID, cfg.Name)
			return tx.SendBatch(ctx, b).Close()
		}
		// A new group starts at the beginning, or after the last committed
		// row of each partition: an append still in flight in a partition
		// holds ids above that partition's last committed row (C5), so it
		// is not passed.
		start := `0::bigint`
		if cfg.Start == driver.StartLatest {
			start = `COALESCE((SELECT max(m.id) FROM ` + logTable(cfg.StreamID) + ` m WHERE m.partition = p), 0)`
		}
		_, err = tx.Exec(ctx, `INSERT INTO group_cursor (stream_id, group_name, partition, position)
			SELECT $1::bigint, $2::text, p, `+start+` FROM generate_series(0, $3::integer - 1) p`,
			cfg.StreamID, cfg.Name, int32(stream.Partitions))
		out = cfg
		return err
	})
	return out, err
}

// nilIfEmpty reads an empty list as none.
func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// ListGroups implements driver.Driver.
func (d *Driver) ListGroups(ctx context.Context, p driver.ListGroupsParams) ([]driver.GroupConfig, error) {
	var out []driver.GroupConfig
	err := d.read(ctx, func() error {
		rows, err := d.pool.Query(ctx, `SELECT `+groupColumns+` FROM consumer_group WHERE stream_id = $1::bigint ORDER BY name`, p.StreamID)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.GroupConfig, error) {
			g, _, err := scanGroup(r)
			return g, err
		})
		return err
	})
	return out, err
}

// DeleteGroup implements driver.Driver.
func (d *Driver) DeleteGroup(ctx context.Context, p driver.DeleteGroupParams) error {
	streamID, group := p.StreamID, p.Group
	return d.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM consumer_group WHERE stream_id = $1::bigint AND name = $2::text`, streamID, group)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return driver.ErrGroupNotFound
		}
		for _, table := range []string{"group_cursor", "delivery_exception", "delivery_batch", "schema_reader"} {
			if _, err := tx.Exec(ctx, `DELETE FROM `+table+` WHERE stream_id = $1::bigint AND group_name = $2::text`, streamID, group); err != nil {
				return err
			}
		}
		return nil
	})
}
