package mysql

import (
	"context"
	"database/sql"
	"time"

	"github.com/sqlstreams/sqlstreams/core/driver"
	"github.com/sqlstreams/sqlstreams/core/driver/sqldb"
)

// Health implements driver.Driver. It reads one snapshot.
func (d *Driver) Health(ctx context.Context, p driver.HealthParams) (driver.HealthStats, error) {
	var st driver.HealthStats
	var uncounted int64
	err := d.withLog(ctx, p.StreamID, func() error {
		return d.ownTx(ctx, true, func(tx querier) error {
			st = driver.HealthStats{}
			return d.health(ctx, tx, p.StreamID, &st, &uncounted)
		})
	})
	if err == nil && uncounted > 0 {
		// Count the new rows once, so that the next read need not. The
		// counts are a cache: a failure (a read-only user, a lock wait)
		// costs the next read a longer count, never a wrong one.
		_ = d.catchUpRowCounts(ctx, p.StreamID)
	}
	return st, err
}

// health reads the figures in tx; uncounted is set to the rows it counted
// past the row count marks (rowcount.go).
func (d *Driver) health(ctx context.Context, tx querier, streamID int64, st *driver.HealthStats, uncounted *int64) error {
	stream, err := lookupStreamByID(ctx, tx, streamID)
	if err != nil {
		return err
	}
	if st.HighWater, err = highWater(ctx, tx, stream); err != nil {
		return err
	}
	if st.Versions, *uncounted, err = versionStats(ctx, tx, stream); err != nil {
		return err
	}
	if st.Groups, err = d.loadGroups(ctx, tx, stream, false); err != nil {
		return err
	}
	for _, g := range st.Groups {
		unread, err := unreadRows(ctx, tx, stream, g)
		if err != nil {
			return err
		}
		st.Unread = append(st.Unread, unread...)
	}
	if st.Exceptions, err = exceptionCounts(ctx, tx, stream); err != nil {
		return err
	}
	st.Holders, err = holderCounts(ctx, tx, stream)
	return err
}

// highWater is the greatest id of each partition: the newest row's, or the
// mark compaction and retention left when they removed it.
func highWater(ctx context.Context, tx querier, stream driver.StreamConfig) ([]int64, error) {
	tops, err := readTops(ctx, tx, stream.ID, nil)
	out := make([]int64, stream.Partitions)
	for p, t := range tops {
		if p >= 0 && p < len(out) {
			out[p] = max(t.newest, t.highWater)
		}
	}
	return out, err
}

// versionStats counts rows and compaction heads per version, the rows from
// the counts kept up to the marks and the rows past them (rowcount.go), not
// a scan of the log; uncounted is how many lay past the marks.
func versionStats(ctx context.Context, tx querier, stream driver.StreamConfig) ([]driver.VersionStats, int64, error) {
	return driver.ReadVersionStats(func() (map[int]int64, int64, error) { return rowCounts(ctx, tx, stream) },
		func() (map[int]int64, error) {
			return sqldb.Map[int, int64](ctx, tx, `SELECT schema_version, COUNT(*) FROM compaction_head WHERE stream_id = ? GROUP BY schema_version`, stream.ID)
		})
}

// unreadRows counts a group's rows past its cursors by partition, version
// and routing key. Rows past the cursor that the group has an exception
// for (a cursor moved back over them) count as exceptions, not as unread.
// Only where the group's newest exception of a partition lies past its
// cursor can there be such rows, so only there is each row looked up; the
// normal case counts as before.
func unreadRows(ctx context.Context, tx querier, stream driver.StreamConfig, g driver.GroupStats) ([]driver.UnreadCount, error) {
	newestException := map[int]int64{}
	if err := sqldb.EachRow(ctx, tx, "SELECT `partition`, MAX(msg_id) FROM delivery_exception WHERE stream_id = ? AND group_name = ? GROUP BY `partition`",
		[]any{stream.ID, g.Name}, func(r *sql.Rows) error {
			var p int
			var id int64
			err := r.Scan(&p, &id)
			newestException[p] = id
			return err
		}); err != nil {
		return nil, err
	}
	var out []driver.UnreadCount
	for p, cursor := range g.Cursors {
		query := "SELECT m.schema_version, m.routing_key, COUNT(*) FROM " + logTable(stream.ID) + " m WHERE m.`partition` = ? AND m.id > ? AND " + headExpr(stream)
		args := []any{p, cursor}
		if newest := newestException[p]; newest > cursor {
			query += " AND (m.id > ? OR NOT EXISTS (SELECT 1 FROM delivery_exception e WHERE e.stream_id = ? AND e.group_name = ? AND e.msg_id = m.id))"
			args = append(args, newest, stream.ID, g.Name)
		}
		unread, err := sqldb.Collect(ctx, tx, query+" GROUP BY m.schema_version, m.routing_key", args, driver.ScanUnreadCount(g.Name, p))
		if err != nil {
			return nil, err
		}
		out = append(out, unread...)
	}
	return out, nil
}

// exceptionCounts counts each group's exceptions by version and state,
// batch members as leased exceptions at their rows' versions.
func exceptionCounts(ctx context.Context, tx querier, stream driver.StreamConfig) ([]driver.ExceptionCount, error) {
	return sqldb.Collect(ctx, tx, `SELECT group_name, schema_version, state, SUM(n) FROM (
		SELECT group_name, schema_version, state, COUNT(*) n FROM delivery_exception WHERE stream_id = ? GROUP BY group_name, schema_version, state
		UNION ALL SELECT b.group_name, m.schema_version, 'leased', COUNT(*) FROM delivery_batch b JOIN `+jsonIDs+` JOIN `+logTable(stream.ID)+` m ON m.id = j.id
			WHERE b.stream_id = ? GROUP BY b.group_name, m.schema_version) x
		GROUP BY group_name, schema_version, state ORDER BY group_name, schema_version, state`, []any{stream.ID, stream.ID}, driver.ScanExceptionCount)
}

// holderCounts counts leases per (group, holder), and when the last of them
// expires, batch members included. Through the groups, so that each is a
// range of the (stream, group, state) index holding its leases only, not a
// scan of the stream's dead letters.
func holderCounts(ctx context.Context, tx querier, stream driver.StreamConfig) ([]driver.HolderCount, error) {
	var out []driver.HolderCount
	err := sqldb.EachRow(ctx, tx, `SELECT group_name, holder, SUM(n), MAX(until) FROM (
		SELECT e.group_name, COALESCE(e.holder, '') holder, COUNT(*) n, MAX(e.due_at) until FROM consumer_group g
			JOIN delivery_exception e ON e.stream_id = g.stream_id AND e.group_name = g.name AND e.state = 'leased'
			WHERE g.stream_id = ? GROUP BY e.group_name, COALESCE(e.holder, '')
		UNION ALL SELECT b.group_name, COALESCE(b.holder, ''), JSON_LENGTH(b.ids), b.lease_until FROM delivery_batch b WHERE b.stream_id = ?) x
		GROUP BY group_name, holder ORDER BY group_name, holder`,
		[]any{stream.ID, stream.ID}, func(r *sql.Rows) error {
			var h driver.HolderCount
			var holder []byte
			var until time.Time
			err := r.Scan(&h.Group, &holder, &h.Leases, &until)
			h.Holder, h.Until = string(holder), utc(until)
			out = append(out, h)
			return err
		})
	return out, err
}
