package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// loadGroups reads the groups of a stream with their cursors and the count
// of rows retention removed before they read them (Health, hard retention).
func loadGroups(ctx context.Context, tx pgx.Tx, stream driver.StreamConfig) ([]driver.GroupStats, error) {
	rows, err := tx.Query(ctx, `SELECT `+groupColumns+` FROM consumer_group WHERE stream_id = $1::bigint ORDER BY name`, stream.ID)
	if err != nil {
		return nil, err
	}
	groups, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.GroupStats, error) {
		g, removed, err := scanGroup(r)
		return driver.GroupStats{GroupConfig: g, RemovedUnread: removed, Cursors: make([]int64, stream.Partitions)}, err
	})
	if err != nil {
		return nil, err
	}
	index := map[string]int{}
	for i, g := range groups {
		index[g.Name] = i
	}
	err = eachRow(ctx, tx, `SELECT group_name, partition, position FROM group_cursor WHERE stream_id = $1::bigint`, []any{stream.ID}, func(r pgx.Rows) error {
		var name string
		var p int32
		var pos int64
		if err := r.Scan(&name, &p, &pos); err != nil {
			return err
		}
		if i, ok := index[name]; ok && int(p) < len(groups[i].Cursors) {
			groups[i].Cursors[p] = pos
		}
		return nil
	})
	return groups, err
}

// Health implements driver.Driver. It reads one snapshot (a repeatable
// read transaction).
func (d *Driver) Health(ctx context.Context, p driver.HealthParams) (driver.HealthStats, error) {
	var st driver.HealthStats
	var uncounted int64
	err := d.readTx(ctx, func(tx pgx.Tx) error {
		st = driver.HealthStats{}
		// The statements are short, but the planner's estimates for a
		// stream's log it has no statistics of (a new table, not yet
		// analyzed) pass jit_above_cost, and compiling costs 15 ms a read.
		if _, err := tx.Exec(ctx, `SET LOCAL jit = off`); err != nil {
			return err
		}
		stream, err := lookupStreamByID(ctx, tx, p.StreamID)
		if err != nil {
			return err
		}
		if st.HighWater, err = highWaters(ctx, tx, stream); err != nil {
			return err
		}
		if st.Versions, uncounted, err = versionStats(ctx, tx, stream.ID); err != nil {
			return err
		}
		if st.Groups, err = loadGroups(ctx, tx, stream); err != nil {
			return err
		}
		if st.Unread, err = unreadCounts(ctx, tx, stream); err != nil {
			return err
		}
		if st.Holders, err = holderCounts(ctx, tx, stream.ID); err != nil {
			return err
		}
		st.Exceptions, err = exceptionCounts(ctx, tx, stream)
		return err
	})
	if err == nil && uncounted > 0 {
		// Count the new rows once, so that the next read need not. The
		// counts are a cache: a failure (a read-only role, a lock timeout)
		// costs the next read a longer count, never a wrong one.
		_ = d.catchUpRowCounts(ctx, p.StreamID)
	}
	return st, err
}

// highWaters reads each partition's high-water mark: one index probe per
// partition rather than a scan of the log; the mark covers newest rows that
// compaction or retention removed.
func highWaters(ctx context.Context, tx pgx.Tx, stream driver.StreamConfig) ([]int64, error) {
	hws := make([]int64, stream.Partitions)
	err := eachRow(ctx, tx, `SELECT sp.partition, GREATEST(sp.high_water, (SELECT max(m.id) FROM `+logTable(stream.ID)+` m WHERE m.partition = sp.partition))
		FROM stream_partition sp WHERE sp.stream_id = $1::bigint`, []any{stream.ID}, func(r pgx.Rows) error {
		var part int32
		var hw int64
		if err := r.Scan(&part, &hw); err != nil {
			return err
		}
		if int(part) < len(hws) {
			hws[part] = hw
		}
		return nil
	})
	return hws, err
}

// versionStats reads the rows and compaction heads per version, and how
// many rows lay past the marks of the row counts (rowcount.go): the counts
// kept up to the marks and the rows past them, not a scan of the log.
func versionStats(ctx context.Context, tx pgx.Tx, streamID int64) ([]driver.VersionStats, int64, error) {
	return driver.ReadVersionStats(func() (map[int]int64, int64, error) { return rowCounts(ctx, tx, streamID) },
		func() (map[int]int64, error) {
			heads := map[int]int64{}
			err := eachRow(ctx, tx, `SELECT schema_version, count(*) FROM compaction_head WHERE stream_id = $1::bigint GROUP BY schema_version`,
				[]any{streamID}, func(r pgx.Rows) error {
					var v int32
					var n int64
					err := r.Scan(&v, &n)
					heads[int(v)] = n
					return err
				})
			return heads, err
		})
}

