package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
)

func loadGroups(ctx context.Context, tx *sql.Tx, stream driver.StreamConfig) ([]driver.GroupStats, error) {
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

func eachRow(ctx context.Context, tx queryer, query string, args []any, fn func(*sql.Rows) error) error {
	rows, err := tx.QueryContext(ctx, query, args...)
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

// Compact implements driver.Driver.
func (d *Driver) Compact(ctx context.Context, p driver.CompactParams) (int64, error) {
	streamID, limit := p.StreamID, p.Limit
	var removed int64
	err := d.inTx(ctx, nil, func(tx *sql.Tx) error {
		stream, err := lookupStreamByID(ctx, tx, streamID)
		if err != nil || !stream.Compacted {
			return err
		}
		var ids []int64
		if err := eachRow(ctx, tx, `SELECT m.id FROM `+logTable(streamID)+` m WHERE NOT `+headExpr(stream)+` ORDER BY m.id LIMIT ?`,
			[]any{limit}, func(r *sql.Rows) error {
				var id int64
				err := r.Scan(&id)
				ids = append(ids, id)
				return err
			}); err != nil {
			return err
		}
		removed = int64(len(ids))
		return deleteRows(ctx, tx, streamID, ids)
	})
	return removed, err
}

// deleteRows removes log rows with their exceptions and any head pointing at
// them, first raising each partition's mark to the greatest id it removes,
// so that the high-water mark never goes down.
func deleteRows(ctx context.Context, tx *sql.Tx, streamID int64, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	if err := materializeRange(ctx, tx, streamID, slices.Min(ids), slices.Max(ids)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO partition_mark (stream_id, partition, high_water)
		SELECT ?, partition, MAX(id) FROM `+logTable(streamID)+` WHERE id BETWEEN ? AND ? GROUP BY partition
		ON CONFLICT (stream_id, partition) DO UPDATE SET high_water = MAX(high_water, excluded.high_water)`,
		streamID, slices.Min(ids), slices.Max(ids)); err != nil {
		return err
	}
	const chunk = 500
	for start := 0; start < len(ids); start += chunk {
		part := int64sToArgs(ids[start:min(start+chunk, len(ids))])
		in := ` IN (` + placeholders(len(part)) + `)`
		if err := subtractRowCounts(ctx, tx, streamID, in, part); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+logTable(streamID)+` WHERE id`+in, part...); err != nil {
			return err
		}
		args := append([]any{streamID}, part...)
		if _, err := tx.ExecContext(ctx, `DELETE FROM delivery_exception WHERE stream_id = ? AND msg_id`+in, args...); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM compaction_head WHERE stream_id = ? AND head_id`+in, args...); err != nil {
			return err
		}
	}
	return nil
}

// Retain implements driver.Driver. Soft limits remove a row only when every
// group's cursor in its partition has passed it and no group holds an
// exception for it; hard limits remove it regardless and count, per group,
// the rows removed before the group resolved them.
func (d *Driver) Retain(ctx context.Context, req driver.RetainParams) (driver.RetainResult, error) {
	res := driver.RetainResult{RemovedUnread: map[string]int64{}}
	err := d.inTx(ctx, nil, func(tx *sql.Tx) error {
		stream, err := lookupStreamByID(ctx, tx, req.StreamID)
		if err != nil {
			return err
		}
		r := stream.Retention
		if r.MaxAge <= 0 && r.MaxRows <= 0 {
			return nil
		}
		bound, err := retainBound(ctx, tx, stream, req.Now)
		if err != nil || bound == 0 {
			return err
		}
		table := logTable(stream.ID)
		where := `m.id < ?`
		args := []any{bound}
		if !r.Hard {
			where += ` AND NOT EXISTS (SELECT 1 FROM group_cursor c WHERE c.stream_id = ` + strconv.FormatInt(stream.ID, 10) + ` AND c.partition = m.partition AND c.position < m.id)
				AND NOT EXISTS (SELECT 1 FROM delivery_exception e WHERE e.stream_id = ` + strconv.FormatInt(stream.ID, 10) + ` AND e.msg_id = m.id)
				AND m.id < COALESCE((SELECT MIN(b.first_id) FROM delivery_batch b WHERE b.stream_id = ` + strconv.FormatInt(stream.ID, 10) + `), 9223372036854775807)`
		}
		var victims []driver.RetainCandidate
		if err := eachRow(ctx, tx, `SELECT m.id, m.partition, m.schema_version, m.routing_key FROM `+table+` m WHERE `+where+` ORDER BY m.id LIMIT ?`,
			append(args, req.Limit), func(rs *sql.Rows) error {
				var v driver.RetainCandidate
				err := rs.Scan(&v.ID, &v.Partition, &v.Version, &v.RoutingKey)
				victims = append(victims, v)
				return err
			}); err != nil {
			return err
		}
		if len(victims) == 0 {
			return nil
		}
		ids := make([]int64, len(victims))
		for i, v := range victims {
			ids[i] = v.ID
		}
		if r.Hard {
			groups, err := loadGroups(ctx, tx, stream)
			if err != nil {
				return err
			}
			// Leases in batches count as held, as their exception rows would.
			if err := materializeRange(ctx, tx, stream.ID, ids[0], ids[len(ids)-1]); err != nil {
				return err
			}
			held := map[string]map[int64]bool{}
			if err := eachRow(ctx, tx, `SELECT group_name, msg_id FROM delivery_exception WHERE stream_id = ? AND msg_id BETWEEN ? AND ?`,
				[]any{stream.ID, ids[0], ids[len(ids)-1]}, func(rs *sql.Rows) error {
					var g string
					var id int64
					if err := rs.Scan(&g, &id); err != nil {
						return err
					}
					if held[g] == nil {
						held[g] = map[int64]bool{}
					}
					held[g][id] = true
					return nil
				}); err != nil {
				return err
			}
			res.RemovedUnread = driver.CountRemovedUnread(groups, victims, held, req.Match)
			for _, g := range groups {
				n := res.RemovedUnread[g.Name]
				if n == 0 {
					continue
				}
				if _, err := tx.ExecContext(ctx, `UPDATE consumer_group SET removed_unread = removed_unread + ? WHERE stream_id = ? AND name = ?`,
					n, stream.ID, g.Name); err != nil {
					return err
				}
			}
		}
		res.Removed = int64(len(ids))
		return deleteRows(ctx, tx, stream.ID, ids)
	})
	return res, err
}

// retainBound returns the id below which the stream's retention limits put
// rows (0: none); driver.RetainBound decides, from these index dives.
func retainBound(ctx context.Context, tx queryer, stream driver.StreamConfig, now time.Time) (int64, error) {
	table := logTable(stream.ID)
	one := func(query string, args ...any) (int64, bool, error) {
		var id int64
		err := tx.QueryRowContext(ctx, query, args...).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, false, nil
		}
		return id, err == nil, err
	}
	return driver.RetainBound(stream.Retention, now, driver.RetentionProbe{
		Span: func() (int64, int64, bool, error) {
			var oldest, newest sql.NullInt64 // apart: SQLite reads MIN and MAX of one SELECT by a scan
			err := tx.QueryRowContext(ctx, `SELECT (SELECT MIN(id) FROM `+table+`), (SELECT MAX(id) FROM `+table+`)`).Scan(&oldest, &newest)
			return oldest.Int64, newest.Int64, err == nil && newest.Valid, err
		},
		FirstYoung: func(t time.Time) (int64, bool, error) {
			return one(`SELECT id FROM `+table+` WHERE produced_at >= ? ORDER BY id LIMIT 1`, micros(t))
		},
		NthNewest: func(n int64) (int64, bool, error) {
			return one(`SELECT id FROM `+table+` ORDER BY id DESC LIMIT 1 OFFSET ?`, n)
		},
	})
}
