package postgres

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

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

// Health implements driver.Driver. It reads one snapshot.
func (d *Driver) Health(ctx context.Context, streamID int64, _ time.Time) (driver.HealthStats, error) {
	var st driver.HealthStats
	err := d.readTx(ctx, func(tx pgx.Tx) error {
		st = driver.HealthStats{}
		stream, err := lookupStreamByID(ctx, tx, streamID)
		if err != nil {
			return err
		}
		table := logTable(streamID)
		st.HighWater = make([]int64, stream.Partitions)
		// One index probe per partition rather than a scan of the log.
		if err := eachRow(ctx, tx, `SELECT p, (SELECT max(m.id) FROM `+table+` m WHERE m.partition = p) FROM generate_series(0, $1::integer - 1) p`,
			[]any{int32(stream.Partitions)}, func(r pgx.Rows) error {
				var p int32
				var hw *int64
				if err := r.Scan(&p, &hw); err != nil {
					return err
				}
				if hw != nil && int(p) < len(st.HighWater) {
					st.HighWater[p] = *hw
				}
				return nil
			}); err != nil {
			return err
		}
		versions := map[int]*driver.VersionStats{}
		at := func(v int32) *driver.VersionStats {
			if versions[int(v)] == nil {
				versions[int(v)] = &driver.VersionStats{Version: int(v)}
			}
			return versions[int(v)]
		}
		if err := eachRow(ctx, tx, `SELECT schema_version, count(*) FROM `+table+` GROUP BY schema_version`, nil, func(r pgx.Rows) error {
			var v int32
			var n int64
			err := r.Scan(&v, &n)
			at(v).Rows = n
			return err
		}); err != nil {
			return err
		}
		if err := eachRow(ctx, tx, `SELECT schema_version, count(*) FROM compaction_head WHERE stream_id = $1::bigint GROUP BY schema_version`,
			[]any{streamID}, func(r pgx.Rows) error {
				var v int32
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
		if err := eachRow(ctx, tx, `SELECT c.group_name, m.schema_version, m.routing_key, count(*)
			FROM group_cursor c JOIN `+table+` m ON m.partition = c.partition AND m.id > c.position
			WHERE c.stream_id = $1::bigint AND `+headExpr(stream)+`
			GROUP BY c.group_name, m.schema_version, m.routing_key ORDER BY 1, 2, 3`, []any{streamID}, func(r pgx.Rows) error {
			var u driver.UnreadCount
			var v int32
			err := r.Scan(&u.Group, &v, &u.RoutingKey, &u.Rows)
			u.Version = int(v)
			st.Unread = append(st.Unread, u)
			return err
		}); err != nil {
			return err
		}
		return eachRow(ctx, tx, `SELECT group_name, schema_version, state, count(*) FROM delivery_exception WHERE stream_id = $1::bigint
			GROUP BY group_name, schema_version, state ORDER BY 1, 2, 3`, []any{streamID}, func(r pgx.Rows) error {
			var e driver.ExceptionCount
			var v int32
			var state string
			err := r.Scan(&e.Group, &v, &state, &e.Count)
			e.Version, e.State = int(v), driver.ExceptionState(state)
			st.Exceptions = append(st.Exceptions, e)
			return err
		})
	})
	return st, err
}

func eachRow(ctx context.Context, tx pgx.Tx, query string, args []any, fn func(pgx.Rows) error) error {
	rows, err := tx.Query(ctx, query, args...)
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
func (d *Driver) Compact(ctx context.Context, streamID int64, limit int) (int64, error) {
	var removed int64
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		removed = 0
		stream, err := lookupStreamByID(ctx, tx, streamID)
		if err != nil || !stream.Compacted {
			return err
		}
		var ids []int64
		if err := eachRow(ctx, tx, `SELECT m.id FROM `+logTable(streamID)+` m WHERE NOT `+headExpr(stream)+` ORDER BY m.id LIMIT $1::integer`,
			[]any{int32(limit)}, func(r pgx.Rows) error {
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

// deleteRows removes log rows with their exceptions and any head pointing at them.
func deleteRows(ctx context.Context, tx pgx.Tx, streamID int64, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	b.Queue(`DELETE FROM `+logTable(streamID)+` WHERE id = ANY($1::bigint[])`, ids)
	b.Queue(`DELETE FROM delivery_exception WHERE stream_id = $1::bigint AND msg_id = ANY($2::bigint[])`, streamID, ids)
	b.Queue(`DELETE FROM compaction_head WHERE stream_id = $1::bigint AND head_id = ANY($2::bigint[])`, streamID, ids)
	return tx.SendBatch(ctx, b).Close()
}

// Retain implements driver.Driver. Soft limits remove a row only when every
// group's cursor in its partition has passed it and no group holds an
// exception for it; hard limits remove it regardless and count, per group,
// the rows removed before the group resolved them.
func (d *Driver) Retain(ctx context.Context, req driver.RetainRequest) (driver.RetainResult, error) {
	var res driver.RetainResult
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		res = driver.RetainResult{RemovedUnread: map[string]int64{}}
		stream, err := lookupStreamByID(ctx, tx, req.StreamID)
		if err != nil {
			return err
		}
		r := stream.Retention
		if r.MaxAge <= 0 && r.MaxRows <= 0 {
			return nil
		}
		table := logTable(stream.ID)
		sid := strconv.FormatInt(stream.ID, 10)
		var limits []string
		args := []any{int32(req.Limit)}
		if r.MaxAge > 0 {
			args = append(args, ts(req.Now.Add(-r.MaxAge)))
			limits = append(limits, `m.produced_at < $`+strconv.Itoa(len(args))+`::timestamptz`)
		}
		if r.MaxRows > 0 {
			args = append(args, r.MaxRows)
			limits = append(limits, `m.id <= (SELECT id FROM `+table+` ORDER BY id DESC LIMIT 1 OFFSET $`+strconv.Itoa(len(args))+`::bigint)`)
		}
		where := `(` + limits[0]
		for _, l := range limits[1:] {
			where += ` OR ` + l
		}
		where += `)`
		if !r.Hard {
			where += ` AND NOT EXISTS (SELECT 1 FROM group_cursor c WHERE c.stream_id = ` + sid + ` AND c.partition = m.partition AND c.position < m.id)
				AND NOT EXISTS (SELECT 1 FROM delivery_exception e WHERE e.stream_id = ` + sid + ` AND e.msg_id = m.id)`
		}
		var victims []driver.RetainCandidate
		if err := eachRow(ctx, tx, `SELECT m.id, m.partition, m.schema_version, m.routing_key FROM `+table+` m WHERE `+where+` ORDER BY m.id LIMIT $1::integer`,
			args, func(rs pgx.Rows) error {
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
			held := map[string]map[int64]bool{}
			if err := eachRow(ctx, tx, `SELECT group_name, msg_id FROM delivery_exception WHERE stream_id = $1::bigint AND msg_id = ANY($2::bigint[])`,
				[]any{stream.ID, ids}, func(rs pgx.Rows) error {
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
				if _, err := tx.Exec(ctx, `UPDATE consumer_group SET removed_unread = removed_unread + $1::bigint WHERE stream_id = $2::bigint AND name = $3::text`,
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