// unreadCounts counts the rows past each group's cursors, by partition,
// version and routing key. The rows past a cursor are a range of the
// (partition, id) index (LATERAL with the aggregate inside, so that the
// planner cannot pull the subquery up into a join of the whole log). Rows
// past the cursor that the group has an exception for (a cursor moved back
// over them) count as exceptions, not as unread; only below the group's
// newest exception of the partition past the cursor (a range of the
// primary key) can there be such rows, so only there is each row looked up
// (an anti-join of the whole backlog with the exceptions is what a planner
// without statistics picks, at backlog times exceptions).
func unreadCounts(ctx context.Context, tx pgx.Tx, stream driver.StreamConfig) ([]driver.UnreadCount, error) {
	var out []driver.UnreadCount
	err := eachRow(ctx, tx, `SELECT c.group_name, c.partition, m.schema_version, m.routing_key, m.n
		FROM group_cursor c
		CROSS JOIN LATERAL (SELECT max(e.msg_id) AS newest FROM delivery_exception e
			WHERE e.stream_id = c.stream_id AND e.group_name = c.group_name AND e.msg_id > c.position AND e.partition = c.partition) x
		CROSS JOIN LATERAL (SELECT m.schema_version, m.routing_key, count(*) AS n FROM `+logTable(stream.ID)+` m
			WHERE m.partition = c.partition AND m.id > c.position AND `+headExpr(stream)+`
				AND (m.id > COALESCE(x.newest, 0)
					OR NOT EXISTS (SELECT 1 FROM delivery_exception e WHERE e.stream_id = c.stream_id AND e.group_name = c.group_name AND e.msg_id = m.id))
			GROUP BY m.schema_version, m.routing_key) m
		WHERE c.stream_id = $1::bigint
		ORDER BY 1, 2, 3, 4`, []any{stream.ID}, func(r pgx.Rows) error {
		var u driver.UnreadCount
		var part, v int32
		err := r.Scan(&u.Group, &part, &v, &u.RoutingKey, &u.Rows)
		u.Partition, u.Version = int(part), int(v)
		out = append(out, u)
		return err
	})
	return out, err
}

// holderCounts counts the leases per group and holder, expired ones
// included until a claim takes them over; a lease taken before holders were
// recorded counts under "". Through the groups, so that each is a range of
// the index of pending exceptions (delivery_exception_due), not a scan of
// the stream's dead letters. A batch counts its members.
func holderCounts(ctx context.Context, tx pgx.Tx, streamID int64) ([]driver.HolderCount, error) {
	var out []driver.HolderCount
	err := eachRow(ctx, tx, `SELECT h.group_name, h.holder, sum(h.n)::bigint, max(h.until) FROM (
			SELECT e.group_name, COALESCE(e.holder, '') AS holder, count(*) AS n, max(e.due_at) AS until FROM consumer_group g
			JOIN delivery_exception e ON e.stream_id = g.stream_id AND e.group_name = g.name AND e.state = 'leased'
			WHERE g.stream_id = $1::bigint GROUP BY 1, 2
			UNION ALL
			SELECT b.group_name, COALESCE(b.holder, ''), sum(cardinality(b.ids)), max(b.lease_until) FROM delivery_batch b
			WHERE b.stream_id = $1::bigint GROUP BY 1, 2) h
		GROUP BY 1, 2 ORDER BY 1, 2`, []any{streamID}, func(r pgx.Rows) error {
		var h driver.HolderCount
		err := r.Scan(&h.Group, &h.Holder, &h.Leases, &h.Until)
		h.Until = h.Until.UTC()
		out = append(out, h)
		return err
	})
	return out, err
}

// exceptionCounts counts the exceptions per group, version and state;
// batch members count as leased, at their rows' versions.
func exceptionCounts(ctx context.Context, tx pgx.Tx, stream driver.StreamConfig) ([]driver.ExceptionCount, error) {
	var out []driver.ExceptionCount
	err := eachRow(ctx, tx, `SELECT x.group_name, x.schema_version, x.state, sum(x.n)::bigint FROM (
			SELECT group_name, schema_version, state, count(*) AS n FROM delivery_exception WHERE stream_id = $1::bigint
			GROUP BY group_name, schema_version, state
			UNION ALL
			SELECT b.group_name, m.schema_version, 'leased', count(*) FROM delivery_batch b CROSS JOIN LATERAL unnest(b.ids) AS u(id)
			JOIN `+logTable(stream.ID)+` m ON m.id = u.id WHERE b.stream_id = $1::bigint GROUP BY 1, 2) x
		GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`, []any{stream.ID}, func(r pgx.Rows) error {
		var e driver.ExceptionCount
		var v int32
		var state string
		err := r.Scan(&e.Group, &v, &state, &e.Count)
		e.Version, e.State = int(v), driver.ExceptionState(state)
		out = append(out, e)
		return err
	})
	return out, err
}
