package sqlite

import (
	"context"
	"database/sql"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// loadGroups reads the stream's groups, each with its cursors.
func loadGroups(ctx context.Context, tx querier, stream driver.StreamConfig) ([]driver.GroupStats, error) {
	var groups []driver.GroupStats
	if err := sqldb.EachRow(ctx, tx, `SELECT `+sqldb.GroupColumns+` FROM consumer_group WHERE stream_id = ? ORDER BY name`, []any{stream.ID}, func(r *sql.Rows) error {
		g, removed, err := sqldb.ScanGroup(r, fromMicros)
		groups = append(groups, driver.GroupStats{GroupConfig: g, RemovedUnread: removed, Cursors: make([]int64, stream.Partitions)})
		return err
	}); err != nil {
		return nil, err
	}
	for i := range groups {
		cursors := groups[i].Cursors
		if err := sqldb.EachRow(ctx, tx, `SELECT partition, position FROM group_cursor WHERE stream_id = ? AND group_name = ?`, []any{stream.ID, groups[i].Name}, func(r *sql.Rows) error {
			var part int
			var pos int64
			if err := r.Scan(&part, &pos); err != nil {
				return err
			}
			if part < len(cursors) {
				cursors[part] = pos
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return groups, nil
}

// Health implements driver.Driver. It reads one snapshot.
func (d *Driver) Health(ctx context.Context, p driver.HealthParams) (driver.HealthStats, error) {
	var st driver.HealthStats
	var stream driver.StreamConfig
	var uncounted int64
	err := d.readTx(ctx, func(tx *sql.Tx) error {
		var err error
		if stream, err = lookupStreamByID(ctx, tx, p.StreamID); err != nil {
			return err
		}
		if st.HighWater, err = highWaters(ctx, tx, stream); err != nil {
			return err
		}
		if st.Versions, uncounted, err = versionStats(ctx, tx, stream); err != nil {
			return err
		}
		if st.Groups, err = loadGroups(ctx, tx, stream); err != nil {
			return err
		}
		if st.Unread, err = unreadCounts(ctx, tx, stream, st.Groups); err != nil {
			return err
		}
		if st.Exceptions, err = exceptionCounts(ctx, tx, stream.ID); err != nil {
			return err
		}
		st.Holders, err = holderCounts(ctx, tx, stream.ID)
		return err
	})
	if err == nil && uncounted > 0 {
		// Count the new rows once, so that the next read need not. The
		// counts are a cache: a failure (a read-only file, a busy writer)
		// costs the next read a longer count, never a wrong one.
		_ = d.catchUpRowCounts(ctx, stream)
	}
	return st, err
}

// highWaters returns the greatest id of each partition: the newest row's,
// or the mark compaction and retention left when they removed it.
func highWaters(ctx context.Context, tx querier, stream driver.StreamConfig) ([]int64, error) {
	hws := make([]int64, stream.Partitions)
	// One index dive per partition: a GROUP BY partition, and even a
	// correlated MAX(id), would read the whole (partition, id) index.
	err := sqldb.EachRow(ctx, tx, partitionsCTE+`SELECT p.n, (SELECT m.id FROM `+logTable(stream.ID)+` m WHERE m.partition = p.n ORDER BY m.id DESC LIMIT 1) FROM p
		UNION ALL SELECT partition, high_water FROM partition_mark WHERE stream_id = ?`, []any{stream.Partitions, stream.ID}, func(r *sql.Rows) error {
		var part int
		var hw sql.NullInt64 // NULL: a partition without rows
		if err := r.Scan(&part, &hw); err != nil {
			return err
		}
		if part < len(hws) {
			hws[part] = max(hws[part], hw.Int64)
		}
		return nil
	})
	return hws, err
}

// versionStats returns the rows and compaction heads per version, and how
// many rows lay past the row count marks. The rows are the counts kept up
// to the marks and the rows past them (rowcount.go), not a scan of the log.
func versionStats(ctx context.Context, tx querier, stream driver.StreamConfig) ([]driver.VersionStats, int64, error) {
	return driver.ReadVersionStats(func() (map[int]int64, int64, error) { return rowCounts(ctx, tx, stream) },
		func() (map[int]int64, error) {
			return sqldb.Map[int, int64](ctx, tx, `SELECT schema_version, COUNT(*) FROM compaction_head WHERE stream_id = ? GROUP BY schema_version`, stream.ID)
		})
}

// unreadCounts counts, per group, partition, version and routing key, the
// claimable rows past the group's cursor that it has no exception for.
func unreadCounts(ctx context.Context, tx querier, stream driver.StreamConfig, groups []driver.GroupStats) ([]driver.UnreadCount, error) {
	var out []driver.UnreadCount
	for _, g := range groups {
		for part, cursor := range g.Cursors {
			unread, err := sqldb.Collect(ctx, tx, `SELECT m.schema_version, m.routing_key, COUNT(*) FROM `+logTable(stream.ID)+` m
				WHERE m.partition = ? AND m.id > ? AND `+headExpr(stream)+`
					AND NOT EXISTS (SELECT 1 FROM delivery_exception e WHERE e.stream_id = ? AND e.group_name = ? AND e.msg_id = m.id)
				GROUP BY m.schema_version, m.routing_key`, []any{part, cursor, stream.ID, g.Name}, driver.ScanUnreadCount(g.Name, part))
			if err != nil {
				return nil, err
			}
			out = append(out, unread...)
		}
	}
	return out, nil
}

// exceptionCounts counts exceptions per group, version and state. Batch
// members are leased deliveries at their versions.
func exceptionCounts(ctx context.Context, tx querier, streamID int64) ([]driver.ExceptionCount, error) {
	return sqldb.Collect(ctx, tx, `SELECT group_name, schema_version, state, SUM(n) FROM (
		SELECT group_name, schema_version, state, COUNT(*) AS n FROM delivery_exception WHERE stream_id = ? GROUP BY group_name, schema_version, state
		UNION ALL SELECT b.group_name, v.value, 'leased', COUNT(*) FROM delivery_batch b, json_each(b.versions) v WHERE b.stream_id = ? GROUP BY b.group_name, v.value)
		GROUP BY group_name, schema_version, state ORDER BY group_name, schema_version, state`, []any{streamID, streamID}, driver.ScanExceptionCount)
}

// holderCounts counts leases per group and holder, batch members included,
// with when the last of them ends. The leased rows are read through the
// groups, so that each is a range of the (stream, group, state) index
// holding its leases only, not a scan of the stream's dead letters (CROSS
// JOIN: SQLite keeps the groups as the outer loop).
func holderCounts(ctx context.Context, tx querier, streamID int64) ([]driver.HolderCount, error) {
	var out []driver.HolderCount
	err := sqldb.EachRow(ctx, tx, `SELECT group_name, holder, SUM(n), MAX(until) FROM (
		SELECT e.group_name, COALESCE(e.holder, '') AS holder, COUNT(*) AS n, MAX(e.due_at) AS until FROM consumer_group g
			CROSS JOIN delivery_exception e
			WHERE g.stream_id = ? AND e.stream_id = g.stream_id AND e.group_name = g.name AND e.state = 'leased'
			GROUP BY e.group_name, COALESCE(e.holder, '')
		UNION ALL SELECT group_name, COALESCE(holder, ''), json_array_length(ids), lease_until FROM delivery_batch WHERE stream_id = ?)
		GROUP BY group_name, holder ORDER BY group_name, holder`, []any{streamID, streamID}, func(r *sql.Rows) error {
		var h driver.HolderCount
		var until int64
		err := r.Scan(&h.Group, &h.Holder, &h.Leases, &until)
		h.Until = fromMicros(until)
		out = append(out, h)
		return err
	})
	return out, err
}
