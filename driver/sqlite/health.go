package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"slices"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

// loadGroups reads the stream's groups, each with its cursors.
func loadGroups(ctx context.Context, tx querier, stream driver.StreamConfig) ([]driver.GroupStats, error) {
	rows, err := tx.QueryContext(ctx, `SELECT `+groupColumns+` FROM consumer_group WHERE stream_id = ? ORDER BY name`, stream.ID)
	if err != nil {
		return nil, err
	}
	var groups []driver.GroupStats
	for rows.Next() {
		g, removed, err := scanGroup(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		groups = append(groups, driver.GroupStats{GroupConfig: g, RemovedUnread: removed, Cursors: make([]int64, stream.Partitions)})
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, err
	}
	for i := range groups {
		crs, err := tx.QueryContext(ctx, `SELECT partition, position FROM group_cursor WHERE stream_id = ? AND group_name = ?`, stream.ID, groups[i].Name)
		if err != nil {
			return nil, err
		}
		for crs.Next() {
			var p int
			var pos int64
			if err := crs.Scan(&p, &pos); err != nil {
				crs.Close()
				return nil, err
			}
			if p < len(groups[i].Cursors) {
				groups[i].Cursors[p] = pos
			}
		}
		if err := errors.Join(crs.Err(), crs.Close()); err != nil {
			return nil, err
		}
	}
	return groups, nil
}

// Health implements driver.Driver. It reads one snapshot.
func (d *Driver) Health(ctx context.Context, p driver.HealthParams) (driver.HealthStats, error) {
	streamID := p.StreamID
	var st driver.HealthStats
	var uncounted int64
	var streamCfg driver.StreamConfig
	err := d.readTx(ctx, func(tx *sql.Tx) error {
		stream, err := lookupStreamByID(ctx, tx, streamID)
		if err != nil {
			return err
		}
		table := logTable(streamID)
		// The greatest id of each partition: the newest row's, or the mark
		// compaction and retention left when they removed it.
		st.HighWater = make([]int64, stream.Partitions)
		// One index dive per partition: a GROUP BY partition, and even a
		// correlated MAX(id), would read the whole (partition, id) index.
		if err := eachRow(ctx, tx, partitionsCTE+`SELECT p.n, (SELECT m.id FROM `+table+` m WHERE m.partition = p.n ORDER BY m.id DESC LIMIT 1) FROM p
			UNION ALL SELECT partition, high_water FROM partition_mark WHERE stream_id = ?`, []any{stream.Partitions, streamID}, func(r *sql.Rows) error {
			var part int
			var hw sql.NullInt64 // NULL: a partition without rows
			if err := r.Scan(&part, &hw); err != nil {
				return err
			}
			if part < len(st.HighWater) {
				st.HighWater[part] = max(st.HighWater[part], hw.Int64)
			}
			return nil
		}); err != nil {
			return err
		}
		versions := map[int]*driver.VersionStats{}
		at := func(v int) *driver.VersionStats {
			if versions[v] == nil {
				versions[v] = &driver.VersionStats{Version: v}
			}
			return versions[v]
		}
		// Rows per version: the counts kept up to the marks and the rows past
		// them (rowcount.go), not a scan of the log.
		counts, past, err := rowCounts(ctx, tx, stream)
		if err != nil {
			return err
		}
		for v, n := range counts {
			if n > 0 {
				at(v).Rows = n
			}
		}
		uncounted, streamCfg = past, stream
		if err := eachRow(ctx, tx, `SELECT schema_version, COUNT(*) FROM compaction_head WHERE stream_id = ? GROUP BY schema_version`, []any{streamID}, func(r *sql.Rows) error {
			var v int
			var n int64
			err := r.Scan(&v, &n)
			at(v).Heads = n
			return err
		}); err != nil {
			return err
		}
		for _, v := range versions {
			st.Versions = append(st.Versions, *v)
		}
		slices.SortFunc(st.Versions, func(a, b driver.VersionStats) int { return a.Version - b.Version })

		if st.Groups, err = loadGroups(ctx, tx, stream); err != nil {
			return err
		}
		for _, g := range st.Groups {
			for p, cursor := range g.Cursors {
				if err := eachRow(ctx, tx, `SELECT m.schema_version, m.routing_key, COUNT(*) FROM `+table+` m
					WHERE m.partition = ? AND m.id > ? AND `+headExpr(stream)+`
						AND NOT EXISTS (SELECT 1 FROM delivery_exception e WHERE e.stream_id = ? AND e.group_name = ? AND e.msg_id = m.id)
					GROUP BY m.schema_version, m.routing_key`,
					[]any{p, cursor, stream.ID, g.Name}, func(r *sql.Rows) error {
						u := driver.UnreadCount{Group: g.Name, Partition: p}
						err := r.Scan(&u.Version, &u.RoutingKey, &u.Rows)
						st.Unread = append(st.Unread, u)
						return err
					}); err != nil {
					return err
				}
			}
		}
		if err := eachRow(ctx, tx, `SELECT group_name, schema_version, state, COUNT(*) FROM delivery_exception WHERE stream_id = ?
			GROUP BY group_name, schema_version, state`, []any{streamID}, func(r *sql.Rows) error {
			var e driver.ExceptionCount
			err := r.Scan(&e.Group, &e.Version, &e.State, &e.Count)
			st.Exceptions = append(st.Exceptions, e)
			return err
		}); err != nil {
			return err
		}
		// Batch members are leased deliveries at their versions.
		batches, err := queryBatches(ctx, tx, `SELECT `+batchColumns+` FROM delivery_batch WHERE stream_id = ?`, streamID)
		if err != nil {
			return err
		}
		leasedAt := map[driver.ExceptionCount]int64{}
		type holderKey struct{ group, holder string }
		held := map[holderKey]driver.HolderCount{}
		for _, b := range batches {
			for _, v := range b.versions {
				leasedAt[driver.ExceptionCount{Group: b.group, Version: v, State: driver.StateLeased}]++
			}
			k := holderKey{b.group, b.holder.String}
			h := held[k]
			h.Group, h.Holder, h.Leases = b.group, b.holder.String, h.Leases+int64(len(b.ids))
			if until := fromMicros(b.leaseUntil); until.After(h.Until) {
				h.Until = until
			}
			held[k] = h
		}
		for i, e := range st.Exceptions {
			k := e
			k.Count = 0
			if n, ok := leasedAt[k]; ok {
				st.Exceptions[i].Count += n
				delete(leasedAt, k)
			}
		}
		for k, n := range leasedAt {
			k.Count = n
			st.Exceptions = append(st.Exceptions, k)
		}
		// Through the groups, so that each is a range of the (stream, group,
		// state) index holding its leases only, not a scan of the stream's
		// dead letters (CROSS JOIN: SQLite keeps the groups as the outer loop).
		if err := eachRow(ctx, tx, `SELECT e.group_name, COALESCE(e.holder, ''), COUNT(*), MAX(e.due_at) FROM consumer_group g
			CROSS JOIN delivery_exception e
			WHERE g.stream_id = ? AND e.stream_id = g.stream_id AND e.group_name = g.name AND e.state = 'leased'
			GROUP BY e.group_name, e.holder ORDER BY e.group_name, e.holder`, []any{streamID}, func(r *sql.Rows) error {
			var h driver.HolderCount
			var until int64
			err := r.Scan(&h.Group, &h.Holder, &h.Leases, &until)
			h.Until = fromMicros(until)
			st.Holders = append(st.Holders, h)
			return err
		}); err != nil {
			return err
		}
		for i, h := range st.Holders {
			k := holderKey{h.Group, h.Holder}
			if b, ok := held[k]; ok {
				st.Holders[i].Leases += b.Leases
				if b.Until.After(h.Until) {
					st.Holders[i].Until = b.Until
				}
				delete(held, k)
			}
		}
		for _, h := range held {
			st.Holders = append(st.Holders, h)
		}
		slices.SortFunc(st.Holders, func(a, b driver.HolderCount) int {
			return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Holder, b.Holder))
		})
		return nil
	})
	if err == nil && uncounted > 0 {
		// Count the new rows once, so that the next read need not. The
		// counts are a cache: a failure (a read-only file, a busy writer)
		// costs the next read a longer count, never a wrong one.
		_ = d.catchUpRowCounts(ctx, streamCfg)
	}
	return st, err
}
